import numpy as np


def top_k_accuracy(logits, labels, k=2):
    """logits: (N, C) float ndarray, labels: (N,) int ndarray."""
    top = np.argsort(-logits, axis=1)[:, :k]
    return float((top == labels[:, None]).any(1).mean())


def margin_stats(logits):
    s = np.sort(logits, axis=1)
    margin = s[:, -1] - s[:, -2]
    return {"margin_mean": float(margin.mean()), "margin_p10": float(np.percentile(margin, 10))}
