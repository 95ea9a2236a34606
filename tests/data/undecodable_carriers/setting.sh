#!/bin/bash
# café au lait
export XLA_USE_BF16=1
python train.py
