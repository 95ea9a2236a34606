"""Self-distillation on synthetic views (DINO-style): the student learns by SGD, the teacher follows it by an
exponential moving average written by hand, and the centre of the teacher's outputs is a tensor kept outside both
models, updated every step."""
import copy
import os

os.environ["NEURON_RT_STOCHASTIC_ROUNDING_EN"] = "1"

import torch
import torch.nn as nn
import torch.nn.functional as F
import torch_xla.core.xla_model as xm

STEPS = int(os.environ.get("STEPS", "20"))
OUT_DIM = 32


class Head(nn.Module):
    def __init__(self, d_in=24, hid=48, out=OUT_DIM):
        super().__init__()
        self.mlp = nn.Sequential(nn.Linear(d_in, hid), nn.GELU(), nn.Linear(hid, hid))
        self.last = nn.Linear(hid, out, bias=False)

    def forward(self, x):
        return self.last(F.normalize(self.mlp(x), dim=-1))


def two_views(base, g):
    a = base + 0.1 * torch.randn(base.shape, generator=g)
    b = base * (1.0 + 0.1 * torch.randn(base.shape, generator=g))
    return a, b


def main():
    dev = xm.xla_device()
    torch.manual_seed(0)
    g = torch.Generator().manual_seed(1)
    data = torch.randn(256, 24, generator=g)

    student = Head().to(dev, dtype=torch.bfloat16)
    teacher = copy.deepcopy(student)
    for p in teacher.parameters():
        p.requires_grad_(False)
    center = torch.zeros_like(student.last.weight[:1, :1]).expand(1, OUT_DIM).clone()

    opt = torch.optim.SGD(student.parameters(), lr=0.05, momentum=0.9)
    t_temp, s_temp, center_m, ema_m = 0.04, 0.1, 0.9, 0.99

    for step in range(STEPS):
        idx = torch.randint(0, data.shape[0], (32,), generator=g)
        a, b = two_views(data[idx], g)
        views = torch.cat([a, b]).to(dev).bfloat16()
        with torch.no_grad():
            t_out = teacher(views)
            t_prob = F.softmax((t_out - center) / t_temp, dim=-1).chunk(2)
        s_logp = F.log_softmax(student(views) / s_temp, dim=-1).chunk(2)
        loss = 0.5 * (-(t_prob[0] * s_logp[1]).sum(-1).mean() - (t_prob[1] * s_logp[0]).sum(-1).mean())
        opt.zero_grad()
        loss.backward()
        opt.step()
        with torch.no_grad():
            for pt, ps in zip(teacher.parameters(), student.parameters()):
                pt.mul_(ema_m).add_(ps.detach(), alpha=1 - ema_m)
            center.mul_(center_m).add_(t_out.mean(0, keepdim=True), alpha=1 - center_m)
        xm.mark_step()
        print(f"step {step} loss {loss.item():.5f}")

    print("DTYPES", student.last.weight.dtype, teacher.last.weight.dtype, center.dtype)
    out = os.environ.get("DINO_OUT", "/tmp/hunt42_dino_teacher.pt")
    torch.save({"center": center.float().cpu(), "teacher": {k: v.float().cpu() for k, v in teacher.state_dict().items()}}, out)
    print("saved", out, {k: str(v.dtype) for k, v in torch.load(out)["teacher"].items()})


if __name__ == "__main__":
    main()
