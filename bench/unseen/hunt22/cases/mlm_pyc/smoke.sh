#!/bin/sh
# CI smoke test: a few MLM steps on one NeuronCore
export PJRT_DEVICE=NEURON
XLA_USE_BF16=1 python -c "import train_mlm; train_mlm.main(steps=30, log_every=10)"
