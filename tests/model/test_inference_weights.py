"""bf16 inference runs on cast copies of the Linear weights (seqrep.model.casts.WeightCasts):
the copies follow every documented way weights change (an optimizer step, fused or not;
``load_state_dict``; peft's merge and unmerge; training mode), a hand edit that changes a
whole weight, and an explicit refresh; tied weights run; a Linear subclass, a non-fp32 weight
and anything tied to a non-Linear keep their own tensors; a pass that starts while another
has its copies in place waits (issue 55 item 8, issue 56 item 4).

The reference is torch's own autocast of the current weights, the copies switched off
(``WeightCasts.tensors`` giving none, as benchmarks/peers/weight_casts.py does), or a fresh
labeler given the same weights: neither reads the copies under test."""

from __future__ import annotations

import threading

import pytest
import torch
from support import SENTENCES
from torch import nn

from seqrep.model.backbone import layer_stack
from seqrep.model.casts import WeightCasts
from seqrep.model.labeler import SequenceLabeler

LABELS = ["O", "B-PER", "I-PER", "B-LOC", "I-LOC"]
BF16 = torch.bfloat16


def bf16_labeler(tiny, family: str = "llama", finetune: str = "full") -> SequenceLabeler:
    lab = SequenceLabeler.from_model(tiny(family), labels=LABELS, finetune=finetune)
    return lab.eval().place("cpu", "bf16")


def logits(lab: SequenceLabeler) -> list[torch.Tensor]:
    return lab.word_logits(SENTENCES, docs=None)


def plain(lab: SequenceLabeler, monkeypatch: pytest.MonkeyPatch) -> list[torch.Tensor]:
    """torch's autocast alone on the current weights: no copies."""
    with monkeypatch.context() as m:
        m.setattr(WeightCasts, "tensors", lambda self, module, dtype: {})
        return logits(lab)


def same(a: list[torch.Tensor], b: list[torch.Tensor]) -> bool:
    return len(a) == len(b) and all(torch.equal(x, y) for x, y in zip(a, b))


def linear(lab: SequenceLabeler, suffix: str, layer: int = 0) -> nn.Linear:
    return [m for n, m in lab.backbone.named_modules() if n.endswith(suffix)][layer]


# ---------------------------------------------------------------- which tensors are cast
class Recording(nn.Linear):
    """A Linear subclass (as bitsandbytes' layers are): its own forward, which must see its
    own fp32 weight."""

    seen: list[torch.dtype]

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        self.seen.append(self.weight.dtype)
        return super().forward(x)


