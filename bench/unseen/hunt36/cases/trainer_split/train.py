"""Entry point: python train.py [--epochs N]"""
import argparse
import os

os.environ["XLA_USE_BF16"] = "1"

from trainer import Trainer, TrainerConfig  # noqa: E402


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--epochs", type=int, default=2)
    p.add_argument("--out", default="artifacts")
    a = p.parse_args()
    cfg = TrainerConfig(epochs=a.epochs, out_dir=a.out)
    trainer = Trainer(cfg)
    trainer.fit()
    report = trainer.evaluate()
    print("REPORT", {k: round(float(v), 4) for k, v in report.items()})


if __name__ == "__main__":
    main()
