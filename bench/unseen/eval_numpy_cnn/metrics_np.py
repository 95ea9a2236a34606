"""Classification metrics on NumPy arrays (no sklearn on the TPU image).

Every function takes ``probs`` of shape (n, classes), float, rows summing to 1, and
``labels`` of shape (n,), integer class ids.
"""

import numpy as np


def accuracy(probs: np.ndarray, labels: np.ndarray) -> float:
    return float((probs.argmax(axis=1) == labels).mean())


def confusion_matrix(labels: np.ndarray, preds: np.ndarray, num_classes: int) -> np.ndarray:
    """Rows: true class, columns: predicted class."""
    cm = np.zeros((num_classes, num_classes), dtype=np.int64)
    np.add.at(cm, (labels, preds), 1)
    return cm


def _binary_auc(scores: np.ndarray, positive: np.ndarray) -> float:
    # Mann-Whitney U with average ranks for ties
    order = np.argsort(scores, kind="mergesort")
    ranks = np.empty(len(scores), dtype=np.float64)
    sorted_scores = scores[order]
    i = 0
    while i < len(scores):
        j = i
        while j + 1 < len(scores) and sorted_scores[j + 1] == sorted_scores[i]:
            j += 1
        ranks[order[i : j + 1]] = (i + j) / 2.0 + 1.0
        i = j + 1
    n_pos = positive.sum()
    n_neg = len(positive) - n_pos
    if n_pos == 0 or n_neg == 0:
        return float("nan")
    return float((ranks[positive].sum() - n_pos * (n_pos + 1) / 2.0) / (n_pos * n_neg))


def roc_auc_ovr(probs: np.ndarray, labels: np.ndarray) -> float:
    """Macro one-vs-rest ROC AUC."""
    aucs = [_binary_auc(probs[:, c], labels == c) for c in range(probs.shape[1])]
    return float(np.nanmean(aucs))


def expected_calibration_error(probs: np.ndarray, labels: np.ndarray, bins: int = 10) -> float:
    conf = probs.max(axis=1)
    correct = probs.argmax(axis=1) == labels
    edges = np.linspace(0.0, 1.0, bins + 1)
    ece = 0.0
    for lo, hi in zip(edges[:-1], edges[1:]):
        in_bin = (conf > lo) & (conf <= hi)
        if in_bin.any():
            ece += in_bin.mean() * abs(conf[in_bin].mean() - correct[in_bin].mean())
    return float(ece)


def classification_report(probs: np.ndarray, labels: np.ndarray) -> dict:
    preds = probs.argmax(axis=1)
    cm = confusion_matrix(labels, preds, probs.shape[1])
    per_class_recall = np.diag(cm) / np.maximum(cm.sum(axis=1), 1)
    return {
        "accuracy": accuracy(probs, labels),
        "auc_ovr": roc_auc_ovr(probs, labels),
        "ece": expected_calibration_error(probs, labels),
        "recall": per_class_recall.round(4).tolist(),
        "confusion": cm.tolist(),
    }
