"""spaCy 3.8 (run in the spacy venv): ``spacy init config --pipeline ner`` pipelines trained
with spaCy's own training loop on the neutral files, and their test predictions.

    python spacy_peer.py train --variant cnn|trf --data DIR --out MODEL [--budget S] [--threads N]
    python spacy_peer.py predict --model MODEL --input test.jsonl --output FILE [--timing J]

The configs are the ones ``spacy init config --lang en --pipeline ner --optimize efficiency``
(cnn: a CNN tok2vec) and ``--optimize accuracy`` (trf: spacy-transformers) write, kept in
configs/; the transformer's name is set to the unpacked all-mpnet-base-v2 folder, and
``--set SECTION.KEY=VALUE`` overrides a setting as ``spacy train --section.key`` does (the
system table fits spacy-trf's schedule to the budget that way; train-info.json records them).
Training
reads whole documents (a Doc per CoNLL document, sentence starts marked), as spaCy's
``spacy convert -n`` groups them, and so does prediction. spaCy has no time limit of its
own: a ``before_update`` callback stops its loop when the budget is spent, after which spaCy
saves model-last; model-best (the best dev score so far) is what predict loads.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Any

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from peers import common  # noqa: E402

CONFIGS = Path(__file__).resolve().parent / "configs"
_STATE: dict[str, Any] = {"step": 0, "epoch": 0, "budget": None}


class BudgetSpent(Exception):  # noqa: N818 - a stop signal, not an error
    """Raised inside spaCy's loop to stop it when the time budget is spent."""


def _register() -> None:
    import spacy

    @spacy.registry.callbacks("peers.time_budget.v1")
    def time_budget() -> Any:
        def before_update(nlp: Any, info: dict[str, Any]) -> None:
            _STATE["step"], _STATE["epoch"] = info["step"], info["epoch"]
            if _STATE["budget"] is not None and _STATE["budget"].spent():
                raise BudgetSpent(f"time budget spent at step {info['step']}")
        return before_update


def to_docs(nlp_vocab: Any, sentences: list[dict[str, Any]], gold: bool) -> list[Any]:
    """One Doc per document, its sentence starts marked (and its gold entities)."""
    from spacy.tokens import Doc

    docs = []
    for group in common.documents(sentences):
        words = [w for i in group for w in sentences[i]["words"]]
        starts = [j == 0 for i in group for j in range(len(sentences[i]["words"]))]
        ents = [t for i in group for t in sentences[i]["tags"]] if gold else None
        docs.append(Doc(nlp_vocab, words=words, spaces=[True] * len(words),
                        sent_starts=starts, ents=ents))
    return docs


def write_docbin(data: Path, split: str, out: Path) -> Path:
    """A split of the neutral files as spaCy's .spacy DocBin (training's input)."""
    import spacy
    from spacy.tokens import DocBin

    path = out / f"{split}.spacy"
    docs = to_docs(spacy.blank("en").vocab, common.read_jsonl(data / f"{split}.jsonl"), True)
    DocBin(docs=docs, store_user_data=False).to_disk(path)
    return path


def train(args: argparse.Namespace) -> None:
    common.set_threads(args.threads)
    budget = common.Budget(args.budget)
    import spacy
    import torch
    from spacy.training.initialize import init_nlp
    from spacy.training.loop import train as train_nlp

    torch.set_num_threads(args.threads)
    _register()
    args.out.mkdir(parents=True, exist_ok=True)
    corpus = args.out / "corpus"
    corpus.mkdir(exist_ok=True)
    paths = {s: write_docbin(args.data, s, corpus) for s in ("train", "validation")}
    config = spacy.util.load_config(CONFIGS / f"spacy-{args.variant}.cfg",
                                    overrides=parse_overrides(args.set), interpolate=False)
    config["paths"]["train"], config["paths"]["dev"] = str(paths["train"]), str(paths["validation"])
    if args.variant == "trf":
        config["components"]["transformer"]["model"]["name"] = str(args.encoder)
    config["training"]["before_update"] = {"@callbacks": "peers.time_budget.v1"}
    config["training"]["seed"] = args.seed
    if args.eval_frequency:
        config["training"]["eval_frequency"] = args.eval_frequency
    config.to_disk(args.out / "config.cfg")
    nlp = init_nlp(config, use_gpu=-1)
    _STATE["budget"] = budget  # initialisation (vocab, the encoder's load) is not training
    stopped = "spaCy's own stop (max_steps or patience)"
    try:
        train_nlp(nlp, args.out, use_gpu=-1, stdout=sys.stderr, stderr=sys.stderr)
    except BudgetSpent:
        stopped = "time budget"
    best, scores = _pick_model(args.out, paths["validation"])
    common.write_json(args.out / "train-info.json", {
        "seconds": round(budget.elapsed(), 1), "budget_s": args.budget, "steps": _STATE["step"],
        "epochs": _STATE["epoch"], "stopped_by": stopped, "threads": args.threads,
        "model": best, "dev_f1": scores, "config": f"configs/spacy-{args.variant}.cfg",
        "overrides": parse_overrides(args.set)})


