#!/bin/bash
# Device runs, batch 4: a right hand text differing from the codemod's (each waits on /tmp/bfm-xla.lock).
cd "$(dirname "$0")"
./against.sh fq.rates_host stochastic fakequant_counts train_qat.py fq.rates_host.stochastic.py
