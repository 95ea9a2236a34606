#!/bin/bash
# the DOWNCAST case: the codemod's own migrations (stochastic, amp)
cd "$(dirname "$0")"
for m in stochastic amp; do ./vrun.sh train_dc.own $m bench/unseen/hunt33/cases/downcast_f64/train_dc.py; done
