#!/bin/bash
# the sixth device queue: gap 2's right migration of the grown block, written by hand, against the legacy repro
cd "$(dirname "$0")"
./against_dir.sh method_grow.hand stochastic ../repros/method_grow_after_opt repro.py method_grow_after_opt.stochastic
