#!/bin/bash
# the device runs, in the order they ran (each waits on /tmp/bfm-xla.lock)
cd "$(dirname "$0")"
./vqueue.sh confusion_ece confusion_ece eval_calib.py stochastic
./vqueue.sh beam_lenpen beam_lenpen train_lm.py stochastic --legacy-env XLA_USE_BF16=1
./vqueue.sh confusion_ece confusion_ece eval_calib.py amp
