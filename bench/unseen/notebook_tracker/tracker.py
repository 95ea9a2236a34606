"""The lab's run tracker: scalars, histograms and running statistics, written as JSON lines.

Replaces TensorBoard on machines where it is not installed. A run directory holds
events.jsonl (one JSON object per logged value), histograms.npz and summary.json.
"""

import json
import os
import time

import numpy as np
import torch


class RunningMoments:
    """Mean and variance of a tensor's elements over many updates, kept on the tensor's device."""

    def __init__(self, shape, device):
        self.count = 0
        self.sum = torch.zeros(shape, device=device)
        self.sum_sq = torch.zeros(shape, device=device)

    def update(self, x):
        x = x.detach().reshape(-1, *self.sum.shape)
        self.count += x.shape[0]
        self.sum += x.sum(0)
        self.sum_sq += (x * x).sum(0)

    def numpy(self):
        mean = (self.sum / self.count).cpu().numpy()
        var = (self.sum_sq / self.count).cpu().numpy() - mean**2
        return mean, np.maximum(var, 0.0)


class RunTracker:
    def __init__(self, run_dir: str):
        self.run_dir = run_dir
        os.makedirs(run_dir, exist_ok=True)
        self._events = open(os.path.join(run_dir, "events.jsonl"), "w")
        self._hist: dict[str, np.ndarray] = {}
        self._start = time.time()

    def _write(self, kind, tag, step, value):
        self._events.write(json.dumps({"kind": kind, "tag": tag, "step": step, "value": value}) + "\n")

    def scalar(self, tag, value, step):
        if isinstance(value, torch.Tensor):
            value = value.item()
        self._write("scalar", tag, step, float(value))

    def vector(self, tag, values, step):
        """A small 1-D tensor (per-class values, per-layer norms) as a list."""
        self._write("vector", tag, step, values.detach().cpu().tolist())

    def histogram(self, tag, tensor, step, bins=16):
        values = tensor.detach().cpu().numpy().ravel()
        counts, edges = np.histogram(values, bins=bins)
        self._hist[f"{tag}@{step}/counts"] = counts
        self._hist[f"{tag}@{step}/edges"] = edges
        self._write("histogram", tag, step, {"min": float(values.min()), "max": float(values.max())})

    def quantiles(self, tag, tensor, step, qs=(0.05, 0.5, 0.95)):
        values = np.asarray(tensor.detach().cpu())
        self._write("quantiles", tag, step, np.quantile(values, qs).tolist())

    def close(self, summary: dict):
        self._events.close()
        np.savez(os.path.join(self.run_dir, "histograms.npz"), **self._hist)
        summary = dict(summary, wall_s=round(time.time() - self._start, 1))
        with open(os.path.join(self.run_dir, "summary.json"), "w") as f:
            json.dump(summary, f, indent=1, sort_keys=True, default=float)
