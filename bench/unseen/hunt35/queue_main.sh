#!/bin/bash
# every verify of the hunt, one at a time (each takes the XLA lock itself), in the order run
cd "$(dirname "$0")"
P=bench/unseen/hunt35/cases; LE="--legacy-env XLA_USE_BF16=1"
A=./against_case.sh
$A RW1 stochastic cases/retrieval_index mig/retrieval_index.stochastic wrong/RW1_host_scores_bf16.py build_index.py
$A RW2 stochastic cases/retrieval_index mig/retrieval_index.stochastic wrong/RW2_sim_f32.py build_index.py
$A RR1 stochastic cases/retrieval_index mig/retrieval_index.stochastic right/RR1_dtype_at_move.py build_index.py
$A BW1 stochastic cases/balanced_smooth mig/balanced_smooth.stochastic wrong/BW1_soft_f32.py train_balanced.py
$A BR1 stochastic cases/balanced_smooth mig/balanced_smooth.stochastic right/BR1_cast_at_use.py train_balanced.py
$A PW1 stochastic cases/rl_polyak mig/rl_polyak.stochastic wrong/PW1_target_f32.py train_dqn.py
$A PR1 stochastic cases/rl_polyak mig/rl_polyak.stochastic right/PR1_cast_before_copy.py train_dqn.py
./vrun.sh train_dqn.own stochastic $P/rl_polyak/train_dqn.py $LE
./vrun.sh calibrate.own stochastic $P/calib_lbfgs/calibrate.py $LE
./vrun.sh build_index.own stochastic $P/retrieval_index/build_index.py $LE
./vrun.sh evaluate.own stochastic $P/eval_host_metrics/evaluate.py $LE
./vrun.sh batch_predict.own stochastic $P/batch_predict/batch_predict.py $LE
$A MW1 stochastic cases/batch_predict mig/batch_predict.stochastic wrong/MW1_draws_f32.py batch_predict.py
$A MR1 stochastic cases/batch_predict mig/batch_predict.stochastic right/MR1_float_on_device.py batch_predict.py
$A CW1 stochastic cases/calib_lbfgs mig/calib_lbfgs.stochastic wrong/CW1_temperature_f32.py calibrate.py
$A CR1 stochastic cases/calib_lbfgs mig/calib_lbfgs.stochastic right/CR1_bf16_by_hand.py calibrate.py
$A ER1 stochastic cases/eval_host_metrics mig/eval_host_metrics.stochastic right/ER1_tolist_exit.py evaluate.py
$A EW1 stochastic cases/eval_host_metrics mig/eval_host_metrics.stochastic wrong/EW1_unchanged_script.py evaluate.py
$A BW3 stochastic cases/balanced_smooth mig/balanced_smooth.stochastic wrong/BW3_no_sr.py train_balanced.py
$A BW2 stochastic cases/balanced_smooth mig/balanced_smooth.stochastic wrong/BW2_weights_f32.py train_balanced.py
for s in retrieval_index/build_index eval_host_metrics/evaluate rl_polyak/train_dqn batch_predict/batch_predict calib_lbfgs/calibrate; do
  ./vrun.sh $(basename $s).own amp $P/$s.py $LE
done
./vrun.sh train_dqn.own gpu-compatible $P/rl_polyak/train_dqn.py $LE
