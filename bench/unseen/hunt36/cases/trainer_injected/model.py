import torch.nn as nn


class TokenBagClassifier(nn.Module):
    """Bag-of-tokens text classifier: EmbeddingBag(mean) -> MLP."""

    def __init__(self, vocab=500, dim=32, n_classes=4):
        super().__init__()
        self.emb = nn.EmbeddingBag(vocab, dim, mode="mean")
        self.mlp = nn.Sequential(nn.Linear(dim, 64), nn.ReLU(), nn.Dropout(0.1), nn.Linear(64, n_classes))

    def forward(self, tokens, offsets):
        return self.mlp(self.emb(tokens, offsets))
