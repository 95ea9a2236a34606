import torch


def build_optimizer(params, lr):
    decay = [p for n, p in params]
    return torch.optim.AdamW(decay, lr=lr)
