"""Distil an LSTM sequence classifier into a smaller one, with an EMA and an SWA of the student.

1. train the teacher; 2. freeze it; 3. train the student on the teacher's soft targets plus the
labels, keeping an exponential moving average of its weights (updated every step) and a
stochastic weight average over the last steps; 4. evaluate the four models on held-out data.
Writes OUT/eval.json and the EMA weights (OUT/student_ema.pt), which are what gets deployed.
"""

import argparse
import copy
import json
import os

os.environ["XLA_USE_BF16"] = "1"

import torch
import torch.nn as nn
import torch.nn.functional as F
import torch_xla.core.xla_model as xm
from torch.optim.swa_utils import AveragedModel

VOCAB, CLASSES, SEQ_LEN = 32, 4, 8


class SeqClassifier(nn.Module):
    def __init__(self, hidden: int, emb: int = 16):
        super().__init__()
        self.emb = nn.Embedding(VOCAB, emb)
        self.rnn = nn.LSTM(emb, hidden, batch_first=True)
        self.out = nn.Linear(hidden, CLASSES)

    def forward(self, tokens):
        h, _ = self.rnn(self.emb(tokens))
        return self.out(h[:, -1])


def make_data(n: int, seed: int):
    """The label is which quarter of the vocabulary the sequence's tokens mostly come from."""
    g = torch.Generator().manual_seed(seed)
    labels = torch.randint(0, CLASSES, (n,), generator=g)
    own = labels[:, None] * (VOCAB // CLASSES) + torch.randint(0, VOCAB // CLASSES, (n, SEQ_LEN), generator=g)
    noise = torch.randint(0, VOCAB, (n, SEQ_LEN), generator=g)
    keep = torch.rand(n, SEQ_LEN, generator=g) < 0.55
    return torch.where(keep, own, noise), labels


def batches(x, y, size, seed):
    g = torch.Generator().manual_seed(seed)
    while True:
        order = torch.randperm(len(x), generator=g)
        for i in range(0, len(x) - size + 1, size):
            idx = order[i : i + size]
            yield x[idx], y[idx]


@torch.no_grad()
def ema_update(ema: nn.Module, model: nn.Module, decay: float):
    for pe, pm in zip(ema.parameters(), model.parameters()):
        pe.mul_(decay).add_(pm.detach(), alpha=1.0 - decay)


@torch.no_grad()
def evaluate(model, x, y, device):
    model.eval()
    logits = model(x.to(device))
    loss = F.cross_entropy(logits, y.to(device))
    acc = (logits.argmax(-1) == y.to(device)).float().mean()
    xm.mark_step()
    return {"loss": round(loss.item(), 6), "accuracy": round(acc.item(), 6)}


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=16, help="steps for the teacher, then for the student")
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--temperature", type=float, default=2.0)
    parser.add_argument("--alpha", type=float, default=0.7)
    parser.add_argument("--ema-decay", type=float, default=0.9)
    parser.add_argument("--swa-from", type=int, default=8)
    parser.add_argument("--out", default="out")
    args = parser.parse_args()

    torch.manual_seed(0)
    device = xm.xla_device()
    train_x, train_y = make_data(1024, seed=1)
    val_x, val_y = make_data(256, seed=2)

    # 1. the teacher
    teacher = SeqClassifier(hidden=48).to(device)
    t_opt = torch.optim.Adam(teacher.parameters(), lr=1e-2)
    data = batches(train_x, train_y, args.batch_size, seed=3)
    for _ in range(args.steps):
        x, y = next(data)
        x, y = x.to(device), y.to(device)
        t_opt.zero_grad()
        loss = F.cross_entropy(teacher(x), y)
        loss.backward()
        xm.optimizer_step(t_opt)
        xm.mark_step()
    # 2. frozen from here on
    teacher.eval()
    teacher.requires_grad_(False)

    # 3. the student, its EMA (a copy made at initialisation) and its SWA
    student = SeqClassifier(hidden=24).to(device)
    student_ema = copy.deepcopy(student)
    student_ema.requires_grad_(False)
    s_opt = torch.optim.Adam(student.parameters(), lr=1e-2)
    swa = AveragedModel(student)
    T = args.temperature
    for step in range(args.steps):
        x, y = next(data)
        x, y = x.to(device), y.to(device)
        with torch.no_grad():
            soft = F.softmax(teacher(x) / T, dim=-1)
        s_opt.zero_grad()
        logits = student(x)
        kd = F.kl_div(F.log_softmax(logits / T, dim=-1), soft, reduction="batchmean") * T * T
        loss = args.alpha * kd + (1 - args.alpha) * F.cross_entropy(logits, y)
        loss.backward()
        xm.optimizer_step(s_opt)
        ema_update(student_ema, student, args.ema_decay)
        if step >= args.swa_from:
            swa.update_parameters(student)
        xm.mark_step()
        if step % 4 == 0:
            print(f"student step {step} loss {loss.item():.4f}")

    # 4. held-out evaluation of every model
    results = {
        "teacher": evaluate(teacher, val_x, val_y, device),
        "student": evaluate(student, val_x, val_y, device),
        "student_ema": evaluate(student_ema, val_x, val_y, device),
        "student_swa": evaluate(swa.module, val_x, val_y, device),
    }
    os.makedirs(args.out, exist_ok=True)
    with open(os.path.join(args.out, "eval.json"), "w") as f:
        json.dump(results, f, indent=1)
    xm.save(student_ema.state_dict(), os.path.join(args.out, "student_ema.pt"))
    print(json.dumps(results))


if __name__ == "__main__":
    main()
