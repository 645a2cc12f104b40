"""What the Hugging Face Hub answers when it refuses (issue 40, "Bad input"): a private, gated
or missing repository, a revision that does not exist, a Hub out of reach, a push the Hub
refuses. The network is replaced only where seqrep calls huggingface_hub
(``snapshot_download``, ``HfApi``), by stand-ins raising huggingface_hub's own exception types
as it raises them; with the Hub "online" (``HF_HUB_OFFLINE`` unset), every command stops in
one line naming the repository and what was expected, exit 2, with nothing written."""

from __future__ import annotations

from pathlib import Path

import pytest
from hubcache import tree
from inprocess import seqrep
from support import hand_made_teacher, write_corpus

TOKEN = "hf_test_token_not_real"


def _http(kind: str, status: int, url: str) -> Exception:
    """huggingface_hub's exception ``kind`` as it raises it for an HTTP answer."""
    import httpx2
    from huggingface_hub import errors

    response = httpx2.Response(status, request=httpx2.Request("GET", url))
    return getattr(errors, kind)(f"{status} Client Error for url: {url}", response=response)


def _refusals() -> dict[str, Exception]:
    from huggingface_hub.errors import LocalEntryNotFoundError

    url = "https://huggingface.co/api/models/acme/secret/revision/main"
    return {"private": _http("RepositoryNotFoundError", 401, url),
            "gated": _http("GatedRepoError", 403, url),
            "missing": _http("RepositoryNotFoundError", 404, url),
            "revision": _http("RevisionNotFoundError", 404, url),
            "unreachable": LocalEntryNotFoundError("cannot reach the Hub and no cached file")}


# what each refusal's line must say, beside the repository's name
SAYS = {"private": "private", "gated": "gated", "missing": "no model repository",
        "revision": "no revision", "unreachable": "could not be reached"}


@pytest.fixture
def online(tmp_path, monkeypatch) -> Path:
    """The Hub "in reach": HF_HUB_OFFLINE unset, an empty cache of our own."""
    import huggingface_hub.constants as constants

    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", False)
    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(tmp_path / "hf-cache"))
    (tmp_path / "hf-cache").mkdir()
    return tmp_path / "hf-cache"


def _refuse_downloads(monkeypatch: pytest.MonkeyPatch, error: Exception) -> list[dict]:
    import huggingface_hub

    asked: list[dict] = []

    def snapshot_download(repo_id, **kw):  # noqa: ANN001, ANN003, ANN202
        asked.append({"repo_id": repo_id, **kw})
        raise error

    monkeypatch.setattr(huggingface_hub, "snapshot_download", snapshot_download)
    return asked


def one_line(ran, *needles: str) -> str:  # noqa: ANN001 - inprocess.Ran
    lines = ran.stderr.strip().splitlines()
    assert ran.returncode == 2 and len(lines) == 1 and lines[0].startswith("error: "), \
        (ran.returncode, ran.stderr[-2000:])
    for needle in needles:
        assert needle in lines[0], (needle, lines[0])
    return lines[0]


@pytest.mark.parametrize("case", sorted(SAYS))
def test_a_refused_download_is_one_line_and_writes_nothing(online, case, tmp_path,
                                                           monkeypatch) -> None:
    asked = _refuse_downloads(monkeypatch, _refusals()[case])
    texts, out = tmp_path / "texts.txt", tmp_path / "out.jsonl"
    texts.write_text("Obama visited Paris .\n")
    name = "acme/secret@v9" if case == "revision" else "acme/secret"
    line = one_line(seqrep("predict", name, "--input", str(texts), "--output", str(out)),
                    "acme/secret", SAYS[case])
    assert "Traceback" not in line
    if case == "revision":
        assert "v9" in line
    assert asked and asked[0]["repo_id"] == "acme/secret" and not asked[0]["local_files_only"]
    assert not out.exists() and tree(online) == {}


def _no_other_hub_reads(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Hub file reads that bypass seqrep's one download (transformers' own config fetch):
    recorded, and refused at once as an unreachable Hub would be after its retries."""
    import huggingface_hub.file_download as file_download

    reads: list[str] = []

    def metadata(url, *a, **kw):  # noqa: ANN001, ANN002, ANN003, ANN202
        reads.append(str(url))
        raise OSError("the Hub is out of reach")

    monkeypatch.setattr(file_download, "get_hf_file_metadata", metadata)
    return reads


@pytest.mark.parametrize("case", ["private", "missing", "revision"])
def test_a_refused_teacher_or_base_model_is_one_line(online, case, tiny, tmp_path,
                                                     monkeypatch) -> None:
    """distill's Hub teacher and a Hub base model meet the same refusals, and nothing reads
    the Hub around seqrep's one download (a config fetched by transformers itself waited
    for its retries, about 20 s, on a Hub out of reach)."""
    _refuse_downloads(monkeypatch, _refusals()[case])
    reads = _no_other_hub_reads(monkeypatch)
    train = write_corpus(tmp_path / "train.txt", 4)
    out = tmp_path / "student"
    one_line(seqrep("distill", "acme/secret", "--student", tiny("qwen2"), "--dataset",
                    str(train), "--test-split", "", "--max-steps", "1", "-o", str(out)),
             "acme/secret", SAYS[case])
    assert not out.exists()
    one_line(seqrep("train", "--model", "acme/secret", "--finetune", "lora", "--dataset",
                    str(train), "--test-split", "", "--max-steps", "1", "-o", str(out)),
             "acme/secret", SAYS[case])
    assert not out.exists() and tree(online) == {}
    assert reads == []


@pytest.mark.parametrize("call,case", [("create_repo", "forbidden"),
                                       ("create_commit", "missing"),
                                       ("create_branch", "gated")])
def test_a_push_the_hub_refuses_is_one_line(call, case, tiny, tmp_path, monkeypatch) -> None:
    from huggingface_hub import HfApi
    from test_hub import StandInApi

    StandInApi.install(monkeypatch)
    url = "https://huggingface.co/api/repos/create"
    error = {"forbidden": _http("HfHubHTTPError", 403, url),
             "missing": _http("RepositoryNotFoundError", 404, url),
             "gated": _http("GatedRepoError", 403, url)}[case]

    def refuse(self, *args, **kw):  # noqa: ANN001, ANN002, ANN003, ANN202
        raise error

    monkeypatch.setattr(HfApi, call, refuse)
    monkeypatch.setenv("HF_TOKEN", TOKEN)
    run = hand_made_teacher(tiny("llama"), tmp_path / "run")
    before = tree(run)
    one_line(seqrep("push", str(run), "acme/someone-elses", "--revision", "v1"),
             "acme/someone-elses", "refused the push")
    assert tree(run) == before
