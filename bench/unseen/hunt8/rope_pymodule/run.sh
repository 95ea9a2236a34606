#!/usr/bin/env bash
# Smoke-train the tiny RoPE LM; run from the repository root.
set -euo pipefail
cd "$(dirname "$0")"
XLA_USE_BF16=1 python -m tinylm.train --steps 12 --accum 2 "$@"
