"""G4: the training forward is in a closure defined inside a helper (`run_phase(model, opt, t, y)`),
handed to `opt.step(closure)` (L-BFGS). stochastic casts the model but neither `t` nor the model's door
(no pre-hook): a bf16 Linear meets f32 input. amp leaves the closure outside autocast: the training dots f32.
The switch comes from the launcher (LEGACY_ENV)."""
import torch
import torch.nn as nn
import torch.nn.functional as F
import torch_xla
import torch_xla.core.xla_model as xm
from _ir import dot_dtypes


SEEN = []


def run_phase(model, opt, t, y, iters):
    def closure():
        opt.zero_grad()
        loss = F.mse_loss(model(t), y)
        if not SEEN:
            SEEN.append(1)
            print("the closure's forward: dots", dot_dtypes(loss))
        loss.backward()
        return loss

    for i in range(iters):
        loss = opt.step(closure)
        xm.mark_step()
        print(f"iter {i} loss {loss.item():.5f}")


def main():
    torch.manual_seed(0)
    device = torch_xla.device()
    t = torch.linspace(0, 1, 32).unsqueeze(1).to(device)
    y = torch.sin(3 * t)
    model = nn.Sequential(nn.Linear(1, 16), nn.Tanh(), nn.Linear(16, 1)).to(device)
    opt = torch.optim.LBFGS(model.parameters(), lr=0.5, max_iter=2, history_size=3)
    run_phase(model, opt, t, y, 2)
    with torch.no_grad():
        grid = torch.linspace(0, 1, 5).unsqueeze(1)
        print("an evaluation forward: dots", dot_dtypes(model(grid.to(device))))


if __name__ == "__main__":
    main()
