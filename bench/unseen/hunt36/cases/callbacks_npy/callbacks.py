"""Keras-style callbacks. Each hook gets the loop's State; device tensors live on it."""
import json
import os

import numpy as np


class Callback:
    def on_step_end(self, state):
        pass

    def on_eval_end(self, state):
        pass

    def on_train_end(self, state):
        pass


class LossLogger(Callback):
    def __init__(self, every=2):
        self.every = every
        self.history = []

    def on_step_end(self, state):
        value = state.loss.item()
        self.history.append(value)
        if state.step % self.every == 0:
            print(f"step {state.step} loss {value:.4f} lr {state.lr:.2e}")


class EmbeddingDumper(Callback):
    """Writes the eval embeddings and scores for an offline projector."""

    def __init__(self, out_dir):
        self.out_dir = out_dir
        os.makedirs(out_dir, exist_ok=True)

    def on_eval_end(self, state):
        emb = state.outputs["embedding"].detach().to("cpu").numpy()
        np.save(os.path.join(self.out_dir, f"emb_{state.step:05d}.npy"), emb)
        np.save(os.path.join(self.out_dir, f"scores_{state.step:05d}.npy"), state.outputs["scores"].cpu())
        print("dumped", emb.shape, emb.dtype)


class HistoryWriter(Callback):
    def __init__(self, path, loss_logger):
        self.path = path
        self.loss_logger = loss_logger

    def on_train_end(self, state):
        norms = state.grad_norms.cpu()
        with open(self.path, "w") as f:
            json.dump({"loss": self.loss_logger.history, "grad_norm": norms.tolist(), "norm_dtype": str(norms.dtype)}, f)
        print("history", len(self.loss_logger.history), "grad_norms", norms.dtype)
