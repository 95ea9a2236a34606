#!/bin/bash
# amp: a bf16 teacher by a module cast (DA1); a bf16 EMA by zeros_like (EA3)
cd "$(dirname "$0")"
./against.sh DA1 amp cases/distill_sd/distill.py wrong/DA1_teacher_bf16.py
./against.sh EA3 amp cases/ema_funcall/train_ema.py wrong/EA3_shadow_zeros_like_bf16.py
