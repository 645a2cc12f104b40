# Sourced by the scripts: the virtual environment and the data directory setting.
. .venv/bin/activate
if [ -z "${SEQREP_DATA:-}" ] && [ -d ../shared/data ]; then
  SEQREP_DATA="$(cd ../shared/data && pwd)"
  export SEQREP_DATA
fi
