#!/usr/bin/env bash
# Start the run detached in tmux so that it survives the ssh session.
set -euo pipefail
cd "$(dirname "$0")"
SESSION=${SESSION:-xbm}
tmux new-session -d -s "$SESSION" "XLA_USE_BF16=1 PJRT_DEVICE=TPU python3 train_xbm.py --mem 128 $* 2>&1 | tee train.log"
echo "attach with: tmux attach -t $SESSION"
