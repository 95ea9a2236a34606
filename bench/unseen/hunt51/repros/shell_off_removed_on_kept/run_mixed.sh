#!/bin/bash
# Launcher in the shape of neuronx-nemo-megatron's test_llama_mixed_precision.sh (written for hunt51):
# force full-bf16 off, keep the DOWNCAST mixed precision on, start a trainer the codemod cannot change.
export XLA_USE_BF16=0
export XLA_DOWNCAST_BF16=1
python pretrain.py
