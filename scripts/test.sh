#!/usr/bin/env bash
# Set everything up on a fresh machine, lint, and run the whole test suite.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
. scripts/env.sh
ruff check src tests
python -m pytest -q -p no:cacheprovider "$@"
