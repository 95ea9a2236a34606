#!/bin/bash
# gpu-compatible: the codemod's own gate migration, through vrun (own) and through --against (GOWNa-g)
cd "$(dirname "$0")"
./vrun.sh train_gate.own gpu-compatible bench/unseen/hunt33/cases/scalar_gate/train_gate.py
./against.sh GOWNa-g gpu-compatible cases/scalar_gate/train_gate.py cases/scalar_gate/train_gate.gpu-compatible.mig.py
