"""Writes hand/*.py: each a migrated text (the codemod's, in /tmp/hunt45mig/CASE.MODE/, made by `migrate` on a copy,
see FINDINGS.md) or the legacy case, edited by hand (each edit asserted to apply once). Kept under hand/."""
import pathlib

H = pathlib.Path(__file__).resolve().parent
MIG = pathlib.Path("/tmp/hunt45mig")


def edit(name, base, *pairs):
    src = base.read_text()
    for old, new in pairs:
        assert src.count(old) == 1, (name, old)
        src = src.replace(old, new)
    (H / "hand" / name).write_text(src)


def mig(case, mode, f):
    return MIG / f"{case}.{mode}" / f


def legacy(case, f):
    return H / "cases" / case / f


# WRONG: the rarely-run contrastive phase (steps >= --warmup 8) computes its similarity matrix in f32
edit("warmup.rare_f32.stochastic.py", mig("warmup_contrastive", "stochastic", "train_pairs.py"),
     ("    sim = za @ zb.T / temp\n", "    sim = za.float() @ zb.float().T / temp\n"))
# WRONG: the switch dropped without replacement
edit("warmup.dropped.stochastic.py", legacy("warmup_contrastive", "train_pairs.py"),
     ('os.environ["XLA_USE_BF16"] = "1"\n', ""))
# WRONG: the checkpoint written every 7 steps saves bf16 (host_float32 removed)
edit("eval.ckpt_bf16.stochastic.py", mig("eval_ckpt_every", "stochastic", "train_cls.py"),
     ('xm.save(host_float32({"model": model.state_dict(), "step": step}),',
      'xm.save({"model": model.state_dict(), "step": step},'))
# WRONG: the evaluation (every 5 steps) takes its softmax in f32 on the device
edit("eval.eval_f32.stochastic.py", mig("eval_ckpt_every", "stochastic", "train_cls.py"),
     ("p = F.softmax(model(x.to(dev).to(torch.bfloat16)), dim=-1)",
      "p = F.softmax(model(x.to(dev).to(torch.bfloat16)).float(), dim=-1)"))
# WRONG: the catalogue index saved in bf16
edit("score.catalogue_bf16.stochastic.py", mig("score_topk", "stochastic", "rank.py"),
     ('torch.save(host_float32({"emb": host_float32(cat.cpu()), "n": cat.shape[0]}, back_to_device=True),',
      'torch.save({"emb": cat.cpu(), "n": cat.shape[0]},'))
# WRONG: the query tower (a second model) left f32; the score matmul made to agree by casting the catalogue up
edit("score.query_f32.stochastic.py", mig("score_topk", "stochastic", "rank.py"),
     ("    q_tower.to(torch.bfloat16)\n    q_tower.register_forward_pre_hook(bf16_inputs_hook, with_kwargs=True)\n", ""),
     ("scores = qe @ cat.T\n", "scores = qe @ cat.T.to(qe.dtype)\n"))
# WRONG: the milestone penalty's .double() kept (float64 on the device where the legacy run had float32)
edit("downcast.double_left.stochastic.py", mig("downcast_milestone", "stochastic", "train_seq.py"),
     ("d2 = pred.float().diff(n=2, dim=1)", "d2 = pred.double().diff(n=2, dim=1)"))
# RIGHT (differs from the codemod): the penalty's sum made bf16 as the legacy `.float()` made it under DOWNCAST
edit("downcast.bf16_penalty.stochastic.py", mig("downcast_milestone", "stochastic", "train_seq.py"),
     ("loss = loss + 0.1 * d2.pow(2).mean().float()", "loss = loss + 0.1 * d2.pow(2).mean().to(torch.bfloat16)"))
# WRONG: the frozen backbone (the second model) left f32
edit("frozen.backbone_f32.stochastic.py", mig("frozen_backbone", "stochastic", "finetune.py"),
     ("    backbone.to(torch.bfloat16)\n    backbone.register_forward_pre_hook(bf16_inputs_hook, with_kwargs=True)\n", ""))
# WRONG (amp): autocast only around the head and loss; the backbone's forward runs f32
edit("frozen.partial_autocast.amp.py", mig("frozen_backbone", "amp", "finetune.py"),
     ('                with torch.autocast("xla", dtype=torch.bfloat16):\n                    feats = backbone(x)\n',
      "                feats = backbone(x)\n"))
# RIGHT (differs from the codemod): written by hand from the legacy text, dtype given in each move, no helpers
edit("frozen.right_alt.stochastic.py", legacy("frozen_backbone", "finetune.py"),
     ('os.environ.update(XLA_USE_BF16="1")', 'os.environ.update(NEURON_RT_STOCHASTIC_ROUNDING_EN="1")'),
     ('"backbone.pt")).to(dev).eval()', '"backbone.pt")).to(dev, torch.bfloat16).eval()'),
     ("nn.Linear(16, 3)).to(dev)", "nn.Linear(16, 3)).to(dev, torch.bfloat16)"),
     ("x = torch.from_numpy(random_crop(x)).to(dev)", "x = torch.from_numpy(random_crop(x)).to(dev, torch.bfloat16)"),
     ("vx[:, :, 1:13, 1:13]).to(dev)", "vx[:, :, 1:13, 1:13]).to(dev, torch.bfloat16)"),
     ("prob = logits.softmax(-1).cpu()", "prob = logits.softmax(-1).float().cpu()"),
     ("torch.save(head.state_dict(),", "torch.save({k: v.float().cpu() for k, v in head.state_dict().items()},"))
