"""Two stages: pre-train a denoising autoencoder, then fine-tune a classifier on its encoder.

The fine-tuning keeps the best weights on the host (`{k: v.cpu().clone()}`) by validation accuracy, reloads them onto
the device at the end and writes the encoder separately for later reuse.
"""
import os

os.environ["XLA_USE_BF16"] = "1"

import torch  # noqa: E402
import torch.nn as nn  # noqa: E402
import torch.nn.functional as F  # noqa: E402
import torch_xla.core.xla_model as xm  # noqa: E402

STEPS = int(os.environ.get("STEPS", "6"))
dev = xm.xla_device()
torch.manual_seed(0)
g = torch.Generator().manual_seed(0)
X = torch.randn(256, 20, generator=g)
Y = (X[:, :5].sum(dim=1) > 0).long()


class AE(nn.Module):
    def __init__(self):
        super().__init__()
        self.encoder = nn.Sequential(nn.Linear(20, 32), nn.Tanh(), nn.Linear(32, 8))
        self.decoder = nn.Sequential(nn.Linear(8, 32), nn.Tanh(), nn.Linear(32, 20))

    def forward(self, x):
        return self.decoder(self.encoder(x))


class Classifier(nn.Module):
    def __init__(self, encoder):
        super().__init__()
        self.encoder = encoder
        self.head = nn.Linear(8, 2)

    def forward(self, x):
        return self.head(F.relu(self.encoder(x)))


# stage 1: pre-training
ae = AE().to(dev)
opt1 = torch.optim.Adam(ae.parameters(), lr=2e-3)
for step in range(STEPS):
    xb = X[step * 32 : (step + 1) * 32].to(dev)
    noisy = xb + 0.1 * torch.randn_like(xb)
    opt1.zero_grad()
    rec = F.mse_loss(ae(noisy), xb)
    rec.backward()
    opt1.step()
    xm.mark_step()
    print(f"pretrain {step} loss {rec.item():.5f}")

# stage 2: fine-tuning on the pre-trained encoder
clf = Classifier(ae.encoder).to(dev)
opt2 = torch.optim.SGD(clf.parameters(), lr=0.05, momentum=0.9)
xv, yv = X[200:].to(dev), Y[200:].to(dev)
best_acc, best_state = -1.0, None
for step in range(STEPS):
    xb, yb = X[step * 32 : (step + 1) * 32].to(dev), Y[step * 32 : (step + 1) * 32].to(dev)
    opt2.zero_grad()
    loss = F.cross_entropy(clf(xb), yb)
    loss.backward()
    opt2.step()
    xm.mark_step()
    print(f"finetune {step} loss {loss.item():.5f}")
    with torch.no_grad():
        acc = (clf(xv).argmax(dim=1) == yv).float().mean().item()
    if acc > best_acc:
        best_acc = acc
        best_state = {k: v.cpu().clone() for k, v in clf.state_dict().items()}

print("best acc", best_acc, "host copy", best_state["head.weight"].dtype)
norms = {k: float(v.norm()) for k, v in best_state.items() if v.is_floating_point()}
clf.load_state_dict(best_state)
with torch.no_grad():
    final = F.cross_entropy(clf(xv), yv)
print("DTYPES", next(ae.decoder.parameters()).dtype, next(clf.parameters()).dtype, "final", round(final.item(), 4))
torch.save(best_state, "/tmp/pf_best.pt")
torch.save(clf.encoder.state_dict(), "/tmp/pf_encoder.pt")
print("SAVED", torch.load("/tmp/pf_encoder.pt")["0.weight"].dtype, round(sum(norms.values()), 3))
