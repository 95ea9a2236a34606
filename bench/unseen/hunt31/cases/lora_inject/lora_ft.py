"""LoRA fine-tuning of a small pretrained MLP regressor: adapters injected after loading the base weights."""
import math
import os

import torch
import torch.nn as nn
import torch_xla.core.xla_model as xm


class LoRALinear(nn.Module):
    def __init__(self, base: nn.Linear, r=4, alpha=8):
        super().__init__()
        self.base = base
        self.A = nn.Parameter(torch.empty(r, base.in_features))
        self.B = nn.Parameter(torch.zeros(base.out_features, r))
        nn.init.kaiming_uniform_(self.A, a=math.sqrt(5))
        self.scale = alpha / r

    def forward(self, x):
        return self.base(x) + (x @ self.A.T @ self.B.T) * self.scale


class MLP(nn.Module):
    def __init__(self, d=16):
        super().__init__()
        self.fc1, self.fc2, self.out = nn.Linear(d, 64), nn.Linear(64, 64), nn.Linear(64, 1)

    def forward(self, x):
        return self.out(torch.tanh(self.fc2(torch.tanh(self.fc1(x)))))


def train(steps=20):
    device = xm.xla_device()
    torch.manual_seed(0)
    model = MLP().to(device)
    model.requires_grad_(False)
    for name in ("fc1", "fc2"):
        setattr(model, name, LoRALinear(getattr(model, name)).to(device))
    trainable = [p for p in model.parameters() if p.requires_grad]
    opt = torch.optim.AdamW(trainable, lr=3e-3, weight_decay=0.0)
    x = torch.randn(128, 16).to(device)
    y = torch.sin(x.sum(-1, keepdim=True))
    for step in range(steps):
        loss = nn.functional.mse_loss(model(x), y)
        loss.backward()
        gn = torch.nn.utils.clip_grad_norm_(trainable, 1.0)
        opt.step()
        opt.zero_grad(set_to_none=True)
        xm.mark_step()
        if step % 5 == 0:
            print(f"step {step} loss {loss.item():.4f} gnorm {gn.item():.3f}")
    print("DTYPES", model.fc1.A.dtype, model.fc1.base.weight.dtype, model.out.weight.dtype, loss.dtype)
    lora_state = {k: v.cpu() for k, v in model.state_dict().items() if ".A" in k or ".B" in k}
    torch.save(lora_state, "lora_adapters.pt")


if __name__ == "__main__":
    os.environ["XLA_USE_BF16"] = "1"
    train()
