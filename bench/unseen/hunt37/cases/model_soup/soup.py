"""Uniform and greedy model soups: fine-tune one pretrained classifier with
several learning rates, average the state dicts on the device, and keep the
soup that validates best."""
import copy
import os

import torch
import torch.nn as nn
import torch.nn.functional as F
import torch_xla

STEPS = int(os.environ.get("STEPS", "24"))
LRS = (3e-3, 1e-3, 5e-4)


def setup_env():
    os.environ["XLA_USE_BF16"] = "1"
    os.environ.setdefault("PJRT_DEVICE", "TPU")


def make_model():
    return nn.Sequential(nn.Linear(16, 64), nn.BatchNorm1d(64), nn.ReLU(), nn.Linear(64, 4))


def data(gen, n=128):
    y = torch.randint(0, 4, (n,), generator=gen)
    centers = torch.tensor([[1.0, 0.0], [0.0, 1.0], [-1.0, 0.0], [0.0, -1.0]]).repeat(1, 8)
    return centers[y] + 0.8 * torch.randn(n, 16, generator=gen), y


@torch.no_grad()
def accuracy(model, x, y):
    model.eval()
    return (model(x).argmax(-1) == y).float().mean()


def main():
    setup_env()
    torch.manual_seed(0)
    dev = torch_xla.device()
    base = make_model().to(dev)
    val_x, val_y = data(torch.Generator().manual_seed(99), 512)
    val_x, val_y = val_x.to(dev), val_y.to(dev)

    ingredients = []
    step = 0
    for i, lr in enumerate(LRS):
        gen = torch.Generator().manual_seed(i)
        model = copy.deepcopy(base)
        opt = torch.optim.SGD(model.parameters(), lr=lr * 10, momentum=0.9)
        for _ in range(STEPS // len(LRS)):
            model.train()
            x, y = data(gen)
            loss = F.cross_entropy(model(x.to(dev)), y.to(dev))
            opt.zero_grad()
            loss.backward()
            opt.step()
            torch_xla.sync()
            print(f"step {step} loss {loss.item():.5f}")
            step += 1
        ingredients.append({k: v.detach().clone() for k, v in model.state_dict().items()})
        print(f"ingredient lr={lr} val acc {accuracy(model, val_x, val_y).item():.4f}")

    float_keys = [k for k, v in ingredients[0].items() if v.is_floating_point()]
    uniform = {k: sum(sd[k] for sd in ingredients) / len(ingredients) if k in float_keys else ingredients[0][k]
               for k in ingredients[0]}
    soup_model = make_model().to(dev)
    soup_model.load_state_dict(uniform)
    uniform_acc = accuracy(soup_model, val_x, val_y)

    greedy, best = [ingredients[0]], accuracy(base, val_x, val_y) * 0
    for sd in ingredients:
        trial = greedy + [sd] if sd is not ingredients[0] else greedy
        cand = {k: torch.stack([t[k].float() for t in trial]).mean(0) if k in float_keys else sd[k] for k in sd}
        soup_model.load_state_dict(cand)
        acc = accuracy(soup_model, val_x, val_y)
        if acc >= best:
            greedy, best = trial, acc
    torch.save({k: v.cpu() for k, v in uniform.items()}, "uniform_soup.pt")
    print(f"uniform soup {uniform_acc.item():.4f} greedy soup {best.item():.4f} ({len(greedy)} ingredients)")
    print("DTYPES weight", soup_model[0].weight.dtype, "loss", loss.dtype, "soup", uniform["0.weight"].dtype,
          "saved", torch.load("uniform_soup.pt")["0.weight"].dtype, "bn", uniform["1.running_var"].dtype)


if __name__ == "__main__":
    main()
