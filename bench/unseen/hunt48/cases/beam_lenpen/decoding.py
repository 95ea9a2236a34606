"""Decoding helpers used at evaluation time."""
import torch


def length_penalty(lengths, alpha):
    # GNMT penalty: ((5 + |Y|) / 6) ** alpha
    return ((5.0 + lengths.float()) / 6.0) ** alpha


def nucleus_filter(logits, top_p):
    sorted_logits, order = torch.sort(logits, descending=True, dim=-1)
    cum = sorted_logits.softmax(dim=-1).cumsum(dim=-1)
    drop = cum - sorted_logits.softmax(dim=-1) > top_p
    sorted_logits = sorted_logits.masked_fill(drop, float("-inf"))
    return torch.full_like(logits, float("-inf")).scatter(-1, order, sorted_logits)
