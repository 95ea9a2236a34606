#!/bin/bash
cd "$(dirname "$0")"; U=bench/unseen
while kill -0 10577 2>/dev/null; do sleep 5; done
./vrun.sh repro.dtype_attr_zeros stochastic $U/hunt34/repros/dtype_attr_zeros/repro.py --steps 3
./vrun.sh ste_mask gpu-compatible $U/hunt34/cases/ste_mask/qat.py
./vrun.sh probe.loop_F_mse_loss stochastic $U/hunt36/probes/loop_F_mse_loss/repro.py --steps 3
./check.sr_launcher.sh > verify_logs/check.sr_launcher.out 2>&1
./vrun.sh inj amp $U/hunt36/cases/trainer_injected/train.py
./vrun.sh ste_mask amp $U/hunt34/cases/ste_mask/qat.py
echo QUEUE2-DONE
