"""Training loop: gets the model, optimizer and loss from the caller."""

import torch_xla.core.xla_model as xm


def train_one_epoch(model, optimizer, criterion, loader, device, epoch, log_every=1):
    model.train()
    running, seen = 0.0, 0
    for it, (images, labels) in enumerate(loader):
        images = images.to(device, non_blocking=True)
        labels = labels.to(device, non_blocking=True)
        outputs = model(images)
        loss = criterion(outputs, labels)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
        xm.mark_step()
        running += loss.item() * images.size(0)
        seen += images.size(0)
        if it % log_every == 0:
            print(f"epoch {epoch} step {it} loss {loss.item():.5f}")
    return running / max(seen, 1)
