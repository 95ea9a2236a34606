#!/bin/bash
cd "$(dirname "$0")"
./vqueue.sh beam_lenpen beam_lenpen train_lm.py stochastic --legacy-env XLA_USE_BF16=1
./vqueue.sh tta_window tta_window train_seg.py amp --legacy-env XLA_DOWNCAST_BF16=1
./vqueue.sh export_trace export_trace train_export.py stochastic --legacy-env XLA_USE_BF16=1
./vqueue.sh plateau_es plateau_es train_plateau.py gpu-compatible --legacy-env XLA_USE_BF16=1 -- --patience 0 --val-every 2
