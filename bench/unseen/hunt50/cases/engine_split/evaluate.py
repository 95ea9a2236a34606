"""Evaluation: returns NumPy arrays (logits, probabilities) and the accuracy."""

import numpy as np
import torch


@torch.no_grad()
def evaluate(model, loader, device):
    model.eval()
    logits_all, labels_all = [], []
    for images, labels in loader:
        logits = model(images.to(device))
        logits_all.append(logits.cpu())
        labels_all.append(labels)
    logits = torch.cat(logits_all).numpy()
    labels = torch.cat(labels_all).numpy()
    z = logits - logits.max(axis=1, keepdims=True)
    probs = np.exp(z) / np.exp(z).sum(axis=1, keepdims=True)
    acc = float((probs.argmax(1) == labels).mean())
    return logits, probs, acc
