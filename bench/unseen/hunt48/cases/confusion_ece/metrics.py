"""Evaluation metrics kept on the device until the end of the epoch."""
import torch


def update_confusion(conf, target, pred, num_classes):
    # flat index trick: one bincount per batch, added to the running matrix
    idx = target * num_classes + pred
    conf += torch.bincount(idx, minlength=num_classes * num_classes).view(num_classes, num_classes)
    return conf


class CalibrationMeter:
    """Expected calibration error, binned by confidence."""

    def __init__(self, n_bins, device):
        self.edges = torch.linspace(0.0, 1.0, n_bins + 1, device=device)[1:-1]
        self.conf_sum = torch.zeros(n_bins, device=device)
        self.acc_sum = torch.zeros(n_bins, device=device)
        self.count = torch.zeros(n_bins, device=device)

    def update(self, probs, target):
        conf, pred = probs.max(dim=1)
        bins = torch.bucketize(conf, self.edges)
        correct = (pred == target).float()
        self.conf_sum.scatter_add_(0, bins, conf)
        self.acc_sum.scatter_add_(0, bins, correct)
        self.count.scatter_add_(0, bins, torch.ones_like(conf))

    def ece(self):
        n = self.count.sum()
        gap = (self.conf_sum - self.acc_sum).abs()
        return (gap / n).sum()
