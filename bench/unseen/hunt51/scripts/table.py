"""Part-2 table rows: tree | changed files per mode (stochastic/gpu-compatible/amp) | finding codes (stochastic run)."""
import collections
import pathlib
import re

L = pathlib.Path(__file__).resolve().parent.parent / "logs"
for line in (L / "trees.txt").read_text().splitlines():
    name, repo, commit, d = line.split()[:4]
    ch = []
    for mode in ("stochastic", "gpu-compatible", "amp"):
        f = L / f"{name}.{mode}.diff"
        ch.append(str(len(re.findall(r"^\+\+\+ b/", f.read_text(), re.M))) if f.exists() else "?")
    err = L / f"{name}.stochastic.stderr"
    codes = collections.Counter(re.findall(r": (BFM\d+) ", err.read_text())) if err.exists() else {}
    cs = " ".join(f"{k}x{v}" if v > 1 else k for k, v in sorted(codes.items()))
    print(f"| {repo.split('+')[1]} {commit[:8]} `{d}` | {'/'.join(ch)} | {cs} |")
