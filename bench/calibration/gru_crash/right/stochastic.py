"""A GRU forecaster whose legacy run cannot be made on torch-xla 2.9: torch-xla swaps nn.GRU for
its scan-based GRU, whose traced step meets f32 carries and bf16 arguments under the switch."""

import os

os.environ["NEURON_RT_STOCHASTIC_ROUNDING_EN"] = "1"

import argparse

import torch
import torch.nn as nn
import torch_xla


def floating_to_bf16(batch):
    """Cast the floating-point tensors in `batch` to torch.bfloat16, leaving integer tensors
    (token ids, labels) and everything else as they are.

    Added by bf16-migrate (replacing the legacy bf16 environment switch, under which every
    floating tensor on the XLA device was bf16): `batch` is a tensor, or a list, tuple,
    namedtuple or dict of them, nested; containers are rebuilt, dicts as plain dicts.
    """
    if isinstance(batch, torch.Tensor):
        return batch.to(torch.bfloat16) if batch.is_floating_point() else batch
    if isinstance(batch, dict):
        return {key: floating_to_bf16(value) for key, value in batch.items()}
    if isinstance(batch, tuple) and hasattr(batch, "_fields"):
        return type(batch)(*(floating_to_bf16(value) for value in batch))
    if isinstance(batch, (list, tuple)):
        return type(batch)(floating_to_bf16(value) for value in batch)
    return batch


def bf16_inputs_hook(module, args, kwargs):
    """Forward pre-hook added by bf16-migrate: the model's floating inputs become bf16."""
    return floating_to_bf16(args), floating_to_bf16(kwargs)


class Forecaster(nn.Module):
    def __init__(self, hidden=24):
        super().__init__()
        self.rnn = nn.GRU(3, hidden, batch_first=True)
        self.head = nn.Linear(hidden, 1)

    def forward(self, series):
        out, _ = self.rnn(series)
        return self.head(out[:, -1])


def windows(n, length, gen):
    """Three correlated random walks; the target is the next value of the first one."""
    steps = torch.randn(n, length + 1, 3, generator=gen) * 0.1
    steps[:, :, 1] += 0.5 * steps[:, :, 0]
    walk = steps.cumsum(dim=1)
    return walk[:, :-1], walk[:, -1, :1]


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=30)
    parser.add_argument("--batch-size", type=int, default=32)
    args = parser.parse_args()
    torch.manual_seed(0)
    device = torch_xla.device()
    gen = torch.Generator().manual_seed(4)
    series, targets = windows(1024, 16, gen)
    model = Forecaster().to(device)
    model.to(torch.bfloat16)
    model.register_forward_pre_hook(bf16_inputs_hook, with_kwargs=True)
    optimizer = torch.optim.Adam(model.parameters(), lr=5e-3)
    for _ in range(args.steps):
        idx = torch.randint(0, 1024, (args.batch_size,), generator=gen)
        x, y = series[idx].to(device), targets[idx].to(device)
        optimizer.zero_grad()
        loss = nn.functional.mse_loss(model(x), floating_to_bf16(y))
        loss.backward()
        optimizer.step()
        torch_xla.sync()


if __name__ == "__main__":
    main()
