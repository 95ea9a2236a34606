import torch
import torch.nn.functional as F


def fit(model, batches, device):
    opt = torch.optim.AdamW(model.parameters(), lr=1e-2)
    for x, y in batches:
        loss = F.cross_entropy(model(x.to(device)), y.to(device))
        opt.zero_grad()
        loss.backward()
        opt.step()
    return opt, loss
