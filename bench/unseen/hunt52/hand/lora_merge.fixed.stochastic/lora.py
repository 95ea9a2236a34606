"""Hand-rolled LoRA: wrap frozen nn.Linear layers with trainable low-rank adapters, merge them back for export."""
import math

import torch
import torch.nn as nn


class LoRALinear(nn.Module):
    def __init__(self, base: nn.Linear, r: int = 4, alpha: float = 8.0, dropout: float = 0.0):
        super().__init__()
        self.base = base
        self.base.weight.requires_grad_(False)
        if self.base.bias is not None:
            self.base.bias.requires_grad_(False)
        self.r = r
        self.scaling = alpha / r
        dev = base.weight.device
        self.lora_A = nn.Parameter(torch.empty(r, base.in_features, device=dev))
        self.lora_B = nn.Parameter(torch.zeros(base.out_features, r, device=dev))
        nn.init.kaiming_uniform_(self.lora_A, a=math.sqrt(5))
        self.drop = nn.Dropout(dropout)

    def forward(self, x):
        return self.base(x) + (self.drop(x) @ self.lora_A.t() @ self.lora_B.t()) * self.scaling

    @torch.no_grad()
    def merged(self) -> nn.Linear:
        self.base.weight += (self.lora_B @ self.lora_A) * self.scaling
        return self.base


def inject_lora(model: nn.Module, targets=("q_proj", "v_proj"), r=4, alpha=8.0):
    """Replace every nn.Linear whose name ends with one of `targets` by a LoRALinear."""
    for name, module in list(model.named_modules()):
        for child_name, child in list(module.named_children()):
            if isinstance(child, nn.Linear) and child_name in targets:
                setattr(module, child_name, LoRALinear(child, r=r, alpha=alpha))
    return model


def merge_lora(model: nn.Module):
    for name, module in list(model.named_modules()):
        for child_name, child in list(module.named_children()):
            if isinstance(child, LoRALinear):
                setattr(module, child_name, child.merged())
    return model


def lora_state_dict(model: nn.Module):
    return {k: v for k, v in model.state_dict().items() if "lora_" in k}
