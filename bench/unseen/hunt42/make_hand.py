"""Writes hand/*.py: each a migrated text (the codemod's, in /tmp/hunt42mig/CASE.MODE/, made by stubrun.sh) or the
legacy case, edited by one hand change (asserted to apply). Rerun after stubrun.sh; the texts are kept under hand/."""
import pathlib
import sys

H = pathlib.Path(__file__).resolve().parent
MIG = pathlib.Path("/tmp/hunt42mig")


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


D = mig("dino_center", "stochastic", "train_dino.py")
# wrong: the teacher (deepcopied before the student's cast) left f32
edit("dino.teacher_f32.stochastic.py", D, ("    teacher.to(torch.bfloat16)\n", ""))
# wrong: the centre kept outside both models left f32
edit("dino.center_f32.stochastic.py", D,
     ("center = torch.zeros(1, OUT_DIM, device=dev, dtype=torch.bfloat16)", "center = torch.zeros(1, OUT_DIM, device=dev)"))
# wrong: the saved teacher checkpoint and centre leave the device bf16 (no host_float32 / .float())
edit("dino.save_bf16.stochastic.py", D,
     ('torch.save(host_float32({"center": center.cpu().float(), "teacher": {k: host_float32(v.cpu()) for k, v in teacher.state_dict().items()}}, back_to_device=True), out)',
      'torch.save({"center": center.cpu(), "teacher": {k: v.cpu() for k, v in teacher.state_dict().items()}}, out)'))
# right, by another road: the student built bf16 before the deepcopy, the centre zeros_like a bf16 tensor, the
# views cast after the move, the checkpoint cast on the device before it leaves
edit("dino.right_alt.stochastic.py", legacy("dino_center", "train_dino.py"),
     ('os.environ["XLA_USE_BF16"] = "1"', 'os.environ["NEURON_RT_STOCHASTIC_ROUNDING_EN"] = "1"'),
     ("student = Head().to(dev)", "student = Head().to(dev, dtype=torch.bfloat16)"),
     ("center = torch.zeros(1, OUT_DIM, device=dev)", "center = torch.zeros_like(student.last.weight[:1, :1]).expand(1, OUT_DIM).clone()"),
     ("views = torch.cat([a, b]).to(dev)", "views = torch.cat([a, b]).to(dev).bfloat16()"),
     ('torch.save({"center": center.cpu(), "teacher": {k: v.cpu() for k, v in teacher.state_dict().items()}}, out)',
      'torch.save({"center": center.float().cpu(), "teacher": {k: v.float().cpu() for k, v in teacher.state_dict().items()}}, out)'))

DA = mig("dino_center", "amp", "train_dino.py")
# wrong (amp): autocast around the student's forward only; the teacher's forward (under no_grad) runs f32
edit("dino.teacher_outside.amp.py", DA,
     ("""        with torch.no_grad():
            with torch.autocast("xla", dtype=torch.bfloat16):
                t_out = teacher(views)
                t_prob = F.softmax((t_out - center) / t_temp, dim=-1).chunk(2)
""", """        with torch.no_grad():
            t_out = teacher(views)
            t_prob = F.softmax((t_out - center) / t_temp, dim=-1).chunk(2)
"""))
# right (amp), another road: one autocast block around both forwards and the loss, the teacher's no_grad inside it
edit("dino.one_block.amp.py", DA,
     ("""        with torch.no_grad():
            with torch.autocast("xla", dtype=torch.bfloat16):
                t_out = teacher(views)
                t_prob = F.softmax((t_out - center) / t_temp, dim=-1).chunk(2)
        with torch.autocast("xla", dtype=torch.bfloat16):
            s_logp""", """        with torch.autocast("xla", dtype=torch.bfloat16):
            with torch.no_grad():
                t_out = teacher(views)
                t_prob = F.softmax((t_out - center) / t_temp, dim=-1).chunk(2)
            s_logp"""))

V = mig("vq_codebook", "stochastic", "train_vq.py")
# wrong: the codebook and its counts (state outside the model) left f32
edit("vq.codebook_f32.stochastic.py", V,
     ("codebook = torch.randn(K, D, device=dev, dtype=torch.bfloat16) * 0.1", "codebook = torch.randn(K, D, device=dev) * 0.1"),
     ("cluster_size = torch.zeros(K, device=dev, dtype=torch.bfloat16)", "cluster_size = torch.zeros(K, device=dev)"),
     ("zq, idx = quantize(z, codebook.to(torch.bfloat16))", "zq, idx = quantize(z, codebook)"))
