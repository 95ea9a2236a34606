import argparse

import torch
import torch.nn.functional as F
import torch_xla.core.xla_model as xm

from lm import TinyLM

p = argparse.ArgumentParser()
p.add_argument("--steps", type=int, default=30)
p.add_argument("--temperature", type=float, default=0.8)
p.add_argument("--top-k", type=int, default=5)
args = p.parse_args()

device = xm.xla_device()
torch.manual_seed(0)
VOCAB, T = 24, 16
text = torch.arange(4000) % VOCAB  # a repeating pattern the LM can learn

model = TinyLM(VOCAB).to(device)
opt = torch.optim.AdamW(model.parameters(), lr=3e-3, weight_decay=0.01)

for step in range(args.steps):
    starts = torch.randint(0, len(text) - T - 1, (16,))
    batch = torch.stack([text[s:s + T + 1] for s in starts]).to(device)
    logits = model(batch[:, :-1])
    loss = F.cross_entropy(logits.reshape(-1, VOCAB), batch[:, 1:].reshape(-1))
    opt.zero_grad()
    loss.backward()
    xm.optimizer_step(opt, barrier=True)
    if step % 10 == 0:
        print(f"step {step} loss {loss.item():.3f}")


@torch.no_grad()
def sample(model, prompt, n_new, temperature, top_k):
    ids = prompt
    for _ in range(n_new):
        logits = model(ids[:, -T:])[:, -1, :] / temperature
        v, _ = torch.topk(logits, top_k)
        logits[logits < v[:, [-1]]] = -float("inf")
        probs = F.softmax(logits, dim=-1)
        nxt = torch.multinomial(probs, 1)
        ids = torch.cat([ids, nxt], dim=1)
    return ids


model.eval()
out = sample(model, torch.tensor([[1, 2, 3]], device=device), 8, args.temperature, args.top_k)
print("DTYPES", model.head.weight.dtype, model.blocks[0].att._bias.dtype, logits.dtype)
print("sample", out[0].tolist())
