"""A run that keeps no backbone of its own (LoRA, frozen) on a base model from the Hugging Face
Hub (issue 40 item 3): it records the base by Hub id and the commit it was loaded at, reloads
on exactly that commit whatever the branch says later, and pushes with no local path in what
it uploads. Offline: the base is laid out in a huggingface_hub cache as snapshot_download
leaves it, at two commits (two different random models), with ``HF_HUB_OFFLINE=1``."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch
from hubcache import folder_files, lay_out_cache, tree, use_cache
from inprocess import seqrep
from support import make_tiny

BASE = "acme/tiny-base"
FIRST = "1" * 40  # the commit main named when the run was trained
LATER = "2" * 40  # main after a new base was pushed
LABELS = ["O", "B-PER", "I-PER"]
WORDS = [["Obama", "visited", "Paris", "."], ["Peter", "Blackburn"]]
TOKEN = "hf_test_token_not_real"


@pytest.fixture(scope="module")
def bases(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """Two tiny llamas of one architecture and different weights (seeds 0 and 1)."""
    root = tmp_path_factory.mktemp("hub-bases")
    return make_tiny(root / "a", "llama", 4, seed=0), make_tiny(root / "b", "llama", 4, seed=1)


@pytest.fixture
def hub(bases, tmp_path, monkeypatch) -> Path:
    """The cache with the base at FIRST, main naming FIRST."""
    root = use_cache(tmp_path / "hf-cache", monkeypatch)
    lay_out_cache(root, BASE, folder_files(bases[0]), commit=FIRST)
    return root


def _lora(tmp_path: Path, model: str = BASE) -> Path:
    from seqrep.model.labeler import SequenceLabeler

    torch.manual_seed(0)
    return SequenceLabeler.from_model(model, labels=LABELS, finetune="lora", exit_layer=2
                                      ).save_pretrained(tmp_path / "lora")


def _logits(source: str | Path) -> list[torch.Tensor]:
    from seqrep.model.labeler import SequenceLabeler

    return SequenceLabeler.from_pretrained(source).word_logits(WORDS, docs=None)


def test_an_adapter_on_a_hub_base_records_its_id_and_commit(hub, tmp_path) -> None:
    folder = _lora(tmp_path)
    record = json.loads((folder / "config.json").read_text())
    assert record["base"] == {"hub": BASE, "revision": FIRST}
    assert str(hub) not in (folder / "config.json").read_text()


def test_it_reloads_on_the_commit_it_was_trained_on(hub, bases, tmp_path) -> None:
    folder = _lora(tmp_path)
    before = _logits(folder)
    # a new base is pushed to main: the run still loads on FIRST
    lay_out_cache(hub, BASE, folder_files(bases[1]), commit=LATER)
    after = _logits(folder)
    assert all(torch.equal(a, b) for a, b in zip(before, after))
    # the control: the same adapter and head on the later base label otherwise
    on_later = _lora(tmp_path / "later")
    assert json.loads((on_later / "config.json").read_text())["base"]["revision"] == LATER
    assert not all(torch.equal(a, b) for a, b in zip(before, _logits(on_later)))


def test_a_base_commit_missing_from_the_cache_is_one_line(hub, tmp_path) -> None:
    folder = _lora(tmp_path)
    record = json.loads((folder / "config.json").read_text())
    record["base"]["revision"] = "3" * 40
    (folder / "config.json").write_text(json.dumps(record))
    before = tree(hub)
    ran = seqrep("predict", str(folder), "Obama visited Paris .")
    assert ran.returncode == 2, ran.stderr
    lines = ran.stderr.strip().splitlines()
    assert len(lines) == 1 and BASE in lines[0] and "3" * 40 in lines[0], ran.stderr
    assert tree(hub) == before


def test_a_base_given_as_its_cache_snapshot_is_recorded_by_id(hub, tmp_path) -> None:
    snapshot = hub / ("models--" + BASE.replace("/", "--")) / "snapshots" / FIRST
    folder = _lora(tmp_path, str(snapshot))
    assert json.loads((folder / "config.json").read_text())["base"] == \
        {"hub": BASE, "revision": FIRST}


def test_a_pushed_adapter_names_its_base_by_id_and_commit_and_no_path(hub, bases, tmp_path,
                                                                     monkeypatch) -> None:
    from test_hub import StandInApi, _committed

    folder = _lora(tmp_path)
    calls = StandInApi.install(monkeypatch)
    monkeypatch.setenv("HF_TOKEN", TOKEN)
    ran = seqrep("push", str(folder), "acme/tiny-lora")
    assert ran.returncode == 0, ran.stderr
    files = _committed(calls)
    assert "adapter/adapter_model.safetensors" in files and "head.safetensors" in files
    for rel, data in files.items():
        for local in (str(tmp_path), str(hub), str(bases[0])):
            assert local.encode() not in data, (rel, local)
    record = json.loads(files["config.json"])
    assert record["base"] == {"hub": BASE, "revision": FIRST}
    assert record["labeler"]["model"] == BASE
    adapter = json.loads(files["adapter/adapter_config.json"])
    assert (adapter["base_model_name_or_path"], adapter["revision"]) == (BASE, FIRST)
    # what was pushed loads from the cache on the pinned base, as the folder does
    lay_out_cache(hub, "acme/tiny-lora", files, commit="4" * 40)
    assert all(torch.equal(a, b) for a, b in zip(_logits(folder), _logits("acme/tiny-lora")))
