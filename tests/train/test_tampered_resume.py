"""Tampered resumable state through ``seqrep train --resume --output RUN``, in process (issue 37
items 5 and 9): ``checkpoint/state.json``, the optimizer's, the weights' and the generators'
tensors, ``metrics.json`` and ``log.jsonl``. Every case ends in exit 2 with one ``error:`` line
naming the file, the folder left as it was, or exit 0 with a finished run; never a traceback,
never a hang, never an unbounded read.

The cases are built from ONE tiny run paused after its first step (a checkpoint, one logged
evaluation, best/) and its finished copy (metrics.json), both made once for the module and
copied per case: the issue's named cases, then a seeded random sweep of wrong types and
absurd values in the JSON records and of swapped, reshaped or missing tensors.
``SEQREP_TAMPER_CASES=N`` runs a larger sweep.
"""

from __future__ import annotations

import contextlib
import json
import os
import random
import resource
import shutil
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
import tampering
import torch
from safetensors.torch import load_file, save_file
from support import write_corpus

SWEEP_CASES = int(os.environ.get("SEQREP_TAMPER_CASES") or 24)
DEEP = "[" * 100_000 + "]" * 100_000


@pytest.fixture(scope="module")
def runs(tiny, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    from seqrep.config import LabelerConfig, TrainConfig
    from seqrep.train import train

    root = tmp_path_factory.mktemp("tampered-resume")
    lab = LabelerConfig(model=tiny("llama"), repetitions=1, finetune="full", exit_layer=2)
    cfg = TrainConfig(dataset=str(write_corpus(root / "train.txt", 20)),
                      test_split=str(write_corpus(root / "test.txt", 3, seed=1)), epochs=1,
                      batch_size=8, eval_every=1, lr=3e-3, head_lr=1e-2, seed=7)
    paused = root / "paused"
    assert train(lab, cfg.replace(max_steps=1), paused, quiet=True)["status"] == "interrupted"
    finished = root / "finished"
    shutil.copytree(paused, finished)
    assert train(lab, cfg, finished, resume=True, quiet=True)["status"] == "finished"
    return {"paused": paused, "finished": finished, "root": root}


@contextlib.contextmanager
def memory_cap(extra: int = 2 << 30) -> Iterator[None]:
    """At most ``extra`` more bytes of address space for the block: a regression that reads a
    link to /dev/zero whole fails with MemoryError instead of filling the machine."""
    soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    with open("/proc/self/statm") as f:
        used = int(f.read().split()[0]) * resource.getpagesize()
    cap = used + extra if hard == resource.RLIM_INFINITY else min(hard, used + extra)
    resource.setrlimit(resource.RLIMIT_AS, (cap, hard))
    try:
        yield
    finally:
        resource.setrlimit(resource.RLIMIT_AS, (soft, hard))


def cli(*args: str, seconds: int = 60) -> tuple[int | str, str, str]:
    """``seqrep ARGS`` in this process, under a memory cap, with torch's threads restored
    (a resumed run sets its own)."""
    threads = torch.get_num_threads()
    try:
        return tampering.cli(*args, seconds=seconds, around=memory_cap)
    finally:
        torch.set_num_threads(threads)


def snapshot(folder: Path) -> dict[str, bytes | str]:
    """Every entry under ``folder``: a file's bytes, a link's target, a folder's mark."""
    out: dict[str, bytes | str] = {}
    for p in sorted(folder.rglob("*")):
        rel = str(p.relative_to(folder))
        out[rel] = (f"-> {os.readlink(p)}" if p.is_symlink() else "<dir>" if p.is_dir()
                    else "<fifo>" if not p.is_file() else p.read_bytes())
    return out


def resume(case: str, folder: Path, names: str | None = None) -> int:
    """``train --resume --output FOLDER``: exit 0 with a finished run, or exit 2 with one
    ``error:`` line (naming ``names`` if given) and the folder as it was."""
    before = snapshot(folder)
    code, out, err = cli("train", "--resume", "--output", str(folder), "--quiet")
    assert code in (0, 2), f"{case}: {code}\n{err[-2000:]}"
    assert "Traceback" not in err, f"{case}: {err[-2000:]}"
    if code == 2:
        errors = [x for x in err.strip().splitlines() if x.startswith("error: ")]
        assert len(errors) == 1 and err.strip().splitlines()[-1] == errors[0], f"{case}: {err!r}"
        assert names is None or names in errors[0], f"{case}: {errors[0]}"
        assert snapshot(folder) == before, f"{case}: the folder changed"
    else:
        path = folder / "metrics.json"
        small = path.is_file() and path.stat().st_size < 1 << 20
        try:
            metrics = json.loads(path.read_bytes()) if small else None
        except ValueError:
            metrics = None
        finished = isinstance(metrics, dict) and metrics.get("status") == "finished"
        assert finished and "best validation" in out, f"{case}: exit 0, {out!r}"
    return code  # type: ignore[return-value]


# ------------------------------------------------------------------ mutations
Mutation = Callable[[Path], None]  # the copied run folder


def edit(rel: str, change: Callable[[dict], object]) -> Mutation:
    return lambda folder: tampering.edit_json(folder / rel, change)


def put(rel: str, content: bytes | str) -> Mutation:
    return lambda folder: tampering.replace(folder / rel, content)


def state(**values: object) -> Mutation:
    return edit("checkpoint/state.json", lambda d: d["state"].update(values))


def group(**values: object) -> Mutation:
    return edit("checkpoint/state.json", lambda d: d["param_groups"][0].update(values))


def tensors(rel: str, change: Callable[[dict[str, torch.Tensor]], None]) -> Mutation:
    def do(folder: Path) -> None:
        path = folder / "checkpoint" / rel
        data = load_file(str(path))
        change(data)
        save_file(data, str(path))
    return do


def swap_shapes(data: dict[str, torch.Tensor]) -> None:
    """Exchange the tensors of two keys of different shapes."""
    by_shape = {tuple(v.shape): k for k, v in sorted(data.items())}
    a, b = list(by_shape.values())[:2]
    data[a], data[b] = data[b], data[a]


def swap_same_shape(data: dict[str, torch.Tensor]) -> None:
    """Exchange two moments of different parameters, of the same shape."""
    seen: dict[tuple, str] = {}
    for k, v in sorted(data.items()):
        if k.endswith("::exp_avg"):
            if tuple(v.shape) in seen:
                other = seen[tuple(v.shape)]
                data[k], data[other] = data[other], data[k]
                return
            seen[tuple(v.shape)] = k
    raise AssertionError("no two moments of one shape")


def first(suffix: str, change: Callable[[torch.Tensor], torch.Tensor | None]
          ) -> Callable[[dict[str, torch.Tensor]], None]:
    def do(data: dict[str, torch.Tensor]) -> None:
        key = next(k for k in sorted(data) if k.endswith(suffix))
        new = change(data[key])
        if new is None:
            del data[key]
        else:
            data[key] = new
    return do


STATE_CASES: dict[str, Mutation] = {
    # the cases
    "betas of one value": group(betas=[0.9]),
    "betas a string": group(betas="ab"),
    "weight_decay a string": group(weight_decay="0.01"),
    "negative step": state(step=-1),
    # more of the same kind
    "lr a string": group(lr="fast"), "base_lr null": group(base_lr=None),
    "eps negative": group(eps=-1), "betas of 2": group(betas=[0.9, 2.0]),
    "lr inf": group(lr=float("inf")), "params unknown": group(params=["nothing"]),
    "params swapped between groups": edit("checkpoint/state.json", lambda d: d.update(
        param_groups=[{**g, "params": h["params"]} for g, h in
                      zip(d["param_groups"], d["param_groups"][::-1])])),
    "params not a list": group(params="head.weight"),
    "param_groups missing": edit("checkpoint/state.json", lambda d: d.pop("param_groups")),
    "param_groups an object": edit("checkpoint/state.json",
                                   lambda d: d.update(param_groups={"a": 1})),
    "a group a number": edit("checkpoint/state.json", lambda d: d["param_groups"].__setitem__(
        0, 5)),
    "state a list": edit("checkpoint/state.json", lambda d: d.update(state=[1])),
    "epoch a string": state(epoch="1"), "batch 99": state(batch=99), "epoch 99": state(epoch=99),
    "step 1.5": state(step=1.5), "best_f1 a string": state(best_f1="high"),
    "best a list": state(best=[]), "best f1 a string": state(best={"f1": "x"}),
    "done a string": state(done="yes"), "evals -3": state(evals=-3),
    "loss_sum nan": state(loss_sum=float("nan")), "tokens true": state(tokens=True),
    "train_seconds -5": state(train_seconds=-5),
    "state.json junk": put("checkpoint/state.json", "{broken"),
    "state.json a list": put("checkpoint/state.json", "[1, 2]"),
    "state.json 100000 deep": put("checkpoint/state.json", DEEP),
    "state.json binary": put("checkpoint/state.json", b"\x00\xff\xfe\x80" * 64),
    "state.json -> /dev/zero": put("checkpoint/state.json", "<link>/dev/zero"),
    "state.json a fifo": put("checkpoint/state.json", "<fifo>"),
}
TENSOR_CASES: dict[str, tuple[Mutation, str]] = {
    "optimizer tensors swapped": (tensors("optimizer.safetensors", swap_shapes),
                                  "optimizer.safetensors"),
    "moment of another shape": (tensors("optimizer.safetensors", first(
        "::exp_avg", lambda t: torch.zeros(3))), "optimizer.safetensors"),
    "moment a scalar": (tensors("optimizer.safetensors", first(
        "::exp_avg_sq", lambda t: torch.zeros(()))), "optimizer.safetensors"),
    "moment of integers": (tensors("optimizer.safetensors", first(
        "::exp_avg", lambda t: t.long())), "optimizer.safetensors"),
    "moment missing": (tensors("optimizer.safetensors", first("::exp_avg_sq", lambda t: None)),
                       "optimizer.safetensors"),
    "step a vector": (tensors("optimizer.safetensors", first(
        "::step", lambda t: torch.zeros(4))), "optimizer.safetensors"),
    "step negative": (tensors("optimizer.safetensors", first(
        "::step", lambda t: torch.tensor(-3.0))), "optimizer.safetensors"),
    "moment of no parameter": (tensors("optimizer.safetensors", lambda d: d.update(
        {"nothing::exp_avg": torch.zeros(2)})), "optimizer.safetensors"),
    "weights swapped": (tensors("trainable.safetensors", swap_shapes),
                        "trainable.safetensors"),
    "weight that would broadcast": (tensors("trainable.safetensors", first(
        "head.linear.weight", lambda t: t[:1])), "trainable.safetensors"),
    "generator state of the wrong size": (tensors("rng.safetensors", lambda d: d.update(
        torch=torch.zeros(3, dtype=torch.uint8))), "checkpoint"),
}
METRICS_CASES: dict[str, Mutation] = {
    "metrics.json -> /dev/zero": put("metrics.json", "<link>/dev/zero"),
    "metrics.json a fifo": put("metrics.json", "<fifo>"),
    "metrics.json junk": put("metrics.json", "{junk"),
    "metrics.json a list": put("metrics.json", "[]"),
    "metrics.json 100000 deep": put("metrics.json", DEEP),
    "metrics.json binary": put("metrics.json", b"\x00\xff\xfe\x80" * 64),
    "metrics.json 5 MB": put("metrics.json", "{}" + " " * (5 << 20)),
    "status interrupted": edit("metrics.json", lambda d: d.update(status="interrupted")),
    "status a number": edit("metrics.json", lambda d: d.update(status=3)),
    "validation a string": edit("metrics.json", lambda d: d.update(validation="good")),
    "validation f1 a string": edit("metrics.json", lambda d: d["validation"].update(f1="x")),
    "test a list": edit("metrics.json", lambda d: d.update(test=[])),
    "test f1 7": edit("metrics.json", lambda d: d["test"].update(f1=7)),
    "task unknown": edit("metrics.json", lambda d: d.update(task="poetry")),
    "train_seconds a string": edit("metrics.json", lambda d: d.update(train_seconds="long")),
}


def copy(runs: dict[str, Path], kind: str, name: str) -> Path:
    slug = "".join(c if c.isalnum() else "-" for c in name)
    target = runs["root"] / "cases" / slug
    if target.exists():
        shutil.rmtree(target)
    shutil.copytree(runs[kind], target, symlinks=True)
    return target


def refused(runs: dict[str, Path], kind: str,
            cases: dict[str, tuple[Mutation, str]]) -> list[str]:
    """The cases (name -> mutation, what the error names) not refused as they should be."""
    failures = []
    for name, (mutate, names) in cases.items():
        folder = copy(runs, kind, name)
        mutate(folder)
        try:
            assert resume(name, folder, names) == 2, f"{name}: exit 0"
        except AssertionError as err:
            failures.append(str(err).splitlines()[0][:300])
    return failures


def test_named_tampered_state_is_refused_in_one_line(runs) -> None:
    failures = refused(runs, "paused", {k: (v, "state.json") for k, v in STATE_CASES.items()})
    failures += refused(runs, "paused", TENSOR_CASES)
    assert not failures, "\n".join(failures)


def test_named_tampered_metrics_are_refused_in_one_line(runs) -> None:
    failures = refused(runs, "finished",
                       {k: (v, "metrics.json") for k, v in METRICS_CASES.items()})
    assert not failures, "\n".join(failures)
    folder = copy(runs, "finished", "untouched")
    assert resume("untouched", folder) == 0  # a finished run answers with its metrics


def test_a_log_that_is_no_file_is_refused_before_reading(runs) -> None:
    folder = copy(runs, "paused", "log -> /dev/zero")
    put("log.jsonl", "<link>/dev/zero")(folder)
    assert resume("log -> /dev/zero", folder, "log.jsonl") == 2


def test_moments_swapped_between_parameters_of_one_shape_still_resume(runs) -> None:
    # nothing tells such moments apart from the right ones; the run must still finish
    folder = copy(runs, "paused", "same-shape swap")
    tensors("optimizer.safetensors", swap_same_shape)(folder)
    assert resume("same-shape swap", folder) == 0


# ------------------------------------------------------------------ the random sweep
NASTY: list[object] = [None, -1, 0, 1.5, "x", "", 10**12, 10**30, [], {}, True, [1, "a"],
                       {"a": {"b": []}}, "9" * 60, "𝔘\u202e\x00", float("inf"),
                       float("nan"), -1e308]


def random_json(rng: random.Random, path: Path) -> str:
    """Set one randomly chosen entry (at any depth) of the JSON at ``path`` to a nasty value."""
    data = json.loads(path.read_text())
    spots: list[tuple[object, object]] = []
    stack: list[object] = [data]
    while stack:
        node = stack.pop()
        keys = list(node) if isinstance(node, dict) else range(len(node)) \
            if isinstance(node, list) else []
        for k in keys:
            spots.append((node, k))
            stack.append(node[k])  # type: ignore[index]
    node, key = rng.choice(spots)
    value = rng.choice(NASTY)
    node[key] = value  # type: ignore[index]
    path.write_text(json.dumps(data))
    return f"{path.name}: [{key!r}] = {value!r}"[:120]


def random_tensors(rng: random.Random, path: Path) -> str:
    data = load_file(str(path))
    key = rng.choice(sorted(data))
    how = rng.choice(["reshape", "dtype", "drop", "swap", "scalar", "extra"])
    if how == "reshape":
        data[key] = torch.zeros(rng.randint(1, 9), rng.randint(1, 9))
    elif how == "dtype":
        data[key] = data[key].to(rng.choice([torch.int64, torch.float16, torch.uint8]))
    elif how == "drop":
        del data[key]
    elif how == "swap":
        other = rng.choice(sorted(data))
        data[key], data[other] = data[other], data[key]
    elif how == "scalar":
        data[key] = torch.tensor(rng.choice([-1.0, 1e30, float("nan")]))
    else:
        data[f"{key}x"] = torch.zeros(2)
    save_file(data, str(path))
    return f"{path.name}: {how} {key}"


def test_random_tampering_is_refused_in_one_line_or_resumes(runs) -> None:
    rng = random.Random(37)
    outcomes = {0: 0, 2: 0}
    for i in range(SWEEP_CASES):
        which = i % 4
        folder = copy(runs, "finished" if which == 3 else "paused", "sweep")
        if which == 0:
            what = random_json(rng, folder / "checkpoint" / "state.json")
        elif which in (1, 2):
            what = random_tensors(rng, folder / "checkpoint" / rng.choice(
                ["optimizer.safetensors", "optimizer.safetensors", "trainable.safetensors",
                 "rng.safetensors"]))
        else:
            what = random_json(rng, folder / "metrics.json")
        outcomes[resume(f"case {i} ({what})", folder)] += 1
    print(f"{SWEEP_CASES} tampered resumes: {outcomes[2]} refused in one line, "
          f"{outcomes[0]} finished")
    assert outcomes[2]  # the sweep reaches refusals
