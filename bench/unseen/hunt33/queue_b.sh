#!/bin/bash
# second batch: ema_dtype own migrations, amp bf16-by-hand texts, DOWNCAST hand texts
cd "$(dirname "$0")"
for m in stochastic amp; do ./vrun.sh train_ema_dt.own $m bench/unseen/hunt33/cases/ema_dtype/train_ema_dt.py; done
./against.sh EA1 amp cases/ema_funcall/train_ema.py wrong/EA1_shadow_bf16.py
./against.sh EDA1 amp cases/ema_dtype/train_ema_dt.py wrong/EDA1_shadow_dtype_bf16.py
./against.sh CR1 stochastic cases/downcast_f64/train_dc.py right/CR1_input_bf16.py
./against.sh CW1 stochastic cases/downcast_f64/train_dc.py wrong/CW1_target_bf16.py
./against.sh CW2 stochastic cases/downcast_f64/train_dc.py wrong/CW2_scale_bf16.py
