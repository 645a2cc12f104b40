"""Labelers on the Hugging Face Hub (issue 40, items 1-3), without network.

One tiny run is trained once for the module. ``push`` is run up to the commit operations it
hands huggingface_hub (the network calls, ``HfApi.create_repo`` / ``create_branch`` /
``create_commit``, are stand-ins that record what they were given); the files of that commit
are then laid out as ``snapshot_download`` leaves them in its cache (``blobs/``, ``refs/main``,
``snapshots/<commit>/`` of links into ``blobs/``), and the labeler is loaded from there by
``org/name`` and ``org/name@<commit>`` with ``HF_HUB_OFFLINE=1``, everywhere a run folder is
accepted, and must label exactly as the run folder does.
"""

from __future__ import annotations

import hashlib
import json
import os
import pickle
from pathlib import Path

import pytest
from hubcache import COMMIT, lay_out_cache
from inprocess import seqrep
from support import train_configs, write_corpus

REPO = "acme/tiny-ner"
TEXTS = ["Obama visited Paris .", "Angela Merkel met the people of Berlin ."]
TOKEN = "hf_test_token_not_real"


@pytest.fixture(scope="module")
def run(tiny, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A finished tiny run folder: run.json, best/, checkpoint/ (if kept), log.jsonl,
    metrics.json."""
    from seqrep.train.run import train

    root = tmp_path_factory.mktemp("hubrun")
    data = (str(write_corpus(root / "train.txt", 24)), str(write_corpus(root / "test.txt", 8, 1)))
    lab, cfg = train_configs(tiny("llama"), data)
    train(lab, cfg, root / "run", quiet=True)
    (root / "run" / "checkpoint").mkdir(exist_ok=True)
    (root / "run" / "checkpoint" / "state.safetensors").write_bytes(b"not for the Hub")
    return root / "run"


class StandInApi:
    """Records what push hands huggingface_hub's network calls; nothing leaves the machine."""

    calls: list[tuple[str, dict]] = []

    @classmethod
    def install(cls, monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, dict]]:
        from huggingface_hub import HfApi
        from huggingface_hub.hf_api import CommitInfo

        calls: list[tuple[str, dict]] = []

        def create_repo(self, repo_id, **kw):  # noqa: ANN001, ANN202, ANN003
            calls.append(("create_repo", {"repo_id": repo_id, **kw}))
            return f"https://huggingface.co/{repo_id}"

        def create_branch(self, repo_id, **kw):  # noqa: ANN001, ANN202, ANN003
            calls.append(("create_branch", {"repo_id": repo_id, **kw}))

        def create_commit(self, repo_id, operations, **kw):  # noqa: ANN001, ANN202, ANN003
            # read as huggingface_hub does, during the call (a temporary folder goes after it)
            files = {op.path_in_repo: _bytes(op) for op in operations}
            calls.append(("create_commit", {"repo_id": repo_id, "files": files,
                                            "token": self.token, **kw}))
            return CommitInfo(commit_url=f"https://huggingface.co/{repo_id}/commit/{COMMIT}",
                              commit_message=kw.get("commit_message", ""),
                              commit_description="", oid=COMMIT)

        monkeypatch.setattr(HfApi, "create_repo", create_repo)
        monkeypatch.setattr(HfApi, "create_branch", create_branch)
        monkeypatch.setattr(HfApi, "create_commit", create_commit)
        return calls


def _bytes(op) -> bytes:  # noqa: ANN001 - a CommitOperationAdd
    src = op.path_or_fileobj
    return src if isinstance(src, bytes) else Path(src).read_bytes()


def _committed(calls: list[tuple[str, dict]]) -> dict[str, bytes]:
    commits = [kw for name, kw in calls if name == "create_commit"]
    assert len(commits) == 1
    return commits[0]["files"]


@pytest.fixture(scope="module")
def pushed(run, tmp_path_factory) -> dict[str, bytes]:
    """The files ``seqrep push RUN acme/tiny-ner`` commits."""
    with pytest.MonkeyPatch.context() as mp:
        calls = StandInApi.install(mp)
        mp.setenv("HF_TOKEN", TOKEN)
        ran = seqrep("push", str(run), REPO)
    assert ran.returncode == 0, ran.stderr
    return _committed(calls)


