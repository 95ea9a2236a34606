"""Writes hand/*.py: hand-made migrations, each the codemod's migration (or the legacy case for the refused ones)
with the edits listed here. Base: /tmp/hunt47mig/CASE.MODE (made by `migrate . --mode MODE` on a copy of
cases/CASE) or cases/CASE itself ("legacy"). Rerun: python make_hand.py (after making the bases, see rerun.sh)."""
import pathlib
import sys

H = pathlib.Path(__file__).resolve().parent
MIG = pathlib.Path("/tmp/hunt47mig")

SPEC_FFT_OLD = '''        spec = torch.fft.rfft(x, dim=1, norm="ortho")
        spec = spec * torch.view_as_complex(self.w)
        return torch.fft.irfft(spec, n=n, dim=1, norm="ortho")'''
SPEC_FFT_RIGHT = '''        spec = torch.fft.rfft(x.float(), dim=1, norm="ortho")
        spec = spec * torch.view_as_complex(self.w.float())
        return torch.fft.irfft(spec, n=n, dim=1, norm="ortho").to(x.dtype)'''
SPEC_BASE = [
    ('os.environ["XLA_USE_BF16"] = "1"', 'os.environ["NEURON_RT_STOCHASTIC_ROUNDING_EN"] = "1"'),
    ("    model = Mixer().to(dev)\n", "    model = Mixer().to(dev)\n    model.to(torch.bfloat16)\n"),
    ("        x, y = x.to(dev), y.to(dev)", "        x, y = x.to(dev, dtype=torch.bfloat16), y.to(dev)"),
    ("model(x.to(dev))", "model(x.to(dev, dtype=torch.bfloat16))"),
]

