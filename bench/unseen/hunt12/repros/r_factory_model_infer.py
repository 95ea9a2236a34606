"""G3: an inference script whose model comes from a factory function of the file
(`return model.to(device).eval()`); the switch set by the launcher. stochastic casts the model but not
its input; amp puts nothing under autocast. The switch comes from the launcher (LEGACY_ENV)."""
import torch
import torch.nn as nn
import torch_xla
from _ir import dot_dtypes, ir_dtype


def load_model(device):
    torch.manual_seed(0)
    model = nn.Sequential(nn.Conv2d(1, 4, 3, padding=1), nn.ReLU(), nn.Flatten(), nn.Linear(4 * 8 * 8, 10))
    return model.to(device).eval()


def main():
    device = torch_xla.device()
    model = load_model(device)
    x = torch.rand(2, 1, 8, 8)
    with torch.no_grad():
        logits = model(x.to(device))
        print("logits: IR", ir_dtype(logits), "; dots in its graph", dot_dtypes(logits))
        probs = logits.softmax(-1)
    print("first probs", [round(v, 5) for v in probs.cpu()[0, :3].tolist()])


if __name__ == "__main__":
    main()
