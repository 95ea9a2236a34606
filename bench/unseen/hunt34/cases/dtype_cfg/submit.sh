#!/bin/bash
# Submit to the TPU partition; the job is the one command below.
sbatch --partition=tpu --time=00:30:00 --job-name=elman \
  --wrap="XLA_USE_BF16=1 python3 train_rnn.py --hidden 32 --dtype float32"
