"""Experiment grids: models x datasets x strategies x seeds, each run recorded once.

A grid file (YAML)::

    output: runs/main            # run folders go here
    results: results.jsonl       # the results store (default: OUTPUT/results.jsonl)
    models: [smollm2-135m]
    datasets: [conll2003, rest14]
    seeds: [1, 2, 3]
    labeler: {finetune: full, exit_layer: 20}     # shared LabelerConfig settings
    train: {epochs: 2, max_train_sentences: 1000}  # shared TrainConfig settings
    reader: {tag_column: 1}      # optional ReaderConfig settings (as on the command line)
    per_dataset: {rest14: {train: {epochs: 3}}}    # optional overrides by dataset
    strategies:                  # each entry: settings; a list value is one axis
      - {repetitions: [0, 1, 2, 4]}
      - {unmask: [full, middle]}
      - {model: minilm-l6}
      - {probe: true, repetitions: [0, 1, 2, 4], layers: [5, 10, 15, 20, 25, 30]}

A run's identity is a hash of its full resolved configuration (:mod:`seqrep.lab.identity`);
a run whose id is already in
the results store is skipped, and a run folder left incomplete is resumed, so an interrupted
grid continues where it stopped. Runs go seed by seed (every setting with the first seed,
then every setting with the second, ...), so a grid run in pieces (``max_runs``) has one
complete seed before it repeats any setting. Each run executes in a fresh process, which
isolates its memory and gives its peak resident memory.
"""

from __future__ import annotations

import dataclasses
import itertools
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from seqrep.config import LabelerConfig, ReaderConfig, TrainConfig
from seqrep.errors import ConfigError
from seqrep.lab.cells import run_suffix
from seqrep.lab.identity import config_hash
from seqrep.lab.results import append_record, environment, read_records
from seqrep.model.tuning import FROZEN

LABELER_KEYS = {f.name for f in dataclasses.fields(LabelerConfig)}
TRAIN_KEYS = {f.name for f in dataclasses.fields(TrainConfig)}
PROBE_KEYS = {"probe", "layers"}


@dataclass(frozen=True)
class GridRun:
    """One run of a grid: a resolved configuration and where it goes."""

    labeler: LabelerConfig
    train: TrainConfig
    probe_layers: tuple[int, ...] | None = None
    reader: ReaderConfig = ReaderConfig()

    @property
    def config(self) -> dict[str, Any]:
        cfg = {"labeler": self.labeler.to_dict(), "train": self.train.to_dict()}
        if self.probe_layers is not None:
            cfg["probe_layers"] = list(self.probe_layers)
        if self.reader != ReaderConfig():
            cfg["reader"] = self.reader.to_dict()
        return cfg

    @property
    def run_id(self) -> str:
        return config_hash(self.config)

    @property
    def name(self) -> str:
        lab, tr = self.labeler, self.train
        kind = "probe" if self.probe_layers is not None else lab.finetune
        doc = run_suffix(lab.context)  # sentence runs keep their names
        return (f"{Path(tr.dataset).name}/{Path(lab.model).name}-r{lab.repetitions}-{lab.unmask}"
                f"-L{str(lab.exit_layer or 'all').replace('/', 'of')}{doc}-{kind}"
                f"-s{tr.seed}-{self.run_id}")  # 2/3: L2of3, a name, not a folder


def _split(settings: dict[str, Any], where: str) -> tuple[dict, dict, dict]:
    lab, tr, probe = {}, {}, {}
    for k, v in settings.items():
        if k in PROBE_KEYS:
            probe[k] = v
        elif k in LABELER_KEYS:
            lab[k] = v
        elif k in TRAIN_KEYS:
            tr[k] = v
        else:
            raise ConfigError(f"{where}: unknown setting {k!r}; settings are LabelerConfig or "
                              f"TrainConfig fields, or probe/layers")
    return lab, tr, probe


def _axes(entry: dict[str, Any]) -> list[dict[str, Any]]:
    keys = list(entry)
    values = [v if isinstance(v, list) and k != "layers" else [v] for k, v in entry.items()]
    return [dict(zip(keys, combo)) for combo in itertools.product(*values)]