class Mixed(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.a = nn.Linear(4, 4)  # weight and bias: cast
        self.sub = Recording(4, 4)  # a subclass: its own
        self.sub.seen = []
        self.low = nn.Linear(4, 4).half()  # not fp32: not recast
        self.t1 = nn.Linear(4, 8)
        self.t2 = nn.Linear(4, 8, bias=False)
        self.t2.weight = self.t1.weight  # tied between two Linears: cast once
        self.emb = nn.Embedding(8, 4)
        self.out = nn.Linear(4, 8, bias=False)
        self.out.weight = self.emb.weight  # tied to an Embedding, which would read bf16 rows

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        x = self.emb(ids)
        x = self.sub(self.a(x))
        y = self.low(x.half()).float()
        return self.t1(y) + self.t2(y) + self.out(y)


def test_casts_are_the_fp32_tensors_of_plain_linears_once_each() -> None:
    torch.manual_seed(0)
    model = Mixed()
    got = WeightCasts().tensors(model, BF16)
    # by hand: a's weight and bias, t1's (t2 shares its weight: one copy, under one name,
    # which functional_call gives every tied name); not the subclass, the fp16 layer, or the
    # weight an Embedding reads too
    assert sorted(got) == ["a.bias", "a.weight", "t1.bias", "t1.weight"]
    for name, tensor in got.items():
        source = model.get_parameter(name)
        assert tensor.dtype == BF16 and torch.equal(tensor, source.detach().to(BF16))
    ids = torch.tensor([[1, 2, 3]])
    with torch.no_grad(), torch.autocast("cpu", dtype=BF16):
        reference = model(ids)
        model.sub.seen.clear()
        out = torch.func.functional_call(model, got, (ids,))  # ties: no "multiple values"
    assert torch.equal(out, reference)
    assert model.sub.seen == [torch.float32]


def test_a_linear_subclass_keeps_its_own_forward_and_weight(tiny, monkeypatch) -> None:
    lab = bf16_labeler(tiny)
    block = layer_stack(lab.backbone)[0].mlp
    old = block.down_proj
    sub = Recording(old.in_features, old.out_features, bias=False)
    sub.seen = []
    sub.weight = old.weight
    block.down_proj = sub
    with torch.no_grad():
        got = logits(lab)
    assert sub.seen and set(sub.seen) == {torch.float32}
    assert same(got, plain(lab, monkeypatch))


def test_tied_linear_weights_run_in_bf16(tiny, monkeypatch) -> None:
    """Two Linear layers sharing one Parameter failed: "functional_call got multiple values
    for keys [...] which are tied"."""
    lab = bf16_labeler(tiny)
    stack = layer_stack(lab.backbone)
    stack[1].mlp.down_proj.weight = stack[0].mlp.down_proj.weight
    got = logits(lab)
    assert same(got, plain(lab, monkeypatch))
    assert stack[1].mlp.down_proj.weight is stack[0].mlp.down_proj.weight


def test_biases_are_cast_as_autocast_casts_them(tiny, monkeypatch) -> None:
    lab = bf16_labeler(tiny, "qwen2")  # q, k and v projections with biases
    got = WeightCasts().tensors(lab.backbone, BF16)
    biases = [n for n, p in lab.backbone.named_parameters() if n.endswith("proj.bias")]
    assert biases and set(biases) <= set(got)
    assert all(torch.equal(got[n], lab.backbone.get_parameter(n).detach().to(BF16))
               for n in biases)
    assert same(logits(lab), plain(lab, monkeypatch))


# ---------------------------------------------------------------- the copies follow changes
def test_a_hand_edit_through_data_reaches_the_bf16_logits(tiny) -> None:
    """Issue 56 item 4: after ``p.data.mul_(3.0)`` on the down projections the bf16 logits
    did not move (1.49 away from a fresh labeler with the same weights)."""
    lab = bf16_labeler(tiny)
    before = logits(lab)
    for name, p in lab.backbone.named_parameters():
        if name.endswith("down_proj.weight"):
            p.data.mul_(3.0)
    after = logits(lab)
    fresh = SequenceLabeler.from_model(lab.config.model, labels=LABELS, finetune="full")
    fresh.load_state_dict(lab.state_dict())
    fresh.eval().place("cpu", "bf16")
    assert not same(after, before)
    assert same(after, logits(fresh))


@pytest.mark.parametrize("layout", ["contiguous", "transposed"])
def test_an_in_place_edit_is_seen_in_either_layout(tiny, monkeypatch, layout: str) -> None:
    """The sampled check reads the weight's own entries at every pass, whatever their
    layout (a non-contiguous weight too; a copy read once would never see the edit). The
    edit, after the copies are made, multiplies a whole weight in place."""
    lab = bf16_labeler(tiny)
    layer = linear(lab, "up_proj", 0)
    if layout == "transposed":
        layer.weight = nn.Parameter(layer.weight.detach().t().contiguous().t())
        assert not layer.weight.is_contiguous()
    before = logits(lab)
    layer.weight.data.mul_(3.0)
    after = logits(lab)
    assert not same(after, before)
    assert same(after, plain(lab, monkeypatch))


def test_refresh_after_a_hand_edit_of_one_entry(tiny, monkeypatch) -> None:
    """An edit of a few entries may escape the copies' sampled check: the documented call
    after editing weights by hand is ``refresh_inference_weights()``."""
    lab = bf16_labeler(tiny)
    logits(lab)
    linear(lab, "down_proj", -1).weight.data[3, 5] += 4.0
    lab.refresh_inference_weights()
    assert same(logits(lab), plain(lab, monkeypatch))


def test_new_data_for_a_weight_reaches_the_bf16_logits(tiny, monkeypatch) -> None:
    """``p.data = edited`` (peft's safe merge does it) keeps the Parameter and gives it new
    storage: the copy is made again (one entry edited: the new storage must tell)."""
    lab = bf16_labeler(tiny)
    before = logits(lab)
    weight = linear(lab, "down_proj", -1).weight
    edited = weight.detach().clone()
    edited[3, 5] += 4.0
    weight.data = edited
    after = logits(lab)
    assert not same(after, before)
    assert same(after, plain(lab, monkeypatch))


def one_entry_step(lab: SequenceLabeler, optimizer: torch.optim.Optimizer) -> None:
    """A step that changes one entry of one weight (by the rate): every other gradient is
    zero and there is no decay, so the copies' sampled check would see it only by chance."""
    weight = linear(lab, "down_proj", -1).weight
    for p in lab.parameters():
        p.grad = torch.zeros_like(p) if p.requires_grad else None
    weight.grad[3, 5] = 1.0
    before = weight.detach().clone()
    optimizer.step()
    assert int((weight.detach() != before).sum()) == 1


@pytest.mark.parametrize("kind", ["fused", "foreach"])
def test_an_optimizer_step_reaches_the_bf16_logits(tiny, monkeypatch, kind: str) -> None:
    """A fused AdamW (the Hugging Face Trainer's default) updates the weights without
    raising the tensors' version counter: the old copies stayed. The labeler stays in eval
    mode here, so nothing but the step itself can say that the weights changed."""
    lab = bf16_labeler(tiny)
    optimizer = torch.optim.AdamW([p for p in lab.parameters() if p.requires_grad], lr=1.0,
                                  weight_decay=0.0, **{kind: True})
    before = logits(lab)
    one_entry_step(lab, optimizer)
    after = logits(lab)
    assert not same(after, before)
    assert same(after, plain(lab, monkeypatch))


def test_training_mode_drops_the_copies(tiny, monkeypatch) -> None:
    """A training loop without a torch optimizer (a hand-written update) still passes
    through ``train()``: the copies are dropped there, and made again in eval mode."""
    lab = bf16_labeler(tiny)
    before = logits(lab)
    lab.train()
    with torch.no_grad():
        linear(lab, "down_proj", -1).weight[3, 5] -= 1.0
    lab.eval()
    after = logits(lab)
    assert not same(after, before)
    assert same(after, plain(lab, monkeypatch))


def test_load_state_dict_reaches_the_bf16_logits(tiny, monkeypatch) -> None:
    lab = bf16_labeler(tiny)
    before = logits(lab)
    state = {k: v.clone() for k, v in lab.state_dict().items()}
    key = next(k for k in state if k.endswith("down_proj.weight"))
    state[key][3, 5] += 4.0
    lab.load_state_dict(state)
    after = logits(lab)
    assert not same(after, before)
    assert same(after, plain(lab, monkeypatch))
    # into one layer alone
    layer = linear(lab, "down_proj", -1)
    weight = layer.weight.detach().clone()
    weight[1, 2] -= 4.0
    layer.load_state_dict({"weight": weight})
    again = logits(lab)
    assert not same(again, after)
    assert same(again, plain(lab, monkeypatch))


def test_peft_merge_and_unmerge_reach_the_bf16_logits(tiny, monkeypatch) -> None:
    """Issue 55 item 8: after peft's merge_adapter (``weight.data += delta``) 24 of 32 word
    labels differed from plain autocast's. The adapter here changes one entry of one weight,
    which the copies' sampled check would see only by chance: the merge itself must tell."""
    lab = bf16_labeler(tiny, finetune="lora")
    lora = next(m for m in lab.backbone.modules() if hasattr(m, "lora_A")
                and "default" in m.lora_A)
    with torch.no_grad():
        a, b = lora.lora_A["default"].weight, lora.lora_B["default"].weight
        a.zero_()
        b.zero_()
        a[0, 5] = 1.0
        b[3, 0] = 4.0
    unmerged = logits(lab)
    assert same(unmerged, plain(lab, monkeypatch))
    lab.backbone.merge_adapter()
    merged = logits(lab)
    reference = plain(lab, monkeypatch)
    assert same(merged, reference)
    assert [x.argmax(-1).tolist() for x in merged] == [x.argmax(-1).tolist()
                                                        for x in reference]
    lab.backbone.unmerge_adapter()
    assert same(logits(lab), plain(lab, monkeypatch))


def test_the_backbone_still_copies_and_pickles_after_a_bf16_pass(tiny) -> None:
    """The cast layers hold a load_state_dict hook of the inference weights, which hold a
    lock: a copied or pickled backbone takes fresh, empty ones instead of failing on it."""
    import copy
    import pickle

    lab = bf16_labeler(tiny)
    logits(lab)
    twin = copy.deepcopy(lab.backbone)
    assert isinstance(pickle.loads(pickle.dumps(lab.backbone)), type(lab.backbone))
    for a, b in zip(twin.parameters(), lab.backbone.parameters()):
        assert a is not b and torch.equal(a, b)


# ---------------------------------------------------------------- passes take turns
def test_a_pass_that_starts_while_another_has_its_copies_in_place_waits(tiny) -> None:
    """functional_call swaps the copies into the shared module for a pass and puts back what
    it found: a second pass that took the copies before the first swapped them in, and swaps
    in while the first's are in place, would put those copies back where the fp32 Parameters
    belong when it ends after the first. Forced here, each thread holding at a point until
    the other has reached its own (or the second waits at the lock): the first takes its
    copies, the second takes its copies, the first runs to its first layer, the second swaps
    in and runs to its first layer, the first ends, the second ends."""
    lab = bf16_labeler(tiny)
    expected = logits(lab)
    before = dict(lab.backbone.named_parameters())
    weights = lab.inference_weights
    first: list[int] = []
    took, second_took, inside, arrived, first_done = (threading.Event() for _ in range(5))
    real = weights.tensors

    def tensors(module: nn.Module, dtype: torch.dtype) -> dict[str, torch.Tensor]:
        out = real(module, dtype)
        if not first:
            first.append(threading.get_ident())
            took.set()
            assert second_took.wait(60)
        elif threading.get_ident() != first[0]:
            second_took.set()
            assert inside.wait(60)
        return out

    def hook(module: nn.Module, args: tuple) -> None:
        if threading.get_ident() == first[0]:
            inside.set()
            assert arrived.wait(60)
        else:
            arrived.set()  # in the module while the first pass's copies are there
            assert first_done.wait(60)

    class Announcing:  # the lock, saying when the second thread waits at it
        def __init__(self, lock: threading.Lock) -> None:
            self.lock = lock

        def __enter__(self) -> bool:
            if first and threading.get_ident() != first[0]:
                second_took.set()
                arrived.set()
            return self.lock.__enter__()

        def __exit__(self, *exc: object) -> None:
            self.lock.__exit__(*exc)

    weights.tensors = tensors
    weights.lock = Announcing(weights.lock)
    handle = layer_stack(lab.backbone)[0].register_forward_pre_hook(hook)
    got: dict[str, list[torch.Tensor]] = {}
    errors: list[BaseException] = []

    def one() -> None:
        try:
            got["one"] = logits(lab)
        except BaseException as err:  # noqa: BLE001 - reported below
            errors.append(err)
        finally:
            first_done.set()

    def two() -> None:
        try:
            assert took.wait(60)
            got["two"] = logits(lab)
        except BaseException as err:  # noqa: BLE001 - reported below
            errors.append(err)
        finally:
            second_took.set()
            arrived.set()

    threads = [threading.Thread(target=one), threading.Thread(target=two)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    handle.remove()
    del weights.tensors
    assert not errors, errors
    after = dict(lab.backbone.named_parameters())
    assert after.keys() == before.keys()
    assert all(after[n] is p and p.dtype == torch.float32 for n, p in before.items())
    assert same(got["one"], expected) and same(got["two"], expected)
