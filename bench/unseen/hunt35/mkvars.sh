#!/bin/bash
# remakes the hand texts (wrong/, right/) from the legacy scripts and the codemod's texts (mig/CASE.MODE/)
cd "$(dirname "$0")"; PY=/work/main/.venv/bin/python; M=mig; C=cases
# retrieval_index
$PY mkvar.py $M/retrieval_index.stochastic/build_index.py wrong/RW1_host_scores_bf16.py \
  "    host_scores = host_float32(scores.cpu())" "    host_scores = scores.cpu()"
$PY mkvar.py $M/retrieval_index.stochastic/build_index.py wrong/RW2_sim_f32.py \
  "        sim = q_vecs @ doc_vecs.T" "        sim = q_vecs.float() @ doc_vecs.float().T"
$PY mkvar.py $C/retrieval_index/build_index.py right/RR1_dtype_at_move.py \
  "    tower = Tower().to(device).eval()" "    tower = Tower().to(device, dtype=torch.bfloat16).eval()" \
  'doc_vecs.cpu().numpy()' 'doc_vecs.float().cpu().numpy()' \
  'scores.cpu().numpy()' 'scores.float().cpu().numpy()' \
  '    host_scores = scores.cpu()' '    host_scores = scores.cpu().to(torch.float32)'
# calib_lbfgs (the codemod's stochastic text crashes: hand texts from the legacy script)
$PY mkvar.py $C/calib_lbfgs/calibrate.py right/CR1_bf16_by_hand.py \
  "    clf.to(device)" "    clf = clf.to(device=device, dtype=torch.bfloat16)" \
  "    logits = clf(x.to(device)).detach()" "    logits = clf(x.to(device).bfloat16()).detach()" \
  "    log_t = torch.zeros(1, device=device, requires_grad=True)" "    log_t = torch.zeros(1, device=device, dtype=torch.bfloat16).requires_grad_()" \
  "    p_host = probs.cpu().numpy()" "    p_host = probs.float().cpu().numpy()"
$PY mkvar.py right/CR1_bf16_by_hand.py wrong/CW1_temperature_f32.py \
  "    log_t = torch.zeros(1, device=device, dtype=torch.bfloat16).requires_grad_()" "    log_t = torch.zeros(1, device=device).requires_grad_()"
# eval_host_metrics
cp $C/eval_host_metrics/evaluate.py wrong/EW1_unchanged_script.py
$PY mkvar.py $C/eval_host_metrics/evaluate.py right/ER1_tolist_exit.py \
  "    model.to(device)" "    model = model.to(device=device, dtype=torch.bfloat16)" \
  "    logp_parts, nll_sum = [], torch.zeros((), device=device)" "    logp_parts, nll_sum = [], torch.zeros((), device=device, dtype=torch.bfloat16)" \
  "            xb, yb = xb.to(device), yb.to(device)" "            xb, yb = xb.to(device, torch.bfloat16), yb.to(device)" \
  '            logp_parts.append(logp.detach().to("cpu"))' '            logp_parts.extend(logp.detach().cpu().tolist())' \
  "    logp_all = torch.cat(logp_parts).numpy()" "    logp_all = np.asarray(logp_parts, dtype=np.float32)"
# rl_polyak
$PY mkvar.py $M/rl_polyak.stochastic/train_dqn.py wrong/PW1_target_f32.py \
  "    target.to(torch.bfloat16)
    target.register_forward_pre_hook(bf16_inputs_hook, with_kwargs=True)
" "" \
  "                tp.lerp_(p, args.tau)" "                tp.mul_(1.0 - args.tau).add_(p, alpha=args.tau)"
$PY mkvar.py $C/rl_polyak/train_dqn.py right/PR1_cast_before_copy.py \
  "        self.mean = torch.zeros(dim, device=device)" "        self.mean = torch.zeros(dim, device=device).bfloat16()" \
  "        self.var = torch.ones(dim, device=device)" "        self.var = torch.ones(dim, device=device).bfloat16()" \
  "        self.count = torch.tensor(1e-4, device=device)" "        self.count = torch.tensor(1e-4, dtype=torch.bfloat16, device=device)" \
  "    q_net = nn.Sequential(nn.Linear(obs_dim, 64), nn.Tanh(), nn.Linear(64, n_act)).to(device)" "    q_net = nn.Sequential(nn.Linear(obs_dim, 64), nn.Tanh(), nn.Linear(64, n_act)).to(device).bfloat16()" \
  "        obs, nxt, act, rew = obs.to(device), nxt.to(device), act.to(device), rew.to(device)" "        obs, nxt, rew = (t.to(device, torch.bfloat16) for t in (obs, nxt, rew))
        act = act.to(device)" \
  "                tp.lerp_(p, args.tau)" "                tp.mul_(1.0 - args.tau).add_(p, alpha=args.tau)"
# balanced_smooth
$PY mkvar.py $M/balanced_smooth.stochastic/train_balanced.py wrong/BW1_soft_f32.py \
  "    target = torch.full((y.shape[0], n_cls), eps / (n_cls - 1), device=y.device, dtype=torch.bfloat16)" "    target = torch.full((y.shape[0], n_cls), eps / (n_cls - 1), device=y.device)"
