"""Validation pass: run the model over a loader and hand the probabilities to NumPy."""

import numpy as np
import torch
import torch.nn.functional as F
import torch_xla.core.xla_model as xm
from metrics_np import classification_report


@torch.no_grad()
def predict_proba(model, loader, device):
    """Probabilities (n, classes) and labels (n,) as NumPy arrays, plus the mean loss."""
    was_training = model.training
    model.eval()
    probs, labels, loss_sum, seen = [], [], 0.0, 0
    for images, targets in loader:
        images, targets = images.to(device), targets.to(device)
        logits = model(images)
        loss = F.cross_entropy(logits, targets, reduction="sum")
        p = F.softmax(logits, dim=1)
        xm.mark_step()
        probs.append(p.cpu().numpy())
        labels.append(targets.cpu().numpy())
        loss_sum += loss.item()
        seen += targets.shape[0]
    model.train(was_training)
    return np.concatenate(probs), np.concatenate(labels), loss_sum / seen


def evaluate(model, loader, device):
    probs, labels, val_loss = predict_proba(model, loader, device)
    report = classification_report(probs, labels)
    report["loss"] = round(val_loss, 6)
    return report, probs
