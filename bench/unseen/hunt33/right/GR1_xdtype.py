"""Sequence regressor mixing a recurrent-free causal average and a linear branch through a learned scalar gate
that lives outside the model (its own nn.Parameter on the device, in the optimizer). The forward makes its
causal weights and a position ramp as float tensors on the input's device. A running [loss, |err|] accumulator
stays on the device until the end. Legacy bf16 switch on."""
import os

os.environ["NEURON_RT_STOCHASTIC_ROUNDING_EN"] = "1"

import torch
import torch.nn as nn
import torch.nn.functional as F
import torch_xla
import torch_xla.core.xla_model as xm

T, F_IN, H, B = 8, 4, 16, 16
STEPS = 10


class Branches(nn.Module):
    def __init__(self):
        super().__init__()
        self.enc = nn.Linear(F_IN, H)
        self.lin = nn.Linear(F_IN, H)
        self.head = nn.Linear(H, 1)

    def forward(self, x, gate):
        t = x.shape[1]
        causal = torch.ones(t, t, device=x.device, dtype=x.dtype).tril()
        causal = causal / causal.sum(1, keepdim=True)
        ramp = torch.arange(t, device=x.device, dtype=x.dtype) / t
        h = torch.tanh(self.enc(x)) + ramp[None, :, None]
        avg = torch.einsum("ts,bsh->bth", causal, h)
        g = torch.sigmoid(gate)
        return self.head(g * avg + (1 - g) * self.lin(x)).squeeze(-1)


def main():
    torch.manual_seed(0)
    device = torch_xla.device()
    model = Branches().to(device).to(torch.bfloat16)
    gate = nn.Parameter(torch.zeros((), device=device).bfloat16())
    opt = torch.optim.Adam([*model.parameters(), gate], lr=1e-2)
    running = torch.zeros(2, device=device, dtype=torch.bfloat16)
    gen = torch.Generator().manual_seed(4)
    for step in range(STEPS):
        x = torch.randn(B, T, F_IN, generator=gen)
        y = x.sum(-1).cumsum(1) / torch.arange(1, T + 1)
        x, y = x.to(device, torch.bfloat16), y.to(device, torch.bfloat16)
        pred = model(x, gate)
        loss = F.smooth_l1_loss(pred, y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        running += torch.stack([loss.detach(), (pred - y).abs().mean().detach()])
        xm.mark_step()
        print(f"step {step} loss {loss.item():.4f} gate {torch.sigmoid(gate).item():.4f}")
    mean_loss, mean_err = (running / STEPS).float().cpu().tolist()
    print(f"mean loss {mean_loss:.4f} mean err {mean_err:.4f} final gate {gate.item():.4f}")
    torch.save({"gate": gate.detach().float().cpu(), "model": {k: v.float().cpu() for k, v in model.state_dict().items()}}, "gate.pt")


if __name__ == "__main__":
    main()
