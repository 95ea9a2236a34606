"""Few-shot prototype network: an encoder trained episodically, then evaluated with nearest
prototypes, a kNN vote and k-means on the device; diagnostics go to the host as NumPy."""
import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
import torch_xla
import torch_xla.core.xla_model as xm

N_CLASSES, DIM_IN, EMB = 12, 24, 16


class Encoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(DIM_IN, 64), nn.ReLU(), nn.Linear(64, EMB))

    def forward(self, x):
        return F.normalize(self.net(x), dim=-1)


def make_pool(rng, per_class=40):
    centers = rng.normal(scale=2.0, size=(N_CLASSES, DIM_IN))
    x = np.concatenate([c + rng.normal(size=(per_class, DIM_IN)) for c in centers])
    y = np.repeat(np.arange(N_CLASSES), per_class)
    return x.astype(np.float32), y


def episode(rng, x, y, n_way=5, k_shot=5, q=5):
    classes = rng.choice(N_CLASSES, n_way, replace=False)
    s_idx, q_idx = [], []
    for c in classes:
        idx = rng.permutation(np.flatnonzero(y == c))[: k_shot + q]
        s_idx.append(idx[:k_shot]); q_idx.append(idx[k_shot:])
    return x[np.concatenate(s_idx)], x[np.concatenate(q_idx)], np.repeat(np.arange(n_way), q)


def proto_logits(enc, support, query, n_way, k_shot):
    s = enc(support).view(n_way, k_shot, -1)
    protos = s.mean(1)
    return -torch.cdist(enc(query), protos) ** 2 / 0.1


def kmeans(z, k, iters=10):
    centers = z[torch.arange(k, device=z.device) * (z.shape[0] // k)].clone()
    for _ in range(iters):
        assign = torch.cdist(z, centers).argmin(1)
        onehot = F.one_hot(assign, k).to(z.dtype)
        counts = onehot.sum(0).clamp_min(1.0)
        centers = (onehot.t() @ z) / counts.unsqueeze(1)
    return assign, centers


def main():
    device = torch_xla.device()
    torch.manual_seed(0)
    rng = np.random.default_rng(0)
    x_np, y_np = make_pool(rng)
    enc = Encoder().to(device)
    opt = torch.optim.SGD(enc.parameters(), lr=0.1, momentum=0.9)
    n_way, k_shot = 5, 5
    for step in range(12):
        s, q, qy = episode(rng, x_np, y_np, n_way, k_shot)
        s, q = torch.tensor(s, device=device), torch.tensor(q, device=device)
        qy = torch.tensor(qy, device=device)
        logits = proto_logits(enc, s, q, n_way, k_shot)
        loss = F.cross_entropy(logits, qy)
        opt.zero_grad()
        loss.backward()
        xm.optimizer_step(opt)
        torch_xla.sync()
        acc = (logits.argmax(1) == qy).float().mean()
        xm.master_print(f"episode {step} loss {loss.item():.4f} acc {acc.item():.3f}")

    enc.eval()
    with torch.no_grad():
        z = enc(torch.from_numpy(x_np).to(device))
        labels = torch.from_numpy(y_np).to(device)
        # kNN vote (leave-one-out)
        d = torch.cdist(z, z)
        d.fill_diagonal_(float("inf"))
        nn_idx = d.topk(5, largest=False).indices
        votes = F.one_hot(labels[nn_idx], N_CLASSES).sum(1)
        knn_acc = (votes.argmax(1) == labels).float().mean()
        # distance histogram and confidence buckets
        hist = torch.histc(d[torch.isfinite(d)], bins=20, min=0.0, max=2.0)
        edges = torch.linspace(0.0, 2.0, 5, device=device)
        nearest = d.min(1).values
        bucket = torch.bucketize(nearest, edges)
        per_bucket = torch.bincount(bucket, minlength=6)
        assign, centers = kmeans(z, N_CLASSES)
        purity = torch.zeros(N_CLASSES, device=device)
        for c in range(N_CLASSES):
            members = labels[assign == c]
            if members.numel():
                purity[c] = torch.bincount(members, minlength=N_CLASSES).max() / members.numel()
    torch_xla.sync()
    print("knn acc", round(knn_acc.item(), 3), "purity", round(purity.mean().item(), 3))
    print("buckets", per_bucket.cpu().tolist())
    h = hist.cpu().numpy()
    np.savez("proto_eval.npz", hist=h, centers=centers.cpu().numpy(), emb=z.cpu().numpy())
    print("hist", h.dtype, int(h.sum()), "centers", centers.shape)


if __name__ == "__main__":
    main()
