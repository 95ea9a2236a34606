#!/bin/bash
cd "$(dirname "$0")"; A=./against_case.sh
$A BW3b stochastic cases/balanced_smooth mig/balanced_smooth.stochastic.nosr wrong/BW3_no_sr.py train_balanced.py
repros/run_against.sh topk_ids retrieve.py retrieve.right.py
repros/run_against.sh exit_spelling predict.py predict.right.py
repros/run_against.sh exit_spelling predict.py predict.right_same_op.py
cd repros/two_moves_norm && flock /tmp/bfm-xla.lock env PJRT_DEVICE=CPU PYTHONPATH=/work/wt/hunt35 /work/main/.venv/bin/python -m bf16_migrate verify norm_two_batches.py --mode stochastic --steps 4 > ../../verify_logs/repro.two_moves_norm.txt 2>&1; echo "exit $?" >> ../../verify_logs/repro.two_moves_norm.txt
cd ../host_forward_first && flock /tmp/bfm-xla.lock env PJRT_DEVICE=CPU PYTHONPATH=/work/wt/hunt35 /work/main/.venv/bin/python -m bf16_migrate verify label_then_move.py --mode stochastic --steps 3 > ../../verify_logs/repro.host_forward_first.txt 2>&1; echo "exit $?" >> ../../verify_logs/repro.host_forward_first.txt
