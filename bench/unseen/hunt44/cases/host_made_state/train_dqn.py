"""Fitted Q-iteration on a toy chain MDP: fixed noise from a seeded host Generator moved late, a target network
deep-copied after the move, the whole model pickled (a host copy) with torch.save(model) and loaded back onto the device for evaluation."""
import copy
import os
import tempfile

os.environ.setdefault("PJRT_DEVICE", "TPU")
os.environ["XLA_USE_BF16"] = "1"

import torch  # noqa: E402
import torch.nn as nn  # noqa: E402
import torch_xla.core.xla_model as xm  # noqa: E402

STEPS = int(os.environ.get("STEPS", "10"))
N_STATES, N_ACT, GAMMA = 8, 2, 0.9


class QNet(nn.Module):
    def __init__(self, hidden=32):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(N_STATES, hidden), nn.ReLU(), nn.Linear(hidden, N_ACT))

    def forward(self, s):
        return self.body(s)


def batch(g, n=32):
    s = torch.randint(0, N_STATES, (n,), generator=g)
    a = torch.randint(0, N_ACT, (n,), generator=g)
    s2 = (s + torch.where(a == 1, 1, -1)).clamp(0, N_STATES - 1)
    r = (s2 == N_STATES - 1).float()
    eye = torch.eye(N_STATES)
    return eye[s], a, r, eye[s2]


def main():
    g = torch.Generator().manual_seed(1234)
    dev = xm.xla_device()
    torch.manual_seed(0)
    q = QNet().to(dev, torch.float32)
    target = copy.deepcopy(q)
    opt = torch.optim.RMSprop(q.parameters(), lr=1e-3)
    obs_noise = torch.randn(32, N_STATES, generator=g).to(dev)
    for step in range(STEPS):
        s, a, r, s2 = (t.to(dev) for t in batch(g))
        with torch.no_grad():
            y = r + GAMMA * target(s2).max(-1).values
        qsa = q(s + 0.01 * obs_noise).gather(1, a.unsqueeze(1)).squeeze(1)
        loss = nn.functional.mse_loss(qsa, y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step % 4 == 3:
            target.load_state_dict(q.state_dict())
        xm.mark_step()
        print(f"step {step} loss {loss.item():.5f}")
    path = os.path.join(tempfile.gettempdir(), "hunt44_qnet_whole.pt")
    torch.save(copy.deepcopy(q).cpu(), path)
    q2 = torch.load(path, weights_only=False).to(dev)
    vals = q2(torch.eye(N_STATES, device=dev)).max(-1).values
    print("DTYPES", next(q.parameters()).dtype, next(target.parameters()).dtype, next(q2.parameters()).dtype,
          obs_noise.dtype)
    print("V", vals.cpu().dtype, [round(v, 3) for v in vals.cpu().tolist()])


if __name__ == "__main__":
    main()
