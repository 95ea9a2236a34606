#!/bin/bash
# the seventh device queue: rope_tied by hand again, cast right after the move and again after the resize
cd "$(dirname "$0")"
./against_dir.sh rope_tied.hand stochastic rope_tied train_lm.py rope_tied.stochastic
