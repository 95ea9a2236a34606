import torch.nn as nn


def load_pretrained():
    return nn.Sequential(nn.Linear(8, 16), nn.ReLU())
