#!/usr/bin/env bash
# Evaluate the current checkpoint on the held-out split.
set -euo pipefail
cd "$(dirname "$0")"
set -a
. ./.env
set +a
python evaluate.py --batch "${EVAL_BATCH}" --out runs/eval "$@"
