"""Keyword-spotting style acoustic model trained with CTC on synthetic filterbank frames.

Precision comes from the launcher (run.sh exports the torch-xla switch)."""
import argparse
import math

import torch
import torch.nn as nn
import torch_xla

VOCAB = ["_", "a", "e", "i", "o", "s", "t", "n", "r", "l"]


class ConvCTC(nn.Module):
    def __init__(self, n_mels=24, hidden=64, n_tokens=len(VOCAB)):
        super().__init__()
        self.front = nn.Sequential(
            nn.Conv1d(n_mels, hidden, kernel_size=5, padding=2),
            nn.GELU(),
            nn.Conv1d(hidden, hidden, kernel_size=5, padding=2, stride=2),
            nn.GELU(),
        )
        self.norm = nn.LayerNorm(hidden)
        self.proj = nn.Sequential(nn.Linear(hidden, hidden), nn.GELU(), nn.Linear(hidden, n_tokens))

    def forward(self, feats):
        # feats: (batch, n_mels, frames)
        h = self.front(feats).transpose(1, 2)
        h = self.norm(h)
        return self.proj(h)  # (batch, frames // 2, n_tokens)


def synth_batch(gen, batch, frames, n_mels, max_label):
    feats = torch.randn(batch, n_mels, frames, generator=gen)
    t = torch.arange(frames).float()
    feats += 0.5 * torch.sin(t / 7.0)  # a slow "formant"
    lengths = torch.randint(2, max_label + 1, (batch,), generator=gen)
    labels = torch.randint(1, len(VOCAB), (batch, max_label), generator=gen)
    return feats, labels, lengths


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=12)
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--frames", type=int, default=64)
    args = ap.parse_args()

    torch.manual_seed(0)
    gen = torch.Generator().manual_seed(1)
    device = torch_xla.device()
    model = ConvCTC().to(device)
    opt = torch.optim.AdamW(model.parameters(), lr=3e-3, weight_decay=0.01)
    ctc = nn.CTCLoss(blank=0, zero_infinity=True)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: min(1.0, (s + 1) / 4))

    for step in range(args.steps):
        feats, labels, lengths = synth_batch(gen, args.batch, args.frames, 24, 6)
        feats = feats.to(device)
        labels = labels.to(device)
        target_lengths = lengths.to(device)
        logits = model(feats)
        log_probs = logits.log_softmax(-1).transpose(0, 1)  # (T, N, C)
        input_lengths = torch.full((args.batch,), log_probs.shape[0], dtype=torch.long, device=device)
        loss = ctc(log_probs, labels, input_lengths, target_lengths)
        opt.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 5.0)
        opt.step()
        sched.step()
        torch_xla.sync()
        print(f"step {step} loss {loss.item():.4f}", flush=True)

    greedy = logits.argmax(-1)[0].cpu().tolist()
    print("decoded", "".join(VOCAB[i] for i in greedy if i != 0)[:20])
    print("DTYPES", "weight", model.proj[2].weight.dtype, "logits", logits.dtype, "loss", loss.dtype,
          "ppl", math.exp(min(loss.item(), 20.0)) > 0)


if __name__ == "__main__":
    main()
