#!/bin/bash
# mod_pair: own (vrun, the codemod migrates nets.py with the script), own through --against, a wrong and a right text
cd "$(dirname "$0")"
for m in stochastic amp; do ./vrun.sh train_mod.own $m bench/unseen/hunt33/cases/mod_pair/train_mod.py; done
./against_dir.sh MOWNa stochastic cases/mod_pair cases/mod_pair.stochastic.mig train_mod.py
./against_dir.sh MW1 stochastic cases/mod_pair wrong/MW1_module_unmigrated train_mod.py
./against_dir.sh MR1 stochastic cases/mod_pair right/MR1_module_xdtype train_mod.py
