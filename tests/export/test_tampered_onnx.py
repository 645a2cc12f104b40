"""Tampered ONNX export folders through the CLI, in process (issue 37, item 8): any folder
with a ``seqrep-onnx.json`` is loaded by the default runtime, so an export folder is checked
like a run folder (tests/test_tampered_runs.py): every case below ends in exit 2 with one
``error:`` line naming what is wrong, nothing printed on stdout, no code from the folder run,
no hang.

ONE tiny export (a random 2-layer llama, 5 labels, 400 embeddings) is made for the module and
copied per case. The cases: the metadata file (binary, deep, huge, a device, wrong types in
each field the runtime reads), the graph file and its name (``../``, absolute, a subfolder),
the label count against the graph's, and the tokenizer files (truncated, nested, binary,
missing, linked to ``/dev/zero``, remote code, ids past the embedding table).
"""

from __future__ import annotations

import json
import os
import random
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest
import torch

pytest.importorskip("onnxruntime")
pytest.importorskip("onnx")
pytest.importorskip("onnxscript")

from inprocess import Ran, seqrep  # noqa: E402
from tampering import deadline, edit_json, replace  # noqa: E402
from tampering import truncate as cut  # noqa: E402

from seqrep.export.files import META_FILE  # noqa: E402

LABELS = ["O", "B-PER", "I-PER", "B-LOC", "I-LOC"]
TEXT = "Obama visited Paris ."
EMBEDDINGS = 400  # rows of the tiny byte-level BPE model's embedding table (tests/support.py)
CODE = """import pathlib
pathlib.Path({marker!r}).write_text("ran")
from transformers import PreTrainedTokenizerFast
class EvilTokenizer(PreTrainedTokenizerFast):
    pass
"""
DEEP = "[" * 100_000 + "]" * 100_000
SWEEP_CASES = int(os.environ.get("SEQREP_TAMPER_CASES") or 60)


