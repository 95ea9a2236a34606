#!/bin/bash
# a case judged correct, on the device (under the lock inside vqueue.sh)
cd "$(dirname "$0")"
./vqueue.sh ema_swa ema_swa train_ema.py stochastic --legacy-env XLA_DOWNCAST_BF16=1
