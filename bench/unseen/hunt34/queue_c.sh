#!/bin/bash
cd "$(dirname "$0")"
while pgrep -f queue_b.sh >/dev/null; do sleep 5; done
./vrun.sh repro.init_after_move stochastic bench/unseen/hunt34/repros/init_after_move/repro.py --steps 6
