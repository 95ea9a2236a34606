import torch


def toy_batch(gen, batch, max_len, vocab, n_tags):
    lengths = torch.randint(4, max_len + 1, (batch,), generator=gen)
    ids = torch.randint(1, vocab, (batch, max_len), generator=gen)
    keep = torch.arange(max_len)[None, :] < lengths[:, None]
    ids = ids.masked_fill(~keep, 0)
    tags = torch.where(keep, ids % n_tags, torch.full_like(ids, -100))
    return ids, tags, keep


def padding_bias(keep, device):
    """Additive key-padding bias (B, 1, 1, T): 0 for tokens, -inf for padding."""
    bias = torch.zeros(keep.shape, device=device)
    bias = bias.masked_fill(~keep.to(device), float("-inf"))
    return bias[:, None, None, :]
