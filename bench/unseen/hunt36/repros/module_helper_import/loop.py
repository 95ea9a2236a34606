def fit(model, opt, batches, device):
    # no `import torch` here: only tensor methods are used
    for x, y in batches:
        out = model(x.to(device))
        loss = ((out - y.to(device)) ** 2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
    return out, loss