@pytest.fixture(scope="module")
def export(tiny, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """One untampered export (made without the parity check: it is not what is tested)."""
    from seqrep.export.onnx import export_onnx
    from seqrep.model.labeler import SequenceLabeler

    root = tmp_path_factory.mktemp("tampered-onnx")
    torch.manual_seed(0)
    saved = SequenceLabeler.from_model(tiny("llama"), LABELS, repetitions=1, exit_layer=2,
                                       decoding="greedy").save_pretrained(root / "labeler")
    out = export_onnx(saved, root / "onnx", check=False)
    return {"root": root, "onnx": out}


def run_cli(*args: str, seconds: int = 60) -> Ran:
    """``seqrep ARGS`` in this process, with a deadline (a FIFO or a device read forever)."""
    with deadline(seconds):
        return seqrep(*args)


# ------------------------------------------------------------------ mutations
Mutation = Callable[[Path, Path], None]  # (export folder, marker file)


def edit(rel: str, change: Callable[[dict], object]) -> Mutation:
    return lambda folder, marker: edit_json(folder / rel, change)


def put(rel: str, content: bytes | str) -> Mutation:
    """Replace ``rel`` by ``content``: bytes, text, ``<dir>``, ``<fifo>``, ``<gone>`` or
    ``<link>TARGET``."""
    return lambda folder, marker: replace(folder / rel, content)


def truncate(rel: str, keep: int) -> Mutation:
    return lambda folder, marker: cut(folder / rel, keep)


def meta(**values: object) -> Mutation:
    return edit(META_FILE, lambda d: d.update(values))


def without(key: str) -> Mutation:
    return edit(META_FILE, lambda d: {k: v for k, v in d.items() if k != key})


def labeler(**values: object) -> Mutation:
    """The labeler config changed alike in the metadata and in ``config.json``."""
    def do(folder: Path, marker: Path) -> None:
        for rel in (META_FILE, "config.json"):
            edit(rel, lambda d: d["labeler"].update(values))(folder, marker)
    return do


def backbone(**values: object) -> Mutation:
    return edit(META_FILE, lambda d: d["backbone"].update(values))


def tokenizer_config(**values: object) -> Mutation:
    return edit("tokenizer/tokenizer_config.json", lambda d: d.update(values))


def graph_outside(where: str) -> Mutation:
    """The intact graph copied out of the folder (its sha256 still matches) and named by
    ``model_file``: ``abs`` (an absolute path), ``up`` (``../``) or ``sub`` (a subfolder)."""
    def do(folder: Path, marker: Path) -> None:
        graph = folder / "model.onnx"
        if where == "sub":
            (folder / "sub").mkdir()
            name = "sub/model.onnx"
            shutil.copy(graph, folder / name)
        else:
            outside = folder.parent / f"{folder.name}-outside.onnx"
            shutil.copy(graph, outside)
            name = str(outside) if where == "abs" else f"../{outside.name}"
        graph.unlink()
        meta(model_file=name)(folder, marker)
    return do


def junk_graph(folder: Path, marker: Path) -> None:
    """A graph that is no ONNX model, with the metadata's sha256 updated to match it."""
    from seqrep.export.files import sha256

    graph = folder / "model.onnx"
    graph.write_bytes(b"not a protobuf \x00\xff" * 100)
    meta(sha256=sha256(graph), files={"model.onnx": sha256(graph)})(folder, marker)


def int8(**values: object) -> Mutation:
    """An int8 variant record pointing at the fp32 graph (valid), with ``values`` over it."""
    def do(folder: Path, marker: Path) -> None:
        data = json.loads((folder / META_FILE).read_text(encoding="utf-8"))
        record = {"model_file": data["model_file"], "sha256": data["sha256"], **values}
        data["variants"] = {"int8": record}
        (folder / META_FILE).write_text(json.dumps(data), encoding="utf-8")
    return do


def huge_meta(folder: Path, marker: Path) -> None:
    """A valid ``seqrep-onnx.json`` padded past 4 MiB (the bounded reader's cap)."""
    path = folder / META_FILE
    path.write_text(path.read_text(encoding="utf-8") + " " * (5 << 20), encoding="utf-8")


def remote_tokenizer(folder: Path, marker: Path) -> None:
    """Ship a module that writes the marker when imported, and ask AutoTokenizer for it."""
    tok = folder / "tokenizer"
    data = json.loads((tok / "tokenizer_config.json").read_text(encoding="utf-8"))
    data["auto_map"] = {"AutoTokenizer": [None, "evil_module.EvilTokenizer"]}
    (tok / "tokenizer_config.json").write_text(json.dumps(data), encoding="utf-8")
    (tok / "evil_module.py").write_text(CODE.format(marker=str(marker)), encoding="utf-8")


def added_token(token_id: int) -> Mutation:
    return edit("tokenizer/tokenizer.json", lambda d: d["added_tokens"].append(
        {"id": token_id, "content": "<x>", "single_word": False, "lstrip": False,
         "rstrip": False, "normalized": False, "special": True}))


def vocab_id(token_id: int) -> Mutation:
    """The vocabulary's entry for the letter ``O`` (in every probe text) renumbered."""
    return edit("tokenizer/tokenizer.json", lambda d: d["model"]["vocab"].update(O=token_id))


def slow_files_beside(folder: Path) -> None:
    """The tokenizer folder as SmolLM2's (a GPT-2 tokenizer with ``vocab.json`` and
    ``merges.txt`` beside ``tokenizer.json``), then ``tokenizer.json`` linked to
    ``/dev/zero``: transformers skips what is no regular file and builds another tokenizer
    from the slow files, and the labels came out silently wrong (exit 0)."""
    tok = folder / "tokenizer"
    data = json.loads((tok / "tokenizer.json").read_text(encoding="utf-8"))
    (tok / "vocab.json").write_text(json.dumps(data["model"]["vocab"]), encoding="utf-8")
    merges = [m if isinstance(m, str) else " ".join(m) for m in data["model"]["merges"]]
    (tok / "merges.txt").write_text("#version: 0.2\n" + "\n".join(merges) + "\n",
                                    encoding="utf-8")
    tokenizer_config(tokenizer_class="GPT2Tokenizer")(folder, folder)
    put(TOK, "<link>/dev/zero")(folder, folder)


def sparse(rel: str, size: int) -> Mutation:
    def do(folder: Path, marker: Path) -> None:
        with open(folder / rel, "wb") as f:
            f.truncate(size)
    return do


TOK = "tokenizer/tokenizer.json"
TOK_CONFIG = "tokenizer/tokenizer_config.json"
# name: (mutation, a fragment the one error line must hold, extra CLI arguments)
CASES: dict[str, tuple[Mutation, str, tuple[str, ...]]] = {
    # the metadata file itself
    "meta binary": (put(META_FILE, b"\x00\xff\xfe\x80" * 64), META_FILE, ()),
    "meta 100000 deep": (put(META_FILE, DEEP), META_FILE, ()),
    "meta 5000-digit int": (put(META_FILE, '{"format": "seqrep-onnx", "opset": '
                                + "7" * 5000 + "}"), META_FILE, ()),
    "meta truncated": (truncate(META_FILE, 100), META_FILE, ()),
    "meta a list": (put(META_FILE, "[]"), META_FILE, ()),
    "meta over 4 MiB": (huge_meta, META_FILE, ()),
    "meta -> /dev/zero": (put(META_FILE, "<link>/dev/zero"), META_FILE, ()),
    "meta a directory": (put(META_FILE, "<dir>"), META_FILE, ()),
    "meta a FIFO": (put(META_FILE, "<fifo>"), META_FILE, ()),
    "format other": (meta(format="other"), META_FILE, ()),
    # the labeler config inside it
    "labeler a list": (meta(labeler=[]), "labeler", ()),
    "labeler a string": (meta(labeler="x"), "labeler", ()),
    "labeler missing": (without("labeler"), "labeler", ()),
    "labels a string": (labeler(labels="OBI"), "labels", ()),
    "3 labels, the graph has 5": (labeler(labels=LABELS[:3]), "outputs 5", ()),
    "7 labels, the graph has 5": (labeler(labels=[*LABELS, "B-ORG", "I-ORG"]), "outputs 5",
                                  ()),
    "repetitions 1.5": (labeler(repetitions=1.5), "repetitions", ()),
    "repetitions 1000000": (labeler(repetitions=1_000_000), "repetitions", ()),
    "max_subtokens 10^9": (labeler(max_subtokens=10**9), "max_subtokens", ()),
    "decoding x": (labeler(decoding="x"), "decoding", ()),
    # the labeler config the server reads before loading
    "config.json labels differ": (edit("config.json", lambda d: d["labeler"].update(
        labels=["O", "B-ORG", "I-ORG", "B-MISC", "I-MISC"])), "config.json", ()),
    "config.json binary": (put("config.json", b"\x00\xff\xfe\x80" * 64), "config.json", ()),
    # the backbone facts
    "backbone a list": (meta(backbone=[]), "backbone", ()),
    "backbone a string": (meta(backbone="x"), "backbone", ()),
    "backbone missing": (without("backbone"), "backbone", ()),
    "hidden_size x": (backbone(hidden_size="x"), "hidden_size", ()),
    "hidden_size 31, the graph's 32": (backbone(hidden_size=31), "outputs 32", ()),
    "num_layers -3": (backbone(num_layers=-3), "num_layers", ()),
    "pad_id 10^9": (backbone(pad_id=10**9), "pad_id", ()),
    "first_position -1": (backbone(first_position=-1), "first_position", ()),
    "unmasked_layers a string": (meta(unmasked_layers="abc"), "unmasked_layers", ()),
    # the graph file and its name
    "model_file an integer": (meta(model_file=5), "model_file", ()),
    "model_file a list": (meta(model_file=["model.onnx"]), "model_file", ()),
    "model_file ../": (graph_outside("up"), "model_file", ()),
    "model_file absolute": (graph_outside("abs"), "model_file", ()),
    "model_file in a subfolder": (graph_outside("sub"), "model_file", ()),
    "model_file missing": (meta(model_file="nothing.onnx"), "nothing.onnx", ()),
    "graph -> /dev/zero": (put("model.onnx", "<link>/dev/zero"), "model.onnx", ()),
    "graph a directory": (put("model.onnx", "<dir>"), "model.onnx", ()),
    "graph truncated": (truncate("model.onnx", 1000), "model.onnx", ()),
    "graph junk, sha256 updated": (junk_graph, "model.onnx", ()),
    "sha256 an integer": (meta(sha256=5), "sha256", ()),
    "variants a list (int8)": (meta(variants=[]), "variants", ("--runtime", "onnx-int8")),
    "int8 record a string": (meta(variants={"int8": "x"}), "int8",
                             ("--runtime", "onnx-int8")),
    "int8 model_file ../": (int8(model_file="../model.onnx"), "model_file",
                            ("--runtime", "onnx-int8")),
    "int8 model_file a list": (int8(model_file=[]), "model_file",
                               ("--runtime", "onnx-int8")),
    # the tokenizer files
    "tokenizer.json truncated": (truncate(TOK, 100), "tokenizer", ()),
    "tokenizer.json a directory": (put(TOK, "<dir>"), "tokenizer", ()),
    "tokenizer.json binary": (put(TOK, b"\x00\xff\xfe\x80" * 64), "tokenizer", ()),
    "tokenizer.json missing": (put(TOK, "<gone>"), "tokenizer", ()),
    "tokenizer.json -> /dev/zero": (put(TOK, "<link>/dev/zero"), "tokenizer.json", ()),
    "tokenizer.json a FIFO": (put(TOK, "<fifo>"), "tokenizer.json", ()),
    "tokenizer.json -> /dev/zero, slow files beside": (lambda f, m: slow_files_beside(f),
                                                       "tokenizer.json", ()),
    "tokenizer.json 100000 deep": (put(TOK, DEEP), "tokenizer", ()),
    "tokenizer folder missing": (put("tokenizer", "<gone>"), "tokenizer", ()),
    "tokenizer folder a file": (put("tokenizer", "x"), "tokenizer", ()),
    "tokenizer a 300 MB vocab.txt": (sparse("tokenizer/vocab.txt", 300 << 20), "vocab.txt",
                                     ()),
    "tokenizer_config -> /dev/zero": (put(TOK_CONFIG, "<link>/dev/zero"),
                                      "tokenizer_config.json", ()),
    "tokenizer_config binary": (put(TOK_CONFIG, b"\x00\xff\xfe\x80" * 64), "tokenizer", ()),
    "tokenizer_config 100000 deep": (put(TOK_CONFIG, DEEP), "tokenizer", ()),
    "model_max_length x": (tokenizer_config(model_max_length="x"), "model_max_length", ()),
    "unk_token empty": (tokenizer_config(unk_token=""), "tokenizer", ()),
    "remote code in tokenizer config": (remote_tokenizer, "auto_map", ()),
    f"added token id {EMBEDDINGS}": (added_token(EMBEDDINGS), str(EMBEDDINGS), ()),
    "added token id 10^9": (added_token(10**9), "tokenizer", ()),
    "vocabulary id past the table": (vocab_id(EMBEDDINGS + 50), str(EMBEDDINGS + 50), ()),
}


def tampered(export: dict[str, Path], name: str, mutate: Mutation) -> tuple[Path, Path]:
    """A fresh copy of the export with ``mutate`` applied, and the marker remote code
    would write."""
    slug = "".join(c if c.isalnum() else "-" for c in name)
    target = export["root"] / "cases" / slug
    if target.exists():
        shutil.rmtree(target)
    shutil.copytree(export["onnx"], target, symlinks=True)
    marker = export["root"] / f"marker-{slug}"
    mutate(target, marker)
    return target, marker


def refusal(folder: Path, ran: Ran, marker: Path, fragment: str) -> str | None:
    """What is wrong with a case's outcome (None: one line, exit 2, nothing run, and the
    line names ``fragment`` outside the folder's own path)."""
    lines = ran.stderr.strip().replace(str(folder), "FOLDER").splitlines()
    if marker.exists():
        return "code from the folder ran"
    if ran.returncode != 2 or len(lines) != 1 or not lines[0].startswith("error: "):
        return f"exit {ran.returncode}, stderr {ran.stderr[-600:]!r}"
    if ran.stdout:
        return f"labels printed: {ran.stdout[:200]!r}"
    if fragment not in lines[0]:
        return f"the line does not name {fragment!r}: {lines[0]!r}"
    return None


def test_the_untampered_export_answers(export) -> None:
    ran = run_cli("predict", str(export["onnx"]), TEXT)
    assert ran.returncode == 0, ran.stderr
    assert json.loads(ran.stdout)["text"] == TEXT


def test_every_tampered_export_is_one_line_exit_2(export) -> None:
    assert len(CASES) >= 46
    failures = {}
    for name, (mutate, fragment, extra) in CASES.items():
        folder, marker = tampered(export, name, mutate)
        problem = refusal(folder, run_cli("predict", str(folder), TEXT, *extra), marker,
                          fragment)
        if problem:
            failures[name] = problem
    assert not failures, f"{len(failures)} of {len(CASES)} cases:\n" + "\n".join(
        f"{k}: {v}" for k, v in failures.items())


def test_tokenizer_linked_to_dev_zero_is_refused_not_silently_wrong(export) -> None:
    """The attack's case that exited 0 and labeled with another tokenizer."""
    folder, marker = tampered(export, "dev-zero tokenizer", lambda f, m: slow_files_beside(f))
    ran = run_cli("predict", str(folder), TEXT)
    assert refusal(folder, ran, marker, "tokenizer.json") is None, ran.stderr


def test_quantize_reads_the_metadata_bounded(export, tmp_path: Path) -> None:
    """Item 5: the int8 recipe reads ``seqrep-onnx.json`` through the bounded reader, so a
    padded 5 MiB one is refused in one line before any graph is written."""
    from seqrep.errors import ModelError
    from seqrep.export.quantize import INT8_FILE, quantize_int8

    folder = shutil.copytree(export["onnx"], tmp_path / "onnx")
    huge_meta(folder, tmp_path / "marker")
    with pytest.raises(ModelError, match="larger than"):
        quantize_int8(folder)
    assert not (folder / INT8_FILE).exists()


def test_export_command_reads_the_metadata_bounded(export, tmp_path: Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """Item 5: ``seqrep export`` reads the metadata it reports on through the bounded reader
    (the exporter is replaced by a copy of the module's export with a padded metadata file)."""
    from seqrep.export import onnx as onnx_export

    def fake_export(run, out, *args, **kw) -> Path:  # noqa: ANN001
        shutil.copytree(export["onnx"], out)
        huge_meta(Path(out), tmp_path / "marker")
        return Path(out)

    monkeypatch.setattr(onnx_export, "export_onnx", fake_export)
    ran = run_cli("export", str(export["root"] / "labeler"), "--onnx", str(tmp_path / "out"))
    lines = ran.stderr.strip().splitlines()
    assert ran.returncode == 2 and len(lines) == 1 and "larger than" in lines[0], ran.stderr


# ------------------------------------------------------------------ the random sweep
NASTY: list[object] = [None, -1, 0, 1.5, "x", "", 10**12, 10**30, [], {}, True, [1, "a"],
                       {"a": {"b": []}}, "9" * 60, "\U0001d518\u202e\x00", "../model.onnx"]
SETTINGS = [META_FILE, f"{META_FILE}:labeler", f"{META_FILE}:backbone", "config.json:labeler",
            TOK_CONFIG]
BINARY = ["model.onnx", TOK]


def random_mutation(rng: random.Random, folder: Path) -> str:
    """One random change: a field of a JSON setting set to a nasty value (70 %), else a
    graph or tokenizer file truncated or with bytes scrambled; returns what it was."""
    if rng.random() < 0.7:
        rel, _, part = rng.choice(SETTINGS).partition(":")
        path = folder / rel
        data = json.loads(path.read_text(encoding="utf-8"))
        target = data[part] if part else data
        key = rng.choice(sorted(target))
        value = rng.choice(NASTY)
        target[key] = value
        path.write_text(json.dumps(data), encoding="utf-8")
        return f"{rel} {part}: {key}={value!r}"[:120]
    rel = rng.choice(BINARY)
    path = folder / rel
    raw = bytearray(path.read_bytes())
    if rng.random() < 0.5:
        cut = rng.randrange(len(raw))
        path.write_bytes(bytes(raw[:cut]))
        return f"{rel}: truncated at {cut}"
    where = rng.randrange(min(len(raw), 4096))
    for i in range(where, min(where + rng.randint(1, 16), len(raw))):
        raw[i] = rng.randrange(256)
    path.write_bytes(bytes(raw))
    return f"{rel}: bytes {where}.. scrambled"


def test_random_tampering_is_one_line_or_a_correct_answer(export) -> None:
    """A seeded sweep (``SEQREP_TAMPER_CASES=N`` for more): each case is refused in one line
    or answers with well-formed spans of the text, never a traceback or a hang."""
    rng = random.Random(37)
    outcomes = {0: 0, 2: 0}
    target = export["root"] / "sweep"
    for i in range(SWEEP_CASES):
        if target.exists():
            shutil.rmtree(target)
        shutil.copytree(export["onnx"], target)
        what = random_mutation(rng, target)
        ran = run_cli("predict", str(target), TEXT)
        assert ran.returncode in (0, 2), f"case {i} ({what}): {ran.stderr[-1500:]}"
        if ran.returncode == 2:
            lines = ran.stderr.strip().splitlines()
            assert len(lines) == 1 and lines[0].startswith("error: "), (i, what, ran.stderr)
            assert not ran.stdout, (i, what)
        else:
            record = json.loads(ran.stdout)
            assert record["text"] == TEXT, (i, what)
            for span in record["spans"]:
                assert TEXT[span["start"]:span["end"]] == span["text"], (i, what)
        outcomes[ran.returncode] += 1
    print(f"{SWEEP_CASES} tampered exports: {outcomes[2]} refused in one line, "
          f"{outcomes[0]} answered")
    assert outcomes[0] and outcomes[2]  # the sweep reaches both outcomes
