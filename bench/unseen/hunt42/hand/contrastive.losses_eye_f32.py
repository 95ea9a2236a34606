"""Loss and evaluation helpers shared by the training scripts."""
import torch
import torch.nn.functional as F


def nt_xent(z1, z2, tau=0.2):
    z = F.normalize(torch.cat([z1, z2]), dim=-1)
    n = z1.shape[0]
    sim = z @ z.T / tau
    self_mask = torch.eye(2 * n, device=z.device) * 1e4
    sim = sim - self_mask
    targets = torch.cat([torch.arange(n, 2 * n), torch.arange(0, n)]).to(z.device)
    return F.cross_entropy(sim, targets)


def knn_accuracy(bank, bank_y, query, query_y, n_classes, k=5, tau=0.1):
    sim = F.normalize(query, dim=-1) @ F.normalize(bank, dim=-1).T
    w, nn_idx = sim.topk(k, dim=-1)
    votes = torch.zeros(query.shape[0], n_classes, device=query.device, dtype=torch.bfloat16)
    votes.scatter_add_(1, bank_y[nn_idx], (w / tau).exp())
    return (votes.argmax(1) == query_y).to(torch.bfloat16).mean()
