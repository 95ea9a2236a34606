"""Two shapes of an off-policy agent: target networks made as a second module (no optimizer) and a
learned scalar held in a plain leaf tensor with its own optimizer (SAC's log_alpha)."""
import os

os.environ["XLA_USE_BF16"] = "1"

import torch
import torch.nn as nn
import torch_xla.core.xla_model as xm


def main():
    torch.manual_seed(0)
    device = xm.xla_device()
    q = nn.Linear(4, 1).to(device)
    q_targ, q_targ2 = nn.Linear(4, 1).to(device), nn.Linear(4, 1).to(device)
    q_targ.load_state_dict(q.state_dict())
    q_targ2.load_state_dict(q.state_dict())
    log_alpha = torch.zeros(1, device=device, requires_grad=True)
    q_opt = torch.optim.Adam(q.parameters(), lr=1e-3)
    a_opt = torch.optim.Adam([log_alpha], lr=3e-3)
    for step in range(3):
        x = torch.randn(8, 4).to(device)
        with torch.no_grad():
            backup = 0.9 * torch.min(q_targ(x), q_targ2(x))
        loss = ((q(x) - backup) ** 2).mean() + (log_alpha.exp() - 0.5).pow(2).sum()
        q_opt.zero_grad(); a_opt.zero_grad()
        loss.backward()
        q_opt.step(); a_opt.step()
        with torch.no_grad():
            for targ in (q_targ, q_targ2):
                for p, tp in zip(q.parameters(), targ.parameters()):
                    tp.mul_(0.95).add_(p, alpha=0.05)
        xm.mark_step()
        print(step, loss.item(), "q_targ", q_targ.weight.dtype, "backup", backup.dtype, "loss", loss.dtype, "log_alpha", log_alpha.dtype)


main()
