"""The model card renders what a run's records say inertly (issue 55 items 12, 12b), and push
refuses a path that is no folder in one line (item 13a), and pins an adapter's Hub base by its
commit in what it uploads.

The run folders here are planted: ``run.json``, ``metrics.json`` and ``best/config.json`` as a
hand (or an attacker) writes them; the card reads no weights, so no model is built. The card is
checked by an independent route: its front matter with ``yaml.safe_load``, its body with
markdown-it (CommonMark with GFM tables, raw HTML on), whose tokens say what a reader's renderer
would make of it: no HTML, no link but the card's own, every table row as many cells as its
header.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
import yaml
from inprocess import seqrep

IMG = "<img src=x onerror=alert(1)>"
JS = "[click](javascript:alert(2))"
LABEL = "B-`x|y</td>"
DATASET = f"evil\n---\nlicense: mit\n{IMG}\n{JS}"
HOSTILE = {
    "model": IMG,
    "labels": ["O", LABEL, "I-`x|y</td>", f"B-{JS}", f"I-{JS}", "B-a\nb", "I-a\nb"],
    "separator": "a``|<b>&amp;",
}
SOURCE = f"{IMG} | {JS}\n# a heading\n<script>alert(3)</script>"


def plant(root: Path, labeler: dict[str, Any], train: dict[str, Any] | None = None,
          metrics: dict[str, Any] | None = None, record: dict[str, Any] | None = None) -> Path:
    """A run folder as written by hand: best/config.json, and run.json / metrics.json when
    ``train`` / ``metrics`` are given."""
    labeler = {"exit_layer": None, **labeler}
    (root / "best").mkdir(parents=True)
    (root / "best" / "config.json").write_text(json.dumps({"labeler": labeler, **(record or {})}))
    if train is not None:
        (root / "run.json").write_text(json.dumps({"labeler": labeler, "train": train}))
    if metrics is not None:
        (root / "metrics.json").write_text(json.dumps({"status": "finished", **metrics}))
    return root


def split_card(card: str) -> tuple[dict[str, Any], str]:
    """(the front matter as YAML reads it, the Markdown body), cut by hand."""
    assert card.startswith("---\n")
    head, body = card[4:].split("\n---\n", 1)
    return yaml.safe_load(head), body


def tokens(body: str) -> list[Any]:
    from markdown_it import MarkdownIt

    return MarkdownIt("commonmark").enable("table").parse(body)


def tables(body: str) -> list[list[int]]:
    """The cell count of each row of each table markdown-it finds."""
    found, cells = [], 0
    for tok in tokens(body):
        if tok.type == "table_open":
            found.append([])
        elif tok.type in ("th_open", "td_open"):
            cells += 1
        elif tok.type == "tr_close":
            found[-1].append(cells)
            cells = 0
    return found


def inline_text(body: str) -> str:
    """What a reader sees: the text of every inline token and code span, joined."""
    out = []
    for tok in tokens(body):
        for child in tok.children or []:
            if child.type in ("text", "code_inline"):
                out.append(child.content)
    return "\n".join(out)


@pytest.fixture
def hostile(tmp_path: Path) -> str:
    from seqrep.model.card import model_card

    run = plant(tmp_path / "run", HOSTILE,
                train={"dataset": DATASET, "lr|x\n| a | b |": "`<b>`|", "notes": JS},
                metrics={"test": {"f1": 0.5, "precision": 0.25, "recall": 1.0},
                         "train_seconds": 12.5, "steps": 7, "validation_source": SOURCE})
    return model_card(run, "acme/tiny-ner")


def test_hostile_record_strings_leave_no_html_or_link(hostile) -> None:
    assert "<img" not in hostile.lower() and "<script" not in hostile.lower()
    assert "</td" not in hostile.lower() and "<b>" not in hostile
    assert "](javascript:" not in hostile
    _, body = split_card(hostile)
    toks = tokens(body)
    kinds = {t.type for t in toks} | {c.type for t in toks for c in t.children or []}
    assert not kinds & {"html_inline", "html_block"}, kinds
    links = [c.attrs["href"] for t in toks for c in t.children or [] if c.type == "link_open"]
    assert links == ["https://pypi.org/project/seqrep/"]
    headings = [toks[i + 1].content for i, t in enumerate(toks) if t.type == "heading_open"]
    assert headings == ["acme/tiny-ner", "Results", "Labels", "Settings", "Training", "Usage"]


def test_hostile_record_strings_keep_their_table_cells(hostile) -> None:
    _, body = split_card(hostile)
    # Results: split + 3 scores; Settings and Training: setting | value
    found = tables(body)
    assert [set(rows) for rows in found] == [{4}, {2}, {2}], found
    # the hostile training key and value are one row each, not extra rows
    training = found[2]
    # the header; dataset, the hostile key, notes; train_seconds, steps, validation_source
    assert len(training) == 7, training


def test_hostile_record_strings_are_shown_as_text(hostile) -> None:
    _, body = split_card(hostile)
    seen = inline_text(body)
    one_line = " ".join(SOURCE.split())
    assert one_line in seen  # the reader sees the value itself, on one line
    assert IMG in seen and JS in seen
    assert LABEL in seen
    assert " ".join(DATASET.split()) in seen
    assert "lr|x | a | b |" in seen


def test_hostile_dataset_name_stays_one_value_in_the_front_matter(hostile) -> None:
    meta, _ = split_card(hostile)
    assert set(meta) == {"library_name", "pipeline_tag", "tags", "model-index"}, meta
    assert meta["library_name"] == "seqrep"
    assert meta["tags"] == ["seqrep", "token-classification", "sequence-labeling", "auto",
                            "finetune-full"]
    [entry] = meta["model-index"]
    assert entry["name"] == "acme/tiny-ner"
    # a name that is no plain dataset name is not put in the metadata at all
    datasets = {(r["dataset"]["name"], r["dataset"]["type"]) for r in entry["results"]}
    assert datasets == {("custom", "custom")}
    assert {m["type"] for r in entry["results"] for m in r["metrics"]} == {
        "f1", "precision", "recall"}


def test_a_plain_local_dataset_name_is_kept_in_the_front_matter(tmp_path) -> None:
    from seqrep.model.card import model_card

    run = plant(tmp_path / "run", {"model": "acme/base", "labels": ["O", "B-PER", "I-PER"]},
                train={"dataset": "/home/someone/data/my train (v2).conll"},
                metrics={"test": {"f1": 0.5}})
    meta, body = split_card(model_card(run))
    [result] = meta["model-index"][0]["results"]
    assert result["dataset"] == {"name": "my train (v2).conll", "type": "my train (v2).conll",
                                 "split": "test"}
    assert "Trained on `my train (v2).conll`." in body


@pytest.mark.parametrize("value", ["<img src=x onerror=alert(1)>", True, [1], "12.5"])
def test_a_train_seconds_that_is_no_number_is_one_line(tmp_path, value) -> None:
    run = plant(tmp_path / "run", {"model": "acme/base", "labels": ["O", "B-PER", "I-PER"]},
                train={"dataset": "conll2003"},
                metrics={"test": {"f1": 0.5}, "train_seconds": value})
    ran = seqrep("card", str(run))
    assert ran.returncode == 2, ran.stderr
    lines = ran.stderr.strip().splitlines()
    assert len(lines) == 1 and "metrics.json" in lines[0] and "train_seconds" in lines[0], lines
    assert "<img" not in ran.stdout


def test_a_recorded_hub_base_that_is_no_hub_name_is_one_line(tmp_path) -> None:
    run = plant(tmp_path / "run", {"model": "acme/base", "labels": ["O"], "task": "tokens",
                                   "finetune": "lora"},
                record={"base": {"hub": "x)](javascript:alert(1)", "revision": "a" * 40}})
    ran = seqrep("card", str(run))
    assert ran.returncode == 2 and "javascript" not in ran.stdout, ran.stdout
    assert len(ran.stderr.strip().splitlines()) == 1 and "config.json" in ran.stderr


# ------------------------------------------------------------------------- 12b
DECODER = {"model_type": "llama"}
ENCODER = {"model_type": "bert"}


def _sentence(tmp_path: Path, kind: dict[str, str] | None, **labeler: Any) -> str:
    from seqrep.model.card import model_card

    run = plant(tmp_path / "run", {"model": "acme/base", "labels": ["O", "B-PER", "I-PER"],
                                   **labeler})
    if kind is not None:
        (run / "best" / "backbone").mkdir()
        (run / "best" / "backbone" / "config.json").write_text(json.dumps(kind))
    _, body = split_card(model_card(run))
    [line] = [x for x in body.splitlines() if x.startswith("A [seqrep]")]
    return line


@pytest.mark.parametrize(("kind", "labeler", "says"), [
    (DECODER, {"repetitions": 0}, "reads each sentence once, left to right: a causal "
     "decoder, so a word's state sees only the words up to it."),
    (DECODER, {"repetitions": 1}, "feeds each sentence k = r + 1 = 2 times, so that a causal "
     "decoder's states in the later copies see the whole sentence."),
    (DECODER, {"repetitions": 3}, "feeds each sentence k = r + 1 = 4 times, so that a causal "
     "decoder's states in the later copies see the whole sentence."),
    (DECODER, {"repetitions": 0, "unmask": "full"}, "reads each sentence once, with the "
     "decoder's attention unmasked (both ways) in every layer, so a word's state sees the "
     "whole sentence."),
    (DECODER, {"repetitions": 0, "unmask": "1,2"}, "reads each sentence once, with the "
     "decoder's attention unmasked (both ways) in layers 1, 2 (counted from 0) and causal "
     "in the others."),
    (DECODER, {"repetitions": 0, "unmask": "middle"}, "reads each sentence once, with the "
     "decoder's attention unmasked (both ways) in the middle layers and causal in the "
     "others."),
    (DECODER, {"repetitions": 1, "unmask": "full"}, "feeds each sentence k = r + 1 = 2 "
     "times, with the decoder's attention unmasked (both ways) in every layer, so a word's "
     "state sees the whole sentence."),
    (ENCODER, {"repetitions": 0}, "reads each sentence once: an encoder, whose states see "
     "the whole sentence."),
    (ENCODER, {"repetitions": 1}, "feeds each sentence k = r + 1 = 2 times: an encoder, whose "
     "states see the whole sentence in every copy."),
    (None, {"repetitions": 0}, "reads each sentence once."),
    (None, {"repetitions": 2}, "feeds each sentence k = r + 1 = 3 times (so that a causal "
     "decoder's states in the later copies see the whole sentence)."),
])
def test_the_card_says_how_each_strategy_reads(tmp_path, kind, labeler, says) -> None:
    line = _sentence(tmp_path, kind, finetune="full", **labeler)
    assert f"which {says}" in line, line
    assert "repeated" not in line


def test_a_packaged_encoder_is_told_as_an_encoder(tmp_path) -> None:
    line = _sentence(tmp_path, None, model="minilm-l6", finetune="lora", repetitions=0)
    assert "which reads each sentence once: an encoder, whose states see the whole " \
           "sentence." in line, line
    assert "decoder" not in line


# ------------------------------------------------------------------------- 13a
@pytest.mark.parametrize("command", ["push", "card"])
def test_a_file_for_a_run_folder_is_one_line(tmp_path, command) -> None:
    passwd = tmp_path / "passwd"
    passwd.write_text("root:x:0:0:root:/root:/bin/bash\n")
    args = ["push", str(passwd), "acme/x"] if command == "push" else ["card", str(passwd)]
    ran = seqrep(*args, env={"HF_TOKEN": "hf_test_token_not_real"})
    assert ran.returncode == 2, (ran.returncode, ran.stderr)
    lines = ran.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), ran.stderr
    assert "not a seqrep run folder" in lines[0] and "a file" in lines[0], lines[0]
    assert "does not exist" not in lines[0]


@pytest.mark.skipif(not Path("/etc/passwd").is_file(), reason="no /etc/passwd here")
def test_push_of_etc_passwd_says_it_is_no_run_folder() -> None:
    ran = seqrep("push", "/etc/passwd", "acme/x", env={"HF_TOKEN": None})
    assert ran.returncode == 2
    [line] = ran.stderr.strip().splitlines()
    assert "/etc/passwd" in line and "not a seqrep run folder" in line, line


def test_a_missing_run_folder_still_does_not_exist(tmp_path) -> None:
    ran = seqrep("push", str(tmp_path / "nope"), "acme/x", env={"HF_TOKEN": None})
    assert ran.returncode == 2
    [line] = ran.stderr.strip().splitlines()
    assert "does not exist" in line, line


# ------------------------------------------------------------------ adapter base
def test_push_pins_an_adapters_hub_base_by_its_commit(tmp_path) -> None:
    from seqrep.model.publish import ADAPTER_CONFIG, CONFIG, public_bytes

    commit = "1" * 40
    folder = plant(tmp_path / "run", {"model": "/home/someone/base", "labels": ["O"],
                                      "task": "tokens", "finetune": "lora"},
                   record={"base": {"hub": "acme/tiny-base", "revision": commit}}) / "best"
    (folder / "adapter").mkdir()
    (folder / "adapter" / "adapter_config.json").write_text(json.dumps(
        {"base_model_name_or_path": "/home/someone/base", "revision": None, "r": 4}))
    files = {CONFIG: folder / "config.json", ADAPTER_CONFIG: folder / ADAPTER_CONFIG}
    out = public_bytes(folder, files)
    adapter = json.loads(out[ADAPTER_CONFIG])
    assert adapter == {"base_model_name_or_path": "acme/tiny-base", "revision": commit, "r": 4}
    assert json.loads(out[CONFIG])["labeler"]["model"] == "acme/tiny-base"
    assert not re.search(rb"/home/someone", out[CONFIG] + out[ADAPTER_CONFIG])


def test_a_model_name_too_long_for_a_path_is_shown_cut(tmp_path) -> None:
    from seqrep.model.card import MAX_SHOWN, model_card

    run = plant(tmp_path / "run", {"model": "x" * 5000, "labels": ["O"], "task": "tokens"})
    _, body = split_card(model_card(run))
    assert f"`{'x' * MAX_SHOWN}...` (a local model)" in body