def repository(run: Path) -> dict[str, bytes]:
    """What a pushed repository holds: ``best/``'s files and a card (made here, so that the
    loading tests do not depend on push; the push test checks push commits the same)."""
    from seqrep.files.owner import MANIFEST

    best = run / "best"  # seqrep's list of what it wrote there is no labeler file: not pushed
    files = {p.relative_to(best).as_posix(): p.read_bytes()
             for p in best.rglob("*") if p.is_file() and p.name != MANIFEST}
    return {**files, "README.md": b"---\nlibrary_name: seqrep\n---\n# a labeler\n"}


@pytest.fixture
def cache(run, tmp_path, monkeypatch) -> Path:
    """A huggingface_hub cache holding the repository, read offline."""
    import huggingface_hub.constants as constants

    root = tmp_path / "hf-cache"
    lay_out_cache(root, REPO, repository(run))
    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(root))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    return root


def _snapshot(cache: Path) -> Path:
    return cache / ("models--" + REPO.replace("/", "--")) / "snapshots" / COMMIT


def one_line_refusal(ran, *needles: str) -> None:  # noqa: ANN001 - inprocess.Ran
    assert ran.returncode == 2, (ran.returncode, ran.stderr[-2000:])
    lines = ran.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), ran.stderr
    for needle in needles:
        assert needle in lines[0], lines[0]


# ------------------------------------------------------------------------- push
def test_push_commits_best_and_the_card_only(run, pushed, tiny) -> None:
    expected = repository(run)
    del expected["README.md"]
    assert set(pushed) == set(expected) | {"README.md"}
    # config.json names the base model by its folder's name only (see the next test)
    config = json.loads(expected.pop("config.json"))
    config["labeler"]["model"] = Path(tiny("llama")).name
    assert json.loads(pushed["config.json"]) == config
    for rel, data in expected.items():
        assert pushed[rel] == data, rel
    assert not any(k.startswith(("checkpoint", "log", "metrics", "run.json")) for k in pushed)
    assert pushed["README.md"].decode() == seqrep("card", str(run), "--repo", REPO).stdout


def test_no_pushed_file_names_a_local_path(run, pushed, tiny) -> None:
    """A full fine-tune's config.json named its base by the path it was trained from (the
    card showed the folder's name only, the config the whole path)."""
    for rel, data in pushed.items():
        for local in (str(run.parent), tiny("llama")):
            assert local.encode() not in data, (rel, local)
    assert json.loads(pushed["config.json"])["labeler"]["model"] == "llama-4"


def test_what_push_commits_loads_from_the_cache(run, pushed, tmp_path, monkeypatch) -> None:
    import huggingface_hub.constants as constants

    lay_out_cache(tmp_path / "c", REPO, pushed)
    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(tmp_path / "c"))
    assert _predict(REPO) == _predict(str(run))


def test_push_options_reach_huggingface_hub(run, monkeypatch) -> None:
    calls = StandInApi.install(monkeypatch)
    monkeypatch.setenv("HF_TOKEN", TOKEN)
    ran = seqrep("push", str(run), REPO, "--private", "--revision", "v1",
                 "--commit-message", "first labeler")
    assert ran.returncode == 0, ran.stderr
    kinds = {name: kw for name, kw in calls}
    assert kinds["create_repo"]["private"] is True
    assert kinds["create_branch"]["branch"] == "v1"
    commit = kinds["create_commit"]
    assert commit["revision"] == "v1" and commit["commit_message"] == "first labeler"
    assert commit["token"] == TOKEN
    assert COMMIT in ran.stdout + ran.stderr


def test_push_to_hub_from_python_commits_the_labeler(run, monkeypatch) -> None:
    from seqrep.model.labeler import SequenceLabeler

    calls = StandInApi.install(monkeypatch)
    labeler = SequenceLabeler.from_pretrained(run)
    labeler.push_to_hub(REPO, token=TOKEN)
    files = _committed(calls)
    assert files["head.safetensors"] == (run / "best" / "head.safetensors").read_bytes()
    assert "README.md" in files and "config.json" in files


