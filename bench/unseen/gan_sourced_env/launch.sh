#!/usr/bin/env bash
set -e
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
source "$HERE/config/xla_env.sh"
python3 "$HERE/train_gan.py" --batch 64 "$@"
