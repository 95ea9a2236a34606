"""Fit a small MLP to a smooth nonlinear target, y = sin(1.5 * <w, x>), on an XLA device.

Legacy setup kept from the original project: the optimizer is constructed
before the model is moved to the device, and bf16 is turned on through
XLA_DOWNCAST_BF16 at the top of main().
"""
import argparse
import os

import torch
import torch.nn as nn
import torch.nn.functional as F
import torch_xla


class Regressor(nn.Module):
    def __init__(self, in_features=4, hidden=64):
        super().__init__()
        self.net = nn.Sequential(
            nn.Linear(in_features, hidden),
            nn.Tanh(),
            nn.Linear(hidden, hidden),
            nn.Tanh(),
            nn.Linear(hidden, 1),
        )

    def forward(self, x):
        return self.net(x)


def make_data(num_samples, in_features, seed):
    """Inputs uniform in [-1, 1]^d; the target is a sine of a fixed random projection."""
    gen = torch.Generator().manual_seed(seed)
    x = torch.rand(num_samples, in_features, generator=gen) * 2.0 - 1.0
    w = torch.randn(in_features, 1, generator=gen)
    y = torch.sin(1.5 * (x @ w)) + 0.02 * torch.randn(num_samples, 1, generator=gen)
    return x, y


def get_batch(x, y, batch_size, gen):
    idx = torch.randint(0, x.shape[0], (batch_size,), generator=gen)
    return x[idx], y[idx]


def parse_args():
    parser = argparse.ArgumentParser(description="Sine-of-projection regression")
    parser.add_argument("--steps", type=int, default=40)
    parser.add_argument("--lr", type=float, default=0.05)
    parser.add_argument("--batch-size", type=int, default=128)
    parser.add_argument("--num-samples", type=int, default=4096)
    parser.add_argument("--in-features", type=int, default=4)
    parser.add_argument("--lr-step", type=int, default=20, help="decay lr every N steps")
    parser.add_argument("--seed", type=int, default=0)
    return parser.parse_args()


def main():
    os.environ["NEURON_RT_STOCHASTIC_ROUNDING_EN"] = "1"
    args = parse_args()
    torch.manual_seed(args.seed)
    # Module.to() normally gives a CPU->XLA move brand-new Parameter objects, which
    # would leave the optimizer below holding the stale CPU ones; swapping keeps the
    # Parameter identities, so the optimizer built first still sees the device weights.
    torch.__future__.set_swap_module_params_on_conversion(True)

    model = Regressor(in_features=args.in_features)
    model.to(torch.bfloat16)
    optimizer = torch.optim.SGD(model.parameters(), lr=args.lr, momentum=0.9)
    scheduler = torch.optim.lr_scheduler.StepLR(optimizer, step_size=args.lr_step, gamma=0.5)

    device = torch_xla.device()
    model.to(device)

    x_all, y_all = make_data(args.num_samples, args.in_features, args.seed)
    batch_gen = torch.Generator().manual_seed(args.seed + 1)

    model.train()
    for step in range(1, args.steps + 1):
        inputs, target = get_batch(x_all, y_all, args.batch_size, batch_gen)
        inputs = inputs.to(device)
        target = target.to(device)

        optimizer.zero_grad()
        pred = model(inputs.to(torch.bfloat16))
        loss = F.mse_loss(pred, target.to(torch.bfloat16))
        loss.backward()
        optimizer.step()
        scheduler.step()
        torch_xla.sync()

        if step % 10 == 0:
            print(f"step {step} loss {loss.item():.4f}")


if __name__ == "__main__":
    main()
