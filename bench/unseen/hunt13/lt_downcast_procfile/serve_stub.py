"""Placeholder for the scoring service (reads artifacts/val_probs.npy); no torch on this dyno."""
import numpy as np

if __name__ == "__main__":
    probs = np.load("artifacts/val_probs.npy")
    print("serving", probs.shape, probs.dtype)
