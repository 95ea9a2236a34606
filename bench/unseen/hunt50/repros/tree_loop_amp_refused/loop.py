import torch_xla.core.xla_model as xm


def train(model, opt, criterion, batches, device):
    for x, y in batches:
        out = model(x.to(device))
        loss = criterion(out, y.to(device))
        opt.zero_grad()
        loss.backward()
        opt.step()
        xm.mark_step()
        print(loss.item())
