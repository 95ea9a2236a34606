import argparse


def main(argv=None):
    p = argparse.ArgumentParser(prog="specnet")
    sub = p.add_subparsers(dest="cmd", required=True)
    t = sub.add_parser("train", help="train the spectral classifier")
    t.add_argument("--steps", type=int, default=8)
    t.add_argument("--lr", type=float, default=2e-3)
    t.add_argument("--out", default="specnet_preds.npy")
    args = p.parse_args(argv)
    if args.cmd == "train":
        from specnet.training import run

        run(steps=args.steps, lr=args.lr, out=args.out)
