"""Losses and the running confusion histogram for the segmentation trainer."""
import numpy as np
import torch
import torch.nn.functional as F

IGNORE = 255


def soft_dice_loss(logits, target, num_classes, smooth=1.0):
    valid = (target != IGNORE)
    probs = logits.softmax(dim=1)
    safe_t = torch.where(valid, target, torch.zeros_like(target))
    onehot = F.one_hot(safe_t, num_classes).permute(0, 3, 1, 2).float()
    m = valid.unsqueeze(1).float()
    probs = probs * m
    onehot = onehot * m
    inter = (probs * onehot).sum(dim=(0, 2, 3))
    denom = probs.sum(dim=(0, 2, 3)) + onehot.sum(dim=(0, 2, 3))
    dice = (2.0 * inter + smooth) / (denom + smooth)
    return 1.0 - dice.mean()


class ConfusionHist:
    """num_classes x num_classes counts kept on the device, read once per epoch."""

    def __init__(self, num_classes, device):
        self.n = num_classes
        self.hist = torch.zeros(num_classes * num_classes, dtype=torch.long, device=device)

    @torch.no_grad()
    def update(self, logits, target):
        pred = logits.argmax(dim=1).flatten()
        t = target.flatten()
        keep = t != IGNORE
        # ignored pixels go to an extra bin that is cut off below
        idx = torch.where(keep, self.n * t + pred, torch.full_like(t, self.n * self.n))
        self.hist += torch.bincount(idx, minlength=self.n * self.n + 1)[: self.n * self.n]

    def compute(self):
        h = self.hist.view(self.n, self.n).cpu().numpy().astype(np.float64)
        iou = np.diag(h) / np.maximum(h.sum(0) + h.sum(1) - np.diag(h), 1.0)
        acc = np.diag(h).sum() / max(h.sum(), 1.0)
        return iou, float(acc)

    def reset(self):
        self.hist.zero_()