def parse_overrides(items: list[str] | None) -> dict[str, Any]:
    """``--set training.accumulate_gradient=1`` as spaCy's ``load_config`` overrides: dotted
    paths to values, each value read as JSON (a number, true, a quoted string) or else kept
    as the text it is, as ``spacy train --training.x VALUE`` reads them.

    Raises:
        HarnessError: an item without ``=`` or with an empty path.
    """
    import json

    overrides: dict[str, Any] = {}
    for item in items or []:
        path, sep, value = item.partition("=")
        if not sep or not path.strip() or "." not in path:
            raise common.HarnessError(f"--set {item!r}: expected SECTION.KEY=VALUE")
        try:
            overrides[path.strip()] = json.loads(value)
        except ValueError:
            overrides[path.strip()] = value
    return overrides


def _pick_model(out: Path, dev: Path) -> tuple[str, dict[str, float | None]]:
    """model-best or model-last, whichever scores higher on the dev set: the budget stops
    spaCy between two of its evaluations, so the last weights (model-last) were never
    scored; they are scored here, once (the time counts as training time)."""
    import spacy
    from spacy.training import Corpus

    best_f1 = None
    meta = out / "model-best" / "meta.json"
    if meta.is_file():
        import json

        best_f1 = json.loads(meta.read_text(encoding="utf-8")).get("performance", {}).get("ents_f")
    last_f1 = None
    if (out / "model-last").is_dir():
        nlp = spacy.load(out / "model-last")
        last_f1 = nlp.evaluate(list(Corpus(dev)(nlp))).get("ents_f")
    scores = {"model-best": best_f1, "model-last": last_f1}
    if last_f1 is not None and (best_f1 is None or last_f1 > best_f1):
        return "model-last", scores
    return "model-best", scores


def _chosen(model: Path) -> str:
    """The sub-folder training chose (train-info.json), or the folder itself."""
    import json

    info = model / "train-info.json"
    if info.is_file():
        return json.loads(info.read_text(encoding="utf-8"))["model"]
    return "."


def predict(args: argparse.Namespace) -> None:
    common.set_threads(args.threads)
    import spacy
    import torch

    torch.set_num_threads(args.threads)
    _register()
    sentences = common.read_jsonl(args.input)
    model = args.model / _chosen(args.model)
    nlp = spacy.load(model)
    docs = to_docs(nlp.vocab, sentences, False)
    start = time.perf_counter()
    tagged = list(nlp.pipe(docs, batch_size=args.batch_size))
    seconds = time.perf_counter() - start
    predicted: list[list[str]] = []
    for doc, group in zip(tagged, common.documents(sentences), strict=True):
        tags = [f"{t.ent_iob_}-{t.ent_type_}" if t.ent_iob_ in ("B", "I") else "O" for t in doc]
        predicted += common.split_document_tags(
            tags, [len(sentences[i]["words"]) for i in group])
    common.write_text(args.output, common.conll_columns(sentences, predicted))
    if args.timing:
        common.write_json(args.timing, {"seconds": seconds, "sentences": len(sentences),
                                        "words": sum(len(s["words"]) for s in sentences)})


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description="spaCy peer")
    sub = p.add_subparsers(dest="command", required=True)
    t = sub.add_parser("train")
    t.add_argument("--variant", choices=("cnn", "trf"), required=True)
    t.add_argument("--data", type=Path, required=True)
    t.add_argument("--out", type=Path, required=True)
    t.add_argument("--encoder", type=Path, default=None)
    t.add_argument("--budget", type=float, default=3600.0)
    t.add_argument("--threads", type=int, default=2)
    t.add_argument("--seed", type=int, default=0)
    t.add_argument("--eval-frequency", type=int, default=None,
                   help="steps between dev evaluations (default: the config's, 200)")
    t.add_argument("--set", action="append", metavar="SECTION.KEY=VALUE",
                   help="override one config setting, as spacy train's --section.key does")
    common.predict_parser(sub, batch_size=64)
    args = p.parse_args(argv)
    if args.command == "train":
        if args.variant == "trf":
            args.encoder = args.encoder or common.encoder_folder()
        train(args)
    else:
        predict(args)


if __name__ == "__main__":
    common.main_guard(main)
