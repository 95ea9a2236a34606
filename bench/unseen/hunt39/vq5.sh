#!/bin/bash
# distill_kl: the codemod's text with ALPHA written as its bf16 value (under the lock inside against.sh)
cd "$(dirname "$0")"
./against.sh distill_kl.bf16scalars stochastic distill_kl distill.py distill_kl.bf16scalars.stochastic.py
