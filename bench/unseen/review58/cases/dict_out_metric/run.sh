#!/bin/bash
# launcher: the cluster job sets the legacy switch
export XLA_USE_BF16=1
exec python train.py "$@"
