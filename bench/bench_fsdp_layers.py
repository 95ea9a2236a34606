"""Which torch.nn layers torch-xla's FSDP runs with ``compute_dtype=torch.bfloat16`` (XLA CPU device).

Each layer is put alone (or, for attention and recurrent layers, in a small module that calls it)
under ``XlaFullyShardedDataParallel(..., compute_dtype=torch.bfloat16)`` in a world of one, trained
two SGD steps, and synced; each in a process of its own, so a crash cannot poison the next. Prints one
Markdown row per layer: ``runs`` or the first line of the error. ``rules/torch_api.toml``
``[fsdp_compute_dtype]`` is what the codemod reads; this script is how those lists were measured and
how to measure them again for another torch-xla. Hold the machine's XLA lock while it runs:

    flock /tmp/bfm-xla.lock python bench/bench_fsdp_layers.py
"""

from __future__ import annotations

import os
import subprocess
import sys
import time

# name -> (module expression, input expression); `nn`, `torch` and `device` are in scope
LAYERS = {
    "Linear": ("nn.Linear(8, 8)", "torch.randn(4, 8)"),
    "LayerNorm": ("nn.LayerNorm(8)", "torch.randn(4, 8)"),
    "RMSNorm": ("nn.RMSNorm(8)", "torch.randn(4, 8)"),
    "Embedding": ("nn.Embedding(10, 8)", "torch.arange(4)"),
    "GroupNorm": ("nn.GroupNorm(2, 8)", "torch.randn(4, 8, 5)"),
    "Conv1d": ("nn.Conv1d(8, 8, 3)", "torch.randn(4, 8, 10)"),
    "Conv1d bias=False": ("nn.Conv1d(8, 8, 3, bias=False)", "torch.randn(4, 8, 10)"),
    "Conv2d": ("nn.Conv2d(3, 8, 3)", "torch.randn(4, 3, 10, 10)"),
    "Conv2d bias=False": ("nn.Conv2d(3, 8, 3, bias=False)", "torch.randn(4, 3, 10, 10)"),
    "BatchNorm1d": ("nn.BatchNorm1d(8)", "torch.randn(4, 8)"),
    "BatchNorm2d": ("nn.BatchNorm2d(3)", "torch.randn(4, 3, 6, 6)"),
    "MultiheadAttention": ("SelfAttention(nn.MultiheadAttention(8, 2, batch_first=True))", "torch.randn(4, 5, 8)"),
    "TransformerEncoderLayer": ("nn.TransformerEncoderLayer(8, 2, 16, batch_first=True)", "torch.randn(4, 5, 8)"),
    "TransformerDecoderLayer": (
        "SelfAttention(nn.TransformerDecoderLayer(8, 2, 16, batch_first=True))",
        "torch.randn(4, 5, 8)",
    ),
    "GRU": ("FirstOutput(nn.GRU(8, 8, batch_first=True))", "torch.randn(4, 5, 8)"),
}

CHILD = """
import torch, torch.nn as nn, torch_xla
from torch_xla.distributed.fsdp import XlaFullyShardedDataParallel as FSDP

class SelfAttention(nn.Module):
    def __init__(self, inner):
        super().__init__()
        self.inner = inner
    def forward(self, x):
        out = self.inner(x, x, x) if isinstance(self.inner, nn.MultiheadAttention) else self.inner(x, x)
        return out[0] if isinstance(out, tuple) else out

class FirstOutput(nn.Module):
    def __init__(self, inner):
        super().__init__()
        self.inner = inner
    def forward(self, x):
        return self.inner(x)[0]

torch.manual_seed(0)
device = torch_xla.device()
model = FSDP(({module}).to(device), compute_dtype=torch.bfloat16)
optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
for _ in range(2):
    optimizer.zero_grad()
    model(({batch}).to(device)).float().square().mean().backward()
    optimizer.step()
    torch_xla.sync()
print("runs")
"""


def measure(module: str, batch: str) -> str:
    """``"runs"``, or the last line of the child's error output (the exception)."""
    env = {**os.environ, "PJRT_DEVICE": "CPU"}
    proc = subprocess.run(
        [sys.executable, "-c", CHILD.format(module=module, batch=batch)],
        capture_output=True,
        text=True,
        env=env,
        timeout=600,
    )
    if proc.returncode == 0 and proc.stdout.strip().endswith("runs"):
        return "runs"
    lines = [line for line in proc.stderr.splitlines() if line.strip()]
    errors = [line for line in lines if "Error" in line or "error" in line]
    return (errors or lines or [f"exit {proc.returncode}"])[-1].strip()[:200]


def main() -> None:
    import torch_xla

    print(f"torch-xla {torch_xla.__version__}, PJRT_DEVICE=CPU, 2 SGD steps per layer")
    print("| layer | compute_dtype=torch.bfloat16 | seconds |")
    print("|---|---|---|")
    for name, (module, batch) in LAYERS.items():
        start = time.monotonic()
        result = measure(module, batch)
        print(f"| {name} | {result} | {time.monotonic() - start:.0f} |", flush=True)


if __name__ == "__main__":
    main()