TEXTS = {
    # fourier_coords: the Fourier matrix B left f32 (legacy: bf16) -> `v @ B.T` runs f32
    "fourier.B_f32.stochastic.py": ("fourier_coords", "stochastic", "train_field.py", [
        ("B = torch.randn(NFEAT, 2, device=dev, dtype=torch.bfloat16) * SIGMA", "B = torch.randn(NFEAT, 2, device=dev) * SIGMA"),
    ]),
    # fourier_coords: the encoding upcast "for accuracy of sin at large arguments", cast back after
    "fourier.encode_f32.stochastic.py": ("fourier_coords", "stochastic", "train_field.py", [
        ("    proj = 2 * math.pi * v @ B.T\n    return torch.cat([torch.cos(proj), torch.sin(proj)], dim=-1)",
         "    proj = 2 * math.pi * v.float() @ B.float().T\n    return torch.cat([torch.cos(proj), torch.sin(proj)], dim=-1).to(torch.bfloat16)"),
    ]),
    # welford_norm: the Welford accumulators left f32 (legacy: bf16)
    "welford.stats_f32.stochastic.py": ("welford_norm", "stochastic", "train_norm.py", [
        ("self.mean = torch.zeros(n, device=device, dtype=torch.bfloat16)", "self.mean = torch.zeros(n, device=device)"),
        ("self.m2 = torch.zeros(n, device=device, dtype=torch.bfloat16)", "self.m2 = torch.zeros(n, device=device)"),
    ]),
    # welford_norm: the long cumsum upcast inside the model's forward, cast back
    "welford.cumsum_f32.stochastic.py": ("welford_norm", "stochastic", "train_norm.py", [
        ("drift = torch.cumsum(x, dim=-1) / WIN", "drift = (torch.cumsum(x.float(), dim=-1) / WIN).to(x.dtype)"),
    ]),
    # fakequant_counts: the one-hot targets left f32 -> the loss runs f32
    "fq.onehot_f32.stochastic.py": ("fakequant_counts", "stochastic", "train_qat.py", [
        ('onehot = F.one_hot(y, NCLS).to((torch.bfloat16 if os.environ.get("BF16", "1") == "1" else torch.float32))',
         "onehot = F.one_hot(y, NCLS).float()"),
    ]),
    # fakequant_counts: only the Linear layers cast; the learnt quantiser scales stay f32
    "fq.scales_f32.stochastic.py": ("fakequant_counts", "stochastic", "train_qat.py", [
        ('    if os.environ.get("BF16", "1") == "1":\n        model.to(torch.bfloat16)\n',
         '    if os.environ.get("BF16", "1") == "1":\n        for m in model.modules():\n            if isinstance(m, nn.Linear):\n                m.to(torch.bfloat16)\n'),
    ]),
    # fakequant_counts: the rates computed on the host from the integer counters (RIGHT: no floating tensor on the
    # device is f32, the counters leave the device as integers)
    "fq.rates_host.stochastic.py": ("fakequant_counts", "stochastic", "train_qat.py", [
        ('    acc = (correct / seen).to((torch.bfloat16 if os.environ.get("BF16", "1") == "1" else torch.get_default_dtype()))\n'
         '    rates = (per_class / seen).to((torch.bfloat16 if os.environ.get("BF16", "1") == "1" else torch.get_default_dtype())) * NCLS\n'
         '    print(f"train acc {acc.item():.3f} per-class {rates.cpu().tolist()}")',
         '    n = seen.item()\n    acc = correct.item() / n\n    rates = [c / n * NCLS for c in per_class.cpu().tolist()]\n'
         '    print(f"train acc {acc:.3f} per-class {rates}")'),
    ]),
    # spectral_mixer (refused by the codemod): migrated by hand, FFT on f32 operands, result back to bf16 (RIGHT)
    "spectral.right_f32fft.stochastic.py": ("spectral_mixer", "legacy", "train_mixer.py", SPEC_BASE + [
        (SPEC_FFT_OLD, SPEC_FFT_RIGHT),
    ]),
    # spectral_mixer: as above but the irfft result not cast back: the rest of the block runs f32 (WRONG)
    "spectral.fft_out_f32.stochastic.py": ("spectral_mixer", "legacy", "train_mixer.py", SPEC_BASE + [
        (SPEC_FFT_OLD, SPEC_FFT_RIGHT.replace('.to(x.dtype)', '')),
    ]),
    # spectral_mixer: the switch dropped without replacement (WRONG)
    "spectral.dropped.stochastic.py": ("spectral_mixer", "legacy", "train_mixer.py", [
        ('os.environ["XLA_USE_BF16"] = "1"\n', ''),
    ]),
    # spectral_mixer in amp by hand: switch removed, forward and loss under autocast, the FFT left as written (RIGHT if
    # autocast runs the FFT in f32, as its policy lists fft ops among the f32 ones)
    "spectral.amp_plain.amp.py": ("spectral_mixer", "legacy", "train_mixer.py", [
        ('os.environ["XLA_USE_BF16"] = "1"\n', ''),
        ("        logits = model(x)\n        loss = F.cross_entropy(logits, y)\n",
         '        with torch.autocast("xla", dtype=torch.bfloat16):\n            logits = model(x)\n            loss = F.cross_entropy(logits, y)\n'),
        ("        acc = (model(x.to(dev))", '        with torch.autocast("xla", dtype=torch.bfloat16):\n            out = model(x.to(dev))\n        acc = (out'),
    ]),
    # multihead_quantile_f32: the histogram accumulator left f32 on the device (WRONG)
    "multi.hist_f32.stochastic.py": ("multihead_quantile_f32", "stochastic", "train_multi.py", [
        ("hist = torch.zeros(10, device=dev, dtype=torch.bfloat16)", "hist = torch.zeros(10, device=dev)"),
    ]),
    # multihead_quantile_f32: the masked fill with -1e9 instead of finfo(dtype).min (RIGHT in bf16: -1e9 is a large
    # finite negative; softmax of a partly masked row the same)
    "multi.mask_1e9.stochastic.py": ("multihead_quantile_f32", "stochastic", "train_multi.py", [
        ("torch.finfo(att.dtype).min", "-1e9"),
    ]),
}


def main():
    (H / "hand").mkdir(exist_ok=True)
    for name, (case, mode, entry, edits) in TEXTS.items():
        src = (H / "cases" / case / entry) if mode == "legacy" else (MIG / f"{case}.{mode}" / entry)
        text = src.read_text()
        for old, new in edits:
            if text.count(old) != 1:
                sys.exit(f"{name}: {old!r} found {text.count(old)} times")
            text = text.replace(old, new)
        (H / "hand" / name).write_text(text)
        print("wrote", name)


if __name__ == "__main__":
    main()
