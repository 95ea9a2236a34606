#!/bin/sh
# nightly smoke: bf16 on the XLA device
exec python3 train_cls.py --bf16 --steps 12 "$@"
