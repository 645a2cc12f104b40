"""Tampered run folders through the CLI, in process (issue 20): every case ends in exit 2 with
one ``error:`` line, or exit 0 with a well-formed answer; never a traceback, never code from
the folder, never a hang.

The cases are built from ONE tiny run (a fully fine-tuned labeler in ``best/``) and one tiny
LoRA labeler, made once for the module: the issue's list of named cases, then a seeded random
sweep (wrong types and absurd values in every JSON setting, truncated and corrupted weight and
tokenizer files). ``SEQREP_TAMPER_CASES=N`` (or the ``integration`` mark's test, 1,000 cases) runs a
larger sweep.
"""

from __future__ import annotations

import json
import os
import pickle
import random
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest
from support import write_corpus
from tampering import cli, edit_json, replace
from tampering import truncate as cut

LABELS = ["O", "B-PER", "I-PER", "B-LOC", "I-LOC"]
TEXT = "Obama visited Paris ."
CODE = """import pathlib
pathlib.Path({marker!r}).write_text("ran")
from transformers import LlamaConfig
class EvilConfig(LlamaConfig):
    model_type = "evil"
"""
CI_CASES = int(os.environ.get("SEQREP_TAMPER_CASES") or 100)


@pytest.fixture(scope="module")
def runs(tiny, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    from seqrep.model.labeler import SequenceLabeler

    root = tmp_path_factory.mktemp("tampered")
    run = root / "run"
    SequenceLabeler.from_model(tiny("llama"), labels=LABELS, repetitions=1, finetune="full",
                               exit_layer=2).save_pretrained(run / "best")
    (run / "run.json").write_text(json.dumps({"labeler": {"model": tiny("llama")},
                                              "train": {}}))
    lora = SequenceLabeler.from_model(tiny("llama"), labels=LABELS, repetitions=1,
                                      finetune="lora", exit_layer=2)
    return {"run": run, "lora": lora.save_pretrained(root / "lora"), "root": root,
            "data": write_corpus(root / "test.txt", 4)}


def check_outcome(case: str, code: int | str, out: str, err: str, marker: Path) -> None:
    assert not marker.exists(), f"{case}: code from the folder ran"
    assert code in (0, 2), f"{case}: {code}\n{err[-2000:]}"
    if code == 2:
        lines = err.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("error: "), f"{case}: {err!r}"
        return
    record = json.loads(out)  # a well-formed answer for the text
    assert record["text"] == TEXT
    for span in record["spans"]:
        assert TEXT[span["start"]:span["end"]] == span["text"], case


# ------------------------------------------------------------------ the named cases
Mutation = Callable[[Path, Path], None]  # (labeler folder, marker file)


def edit(rel: str, change: Callable[[dict], object]) -> Mutation:
    return lambda folder, marker: edit_json(folder / rel, change)


def put(rel: str, content: bytes | str) -> Mutation:
    return lambda folder, marker: replace(folder / rel, content)


def truncate(rel: str, keep: int) -> Mutation:
    return lambda folder, marker: cut(folder / rel, keep)


def labeler(**values: object) -> Mutation:
    return edit("config.json", lambda d: d["labeler"].update(values))


def backbone(**values: object) -> Mutation:
    return edit("backbone/config.json", lambda d: d.update(values))


def tokenizer_config(**values: object) -> Mutation:
    return edit("tokenizer/tokenizer_config.json", lambda d: d.update(values))


def remote_code(rel: str, key: str) -> Mutation:
    """Ship a module that writes the marker when imported, and ask for it."""
    def do(folder: Path, marker: Path) -> None:
        path = folder / rel
        data = json.loads(path.read_text())
        data["auto_map"] = {key: "evil_module.EvilConfig"}
        data["model_type"] = "evil"
        path.write_text(json.dumps(data))
        (path.parent / "evil_module.py").write_text(CODE.format(marker=str(marker)))
        cfg = json.loads((folder / "config.json").read_text())
        cfg["labeler"]["trust_remote_code"] = True
        (folder / "config.json").write_text(json.dumps(cfg))
    return do


def added_token(token_id: int) -> Mutation:
    return edit("tokenizer/tokenizer.json", lambda d: d["added_tokens"].append(
        {"id": token_id, "content": "<x>", "single_word": False, "lstrip": False,
         "rstrip": False, "normalized": False, "special": True}))


PICKLE = pickle.dumps({"weight": [1.0, 2.0]})
DEEP = "[" * 100_000 + "]" * 100_000
NAMED: dict[str, Mutation] = {
    "repetitions 1.5": labeler(repetitions=1.5),
    "repetitions 1000000": labeler(repetitions=1_000_000),
    "labeler []": put("config.json", '{"labeler": []}'),
    "config binary": put("config.json", b"\x00\xff\xfe\x80" * 64),
    "config 100000 deep": put("config.json", DEEP),
    "config 5000-digit int": put("config.json", '{"labeler": {"repetitions": ' + "7" * 5000
                                 + "}}"),
    "config a directory": put("config.json", "<dir>"),
    "config -> /dev/zero": put("config.json", "<link>/dev/zero"),
    "separator 5": labeler(separator=5),
    "attn_implementation 5": labeler(attn_implementation=5),
    "attn_implementation flash_attention_2": labeler(attn_implementation="flash_attention_2"),
    "5001 labels": labeler(labels=["O"] + [f"{p}-T{i}" for i in range(2500) for p in "BI"]),
    "labels a string": labeler(labels="OBI"),
    "max_subtokens 10^9": labeler(max_subtokens=10**9),
    "unmask 999": labeler(unmask="999"),
    "decoding x": labeler(decoding="x"),
    "trust_remote_code in the folder": labeler(trust_remote_code=True),
    "head truncated": truncate("head.safetensors", 100),
    "head a pickle": put("head.safetensors", PICKLE),
    "head missing": put("head.safetensors", "<dir>"),
    "weights truncated": truncate("backbone/model.safetensors", 1000),
    "weights a pickle": put("backbone/model.safetensors", PICKLE),
    "weights -> /dev/zero": put("backbone/model.safetensors", "<link>/dev/zero"),
    "num_hidden_layers 4000": backbone(num_hidden_layers=4000),
    "num_hidden_layers x": backbone(num_hidden_layers="x"),
    "num_hidden_layers 1": backbone(num_hidden_layers=1),
    "hidden_size 10^6": backbone(hidden_size=10**6),
    "vocab_size 10^9": backbone(vocab_size=10**9),
    "intermediate_size 10^9": backbone(intermediate_size=10**9),
    "bnb quantization": backbone(quantization_config={"quant_method": "bitsandbytes",
                                                      "load_in_4bit": True}),
    "gptq quantization": backbone(quantization_config={"quant_method": "gptq", "bits": 4}),
    "unknown rope": backbone(rope_scaling={"rope_type": "evil", "factor": 2.0}),
    "unknown dtype": backbone(torch_dtype="evil", dtype="evil"),
    "pad_token_id 10^12": backbone(pad_token_id=10**12),
    "model_type qwen2": backbone(model_type="qwen2"),
    "backbone config deep": put("backbone/config.json", DEEP),
    "backbone config -> /dev/zero": put("backbone/config.json", "<link>/dev/zero"),
    "model_max_length x": tokenizer_config(model_max_length="x"),
    "tokenizer_class BertTokenizer": tokenizer_config(tokenizer_class="BertTokenizer"),
    "added token id 10^9": added_token(10**9),
    "unk_token empty": tokenizer_config(unk_token=""),  # transformers recursed on its id
    "tokenizer.json truncated": truncate("tokenizer/tokenizer.json", 100),
    "remote code in backbone config": remote_code("backbone/config.json", "AutoConfig"),
    "remote code in tokenizer config": remote_code("tokenizer/tokenizer_config.json",
                                                   "AutoTokenizer"),
}
LORA: dict[str, Mutation] = {
    "adapter task_type EVIL": edit("adapter/adapter_config.json",
                                   lambda d: d.update(task_type="EVIL")),
    "adapter peft_type X": edit("adapter/adapter_config.json",
                                lambda d: d.update(peft_type="X")),
    "adapter r x": edit("adapter/adapter_config.json", lambda d: d.update(r="x")),
    "adapter targets nothing": edit("adapter/adapter_config.json",
                                    lambda d: d.update(target_modules=["nothing"])),
    "adapter weights truncated": truncate("adapter/adapter_model.safetensors", 200),
    "adapter weights a pickle": put("adapter/adapter_model.safetensors", PICKLE),
}


def tampered(runs: dict[str, Path], name: str, mutate: Mutation, lora: bool = False
             ) -> tuple[Path, Path]:
    """A fresh copy of the run (or the LoRA labeler) with ``mutate`` applied."""
    slug = "".join(c if c.isalnum() else "-" for c in name)
    target = runs["root"] / "cases" / slug
    if target.exists():
        shutil.rmtree(target)
    shutil.copytree(runs["lora"] if lora else runs["run"], target, symlinks=True)
    marker = runs["root"] / f"marker-{slug}"
    mutate(target if lora else target / "best", marker)
    return target, marker


def test_named_tampered_folders_are_one_line_or_a_correct_answer(runs) -> None:
    code, reference, err = cli("predict", str(runs["run"]), TEXT)
    assert code == 0, err
    refused = []
    for name, mutate in [*NAMED.items(), *((k, v) for k, v in LORA.items())]:
        folder, marker = tampered(runs, name, mutate, lora=name in LORA)
        code, out, err = cli("predict", str(folder), TEXT)
        check_outcome(name, code, out, err, marker)
        if code == 0 and name == "trust_remote_code in the folder":
            assert out == reference  # the setting is ignored, the answer unchanged
        if code == 2:
            refused.append(name)
        if name in ("config binary", "weights truncated", "vocab_size 10^9",
                    "adapter task_type EVIL", "model_max_length x"):
            for args in (["evaluate", str(folder), "--dataset", str(runs["data"])],
                         ["export", str(folder), "--onnx", str(folder.parent / "onnx")]):
                code, out, err = cli(*args)
                assert code == 2 and len(err.strip().splitlines()) == 1, (name, args, err)
    # every case that cannot give the untampered answer is refused
    assert len(refused) >= len(NAMED) + len(LORA) - 3, sorted(set(NAMED) - set(refused))


# ------------------------------------------------------------------ the random sweep
NASTY: list[object] = [None, -1, 0, 1.5, "x", "", 10**12, 10**30, [], {}, True, [1, "a"],
                       {"a": {"b": []}}, "9" * 60, "𝔘\u202e\x00", float("inf")]
BINARY_FILES = {"run": ["best/head.safetensors", "best/backbone/model.safetensors",
                        "best/tokenizer/tokenizer.json"],
                "lora": ["head.safetensors", "adapter/adapter_model.safetensors"]}


def random_mutation(rng: random.Random, folder: Path, kind: str) -> str:
    """Apply one random change to ``folder``; return what it was."""
    if rng.random() < 0.7:
        settings = sorted(str(p.relative_to(folder)) for p in folder.rglob("*.json")
                          if p.name not in ("tokenizer.json", "run.json"))
        rel = rng.choice(settings)
        path = folder / rel
        data = json.loads(path.read_text())
        target = data["labeler"] if rel.endswith("config.json") and "labeler" in data else data
        key = rng.choice(sorted(target) or ["x"])
        value = rng.choice(NASTY)
        target[key] = value
        path.write_text(json.dumps(data))
        return f"{rel}: {key}={value!r}"[:120]
    rel = rng.choice(BINARY_FILES[kind])
    path = folder / rel
    raw = bytearray(path.read_bytes())
    if rng.random() < 0.5:
        cut = rng.randrange(len(raw))
        path.write_bytes(bytes(raw[:cut]))
        return f"{rel}: truncated at {cut}"
    where = rng.randrange(min(len(raw), 4096))  # the header and the first tensors
    for i in range(where, min(where + rng.randint(1, 16), len(raw))):
        raw[i] = rng.randrange(256)
    path.write_bytes(bytes(raw))
    return f"{rel}: bytes {where}.. scrambled"


def sweep(runs: dict[str, Path], cases: int, seed: int) -> None:
    rng = random.Random(seed)
    outcomes = {0: 0, 2: 0}
    for i in range(cases):
        kind = "lora" if i % 4 == 3 else "run"
        target = runs["root"] / "sweep"
        if target.exists():
            shutil.rmtree(target)
        shutil.copytree(runs[kind], target)
        what = random_mutation(rng, target, kind)
        code, out, err = cli("predict", str(target), TEXT)
        check_outcome(f"case {i} ({what})", code, out, err, runs["root"] / "no-marker")
        outcomes[code] += 1  # type: ignore[index]
    print(f"{cases} tampered folders: {outcomes[2]} refused in one line, {outcomes[0]} "
          f"answered")
    assert outcomes[0] and outcomes[2]  # the sweep reaches both outcomes


def test_random_tampering_is_one_line_or_a_correct_answer(runs) -> None:
    sweep(runs, CI_CASES, seed=20)


@pytest.mark.integration
def test_a_larger_random_sweep(runs) -> None:
    sweep(runs, 1000, seed=2020)
