#!/usr/bin/env bash
# Set everything up on a fresh machine, lint, and run the test suite (the tests marked
# integration on request: see below).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
. scripts/env.sh
ruff check src tests benchmarks scripts
# one worker a core (at most 4; SEQREP_TEST_WORKERS overrides, 0 runs in this process): each
# test runs torch on one thread (tests/conftest.py), and a file's tests share one worker, so
# the tiny models a module loads once are loaded once. The tests marked integration (several
# processes: torchrun, Ray, kill -9 and resume, a wheel install; the packaged real models and
# the shared data) are left out: `bash scripts/test.sh -m integration` runs them alone,
# `-m ""` everything (a later -m replaces this one)
python -m pytest -q -p no:cacheprovider -n "${SEQREP_TEST_WORKERS:-auto}" --maxprocesses 4 \
  --dist loadfile -m "not integration" "$@"
