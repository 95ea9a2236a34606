"""A minimal stand-in for tensorboard's SummaryWriter (not installed on the eval image)."""
import json

import numpy as np


class MetricWriter:
    def __init__(self, path):
        self.path = path
        self.records = []

    def add_scalar(self, tag, value, step=0):
        self.records.append({"tag": tag, "step": step, "value": float(value)})

    def add_histogram(self, tag, values, step=0, bins=10):
        arr = np.asarray(values.detach().cpu()) if hasattr(values, "detach") else np.asarray(values)
        counts, edges = np.histogram(arr, bins=bins)
        self.records.append({"tag": tag, "step": step, "counts": counts.tolist(), "edges": edges.tolist()})

    def close(self):
        with open(self.path, "w") as f:
            json.dump(self.records, f)
