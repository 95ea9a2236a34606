#!/bin/bash
# usage: ./train.sh DATA_DIR [extra args]   (run from the repository root: configs/ is read from the cwd)
XLA_DOWNCAST_BF16=1 python train_seq.py --data-dir "$1" "${@:2}"
