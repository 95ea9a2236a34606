#!/bin/bash
cd "$(dirname "$0")"
./vqueue.sh kfold_cv kfold_cv kfold.py stochastic --legacy-env XLA_USE_BF16=1
