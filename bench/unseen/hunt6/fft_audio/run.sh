#!/bin/sh
# tone classifier smoke run
exec env PJRT_DEVICE=CPU XLA_USE_BF16=1 python3 tones.py --steps 12 "$@"
