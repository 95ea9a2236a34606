#!/bin/bash
# hand-made texts through the CLI's CI path (against.sh), stochastic
cd "$(dirname "$0")"
E=cases/ema_funcall/train_ema.py; D=cases/distill_sd/distill.py; G=cases/scalar_gate/train_gate.py; I=cases/infer_np/predict.py
./against.sh EW1 stochastic $E wrong/EW1_shadow_before_cast.py
./against.sh GW1 stochastic $G wrong/GW1_gate_f32.py
./against.sh IW1 stochastic $I wrong/IW1_exit_bf16.py
./against.sh DW1 stochastic $D wrong/DW1_teacher_f32.py
./against.sh EW2 stochastic $E wrong/EW2_blend_f32.py
./against.sh GW2 stochastic $G wrong/GW2_ramp_f32.py
./against.sh IW2 stochastic $I wrong/IW2_conf_f32.py
./against.sh DW2 stochastic $D wrong/DW2_best_f32.py
./against.sh IW3 stochastic $I wrong/IW3_no_sr_env.py
./against.sh ER1 stochastic $E right/ER1_chain_cast.py
./against.sh DR1 stochastic $D right/DR1_cast_before_load.py
./against.sh GR1 stochastic $G right/GR1_xdtype.py
./against.sh IR1 stochastic $I right/IR1_restyled.py
