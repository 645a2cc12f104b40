"""CoNLL-2003 as seqrep reads it, written once as the neutral files every peer reads.

Run with the project's interpreter (it imports seqrep): the training, validation and test
sentences are exactly the ones seqrep's recipes use (``seqrep.data.load_corpus("conll2003")``:
eng.train, eng.testa, eng.testb, IOB1 converted to IOB2, empty sentences dropped, documents
numbered from each file's -DOCSTART- lines), so no peer's own CoNLL reader can differ from
seqrep's on a sentence or a tag.

    python benchmarks/peers/convert.py OUT_DIR [--data-dir DIR] [--max-sentences N]
"""

from __future__ import annotations

import argparse
import hashlib
import sys
from pathlib import Path
from typing import Any

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from peers.common import SPLITS, HarnessError, jsonl_text, main_guard, write_json  # noqa: E402

CONLL_FILES = {"train": "eng.train", "validation": "eng.testa", "test": "eng.testb"}


def conll_folder(data_dir: str | Path | None) -> Path:
    """The CoNLL-2003 folder of the data directory (``--data-dir``, else ``SEQREP_DATA``).

    Raises:
        HarnessError: no data directory is set, or it lacks conll2003/ or one of its files.
    """
    import os

    root = data_dir if data_dir is not None else os.environ.get("SEQREP_DATA")
    if not root:
        raise HarnessError("no data directory: set SEQREP_DATA or give --data-dir (the folder "
                           "holding conll2003/)")
    folder = Path(root) / "conll2003"
    if not folder.is_dir():
        raise HarnessError(f"data directory {folder} is missing; expected conll2003/ with "
                           f"{', '.join(CONLL_FILES.values())}")
    for name in CONLL_FILES.values():
        if not (folder / name).is_file():
            raise HarnessError(f"{folder / name} is missing; expected the CoNLL-2003 file "
                               f"{name} (see {folder / 'SOURCE.txt'})")
    return folder


def first_documents(sentences: list[dict[str, Any]], limit: int | None) -> list[dict[str, Any]]:
    """The first whole documents holding at least ``limit`` sentences (all with None): a
    smoke run's subset keeps the document boundaries FLERT and spaCy read."""
    from peers.common import documents

    if limit is None:
        return sentences
    keep: list[int] = []
    for group in documents(sentences):
        if len(keep) >= limit:
            break
        keep += group
    return [sentences[i] for i in keep]


def seqrep_sentences(folder: Path, split: str) -> list[dict[str, Any]]:
    """One split as seqrep's recipes read it, as neutral records."""
    from seqrep.data import load_corpus
    from seqrep.errors import SeqrepError, first_line

    try:
        corpus = load_corpus("conll2003", split, data_dir=folder.parent)
        sents = corpus.sentences_with_words()
    except SeqrepError as err:
        raise HarnessError(first_line(err)) from None
    return [{"words": list(s.words), "tags": list(s.tags), "doc_id": s.doc_id} for s in sents]


def convert(out: Path, data_dir: str | Path | None = None,
            max_sentences: int | None = None) -> dict[str, Any]:
    """Write ``OUT/{train,validation,test}.jsonl`` and ``OUT/manifest.json`` (sentence and
    word counts, the source files' SHA-256); returns the manifest."""
    folder = conll_folder(data_dir)
    manifest: dict[str, Any] = {"source": str(folder), "max_sentences": max_sentences,
                                "splits": {}}
    texts = {}
    for split in SPLITS:
        sents = first_documents(seqrep_sentences(folder, split), max_sentences)
        texts[split] = jsonl_text(sents)
        raw = (folder / CONLL_FILES[split]).read_bytes()
        manifest["splits"][split] = {
            "file": CONLL_FILES[split], "sha256": hashlib.sha256(raw).hexdigest(),
            "sentences": len(sents), "words": sum(len(s["words"]) for s in sents),
            "documents": len({s["doc_id"] for s in sents})}
    from peers.common import write_text

    for split, text in texts.items():
        write_text(out / f"{split}.jsonl", text)
    write_json(out / "manifest.json", manifest)
    return manifest


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("out", type=Path)
    p.add_argument("--data-dir", default=None)
    p.add_argument("--max-sentences", type=int, default=None,
                   help="keep the first whole documents holding this many sentences per split "
                        "(smoke runs)")
    args = p.parse_args(argv)
    manifest = convert(args.out, args.data_dir, args.max_sentences)
    for split, info in manifest["splits"].items():
        print(f"{split}: {info['sentences']} sentences, {info['words']} words", file=sys.stderr)


if __name__ == "__main__":
    main_guard(main)
