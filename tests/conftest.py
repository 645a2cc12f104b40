"""Shared fixtures: tiny randomly initialised backbones of several families, built from configs
and saved as ordinary model folders, so tests exercise the real loading path in seconds."""

from __future__ import annotations

import gc
import os
from collections.abc import Iterator
from pathlib import Path

import pytest
import torch
from support import make_tiny

# the suite's expected outputs are fp32: a CPU with native bf16 would otherwise run inference
# under bf16 autocast by default (seqrep.model.device); set here so subprocesses inherit it
os.environ["SEQREP_CPU_BF16"] = "0"
# subprocesses (python -m seqrep ...) run torch on one thread too, as this process does below
os.environ.setdefault("OMP_NUM_THREADS", "1")
# no test reads the network: a name that is no local folder fails at once instead of after
# huggingface_hub's retries (23 s of back-off per name on a machine without internet)
os.environ["HF_HUB_OFFLINE"] = "1"


@pytest.fixture(scope="session")
def tiny_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("tiny-models")


@pytest.fixture(scope="session")
def tiny(tiny_root: Path):
    """``tiny(family, layers=4)`` -> folder of a saved tiny random model."""
    return lambda family, layers=4: str(make_tiny(tiny_root, family, layers))


@pytest.fixture(scope="session")
def shared_data() -> Path:
    """The shared datasets (``$SEQREP_DATA``, else ``../shared/data`` beside the repository);
    sets ``SEQREP_DATA`` for named datasets, skips the test when the folder is missing."""
    # an empty SEQREP_DATA means unset, as seqrep reads it (not the current directory)
    root = Path(os.environ.get("SEQREP_DATA")
                or Path(__file__).resolve().parents[1].parent / "shared" / "data")
    if not root.is_dir():
        pytest.skip(f"shared data directory {root} is missing (set SEQREP_DATA)")
    os.environ["SEQREP_DATA"] = str(root)
    return root


@pytest.fixture(autouse=True)
def _torch_threads() -> Iterator[None]:
    # one thread: the tiny models' operations are too small to split, and a second thread
    # waiting at every operation's barrier costs far more than it gives whenever the CPU is
    # shared (3 labeler tests: 57 s with 1 thread, 286 s with 2, on a loaded 2-core machine);
    # set again after each test, since a command run in-process (train, serve) sets its own
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(1)


_FULL = {"frozen": 0}  # objects frozen right after the last full collection


@pytest.fixture(autouse=True)
def _gc_generations() -> Iterator[None]:
    # What is alive when a test starts (modules, model fixtures, pytest's own objects: over
    # half a million) is frozen out of the cyclic collector, so a gc.collect() inside a test
    # (training's finish(), the benches' reset_memory) and Python's own full collections scan
    # only what this test made: 0.3 s or more per collection otherwise, a quarter of the CPU
    # time of a file of training tests. Refcounting frees frozen objects as always; cyclic
    # garbage among them (a module fixture's labeler with hooks, say) waits for the full
    # collection run here whenever the frozen objects have grown by half (Python's own full
    # collections wait for a quarter), so memory stays bounded at a fraction of the cost.
    if gc.get_freeze_count() > 1.5 * _FULL["frozen"] + 100_000:
        gc.unfreeze()
        gc.collect()
        gc.freeze()
        _FULL["frozen"] = gc.get_freeze_count()
    else:
        gc.collect()  # this test's predecessor's garbage: only unfrozen objects are scanned
        gc.freeze()
    yield
