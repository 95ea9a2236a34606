import torch_xla.core.xla_model as xm


def fit(model, opt, batches, loss_fn, device):
    for x, y in batches:
        out = model(x.to(device))
        loss = loss_fn(out, y.to(device))
        opt.zero_grad()
        loss.backward()
        opt.step()
        xm.mark_step()
    return out, loss
