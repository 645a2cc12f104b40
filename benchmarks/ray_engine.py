"""Texts/s of ``seqrep predict --output`` in one process against ``--engine ray`` with 1 and 2
actors, on the same input, in one run, and Ray's start-up cost (issue 41).

    python benchmarks/ray_engine.py --model smollm2-135m --texts 2000 --out results/ray-engine.json

The labeler is MODEL with a random head (frozen, r=1, cut at 2/3 of its depth): the labels are
meaningless, the work per text is a real labeler's. Texts are CoNLL-2003 test sentences from the
data directory (``SEQREP_DATA``) when it is there, else synthetic ones. Each engine runs as its
own ``seqrep predict`` process, timed from start to exit, so the Ray rows include Ray's start
(measured alone as ``ray_start_s``); the records of every engine are checked equal.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def cpu_flags() -> list[str]:
    try:
        text = Path("/proc/cpuinfo").read_text()
    except OSError:
        return []
    flags = next((line.split(":", 1)[1].split() for line in text.splitlines()
                  if line.startswith("flags")), [])
    return sorted(f for f in flags if f in ("avx2", "avx512f", "avx512_bf16", "avx512_vnni",
                                            "amx_bf16", "amx_int8"))


def texts(n: int) -> list[str]:
    data = os.environ.get("SEQREP_DATA")
    path = Path(data) / "conll2003" / "test.txt" if data else None
    out: list[str] = []
    if path and path.is_file():
        words: list[str] = []
        for line in path.read_text(encoding="utf-8").splitlines():
            if not line.strip() or line.startswith("-DOCSTART-"):
                if words:
                    out.append(" ".join(words))
                    words = []
            else:
                words.append(line.split()[0])
        if len(out) >= n:
            return out[:n]
    return [f"Maria Schmidt visited Berlin on day {i} and met Peter in Paris." for i in range(n)]


def run(cmd: list[str]) -> float:
    start = time.perf_counter()
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - start


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default="smollm2-135m")
    ap.add_argument("--texts", type=int, default=2000)
    ap.add_argument("--out", type=Path, default=Path("results/ray-engine.json"))
    args = ap.parse_args()
    from seqrep.model.labeler import SequenceLabeler

    work = Path(tempfile.mkdtemp(prefix="ray-bench-"))
    lab = SequenceLabeler.from_model(args.model, labels=["O", "B-PER", "I-PER", "B-LOC",
                                                          "I-LOC"], repetitions=1,
                                     finetune="frozen")
    folder = lab.save_pretrained(work / "lab")
    source = work / "in.jsonl"
    items = texts(args.texts)
    source.write_text("".join(json.dumps({"text": t}) + "\n" for t in items), encoding="utf-8")
    seqrep = [sys.executable, "-m", "seqrep", "predict", str(folder), "--input", str(source)]
    probe = ("import time,ray; t=time.perf_counter(); ray.init(num_cpus=2, "
             "include_dashboard=False); print(time.perf_counter()-t); ray.shutdown()")
    start_s = float(subprocess.run([sys.executable, "-c", probe], check=True, text=True,
                                   capture_output=True).stdout.strip().splitlines()[-1])
    rows, outputs = [], {}
    for name, extra in (("local", []), ("ray-1", ["--engine", "ray", "--actors", "1"]),
                        ("ray-2", ["--engine", "ray", "--actors", "2"])):
        out = work / f"{name}.jsonl"
        seconds = run(seqrep + ["--output", str(out), *extra])
        outputs[name] = out.read_bytes()
        rows.append({"engine": name, "seconds": round(seconds, 2),
                     "texts_per_s": round(len(items) / seconds, 2)})
        print(rows[-1], flush=True)
    record = {"model": args.model, "texts": len(items), "rows": rows,
              "ray_start_s": round(start_s, 2),
              "same_records": len(set(outputs.values())) == 1,
              "cpu_flags": cpu_flags(), "cores": os.cpu_count(),
              "python": platform.python_version(),
              "command": " ".join(["python", "benchmarks/ray_engine.py", *sys.argv[1:]])}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(record, indent=2) + "\n", encoding="utf-8")
    print(json.dumps(record, indent=2))


if __name__ == "__main__":
    main()
