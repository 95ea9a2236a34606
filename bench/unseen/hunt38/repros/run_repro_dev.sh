#!/bin/bash
# usage: repros/run_repro_dev.sh NAME [MODE]: migrates a copy of repros/NAME (MODE, default stochastic), then runs the
# legacy repro and the migrated copy on the XLA CPU device, one at a time under flock /tmp/bfm-xla.lock.
# Output: verify_logs/repro.NAME.MODE.txt (the migration's summary line, the two runs' last lines).
H=$(cd "$(dirname "$0")/.." && pwd); ROOT=$(git -C "$H" rev-parse --show-toplevel); PY=${PYTHON:-/work/main/.venv/bin/python}
N=$1; M=${2:-stochastic}; W=/tmp/hunt38repro/$N.$M
rm -rf "$W"; mkdir -p "$W"; cp "$H/repros/$N/repro.py" "$W/"
{
  echo "## migrate ($M)"; (cd "$ROOT" && PYTHONPATH=$ROOT $PY -m bf16_migrate "$W/repro.py" --mode "$M" 2>&1 | grep -E "BFM|left to do" | sed "s#$W/##")
  echo "## diff"; diff "$H/repros/$N/repro.py" "$W/repro.py"
  echo "## legacy run"; (cd "$H/repros/$N" && flock /tmp/bfm-xla.lock env PJRT_DEVICE=CPU $PY repro.py 2>&1 | grep -vE "Warning|warn|deprecated" | tail -6)
  echo "## migrated run"; (cd "$W" && flock /tmp/bfm-xla.lock env PJRT_DEVICE=CPU $PY repro.py 2>&1 | grep -vE "Warning|warn" | tail -4)
} > "$H/verify_logs/repro.$N.$M.txt" 2>&1
