"""List the part-2 trees: one per (repo, commit, directory of a listed file) of /work/shared/realcode.tsv."""
import csv
import os
import subprocess

PART1 = {("aws-neuron/aws-neuron-samples", "e474bb9ba904ed36c320f7408438a3f810b495e1",
          "torch-neuronx/training/dp_bert_hf_pretrain")}
seen = {}
with open("/work/shared/realcode.tsv") as fh:
    for row in csv.DictReader(fh, delimiter="\t"):
        repo, path, commit = row["repo"], row["path"], row["commit"]
        if repo in ("aws-neuron/aws-neuron-sdk", "huggingface/transformers"):
            continue  # not fetched (a vendor doc, a PyPI wheel)
        d = os.path.dirname(path) or "."
        key = (repo, commit, d)
        if key in PART1:
            continue
        seen.setdefault(key, []).append(path)
for (repo, commit, d), paths in seen.items():
    mirror = "/work/.mirror/" + repo.replace("/", "+") + "/repo"
    spec = f"{commit}:{d}" if d != "." else f"{commit}:"
    out = subprocess.run(["git", "--git-dir", mirror, "ls-tree", "-r", "--name-only", spec],
                         capture_output=True, text=True).stdout.split()
    name = (repo.split("/")[1][:12] + "_" + commit[:7] + "_" + d.replace("/", "_")[-40:]).strip("_")
    print(name, repo.replace("/", "+"), commit, d, len(out), " ".join(paths))
