"""A small convolutional regressor run through torch.compile with the openxla backend (dynamo
traces the model once; the loop calls the compiled callable)."""

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


class ConvRegressor(nn.Module):
    def __init__(self, channels=16):
        super().__init__()
        self.conv1 = nn.Conv1d(4, channels, kernel_size=5, padding=2)
        self.conv2 = nn.Conv1d(channels, channels, kernel_size=5, padding=2)
        self.head = nn.Linear(channels, 1)

    def forward(self, x):
        h = torch.relu(self.conv1(x))
        h = torch.relu(self.conv2(h))
        return self.head(h.mean(dim=2))


def make_signals(n, gen):
    """Four noisy sine channels; the target is the mean frequency."""
    freq = torch.rand(n, 1, 1, generator=gen) * 3 + 1
    t = torch.linspace(0, 6.28, 64).view(1, 1, 64)
    phase = torch.rand(n, 4, 1, generator=gen) * 6.28
    x = torch.sin(freq * t + phase) + 0.1 * torch.randn(n, 4, 64, generator=gen)
    return x, freq.view(n, 1)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=30)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--lr", type=float, default=3e-3)
    args = parser.parse_args()
    torch.manual_seed(0)
    device = torch_xla.device()
    gen = torch.Generator().manual_seed(2)
    signals, targets = make_signals(1024, gen)
    model = ConvRegressor().to(device)
    model.to(torch.bfloat16)
    model.register_forward_pre_hook(bf16_inputs_hook, with_kwargs=True)
    optimizer = torch.optim.Adam(model.parameters(), lr=args.lr)
    compiled = torch.compile(model, backend="openxla")
    for _ in range(args.steps):
        idx = torch.randint(0, 1024, (args.batch_size,), generator=gen)
        x, y = signals[idx].to(device), targets[idx].to(device)
        optimizer.zero_grad()
        loss = nn.functional.mse_loss(compiled(x), y.to(torch.bfloat16))
        loss.backward()
        optimizer.step()
        torch_xla.sync()


if __name__ == "__main__":
    main()
