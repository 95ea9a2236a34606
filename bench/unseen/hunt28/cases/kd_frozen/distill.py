"""Distil a frozen teacher (loaded from its checkpoint) into a small student with a tempered KL term."""
import argparse
import json
import os

import numpy as np
import torch
import torch.nn.functional as F
import torch_xla
import torch_xla.core.xla_model as xm

from models import build_model


def parse():
    p = argparse.ArgumentParser()
    p.add_argument("--teacher-ckpt", default="teacher.pt")
    p.add_argument("--steps", type=int, default=10)
    p.add_argument("--temperature", type=float, default=4.0)
    p.add_argument("--alpha", type=float, default=0.7)
    p.add_argument("--out", default="out")
    return p.parse_args()


def batch(gen, n=16):
    x = torch.randn(n, 3, 16, 16, generator=gen)
    y = torch.randint(0, 10, (n,), generator=gen)
    return x, y


def kd_loss(s_logits, t_logits, labels, T, alpha):
    soft = F.kl_div(F.log_softmax(s_logits / T, dim=-1), F.softmax(t_logits / T, dim=-1),
                    reduction="batchmean") * (T * T)
    hard = F.cross_entropy(s_logits, labels)
    return alpha * soft + (1.0 - alpha) * hard, soft.detach()


def main():
    args = parse()
    os.makedirs(args.out, exist_ok=True)
    device = torch_xla.device()
    torch.manual_seed(0)

    if not os.path.exists(args.teacher_ckpt):
        torch.save(build_model("teacher").state_dict(), args.teacher_ckpt)
    teacher = build_model("teacher")
    teacher.load_state_dict(torch.load(args.teacher_ckpt, map_location="cpu"))
    teacher = teacher.to(device).eval()
    teacher.requires_grad_(False)

    student = build_model("student").to(device)
    opt = torch.optim.SGD(student.parameters(), lr=0.05, momentum=0.9, nesterov=True)
    gen = torch.Generator().manual_seed(1)

    history = []
    for step in range(args.steps):
        x, y = batch(gen)
        x, y = x.to(device), y.to(device)
        with torch.no_grad():
            t_logits = teacher(x)
        s_logits = student(x)
        loss, soft = kd_loss(s_logits, t_logits, y, args.temperature, args.alpha)
        opt.zero_grad()
        loss.backward()
        opt.step()
        torch_xla.sync()
        history.append({"step": step, "loss": loss.item(), "kl": soft.item()})

    student.eval()
    agree, total = 0, 0
    probs = []
    with torch.no_grad():
        for _ in range(3):
            x, _ = batch(gen)
            x = x.to(device)
            t_pred = teacher(x).argmax(-1)
            s_out = F.softmax(student(x), dim=-1)
            agree += (s_out.argmax(-1) == t_pred).sum().item()
            total += x.shape[0]
            probs.append(s_out.cpu().numpy())
    np.save(os.path.join(args.out, "student_probs.npy"), np.concatenate(probs))
    with open(os.path.join(args.out, "log.json"), "w") as f:
        json.dump({"history": history, "agreement": agree / total}, f)
    xm.save(student.state_dict(), os.path.join(args.out, "student.pt"))
    print("agreement", agree / total, "last loss", history[-1]["loss"])


if __name__ == "__main__":
    main()
