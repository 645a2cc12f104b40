"""Hugging Face transformers (run in the hf venv): AutoModelForTokenClassification on
all-mpnet-base-v2 trained with Trainer, the baseline a user writes from the token
classification guide: each word's label on its first sub-token (-100 on the others),
DataCollatorForTokenClassification, AdamW at 5e-5 with linear decay, sentence by sentence.

    python hf_peer.py train --data DIR --out MODEL [--budget S] [--threads N] [--epochs E]
    python hf_peer.py predict --model MODEL --input test.jsonl --output FILE
        [--precision fp32|bf16|int8|onnx] [--timing J]

Trainer's own stop is its epoch count; a callback ends training when the time budget is
spent (``control.should_training_stop``), and the model as it is then is saved. Prediction
takes each word's first sub-token's label (a word cut off past 512 sub-tokens is O), in fp32,
under bf16 autocast, int8 (torch's dynamic quantization) or ONNX Runtime (see _forward).
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

MAX_LENGTH = 512


def label_set(sentences: list[dict[str, Any]]) -> list[str]:
    """O, then B- and I- of each entity type, sorted (as seqrep orders them)."""
    types = sorted({t[2:] for s in sentences for t in s["tags"] if t != "O"})
    return ["O"] + [f"{p}-{t}" for t in types for p in ("B", "I")]


def encode(tokenizer: Any, sentence: dict[str, Any], label2id: dict[str, int] | None) -> dict:
    """A sentence's sub-tokens, and its labels on each word's first sub-token."""
    enc = tokenizer(sentence["words"], is_split_into_words=True, truncation=True,
                    max_length=MAX_LENGTH)
    if label2id is not None:
        labels, previous = [], None
        for word in enc.word_ids():
            first = word is not None and word != previous
            labels.append(label2id[sentence["tags"][word]] if first else -100)
            previous = word
        enc["labels"] = labels
    return dict(enc)


def train(args: argparse.Namespace) -> None:
    common.set_threads(args.threads)
    import torch
    from transformers import (
        AutoModelForTokenClassification,
        AutoTokenizer,
        DataCollatorForTokenClassification,
        Trainer,
        TrainerCallback,
        TrainingArguments,
    )

    torch.set_num_threads(args.threads)
    train_sents = common.read_jsonl(args.data / "train.jsonl")
    labels = label_set(train_sents)
    label2id = {t: i for i, t in enumerate(labels)}
    tokenizer = AutoTokenizer.from_pretrained(args.encoder)
    model = AutoModelForTokenClassification.from_pretrained(
        args.encoder, num_labels=len(labels), id2label=dict(enumerate(labels)),
        label2id=label2id)
    dataset = [encode(tokenizer, s, label2id) for s in train_sents]
    budget = common.Budget(args.budget)
    state = {"stopped_by": "its num_train_epochs"}

    class TimeBudget(TrainerCallback):
        def on_step_end(self, targs: Any, tstate: Any, control: Any, **kw: Any) -> Any:
            if budget.spent():
                state["stopped_by"] = "time budget"
                control.should_training_stop = True
            return control

    targs = TrainingArguments(
        output_dir=str(args.out / "trainer"), per_device_train_batch_size=args.batch_size,
        learning_rate=args.lr, num_train_epochs=args.epochs, warmup_steps=0.1,
        weight_decay=0.01, eval_strategy="no", save_strategy="no", logging_steps=50,
        report_to="none", use_cpu=True, seed=args.seed, dataloader_num_workers=0)
    trainer = Trainer(model=model, args=targs, train_dataset=dataset,
                      data_collator=DataCollatorForTokenClassification(tokenizer),
                      callbacks=[TimeBudget()])
    result = trainer.train()
    trainer.save_model(str(args.out / "model"))
    tokenizer.save_pretrained(str(args.out / "model"))
    common.write_json(args.out / "train-info.json", {
        "seconds": round(budget.elapsed(), 1), "budget_s": args.budget,
        "steps": trainer.state.global_step, "epochs": round(trainer.state.epoch or 0, 3),
        "max_epochs": args.epochs, "stopped_by": state["stopped_by"], "threads": args.threads,
        "model": "model", "learning_rate": args.lr, "batch_size": args.batch_size,
        "train_loss": result.training_loss})


def predict(args: argparse.Namespace) -> None:
    common.set_threads(args.threads)
    import contextlib

    import torch
    from transformers import AutoModelForTokenClassification, AutoTokenizer

    torch.set_num_threads(args.threads)
    sentences = common.read_jsonl(args.input)
    folder = args.model / "model"
    tokenizer = AutoTokenizer.from_pretrained(folder)
    model = AutoModelForTokenClassification.from_pretrained(folder).eval()
    id2label = {int(k): v for k, v in model.config.id2label.items()}
    logits = _forward(model, args.precision, args.model, args.threads)
    order = sorted(range(len(sentences)), key=lambda i: len(sentences[i]["words"]))
    predicted: list[list[str]] = [[] for _ in sentences]
    autocast = (torch.autocast("cpu", dtype=torch.bfloat16)
                if args.precision in ("bf16", "compile") else contextlib.nullcontext())
    start = time.perf_counter()
    with torch.inference_mode(), autocast:
        for at in range(0, len(order), args.batch_size):
            batch = [sentences[i] for i in order[at:at + args.batch_size]]
            enc = tokenizer([s["words"] for s in batch], is_split_into_words=True,
                            truncation=True, max_length=MAX_LENGTH, padding=True,
                            return_tensors="pt")
            best = logits(enc).argmax(-1).tolist()
            for row, (i, s) in enumerate(zip(order[at:at + args.batch_size], batch,
                                             strict=True)):
                tags = ["O"] * len(s["words"])
                seen = set()
                for pos, word in enumerate(enc.word_ids(row)):
                    if word is not None and word not in seen:
                        seen.add(word)
                        tags[word] = id2label[best[row][pos]]
                predicted[i] = tags
    seconds = time.perf_counter() - start
    common.write_text(args.output, common.conll_columns(sentences, predicted))
    if args.timing:
        common.write_json(args.timing, {"seconds": seconds, "sentences": len(sentences),
                                        "words": sum(len(s["words"]) for s in sentences),
                                        "precision": args.precision})


def _forward(model: Any, precision: str, out: Path, threads: int) -> Any:
    """``batch -> logits`` at ``precision``, as a transformers user on a CPU gets it: the
    model (fp32, or bf16 under the caller's autocast); int8 by torch's dynamic quantization
    of every Linear (weights int8 per tensor, activations quantized per batch: the CPU
    recipe of transformers' docs); onnx through ``torch.onnx.export`` (the dynamo exporter,
    as seqrep exports; optimum-onnx 0.1 requires transformers below 4.58) run by ONNX
    Runtime, the graph exported once into MODEL/onnx. Setup happens here, outside the timed
    labeling."""
    import torch

    if precision == "int8":
        quantized = torch.ao.quantization.quantize_dynamic(model, {torch.nn.Linear},
                                                           dtype=torch.qint8)
        return lambda enc: quantized(**enc).logits
    if precision == "openvino":
        return _openvino(model, threads)
    if precision == "compile":
        return _compiled(model)
    if precision != "onnx":
        return lambda enc: model(**enc).logits
    import onnxruntime as ort

    graph = out / "onnx" / "model.onnx"
    if not graph.is_file():
        graph.parent.mkdir(parents=True, exist_ok=True)
        ids = torch.ones((2, 8), dtype=torch.long)
        batch, length = torch.export.Dim("batch"), torch.export.Dim("length")
        torch.onnx.export(model, (), str(graph), kwargs={"input_ids": ids,
                          "attention_mask": torch.ones_like(ids)},
                          input_names=["input_ids", "attention_mask"], output_names=["logits"],
                          dynamic_shapes={"input_ids": {0: batch, 1: length},
                                          "attention_mask": {0: batch, 1: length}},
                          dynamo=True, external_data=False)
    options = ort.SessionOptions()
    options.intra_op_num_threads, options.inter_op_num_threads = threads, 1
    session = ort.InferenceSession(str(graph), options, providers=["CPUExecutionProvider"])
    return lambda enc: torch.from_numpy(session.run(["logits"], {
        "input_ids": enc["input_ids"].numpy(),
        "attention_mask": enc["attention_mask"].numpy()})[0])


def _compiled(model: Any) -> Any:
    """``batch -> logits`` through ``torch.compile`` (inductor, dynamic shapes, the weights
    frozen into the graph as PyTorch recommends for CPU inference, as seqrep's compile
    runtime does) under the caller's bf16 autocast, as a transformers user gets it with
    ``torch.compile(model)``; compiled here on two warm-up batches in the labeling's own
    modes, outside the timing."""
    import torch
    import torch._inductor.config as inductor_config

    inductor_config.freezing = True  # this process only labels: the weights never change
    compiled = torch.compile(model, dynamic=True)
    with torch.inference_mode(), torch.autocast("cpu", dtype=torch.bfloat16):
        for length in (8, 16):
            ids = torch.ones((2, length), dtype=torch.long)
            compiled(input_ids=ids, attention_mask=torch.ones_like(ids))
    return lambda enc: compiled(**enc).logits


def _openvino(model: Any, threads: int) -> Any:
    """``batch -> logits`` on OpenVINO, as an optimum-intel user gets it: the model converted
    by ``openvino.convert_model`` and compiled with OpenVINO's defaults for the CPU (bf16
    wherever the CPU has it natively), on ``threads`` threads."""
    import openvino as ov
    import torch

    ids = torch.ones((2, 8), dtype=torch.long)
    mask = torch.ones_like(ids)
    mask[1, 5:] = 0  # padding in the example, so the traced graph keeps the mask
    converted = ov.convert_model(model, example_input={"input_ids": ids,
                                                       "attention_mask": mask})
    compiled = ov.Core().compile_model(converted, "CPU", {"INFERENCE_NUM_THREADS": threads})
    request = compiled.create_infer_request()

    def run(enc: Any) -> Any:
        out = request.infer({"input_ids": enc["input_ids"].numpy(),
                             "attention_mask": enc["attention_mask"].numpy()})
        return torch.from_numpy(out[compiled.output(0)].copy())

    return run


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description="Hugging Face Trainer peer")
    sub = p.add_subparsers(dest="command", required=True)
    t = sub.add_parser("train")
    t.add_argument("--data", type=Path, required=True)
    t.add_argument("--out", type=Path, required=True)
    t.add_argument("--encoder", type=Path, default=None)
    t.add_argument("--budget", type=float, default=3600.0)
    t.add_argument("--threads", type=int, default=2)
    t.add_argument("--epochs", type=float, default=2.0)
    t.add_argument("--lr", type=float, default=5e-5)
    t.add_argument("--batch-size", type=int, default=16)
    t.add_argument("--seed", type=int, default=0)
    # 64 sentences, as seqrep labels: on the test set, bf16 and compile 1.07x and 1.15x the
    # words/s of 32, OpenVINO the same (results/issue56-hf-batch-sizes.json)
    r = common.predict_parser(sub, batch_size=64)
    r.add_argument("--precision", choices=("fp32", "bf16", "int8", "onnx", "openvino",
                                           "compile"),
                   default="fp32")
    args = p.parse_args(argv)
    if args.command == "train":
        args.encoder = args.encoder or common.encoder_folder()
        train(args)
    else:
        predict(args)


if __name__ == "__main__":
    common.main_guard(main)
