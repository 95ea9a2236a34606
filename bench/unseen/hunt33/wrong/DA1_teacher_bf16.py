"""Knowledge distillation: a teacher rebuilt from a state dict (serialised to bytes, loaded on the host, then
moved), a smaller student trained on KL(teacher || student) at temperature TAU plus cross-entropy; the best
student by validation loss is kept with copy.deepcopy and its predictions written to JSON. Legacy bf16 switch on."""
import copy
import io
import json
import os

import torch
import torch.nn as nn
import torch.nn.functional as F
import torch_xla
import torch_xla.core.xla_model as xm

D, C, B = 12, 5, 32
STEPS = 10
TAU = 2.0


def mlp(width):
    return nn.Sequential(nn.Linear(D, width), nn.ReLU(), nn.Linear(width, C))


def teacher_bytes():
    torch.manual_seed(11)
    buf = io.BytesIO()
    torch.save(mlp(48).state_dict(), buf)
    return buf.getvalue()


def batch(gen):
    x = torch.randn(B, D, generator=gen)
    y = (x[:, :C] * torch.arange(1, C + 1)).argmax(1)
    return x, y


def main():
    device = torch_xla.device()
    blob = teacher_bytes()
    teacher = mlp(48)
    teacher.load_state_dict(torch.load(io.BytesIO(blob)))
    teacher = teacher.to(device).eval().to(torch.bfloat16)
    torch.manual_seed(0)
    student = mlp(16).to(device)
    opt = torch.optim.SGD(student.parameters(), lr=0.2, momentum=0.9)
    gen = torch.Generator().manual_seed(2)
    xv, yv = batch(gen)
    xv, yv = xv.to(device), yv.to(device)
    best, best_val = None, float("inf")
    for step in range(STEPS):
        x, y = batch(gen)
        x, y = x.to(device), y.to(device)
        with torch.no_grad():
            with torch.autocast("xla", dtype=torch.bfloat16):
                t_logits = teacher(x)
        with torch.autocast("xla", dtype=torch.bfloat16):
            s_logits = student(x)
            kd = F.kl_div(F.log_softmax(s_logits / TAU, -1), F.softmax(t_logits / TAU, -1), reduction="batchmean")
            loss = kd * TAU * TAU + F.cross_entropy(s_logits, y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        xm.mark_step()
        with torch.no_grad():
            with torch.autocast("xla", dtype=torch.bfloat16):
                val = F.cross_entropy(student(xv), yv).item()
        if val < best_val:
            best, best_val = copy.deepcopy(student), val
        print(f"step {step} loss {loss.item():.4f} val {val:.4f}")
    with torch.no_grad():
        with torch.autocast("xla", dtype=torch.bfloat16):
            probs = F.softmax(best(xv), -1)
    with open("best_preds.json", "w") as fh:
        json.dump({"val": best_val, "probs": probs.cpu().tolist()}, fh)


if __name__ == "__main__":
    main()
