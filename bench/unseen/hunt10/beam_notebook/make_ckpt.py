"""Train the tiny LM a little on the CPU (no XLA) on a toy copy task and save a checkpoint."""
import torch
import torch.nn.functional as F
from lm import TinyLM, VOCAB, BOS, EOS

torch.manual_seed(0)
model = TinyLM()
opt = torch.optim.Adam(model.parameters(), lr=3e-3)
for step in range(60):
    body = torch.randint(3, VOCAB, (32, 6))
    seq = torch.cat([torch.full((32, 1), BOS), body, body.flip(1), torch.full((32, 1), EOS)], 1)
    logits = model(seq[:, :-1])
    loss = F.cross_entropy(logits.reshape(-1, VOCAB), seq[:, 1:].reshape(-1))
    opt.zero_grad(); loss.backward(); opt.step()
torch.save({"model": model.state_dict(), "loss": loss.item()}, "tiny_lm.pt")
print("saved tiny_lm.pt, loss", round(loss.item(), 3))
