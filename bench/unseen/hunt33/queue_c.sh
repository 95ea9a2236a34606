#!/bin/bash
# third batch: amp bf16 shadow made by a *_like factory
cd "$(dirname "$0")"
./against.sh EA2 amp cases/ema_funcall/train_ema.py wrong/EA2_shadow_empty_like_bf16.py
