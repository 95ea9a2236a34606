"""Running metrics kept on the device. Written for XLA_DOWNCAST_BF16: float64 there means "f32 on the
device", so accumulators are float64 to stay out of bf16."""

import torch


class RunningRegressionMetrics:
    def __init__(self, device):
        self.sse = torch.zeros((), dtype=torch.float64, device=device)
        self.sum_y = torch.zeros((), dtype=torch.float64, device=device)
        self.sum_y2 = torch.zeros((), dtype=torch.float64, device=device)
        self.count = 0

    def update(self, pred, target):
        pred, target = pred.detach().double(), target.detach().double()
        self.sse += ((pred - target) ** 2).sum()
        self.sum_y += target.sum()
        self.sum_y2 += (target**2).sum()
        self.count += target.numel()

    def r2(self):
        mean = self.sum_y / self.count
        sst = self.sum_y2 - self.count * mean**2
        return 1.0 - self.sse / sst