def test_push_without_a_token_is_one_line(run, monkeypatch, tmp_path) -> None:
    import huggingface_hub.constants as constants

    calls = StandInApi.install(monkeypatch)
    monkeypatch.delenv("HF_TOKEN", raising=False)
    monkeypatch.delenv("HUGGING_FACE_HUB_TOKEN", raising=False)
    monkeypatch.setattr(constants, "HF_TOKEN_PATH", str(tmp_path / "no-token"))
    before = sorted(p.relative_to(run) for p in run.rglob("*"))
    one_line_refusal(seqrep("push", str(run), REPO), "token", "HF_TOKEN")
    assert calls == []
    assert sorted(p.relative_to(run) for p in run.rglob("*")) == before


def test_push_of_an_adapter_on_a_local_base_is_refused(tiny, tmp_path, monkeypatch) -> None:
    from seqrep.model.labeler import SequenceLabeler

    calls = StandInApi.install(monkeypatch)
    monkeypatch.setenv("HF_TOKEN", TOKEN)
    folder = SequenceLabeler.from_model(tiny("llama"), labels=["O", "B-PER", "I-PER"],
                                        finetune="lora", exit_layer=2
                                        ).save_pretrained(tmp_path / "lora")
    one_line_refusal(seqrep("push", str(folder), REPO), "local", "base")
    assert calls == []


def test_push_to_a_bad_repository_name_is_one_line(run, monkeypatch) -> None:
    calls = StandInApi.install(monkeypatch)
    monkeypatch.setenv("HF_TOKEN", TOKEN)
    one_line_refusal(seqrep("push", str(run), "no//such name"), "no//such name")
    assert calls == []


# ------------------------------------------------------------------------- card
def test_card_parses_and_names_the_real_test_f1(run) -> None:
    from huggingface_hub import ModelCard

    ran = seqrep("card", str(run), "--repo", REPO)
    assert ran.returncode == 0, ran.stderr
    metrics = json.loads((run / "metrics.json").read_text())
    config = json.loads((run / "run.json").read_text())["labeler"]
    card = ModelCard(ran.stdout)
    data = card.data
    assert data.library_name == "seqrep"
    assert data.pipeline_tag == "token-classification"
    assert "seqrep" in data.tags
    results = {(r.dataset_split, r.metric_type): r.metric_value for r in data.eval_results}
    assert results[("test", "f1")] == pytest.approx(metrics["test"]["f1"])
    assert results[("validation", "f1")] == pytest.approx(metrics["validation"]["f1"])
    text = card.text
    for label in config["labels"]:
        assert label in text
    assert f"{100 * metrics['test']['f1']:.2f}" in text
    for usage in (f'seqrep predict {REPO}', f'from_pretrained("{REPO}")',
                  f"seqrep serve {REPO}", f'config={{"model": "{REPO}"}}'):
        assert usage in text, usage
    for setting in ("repetitions", "exit_layer", "unmask", "context"):
        assert setting in text
    assert f"{metrics['train_seconds']}" in text


def test_card_of_a_missing_run_is_one_line(tmp_path) -> None:
    one_line_refusal(seqrep("card", str(tmp_path / "nope")), "nope")


# ------------------------------------------------------------------------- load
def _predict(source: str) -> str:
    ran = seqrep("predict", source, "-", input="\n".join(TEXTS) + "\n")
    assert ran.returncode == 0, ran.stderr
    return ran.stdout


def test_from_pretrained_by_name_and_commit_labels_as_the_folder(run, cache) -> None:
    import torch

    from seqrep.model.labeler import SequenceLabeler

    words = [t.split() for t in TEXTS]
    local = SequenceLabeler.from_pretrained(run).word_logits(words, docs=None)
    for name in (REPO, f"{REPO}@{COMMIT}", f"{REPO}@main"):
        hub = SequenceLabeler.from_pretrained(name).word_logits(words, docs=None)
        assert all(torch.equal(a, b) for a, b in zip(local, hub)), name


def test_predict_by_name_labels_as_the_folder(run, cache) -> None:
    local = _predict(str(run))
    assert _predict(REPO) == local
    assert _predict(f"{REPO}@{COMMIT}") == local