$PY mkvar.py $M/balanced_smooth.stochastic/train_balanced.py wrong/BW2_weights_f32.py \
  "    counts = bf16_on_xla(torch.bincount(labels, minlength=n_cls).float()).to(device, dtype=torch.bfloat16)" "    counts = torch.bincount(labels, minlength=n_cls).float().to(device)"
$PY mkvar.py $M/balanced_smooth.stochastic/train_balanced.py wrong/BW3_no_sr.py \
  'os.environ.setdefault("NEURON_RT_STOCHASTIC_ROUNDING_EN", "1")  # same default as the container
' ''
$PY mkvar.py $C/balanced_smooth/train_balanced.py right/BR1_cast_at_use.py \
  'os.environ.setdefault("XLA_USE_BF16", "1")  # same default as the container' 'os.environ.setdefault("NEURON_RT_STOCHASTIC_ROUNDING_EN", "1")  # same default as the container' \
  "    target = torch.full((y.shape[0], n_cls), eps / (n_cls - 1), device=y.device)" "    target = torch.full((y.shape[0], n_cls), eps / (n_cls - 1), device=y.device, dtype=torch.bfloat16)" \
  "    weights = class_weights(y_all, N_CLS, device)" "    weights = class_weights(y_all, N_CLS, device).bfloat16()" \
  "    model = nn.Sequential(nn.Linear(DIM, 64), nn.SiLU(), nn.Linear(64, N_CLS)).to(device)" "    model = nn.Sequential(nn.Linear(DIM, 64), nn.SiLU(), nn.Linear(64, N_CLS)).bfloat16().to(device)" \
  "        xb, yb = x_all[idx].to(device), y_all[idx].to(device)" "        xb, yb = x_all[idx].to(device, torch.bfloat16), y_all[idx].to(device)" \
  "        pred = model(x_all.to(device)).argmax(dim=1).cpu()" "        pred = model(x_all.bfloat16().to(device)).argmax(dim=1).cpu()" \
  "    torch.save({k: v.cpu() for k, v in model.state_dict().items()}, args.ckpt)" "    torch.save({k: v.cpu().float() for k, v in model.state_dict().items()}, args.ckpt)"
# batch_predict
$PY mkvar.py $M/batch_predict.stochastic/batch_predict.py wrong/MW1_draws_f32.py \
  "            draws = torch.stack([net(x.to(torch.bfloat16)) for _ in range(args.samples)])" "            draws = torch.stack([net(x.to(torch.bfloat16)).float() for _ in range(args.samples)])"
$PY mkvar.py $C/batch_predict/batch_predict.py right/MR1_float_on_device.py \
  "    net = DemandNet().to(device)" "    net = DemandNet().to(device=device, dtype=torch.bfloat16)" \
  "    reference = torch.randn(400, 12).mul(5.0).add(20.0).to(device)" "    reference = torch.randn(400, 12).mul(5.0).add(20.0).to(device, torch.bfloat16)" \
  "            x = (chunk.to(device) - mu) / sigma" "            x = (chunk.to(device, torch.bfloat16) - mu) / sigma" \
  "    table = torch.cat(preds)" "    table = torch.cat(preds).float()"
# second round
$PY mkvar.py right/RR1_dtype_at_move.py right/RR2_dtype_at_move_hit_bf16.py \
  "        hit = (ids == gold[:, None]).any(dim=1).float()" "        hit = (ids == gold[:, None]).any(dim=1).to(scores.dtype)"
$PY mkvar.py right/BR1_cast_at_use.py right/BR2_counts_bf16_on_host.py \
  "    counts = torch.bincount(labels, minlength=n_cls).float().to(device)" "    counts = torch.bincount(labels, minlength=n_cls).bfloat16().to(device)" \
  "    weights = class_weights(y_all, N_CLS, device).bfloat16()" "    weights = class_weights(y_all, N_CLS, device)"
# BW3b: the codemod's migrated tree with the rounding variable gone from the Dockerfile too
rm -rf mig/balanced_smooth.stochastic.nosr; cp -a mig/balanced_smooth.stochastic mig/balanced_smooth.stochastic.nosr
$PY mkvar.py mig/balanced_smooth.stochastic/Dockerfile mig/balanced_smooth.stochastic.nosr/Dockerfile 'ENV NEURON_RT_STOCHASTIC_ROUNDING_EN=1 \
    PJRT_DEVICE=TPU' 'ENV PJRT_DEVICE=TPU'
# MA1: the codemod's amp text of batch_predict without its autocast (an FP32 MC-dropout forward)
$PY mkvar.py $M/batch_predict.amp/batch_predict.py wrong/MA1_no_autocast.py \
  '            with torch.autocast("xla", dtype=torch.bfloat16):
                draws = torch.stack([net(x) for _ in range(args.samples)])' '            draws = torch.stack([net(x) for _ in range(args.samples)])'