def expand(spec: dict[str, Any]) -> list[GridRun]:
    """All runs of a grid specification (see the module docstring), in a stable order."""
    for key in ("models", "datasets", "strategies"):
        if not spec.get(key):
            raise ConfigError(f"grid: {key!r} must be a non-empty list")
    known = {"output", "results", "models", "datasets", "seeds", "labeler", "train",
             "reader", "per_dataset", "strategies", "name"}
    unknown = set(spec) - known
    if unknown:
        raise ConfigError(f"grid: unknown keys {sorted(unknown)}; expected {sorted(known)}")
    base_lab, base_tr, _ = _split({**spec.get("labeler", {}), **spec.get("train", {})}, "grid")
    try:
        reader = ReaderConfig(**(spec.get("reader") or {}))
    except TypeError as err:
        raise ConfigError(f"grid: reader: {err}; settings are ReaderConfig fields") from None
    runs: list[GridRun] = []
    for i, entry in enumerate(spec["strategies"]):
        for combo in _axes(entry):
            lab_s, tr_s, probe = _split(combo, f"strategies[{i}]")
            models = [lab_s.pop("model")] if "model" in lab_s else spec["models"]
            for model, dataset, seed in itertools.product(models, spec["datasets"],
                                                          spec.get("seeds") or [42]):
                per = spec.get("per_dataset", {}).get(dataset, {})
                lab = LabelerConfig(**{**base_lab, **per.get("labeler", {}), **lab_s,
                                       "model": model})
                tr = TrainConfig(**{**base_tr, **per.get("train", {}), **tr_s,
                                    "dataset": dataset, "seed": seed}).resolved(lab.finetune)
                layers = None
                if probe.get("probe"):
                    lab = lab.replace(finetune=FROZEN)
                    layers = tuple(probe.get("layers") or ())
                runs.append(GridRun(lab, tr, layers, reader))
    seen, unique = set(), []
    for r in runs:
        if r.run_id not in seen:
            seen.add(r.run_id)
            unique.append(r)
    return unique


def load_spec(path: str | Path) -> dict[str, Any]:
    """Read a grid file (YAML or JSON)."""
    import yaml

    path = Path(path)
    try:
        spec = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError) as err:
        raise ConfigError(f"{path}: cannot read the grid file ({err})") from None
    if not isinstance(spec, dict):
        raise ConfigError(f"{path}: expected a mapping of grid settings")
    spec.setdefault("output", str(path.with_suffix("")))
    base = path.parent
    spec["output"] = str((base / spec["output"]) if not Path(spec["output"]).is_absolute()
                         else spec["output"])
    results = spec.get("results") or str(Path(spec["output"]) / "results.jsonl")
    spec["results"] = str(base / results if not Path(results).is_absolute() else results)
    return spec


def check_folder(run: GridRun, folder: Path) -> None:
    """Refuse a run folder the grid would resume or take as finished when its ``run.json``
    names another model than ``run`` (or is no run record): a finished folder's metrics are
    stored as they are, so without this a folder planted with another model's run, or with
    hand-written metrics, would enter the store under the grid's model. A folder without
    ``run.json`` holds no run and is trained from scratch.

    Raises:
        ConfigError: naming the file, the model it names and the grid's.
    """
    from seqrep.errors import SeqrepError, first_line
    from seqrep.files.atomic import read_json

    path = Path(folder) / "run.json"
    if not (path.exists() or path.is_symlink()):
        return
    saved = read_json(path, "a seqrep run record", ConfigError)
    try:
        if not isinstance(saved, dict) or not isinstance(saved.get("labeler"), dict):
            raise ValueError("expected an object with a 'labeler' object")
        model = LabelerConfig.from_dict(saved["labeler"]).model  # as train --resume reads it
    except (TypeError, ValueError, SeqrepError) as err:
        raise ConfigError(f"{path}: not a seqrep run record ({first_line(err)})") from None
    if model != run.labeler.model:
        raise ConfigError(f"{path} names model {model!r:.200}, not {run.labeler.model!r} as "
                          f"this grid run should; refusing to take or resume it (remove the "
                          f"folder to run it again)")


