#!/bin/bash
# fourth batch: right stochastic text of ema_dtype; the codemod's own ema text through --against (control for GOWNa)
cd "$(dirname "$0")"
./against.sh EDR1 stochastic cases/ema_dtype/train_ema_dt.py right/EDR1_shadow_dtype_bf16.py
./against.sh EOWNa stochastic cases/ema_funcall/train_ema.py cases/ema_funcall/train_ema.stochastic.mig.py