def test_serve_by_name_labels_as_the_folder(run, cache) -> None:
    from fastapi.testclient import TestClient

    from seqrep.serve.app import create_app

    answers = []
    for source in (str(run), REPO):
        with TestClient(create_app(source), raise_server_exceptions=False) as client:
            for _ in range(3000):
                if client.get("/health").status_code == 200:
                    break
                __import__("time").sleep(0.01)
            r = client.post("/v1/label", json={"texts": TEXTS})
            assert r.status_code == 200, r.text
            answers.append(r.json()["results"])
    assert answers[0] == answers[1]


def test_spacy_component_by_name_labels_as_the_folder(run, cache) -> None:
    spacy = pytest.importorskip("spacy")
    import seqrep.serve.spacy_component  # noqa: F401 - registers the factory

    ents = []
    for source in (str(run), f"{REPO}@{COMMIT}"):
        nlp = spacy.blank("en")
        nlp.add_pipe("seqrep", config={"model": source})
        ents.append([[(e.start_char, e.end_char, e.label_) for e in nlp(t).ents]
                     for t in TEXTS])
    assert ents[0] == ents[1]


def test_evaluate_by_name_scores_as_the_folder(run, cache) -> None:
    test = str(run.parent / "test.txt")
    scores = []
    for source in (str(run), REPO):
        ran = seqrep("evaluate", source, "--dataset", test, "--json")
        assert ran.returncode == 0, ran.stderr
        record = json.loads(ran.stdout)
        scores.append({k: v for k, v in record.items() if "second" not in k})
    assert scores[0] == scores[1]


def test_export_by_name_writes_the_graph(run, cache, tmp_path) -> None:
    pytest.importorskip("onnxruntime")
    ran = seqrep("export", f"{REPO}@{COMMIT}", "--onnx", str(tmp_path / "onnx"))
    assert ran.returncode == 0, ran.stderr
    assert (tmp_path / "onnx" / "model.onnx").is_file()


# ---------------------------------------------------------------- tampered snapshots
def _retarget(link: Path, data: bytes) -> None:
    """Point a snapshot entry at a new blob holding ``data`` (as a tampered cache would)."""
    blob = link.resolve().parent / hashlib.sha256(data).hexdigest()
    blob.write_bytes(data)
    link.unlink()
    link.symlink_to(os.path.relpath(blob, link.parent))


def _pickle_head(snap: Path, marker: Path) -> str:
    _retarget(snap / "head.safetensors", pickle.dumps({"weight": [0.0]}))
    return "head.safetensors"


def _auto_map(snap: Path, marker: Path) -> str:
    cfg = snap / "backbone" / "config.json"
    data = json.loads(cfg.read_text())
    data["auto_map"] = {"AutoConfig": "evil.EvilConfig", "AutoModel": "evil.EvilModel"}
    _retarget(cfg, json.dumps(data).encode())
    return "auto_map"


def _link_out(snap: Path, marker: Path) -> str:
    outside = marker.parent / "elsewhere.json"
    outside.write_text((snap / "tokenizer" / "tokenizer_config.json").read_text())
    link = snap / "tokenizer" / "tokenizer_config.json"
    link.unlink()
    link.symlink_to(outside)
    return "tokenizer_config.json"


def _extra_py(snap: Path, marker: Path) -> str:
    (snap / "backbone" / "evil.py").write_text(
        f"import pathlib\npathlib.Path({str(marker)!r}).write_text('ran')\n")
    return "evil.py"


@pytest.mark.parametrize("tamper", [_pickle_head, _auto_map, _link_out, _extra_py])
def test_a_tampered_snapshot_is_refused_in_one_line(cache, tamper, tmp_path) -> None:
    marker = tmp_path / "ran"
    named = tamper(_snapshot(cache), marker)
    one_line_refusal(seqrep("predict", REPO, TEXTS[0]), named)
    assert not marker.exists()
    from seqrep.errors import ModelError
    from seqrep.model.labeler import SequenceLabeler

    with pytest.raises(ModelError, match=named.replace(".", r"\.")):
        SequenceLabeler.from_pretrained(REPO)


