#!/bin/bash
cd "$(dirname "$0")"
EXTRA="--legacy-env XLA_USE_BF16=1" ./against_case.sh MA1 amp cases/batch_predict mig/batch_predict.amp wrong/MA1_no_autocast.py batch_predict.py
EXTRA="--legacy-env XLA_USE_BF16=1" ./against_case.sh MOWNa amp cases/batch_predict mig/batch_predict.amp mig/batch_predict.amp/batch_predict.py batch_predict.py