# wrong: the saved codebook leaves the device bf16: .numpy() raises at the very end, after the training steps
edit("vq.numpy_bf16.stochastic.py", V, ("codebook.cpu().float().numpy()", "codebook.cpu().numpy()"))
# right, by another road: no hook, no redundant casts; codebook made on the host and moved with its dtype
edit("vq.right_alt.stochastic.py", legacy("vq_codebook", "train_vq.py"),
     ('os.environ["XLA_DOWNCAST_BF16"] = "1"', 'os.environ["NEURON_RT_STOCHASTIC_ROUNDING_EN"] = "1"'),
     ("model = AE().to(dev)", "model = AE().to(dev).to(torch.bfloat16)"),
     ("codebook = torch.randn(K, D, device=dev) * 0.1", "codebook = (torch.randn(K, D) * 0.1).to(dev, torch.bfloat16)"),
     ("cluster_size = torch.zeros(K, device=dev)", "cluster_size = codebook.new_zeros(K)"),
     ("x = signals[step * 16 % 512:(step * 16 % 512) + 16].to(dev)", "x = signals[step * 16 % 512:(step * 16 % 512) + 16].to(dev).to(torch.bfloat16)"),
     ("codebook.cpu().numpy()", "codebook.float().cpu().numpy()"))

# right, another road that keeps the legacy run's random stream (the codebook drawn on the device as before, cast
# right after the draw; the counts made from it)
edit("vq.right_alt2.stochastic.py", legacy("vq_codebook", "train_vq.py"),
     ('os.environ["XLA_DOWNCAST_BF16"] = "1"', 'os.environ["NEURON_RT_STOCHASTIC_ROUNDING_EN"] = "1"'),
     ("model = AE().to(dev)", "model = AE().to(dev).to(torch.bfloat16)"),
     ("codebook = torch.randn(K, D, device=dev) * 0.1", "codebook = torch.randn(K, D, device=dev).to(torch.bfloat16) * 0.1"),
     ("cluster_size = torch.zeros(K, device=dev)", "cluster_size = codebook.new_zeros(K)"),
     ("x = signals[step * 16 % 512:(step * 16 % 512) + 16].to(dev)", "x = signals[step * 16 % 512:(step * 16 % 512) + 16].to(dev).to(torch.bfloat16)"),
     ("codebook.cpu().numpy()", "codebook.float().cpu().numpy()"))

F = mig("fourier_buffer", "stochastic", "fit_image.py")
# right (the fix): the buffer registered after the cast gets the bf16 dtype in its move
edit("fourier.buffer_bf16.stochastic.py", F,
     ('model.register_buffer("B", (torch.randn(2, 32) * args.scale).to(dev))',
      'model.register_buffer("B", (torch.randn(2, 32) * args.scale).to(dev, dtype=torch.bfloat16))'))
# right, another road: cast the whole model again after the buffer is registered (a second .to(bf16) is a no-op
# for the parameters, so the optimizer still holds them)
edit("fourier.recast_after.stochastic.py", F,
     ('model.register_buffer("B", (torch.randn(2, 32) * args.scale).to(dev))\n',
      'model.register_buffer("B", (torch.randn(2, 32) * args.scale).to(dev))\n    model.to(torch.bfloat16)\n'))
FA = mig("fourier_buffer", "amp", "fit_image.py")
# wrong (amp): the final render (the only file written) computed outside autocast: its matmuls f32
edit("fourier.render_f32.amp.py", FA,
     ('        with torch.autocast("xla", dtype=torch.bfloat16):\n            render = model(coords)\n', "        render = model(coords)\n"))

C = mig("contrastive_helper", "stochastic", "train_simclr.py")
CL = mig("contrastive_helper", "stochastic", "losses.py")
# right (the fix): the probe's bank and queries moved bf16
edit("contrastive.probe_bf16.stochastic.py", C,
     ("bank_x, bank_y = x_all[:256].to(dev), y_all[:256].to(dev)", "bank_x, bank_y = x_all[:256].to(dev, dtype=torch.bfloat16), y_all[:256].to(dev)"),
     ("q_x, q_y = x_all[256:320].to(dev), y_all[256:320].to(dev)", "q_x, q_y = x_all[256:320].to(dev, dtype=torch.bfloat16), y_all[256:320].to(dev)"))
# wrong (in the helper module): the self-mask made f32, so the similarity logits and the loss go f32
edit("contrastive.losses_eye_f32.py", CL,
     ("torch.eye(2 * n, device=z.device, dtype=sim.dtype)", "torch.eye(2 * n, device=z.device)"))

E = mig("embed_dump", "stochastic", "dump_embeddings.py")
# wrong: the margins written to scores.pt leave the device bf16
edit("embed.margins_bf16.stochastic.py", E,
     ("margins.append(host_float32((top2.values[:, 0] - top2.values[:, 1]).cpu()))", "margins.append((top2.values[:, 0] - top2.values[:, 1]).cpu())"),
     ('torch.save(host_float32({"labels": torch.cat(labels), "margins": torch.cat(margins), "mean": mean.cpu().float()}, back_to_device=True),',
      'torch.save({"labels": torch.cat(labels), "margins": torch.cat(margins), "mean": mean.cpu().float()},'))
# wrong: the running mean (state outside the model) left f32, so the centred embeddings and the scores are f32
edit("embed.mean_f32.stochastic.py", E,
     ("mean = torch.zeros(16, device=dev, dtype=torch.bfloat16)", "mean = torch.zeros(16, device=dev)"))
# wrong: the switch deleted, nothing in its place (an f32 inference run)
edit("embed.switch_deleted.py", legacy("embed_dump", "dump_embeddings.py"), ('    os.environ["XLA_USE_BF16"] = "1"\n', ""))
print("ok", file=sys.stderr)
