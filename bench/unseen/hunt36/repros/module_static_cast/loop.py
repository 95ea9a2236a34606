def fit(model, opt, batches, device):
    for x, ids in batches:
        out = model(x.to(device))
        keep = (ids.to(device) != 0).float()
        loss = (out.squeeze(-1) * keep).pow(2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
    return out, loss
