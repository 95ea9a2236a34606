import numpy as np
import torch


def confusion(pred, target, n_classes):
    m = np.zeros((n_classes, n_classes), dtype=np.int64)
    for p, t in zip(pred, target):
        m[t, p] += 1
    return m


def macro_f1(conf):
    tp = np.diag(conf).astype(np.float64)
    fp = conf.sum(0) - tp
    fn = conf.sum(1) - tp
    f1 = 2 * tp / np.maximum(2 * tp + fp + fn, 1)
    return f1.mean()


def summarize(logits, targets, n_classes):
    """logits: device tensor (N, C); targets: device int64 (N,)."""
    probs = torch.softmax(logits, dim=-1).detach().cpu().numpy()
    y = targets.cpu().numpy()
    pred = probs.argmax(-1)
    nll = -np.log(np.clip(probs[np.arange(len(y)), y], 1e-7, 1.0)).mean()
    conf = confusion(pred, y, n_classes)
    return {"acc": (pred == y).mean(), "macro_f1": macro_f1(conf), "nll": nll, "max_prob": probs.max(-1).mean()}
