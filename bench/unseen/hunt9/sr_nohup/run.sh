#!/bin/sh
# Start the super-resolution run in the background; follow it with `tail -f train.log`.
mkdir -p ckpt
nohup env XLA_USE_BF16=1 python3 train_sr.py --steps 12 --ckpt ckpt/sr.pt > train.log 2>&1 &
echo "started $!"
