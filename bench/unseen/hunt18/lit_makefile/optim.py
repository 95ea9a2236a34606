"""Optimizer and schedule factory shared by the training scripts."""
import torch


def build_optimizer(params, lr, weight_decay=0.0):
    decay, no_decay = [], []
    for name, p in params:
        (no_decay if p.ndim < 2 or name.endswith("bias") else decay).append(p)
    return torch.optim.AdamW(
        [{"params": decay, "weight_decay": weight_decay}, {"params": no_decay, "weight_decay": 0.0}], lr=lr
    )


def build_schedule(opt, total_steps):
    return torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=opt.param_groups[0]["lr"], total_steps=total_steps)
