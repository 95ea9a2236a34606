#!/bin/bash
# reruns: meta_assign with its checkpoint seeded apart (the runs shared /tmp and drew different RNG), ode_double lighter
cd "$(dirname "$0")"
./vqueue.sh meta_assign meta_assign finetune.py stochastic --legacy-env XLA_USE_BF16=1
./vqueue.sh ode_double ode_double fit_ode.py stochastic --legacy-env XLA_USE_BF16=1
