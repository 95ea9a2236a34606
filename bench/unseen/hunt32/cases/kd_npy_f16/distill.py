"""Offline distillation: the teacher's logits were dumped once to disk (float16 to save space)."""
import argparse
import os

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F


def make_teacher_dump(path, n, c, rng):
    feats = rng.normal(size=(n, 16)).astype(np.float32)
    w = rng.normal(size=(16, c)).astype(np.float32)
    np.save(path + ".x.npy", feats)
    np.save(path + ".logits.npy", (feats @ w).astype(np.float16))
    return feats


def main(argv=None):
    p = argparse.ArgumentParser()
    p.add_argument("--steps", type=int, default=30)
    p.add_argument("--T", type=float, default=2.0)
    p.add_argument("--alpha", type=float, default=0.7)
    p.add_argument("--dump", default="/tmp/h32_teacher")
    args = p.parse_args(argv)

    import torch_xla.core.xla_model as xm

    device = xm.xla_device()
    rng = np.random.default_rng(0)
    make_teacher_dump(args.dump, 1024, 10, rng)
    feats = np.load(args.dump + ".x.npy")
    t_logits = np.load(args.dump + ".logits.npy", mmap_mode="r")
    hard = t_logits.argmax(1)

    student = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 10)).to(device)
    opt = torch.optim.SGD(student.parameters(), lr=0.1, momentum=0.9)
    for step in range(args.steps):
        idx = rng.choice(len(feats), 64, replace=False)
        x = torch.from_numpy(feats[idx]).to(device)
        t = torch.from_numpy(np.ascontiguousarray(t_logits[idx])).to(device)
        y = torch.from_numpy(hard[idx]).to(device)
        s = student(x)
        kd = F.kl_div(F.log_softmax(s / args.T, -1), F.softmax(t / args.T, -1), reduction="batchmean") * args.T ** 2
        loss = args.alpha * kd + (1 - args.alpha) * F.cross_entropy(s, y)
        opt.zero_grad()
        loss.backward()
        xm.optimizer_step(opt, barrier=True)
        if step % 10 == 0:
            print(f"step {step} kd {kd.item():.4f} loss {loss.item():.4f}")
    agree = (s.argmax(1) == t.argmax(1)).float().mean()
    print("DTYPES", student[0].weight.dtype, t.dtype, kd.dtype, loss.dtype)
    print("agreement", agree.item())


if __name__ == "__main__":
    os.environ["XLA_USE_BF16"] = "1"
    main()
