#!/bin/bash
# fit the field in bf16 on the accelerator
export XLA_USE_BF16=1
python train_field.py "$@"
