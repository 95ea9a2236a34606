"""Writes the small random-init checkpoint the smoke test of the serving path uses.

The real weights come from the model registry; CI has no access to it, so it scores with a
checkpoint of the same architecture and format made here (CPU only, seeded).
"""

import argparse
import json
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from model import SentimentTransformer  # noqa: E402

CONFIG = {
    "model": {"vocab_size": 2048, "max_len": 24, "dim": 64, "heads": 4, "layers": 2, "classes": 3},
    "labels": ["negative", "neutral", "positive"],
}


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", default="checkpoints/sentiment-small")
    args = parser.parse_args()
    torch.manual_seed(1234)
    model = SentimentTransformer(**CONFIG["model"])
    with torch.no_grad():
        model.head.weight.mul_(8.0)  # spread the logits so the smoke test sees confident and unsure rows
    os.makedirs(args.out, exist_ok=True)
    torch.save(model.state_dict(), os.path.join(args.out, "model.pt"))
    with open(os.path.join(args.out, "config.json"), "w") as f:
        json.dump(CONFIG, f, indent=1)


if __name__ == "__main__":
    main()
