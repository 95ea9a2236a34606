from torch.optim import SGD, Adam, AdamW  # noqa: F401
