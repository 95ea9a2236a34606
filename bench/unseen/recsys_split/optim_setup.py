"""Optimizers as the paper's recipe has them: FTRL-like (here Adagrad) for the wide part, Adam for the deep part."""

import torch


class MultiOptimizer:
    """Steps several optimizers together, so the loop sees one."""

    def __init__(self, *optimizers):
        self.optimizers = optimizers

    def zero_grad(self, set_to_none: bool = True):
        for opt in self.optimizers:
            opt.zero_grad(set_to_none=set_to_none)

    def step(self):
        for opt in self.optimizers:
            opt.step()


def build_optimizer(model, cfg: dict) -> MultiOptimizer:
    wide = torch.optim.Adagrad(model.wide.parameters(), lr=cfg["wide_lr"])
    deep = torch.optim.Adam(model.deep.parameters(), lr=cfg["deep_lr"])
    return MultiOptimizer(wide, deep)
