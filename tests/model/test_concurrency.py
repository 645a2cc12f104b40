"""One labeler, several threads: forward passes keep their masks and captures to themselves."""

from __future__ import annotations

import threading

import pytest
import torch
from support import SENTENCES

from seqrep.model.labeler import SequenceLabeler

LABELS = ["O", "B-PER", "I-PER", "B-LOC", "I-LOC"]


@pytest.mark.parametrize("family", ["llama", "gemma3"])
def test_concurrent_passes_equal_sequential(tiny, family: str) -> None:
    """Two threads, different batches (and one probing layers), results equal to sequential.

    ``unmask="middle"`` makes the unmasked layers' hooks swap in each batch's own padding
    mask; if the padding lived on the shared object, one thread's batch would be masked with
    the other's (shapes differ, or the wrong words are hidden)."""
    lab = SequenceLabeler.from_model(tiny(family, 6), labels=LABELS, repetitions=1,
                                     unmask="middle", finetune="frozen",
                                     exit_layer="all").eval()  # job c probes layer 6
    short = [s[:2] for s in SENTENCES] * 3
    long = [s + s for s in SENTENCES] * 3
    jobs = {"a": lambda: lab.word_logits(short, batch_size=2, docs=None),
            "b": lambda: lab.word_logits(long, batch_size=3, docs=None),
            "c": lambda: lab.layer_states(long[:4], layers=[1, 3, 6], batch_size=1, docs=None)}
    expected = {k: fn() for k, fn in jobs.items()}
    got: dict[str, list] = {k: [] for k in jobs}
    errors: list[BaseException] = []
    barrier = threading.Barrier(len(jobs))

    def work(name: str) -> None:
        try:
            barrier.wait()
            for _ in range(4):
                got[name].append(jobs[name]())
        except BaseException as err:  # noqa: BLE001 - reported below
            errors.append(err)

    threads = [threading.Thread(target=work, args=(k,)) for k in jobs]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    for name, runs in got.items():
        assert len(runs) == 4
        for run in runs:
            for a, b in zip(run, expected[name]):
                assert torch.allclose(a, b, atol=1e-5), name
    assert not lab.training  # inference never flipped the shared flag


def test_concurrent_bf16_passes_keep_the_weights(tiny) -> None:
    """bf16 inference runs the backbone on cast copies of its Linear weights, swapped in for
    the pass (torch.func.functional_call): two threads swapping on one module could each put
    back what the other swapped in, leaving bf16 tensors where the fp32 parameters were.
    Passes from several threads equal sequential ones, and the parameters stay the same fp32
    Parameter objects."""
    lab = SequenceLabeler.from_model(tiny("llama"), labels=LABELS, finetune="frozen").eval()
    lab.place("cpu", "bf16")
    before = {n: p for n, p in lab.backbone.named_parameters()}
    sents = [s + s for s in SENTENCES] * 3
    expected = lab.word_logits(sents, batch_size=1, docs=None)
    errors: list[BaseException] = []
    got: list[list] = []
    barrier = threading.Barrier(3)

    def work() -> None:
        try:
            barrier.wait()
            for _ in range(3):
                got.append(lab.word_logits(sents, batch_size=1, docs=None))
        except BaseException as err:  # noqa: BLE001 - reported below
            errors.append(err)

    threads = [threading.Thread(target=work) for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    after = dict(lab.backbone.named_parameters())
    assert after.keys() == before.keys()
    assert all(after[n] is p and p.dtype == torch.float32 for n, p in before.items())
    assert len(got) == 9 and all(torch.equal(a, b) for run in got for a, b in zip(run, expected))
