"""Point-cloud helpers: kNN graph, neighbour gathering, farthest-point sampling, Chamfer distance."""
import torch


def knn(x, k):
    """x: (B, N, C) -> indices (B, N, k) of the k nearest points (the point itself included)."""
    d = torch.cdist(x, x, compute_mode="use_mm_for_euclid_dist")
    return d.topk(k, dim=-1, largest=False).indices


def gather_neighbours(feat, idx):
    """feat (B, N, C), idx (B, N, k) -> (B, N, k, C)."""
    b = torch.arange(feat.shape[0], device=feat.device).view(-1, 1, 1)
    return feat[b, idx]


def farthest_point_sample(xyz, m):
    """Greedy FPS in a Python loop on device tensors: (B, N, 3) -> (B, m) indices."""
    B, N, _ = xyz.shape
    idx = torch.zeros(B, m, dtype=torch.long, device=xyz.device)
    dist = torch.full((B, N), 1e10, device=xyz.device, dtype=torch.bfloat16)
    farthest = torch.zeros(B, dtype=torch.long, device=xyz.device)
    rows = torch.arange(B, device=xyz.device)
    for i in range(m):
        idx[:, i] = farthest
        centroid = xyz[rows, farthest].unsqueeze(1)
        d = ((xyz - centroid) ** 2).sum(-1)
        dist = torch.minimum(dist, d)
        farthest = dist.argmax(dim=-1)
    return idx


def chamfer(a, b):
    """Symmetric Chamfer distance between (B, N, 3) and (B, M, 3), mean over the batch."""
    d = torch.cdist(a, b, compute_mode="use_mm_for_euclid_dist").pow(2)
    return d.min(dim=2).values.mean(dim=1) + d.min(dim=1).values.mean(dim=1)
