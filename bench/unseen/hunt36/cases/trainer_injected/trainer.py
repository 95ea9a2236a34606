import numpy as np
import torch
import torch.nn.functional as F
import torch_xla.core.xla_model as xm

import metrics


class Trainer:
    def __init__(self, model, device, lr=5e-3, clip=1.0):
        self.model = model
        self.device = device
        self.clip = clip
        self.opt = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=0.01)
        self.sched = torch.optim.lr_scheduler.CosineAnnealingLR(self.opt, T_max=20)

    def step(self, tokens, offsets, labels):
        self.model.train()
        logits = self.model(tokens.to(self.device), offsets.to(self.device))
        loss = F.cross_entropy(logits, labels.to(self.device))
        self.opt.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(self.model.parameters(), self.clip)
        xm.optimizer_step(self.opt)
        self.sched.step()
        return loss

    @torch.no_grad()
    def evaluate(self, batches):
        self.model.eval()
        outs, labs = [], []
        for tokens, offsets, labels in batches:
            outs.append(self.model(tokens.to(self.device), offsets.to(self.device)).cpu())
            labs.append(labels)
        logits = torch.cat(outs).numpy()
        labels = torch.cat(labs).numpy()
        return {"top2": metrics.top_k_accuracy(logits, labels), **metrics.margin_stats(logits), "dtype": str(logits.dtype)}
