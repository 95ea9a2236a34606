"""Semi-supervised autoencoder kept as named parts, each with its own optimizer and learning rate:
the encoder and decoder learn reconstruction on every sample, the probe (a small float64 head, for a
well-calibrated score) learns the label on the few labelled ones, from a detached latent."""
import argparse
import json
import os
import pickle

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
import torch_xla
import torch_xla.core.xla_model as xm

D_IN, D_LAT = 24, 6


def build_parts():
    return nn.ModuleDict({
        "encoder": nn.Sequential(nn.Linear(D_IN, 48), nn.SiLU(), nn.Linear(48, D_LAT)),
        "decoder": nn.Sequential(nn.Linear(D_LAT, 48), nn.SiLU(), nn.Linear(48, D_IN)),
        "probe": nn.Linear(D_LAT, 1, dtype=torch.float64),
    })


LRS = {"encoder": 2e-3, "decoder": 2e-3, "probe": 5e-2}


def synthetic(n, rng):
    z = rng.standard_normal((n, D_LAT))
    mix = rng.standard_normal((D_LAT, D_IN)) / np.sqrt(D_LAT)
    x = np.tanh(z @ mix) + 0.05 * rng.standard_normal((n, D_IN))
    y = (z[:, 0] + 0.5 * z[:, 1] > 0).astype(np.float64)
    labelled = rng.uniform(size=n) < 0.1
    return torch.from_numpy(x).float(), torch.from_numpy(y), torch.from_numpy(labelled)


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=40)
    ap.add_argument("--batch", type=int, default=128)
    ap.add_argument("--out", default="out")
    args = ap.parse_args(argv)
    os.makedirs(args.out, exist_ok=True)

    torch.manual_seed(0)
    rng = np.random.default_rng(0)
    x_all, y_all, lab_all = synthetic(8192, rng)

    device = torch_xla.device()
    parts = build_parts().to(device)
    opts = {name: torch.optim.Adam(part.parameters(), lr=LRS[name]) for name, part in parts.items()}

    log = {"recon": [], "probe": []}
    for step in range(args.steps):
        idx = torch.randint(0, len(x_all), (args.batch,))
        x = x_all[idx].to(device)
        y = y_all[idx].to(device)
        lab = lab_all[idx].to(device)
        with torch_xla.step():
            z = parts["encoder"](x)
            recon = F.mse_loss(parts["decoder"](z), x)
            score = parts["probe"](z.detach().double()).squeeze(-1)
            per = F.binary_cross_entropy_with_logits(score, y, reduction="none")
            probe_loss = (per * lab).sum() / lab.sum().clamp(min=1)
            for opt in opts.values():
                opt.zero_grad()
            (recon + probe_loss).backward()
            for opt in opts.values():
                xm.optimizer_step(opt)
        log["recon"].append(recon.item())
        log["probe"].append(probe_loss.item())
        if step % 10 == 0:
            print(f"step {step} recon {log['recon'][-1]:.4f} probe {log['probe'][-1]:.4f}")

    with torch.no_grad():
        xe = x_all[:512].to(device)
        z = parts["encoder"](xe)
        p = torch.sigmoid(parts["probe"](z.double())).squeeze(-1)
        acc = ((p > 0.5).double() == y_all[:512].to(device)).double().mean()
    latents = z.cpu()
    with open(os.path.join(args.out, "latents.pkl"), "wb") as f:
        pickle.dump({"z": latents, "p": p.cpu(), "probe_weight": parts["probe"].weight.detach().cpu()}, f)
    result = {"probe_acc": acc.item(), "final_recon": log["recon"][-1], "z_std": latents.std(0).tolist()}
    with open(os.path.join(args.out, "result.json"), "w") as f:
        json.dump({**result, **log}, f)
    print(json.dumps(result))
    return result


if __name__ == "__main__":
    main()
