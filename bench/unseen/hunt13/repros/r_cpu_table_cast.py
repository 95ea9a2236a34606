"""A host-resident sparse embedding table (never moved to the device) feeding a device tower. Under the switch the
table stays float32 on the CPU (SparseAdam updates it in f32); only the looked-up rows become bf16 on the device.
The tool casts the CPU module too (`emb.to(torch.bfloat16)`): the table and SparseAdam's state are bf16 on the host,
every update rounded to bf16. Few rows, so rows repeat and the drift shows within 20 steps."""
import torch
import torch.nn as nn
import torch.nn.functional as F
import torch_xla


def main():
    torch.manual_seed(0)
    device = torch_xla.device()
    emb = nn.Embedding(10, 8, sparse=True)
    tower = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 1)).to(device)
    emb_opt = torch.optim.SparseAdam(emb.parameters(), lr=1e-3)
    tower_opt = torch.optim.Adam(tower.parameters(), lr=1e-3)
    w0 = emb.weight.detach().float().clone()
    for step in range(20):
        ids = torch.randint(0, 10, (32,))
        target = (ids % 2).float()
        logits = tower(emb(ids).to(device)).squeeze(-1)
        loss = F.binary_cross_entropy_with_logits(logits, target.to(device))
        emb_opt.zero_grad()
        tower_opt.zero_grad()
        loss.backward()
        emb_opt.step()
        tower_opt.step()
        torch_xla.sync()
    w = emb.weight.detach()
    representable = (w.float() == w.float().to(torch.bfloat16).float()).float().mean().item()
    print("host table dtype", w.dtype, "on", w.device, "| share of its values bf16-representable", round(representable, 3))
    print("rows updated: max |table - initial table|", (w.float() - w0).abs().max().item(), "(Adam lr 1e-3, values ~N(0, 1))")
    print("SparseAdam exp_avg dtype", emb_opt.state[emb.weight]["exp_avg"].dtype, "| final loss", loss.item())


if __name__ == "__main__":
    main()
