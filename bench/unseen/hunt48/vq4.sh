#!/bin/bash
cd "$(dirname "$0")"
./vqueue.sh tta_window tta_window train_seg.py stochastic --legacy-env XLA_DOWNCAST_BF16=1
