"""Inference helpers: sliding windows over long signals with flip test-time augmentation."""
import numpy as np
import torch


def tta_forward(model, x):
    # average the prediction of the signal and of its time-reversed copy
    y = model(x)
    y_flip = model(torch.flip(x, dims=[-1]))
    return 0.5 * (y + torch.flip(y_flip, dims=[-1]))


def sliding_window(model, signal, win, hop, device):
    """signal: (C, L) on the host. Overlap-add with a Hann taper, windows stitched with torch.cat."""
    L = signal.shape[-1]
    taper = torch.hann_window(win, periodic=False, dtype=torch.float64, device=device) + 1e-3
    outs, weights = [], []
    for start in range(0, L - win + 1, hop):
        chunk = signal[:, start:start + win].unsqueeze(0).to(device)
        outs.append(tta_forward(model, chunk)[0] * taper)
        weights.append(taper.expand(outs[-1].shape[0], win))
    # stitch: pad each window into the full length, then sum
    full = torch.cat([torch.nn.functional.pad(o, (s, L - s - win)).unsqueeze(0)
                      for o, s in zip(outs, range(0, L - win + 1, hop))]).sum(0)
    norm = torch.cat([torch.nn.functional.pad(w, (s, L - s - win)).unsqueeze(0)
                      for w, s in zip(weights, range(0, L - win + 1, hop))]).sum(0)
    return full / norm.clamp(min=1e-6)


def predict(model, signals, win, hop, device):
    was_training = model.training
    model.eval()
    probs, labels = [], []
    with torch.no_grad():
        for sig in signals:
            logits = sliding_window(model, sig, win, hop, device)
            p = logits.softmax(dim=0)
            probs.append(p.cpu().numpy())
            labels.append(p.argmax(dim=0).cpu().numpy())
    model.train(was_training)
    return {"probs": np.stack(probs), "labels": np.stack(labels)}
