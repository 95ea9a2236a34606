#!/bin/bash
# Two more device runs: the stochastic migration without its NEURON_RT_STOCHASTIC_ROUNDING_EN line (a hand-made wrong
# text), and the codemod's own stochastic migration of engine_split (gap 1's crash after the recorded steps).
cd "$(dirname "$0")"
./against.sh sf_nosr stochastic step_factory train.py step_factory.nosr.stochastic.py
./vqueue.sh engine_split engine_split main.py stochastic
