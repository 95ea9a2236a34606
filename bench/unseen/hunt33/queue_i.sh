#!/bin/bash
# export_cpu: the codemod's own (stochastic leaves BFM161 by hand; amp), a right and a wrong hand text
cd "$(dirname "$0")"
for m in stochastic amp; do ./vrun.sh train_export.own $m bench/unseen/hunt33/cases/export_cpu/train_export.py; done
./against.sh XR1 stochastic cases/export_cpu/train_export.py right/XR1_host_model_float.py
./against.sh XW1 stochastic cases/export_cpu/train_export.py wrong/XW1_host_model_bf16.py