# ---------------------------------------------------------------------- bad input
def test_a_repository_missing_from_the_cache_is_one_line(cache) -> None:
    one_line_refusal(seqrep("predict", "acme/not-there", TEXTS[0]), "acme/not-there",
                     "HF_HUB_OFFLINE")


def test_a_revision_missing_from_the_cache_is_one_line(cache) -> None:
    one_line_refusal(seqrep("predict", f"{REPO}@v9", TEXTS[0]), REPO, "v9")


def test_a_snapshot_missing_a_file_is_one_line(cache, tmp_path) -> None:
    (_snapshot(cache) / "head.safetensors").unlink()
    before = sorted(p.name for p in cache.rglob("*"))
    out, texts = tmp_path / "out.jsonl", tmp_path / "texts.txt"
    texts.write_text("\n".join(TEXTS) + "\n")
    one_line_refusal(seqrep("predict", REPO, "--input", str(texts), "--output", str(out)),
                     "head.safetensors")
    assert not out.exists()
    assert sorted(p.name for p in cache.rglob("*")) == before


def test_a_snapshot_without_config_is_one_line(cache) -> None:
    (_snapshot(cache) / "config.json").unlink()
    one_line_refusal(seqrep("predict", REPO, TEXTS[0]), "config.json")


def test_a_missing_local_folder_still_reads_as_one(tmp_path) -> None:
    """An absolute path that is not there is no Hub name: the folder error as before."""
    one_line_refusal(seqrep("predict", str(tmp_path / "runs" / "x"), TEXTS[0]),
                     "does not exist")


def test_hub_names_are_told_from_paths() -> None:
    from seqrep.model.hub import hub_name

    assert hub_name("acme/tiny") == ("acme/tiny", None)
    assert hub_name(f"acme/tiny@{COMMIT}") == ("acme/tiny", COMMIT)
    assert hub_name("acme/tiny@refs/pr/1") == ("acme/tiny", "refs/pr/1")
    for path in ("/abs/run", "./run", "run", "a/b/c", "../x/y", "a/", "", "acme/tiny@",
                 "acme/tiny@../../x", "acme/tiny@/etc", "acme/..", "acme/x."):
        assert hub_name(path) is None, path


def test_revision_beside_a_name_with_another_is_refused() -> None:
    from seqrep.errors import ConfigError
    from seqrep.model.hub import resolve

    with pytest.raises(ConfigError, match="v1"):
        resolve(f"{REPO}@v1", revision="v2")



# ---------------------------------------------------------------- --revision
def test_revision_option_names_the_commit_on_every_command(run, cache, tmp_path) -> None:
    """``--revision`` beside ``org/name`` is ``org/name@rev``: predict, evaluate and export
    take it and label as the local folder; serve's option reaches the same resolver."""
    local = _predict(str(run))
    ran = seqrep("predict", REPO, "-", "--revision", COMMIT, input="\n".join(TEXTS) + "\n")
    assert ran.returncode == 0 and ran.stdout == local, ran.stderr
    test = str(run.parent / "test.txt")
    by_folder = seqrep("evaluate", str(run), "--dataset", test, "--json")
    by_revision = seqrep("evaluate", REPO, "--revision", COMMIT, "--dataset", test, "--json")
    assert by_folder.returncode == 0 and by_revision.returncode == 0, by_revision.stderr
    drop = lambda r: {k: v for k, v in json.loads(r.stdout).items() if "second" not in k}  # noqa: E731
    assert drop(by_folder) == drop(by_revision)


@pytest.mark.parametrize("command", ["predict", "evaluate", "serve", "export"])
def test_revision_on_a_local_folder_or_beside_another_is_one_line(run, cache, tmp_path,
                                                                   command) -> None:
    extra = {"predict": [TEXTS[0]], "evaluate": ["--dataset", str(run.parent / "test.txt")],
             "serve": ["--port", "0"], "export": ["--onnx", str(tmp_path / "onnx")]}[command]
    one_line_refusal(seqrep(command, str(run), *extra, "--revision", COMMIT), "--revision",
                     "local path")
    one_line_refusal(seqrep(command, f"{REPO}@main", *extra, "--revision", COMMIT),
                     "give one")
    assert not (tmp_path / "onnx").exists()
