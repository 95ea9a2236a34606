import torch

# XLA_USE_BF16 used to be set here; train.py casts its model now
EPS = 1e-3