def execute(run: GridRun, folder: Path) -> dict[str, Any]:
    """Run one grid entry in this process; returns its measurements (used in a child)."""
    import os
    import resource

    import torch

    from seqrep.train import train

    check_folder(run, folder)  # finished folders too: train returns their metrics unchecked
    torch.set_num_threads(run.train.threads or os.cpu_count() or 1)
    start = time.time()
    if run.probe_layers is not None:
        from seqrep.lab.probe import run_probe

        metrics = run_probe(run.labeler, run.train, list(run.probe_layers), folder,
                            reader_options=run.reader.options())
    else:
        resume = (folder / "run.json").exists()
        # a folder resumes with the grid's trust_remote_code and only with the grid's model
        metrics = train(run.labeler, run.train, folder, resume=resume, overwrite=not resume,
                        quiet=True, reader_options=run.reader.options(),
                        expect_model=run.labeler.model if resume else None)
    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return {"metrics": metrics, "wall_seconds": round(time.time() - start, 1),
            "peak_memory_mb": round(peak_mb, 1)}


def run_grid(path: str | Path, dry_run: bool = False, echo: Any = print,
             max_runs: int | None = None) -> list[dict[str, Any]]:
    """Run every grid entry not yet in the results store, seed by seed.

    Args:
        path: the grid file.
        dry_run: list what would run, run nothing.
        echo: where progress lines go.
        max_runs: run at most this many of the unfinished entries (the rest are ``planned``);
            None runs them all.

    Returns:
        One ``{"name", "run_id", "status"}`` per run (``done``, ``skipped``, ``planned``).
    """
    import multiprocessing as mp
    from concurrent.futures import ProcessPoolExecutor

    spec = load_spec(path)
    runs = expand(spec)
    store = Path(spec["results"])
    finished = {r.get("run_id") for r in read_records(store)}
    seeds = list(dict.fromkeys(r.train.seed for r in runs))
    todo = sorted((r for r in runs if r.run_id not in finished),
                  key=lambda r: seeds.index(r.train.seed))
    echo(f"{len(runs)} runs in the grid, {len(runs) - len(todo)} already in {store}, "
         f"{len(todo)} to run" + (f", {min(max_runs, len(todo))} now" if max_runs is not None
                                  else ""))
    statuses = [{"name": r.name, "run_id": r.run_id, "status": "skipped"}
                for r in runs if r.run_id in finished]
    later = [{"name": r.name, "run_id": r.run_id, "status": "planned"}
             for r in todo[max_runs:]] if max_runs is not None else []
    todo = todo[:max_runs] if max_runs is not None else todo
    if dry_run:
        for r in todo:
            echo(f"  would run {r.name}")
        return statuses + [{"name": r.name, "run_id": r.run_id, "status": "planned"}
                           for r in todo] + later
    env = environment()
    for i, run in enumerate(todo, 1):
        folder = Path(spec["output"]) / run.name
        echo(f"[{i}/{len(todo)}] {run.name}")
        check_folder(run, folder)  # before a child process starts
        with ProcessPoolExecutor(1, mp_context=mp.get_context("spawn")) as pool:
            result = pool.submit(execute, run, folder).result()
        records = result["metrics"] if isinstance(result["metrics"], list) else [result["metrics"]]
        if any(m.get("status") != "finished" for m in records):
            echo(f"  not finished ({records[0].get('status')}); it resumes on the next call")
            statuses.append({"name": run.name, "run_id": run.run_id, "status": "interrupted"})
            continue
        for metrics in records:
            append_record(store, {"run_id": run.run_id, "name": run.name, "config": run.config,
                                  **{k: v for k, v in result.items() if k != "metrics"},
                                  "metrics": metrics, "environment": env,
                                  "finished_at": time.strftime("%Y-%m-%dT%H:%M:%S")})
        statuses.append({"name": run.name, "run_id": run.run_id, "status": "done"})
    return statuses + later
