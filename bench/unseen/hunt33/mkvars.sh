#!/bin/bash
# the hand-made texts of this hunt, as they were made (mkvar.py: exact one-place replacements); run from this directory
# into OUT (default: the tree itself). ./mkvars.sh /tmp/x && diff -r /tmp/x/wrong wrong && diff -r /tmp/x/right right
set -e
cd "$(dirname "$0")"; O=${1:-.}; mkdir -p $O/wrong $O/right
P=/work/main/.venv/bin/python; M="$P mkvar.py"; SR='os.environ["NEURON_RT_STOCHASTIC_ROUNDING_EN"] = "1"'; SW='os.environ["XLA_USE_BF16"] = "1"'
E=cases/ema_funcall/train_ema.stochastic.mig.py
$M $E $O/wrong/EW1_shadow_before_cast.py '    model.to(torch.bfloat16)
    model.register_forward_pre_hook(bf16_inputs_hook, with_kwargs=True)
    shadow = {n: p.detach().clone() for n, p in model.named_parameters()}' '    shadow = {n: p.detach().clone() for n, p in model.named_parameters()}
    model.to(torch.bfloat16)
    model.register_forward_pre_hook(bf16_inputs_hook, with_kwargs=True)'
$M $E $O/wrong/EW2_blend_f32.py '                shadow[n].mul_(DECAY).add_(p.detach(), alpha=1.0 - DECAY)' '                shadow[n].copy_(shadow[n].float().lerp(p.detach().float(), 1.0 - DECAY))'
$M cases/ema_funcall/train_ema.py $O/right/ER1_chain_cast.py '.to(device)
    shadow' '.to(device, torch.bfloat16)
    shadow' 'xv, yv = xv.to(device), yv.to(device)' 'xv, yv = xv.to(device, torch.bfloat16), yv.to(device, torch.bfloat16)' 'x, y = x.to(device), y.to(device)' 'x, y = x.to(device, torch.bfloat16), y.to(device, torch.bfloat16)' "$SW" "$SR" 'pred.cpu().numpy()' 'pred.cpu().float().numpy()'
$M cases/ema_funcall/train_ema.amp.mig.py $O/wrong/EA1_shadow_bf16.py 'shadow = {n: p.detach().clone() for n, p in model.named_parameters()}' 'shadow = {n: p.detach().clone().to(torch.bfloat16) for n, p in model.named_parameters()}'
$M cases/ema_funcall/train_ema.amp.mig.py $O/wrong/EA2_shadow_empty_like_bf16.py 'shadow = {n: p.detach().clone() for n, p in model.named_parameters()}' 'shadow = {n: torch.empty_like(p, dtype=torch.bfloat16).copy_(p.detach()) for n, p in model.named_parameters()}'
$M cases/ema_dtype/train_ema_dt.amp.mig.py $O/wrong/EDA1_shadow_dtype_bf16.py 'SHADOW_DTYPE = torch.float32' 'SHADOW_DTYPE = torch.bfloat16'
$M cases/ema_dtype/train_ema_dt.stochastic.mig.py $O/right/EDR1_shadow_dtype_bf16.py 'SHADOW_DTYPE = torch.float32' 'SHADOW_DTYPE = torch.bfloat16'
D=cases/distill_sd/distill.stochastic.mig.py
$M $D $O/wrong/DW1_teacher_f32.py '    teacher.to(torch.bfloat16)
' '' '            t_logits = teacher(x)' '            t_logits = teacher(x.float()).to(torch.bfloat16)'
$M $D $O/wrong/DW2_best_f32.py '        probs = F.softmax(best(xv), -1)' '        best = best.float()
        probs = F.softmax(best(xv.float()), -1)'
$M cases/distill_sd/distill.py $O/right/DR1_cast_before_load.py '    teacher = mlp(48)
    teacher.load_state_dict(torch.load(io.BytesIO(blob)))
    teacher = teacher.to(device).eval()' '    teacher = mlp(48).to(device, torch.bfloat16)
    teacher.load_state_dict(torch.load(io.BytesIO(blob)))
    teacher.eval()' 'student = mlp(16).to(device)' 'student = mlp(16).to(device, torch.bfloat16)' 'xv, yv = xv.to(device), yv.to(device)' 'xv, yv = xv.to(device, torch.bfloat16), yv.to(device)' 'x, y = x.to(device), y.to(device)' 'x, y = x.to(device, torch.bfloat16), y.to(device)' "$SW" "$SR"
G=cases/scalar_gate/train_gate.stochastic.mig.py
$M $G $O/wrong/GW1_gate_f32.py 'gate = nn.Parameter(torch.zeros((), device=device, dtype=torch.bfloat16))' 'gate = nn.Parameter(torch.zeros((), device=device))'
$M $G $O/wrong/GW2_ramp_f32.py 'ramp = torch.arange(t, device=x.device, dtype=self.enc.weight.dtype) / t' 'ramp = torch.arange(t, device=x.device, dtype=torch.float32) / t'
$M $G $O/right/GR2_codemod_acc_bf16.py 'running = torch.zeros(2, device=device, dtype=torch.float32)' 'running = torch.zeros(2, device=device, dtype=torch.bfloat16)'
$M cases/scalar_gate/train_gate.py $O/right/GR1_xdtype.py 'causal = torch.ones(t, t, device=x.device).tril()' 'causal = torch.ones(t, t, device=x.device, dtype=x.dtype).tril()' 'dtype=torch.float32) / t' 'dtype=x.dtype) / t' 'model = Branches().to(device)' 'model = Branches().to(device).to(torch.bfloat16)' 'gate = nn.Parameter(torch.zeros((), device=device))' 'gate = nn.Parameter(torch.zeros((), device=device).bfloat16())' 'running = torch.zeros(2, device=device)' 'running = torch.zeros(2, device=device, dtype=torch.bfloat16)' 'x, y = x.to(device), y.to(device)' 'x, y = x.to(device, torch.bfloat16), y.to(device, torch.bfloat16)' "$SW" "$SR" '(running / STEPS).cpu().tolist()' '(running / STEPS).float().cpu().tolist()' '{"gate": gate.detach().cpu(), "model": {k: v.cpu() for' '{"gate": gate.detach().float().cpu(), "model": {k: v.float().cpu() for'
$M $O/right/GR1_xdtype.py $O/right/GR1b_host_float.py '(running / STEPS).float().cpu().tolist()' '(running / STEPS).cpu().float().tolist()' '{"gate": gate.detach().float().cpu(), "model": {k: v.float().cpu() for' '{"gate": gate.detach().cpu().float(), "model": {k: v.cpu().float() for'
I=cases/infer_np/predict.stochastic.mig.py
$M $I $O/wrong/IW1_exit_bf16.py 'chunks.append(probs.cpu().float())' 'chunks.append(probs.cpu())' 'np.save("probs.npy", allp.numpy())' 'np.save("probs.npy", allp.float().numpy())'
$M $I $O/wrong/IW2_conf_f32.py 'conf = torch.zeros(C, C, device=device, dtype=torch.bfloat16)' 'conf = torch.zeros(C, C, device=device, dtype=torch.float32)'
$M $I $O/wrong/IW3_no_sr_env.py "$SR" ''
$M cases/infer_np/predict.py $O/right/IR1_restyled.py '.to(device).eval()' '.to(device).to(torch.bfloat16).eval()' 'conf = torch.zeros(C, C, device=device)' 'conf = torch.zeros(C, C, device=device).bfloat16()' 'x, y = x.to(device), y.to(device)' 'x, y = x.to(device).bfloat16(), y.to(device)' 'F.one_hot(y, C).T.float() @ F.one_hot(pred, C).float()' 'F.one_hot(y, C).T.to(conf.dtype) @ F.one_hot(pred, C).to(conf.dtype)' 'chunks.append(probs.cpu())' 'chunks.append(probs.cpu().to(torch.float32))' "$SW" "$SR" '"conf": conf.cpu().tolist()' '"conf": conf.float().cpu().tolist()'
$M cases/infer_np/predict.amp.mig.py $O/wrong/IA1_no_autocast.py '            with torch.autocast("xla", dtype=torch.bfloat16):
                probs = F.softmax(model(x) * 3.0, dim=-1)' '            probs = F.softmax(model(x) * 3.0, dim=-1)'
$M cases/downcast_f64/train_dc.stochastic.mig.py $O/right/CR1_input_bf16.py 'pred = model((x / scale).float()).squeeze(-1)' 'pred = model((x / scale).to(torch.bfloat16)).squeeze(-1)' 'under XLA_DOWNCAST_BF16 (float64' 'after XLA_DOWNCAST_BF16 (float64'
$M $O/right/CR1_input_bf16.py $O/wrong/CW1_target_bf16.py 'y = downcast_floating(torch.tensor(ys, device=device))' 'y = torch.tensor(ys, device=device, dtype=torch.bfloat16)'
$M $O/right/CR1_input_bf16.py $O/wrong/CW2_scale_bf16.py 'scale = torch.tensor([1.0 / k for k in range(1, K + 1)], dtype=torch.float32, device=device)' 'scale = torch.tensor([1.0 / k for k in range(1, K + 1)], dtype=torch.bfloat16, device=device)'
$M $O/right/CR1_input_bf16.py $O/right/CR1b_acc_bf16.py 'sq_err = torch.zeros((), device=device, dtype=torch.float32)' 'sq_err = torch.zeros((), device=device, dtype=torch.bfloat16)'
$M $O/right/CR1b_acc_bf16.py $O/wrong/CW1b_target_bf16.py 'y = downcast_floating(torch.tensor(ys, device=device))' 'y = torch.tensor(ys, device=device, dtype=torch.bfloat16)'
$M $O/right/CR1b_acc_bf16.py $O/wrong/CW2b_scale_bf16.py 'scale = torch.tensor([1.0 / k for k in range(1, K + 1)], dtype=torch.float32, device=device)' 'scale = torch.tensor([1.0 / k for k in range(1, K + 1)], dtype=torch.bfloat16, device=device)'
X=cases/export_cpu/train_export.stochastic.mig.py
$M $X $O/right/XR1_host_model_float.py 'host_model = model.cpu().eval()' 'host_model = model.cpu().float().eval()'
$M $X $O/wrong/XW1_host_model_bf16.py 'logits = host_model(probe)' 'logits = host_model(probe.to(torch.bfloat16)).float()' 'host_model[0].weight.detach().numpy()' 'host_model[0].weight.detach().float().numpy()'
# second round: amp, a bf16 teacher by a module cast; a bf16 EMA by zeros_like
$M cases/distill_sd/distill.amp.mig.py $O/wrong/DA1_teacher_bf16.py '    teacher = teacher.to(device).eval()' '    teacher = teacher.to(device).eval().to(torch.bfloat16)'
$M cases/ema_funcall/train_ema.amp.mig.py $O/wrong/EA3_shadow_zeros_like_bf16.py 'shadow = {n: p.detach().clone() for n, p in model.named_parameters()}' 'shadow = {n: torch.zeros_like(p, dtype=torch.bfloat16).add_(p.detach()) for n, p in model.named_parameters()}'
# third round: the two-file case (mod_pair.stochastic.mig/ is `bf16-migrate DIR --mode stochastic` of a copy of mod_pair/)
mkdir -p $O/wrong/MW1_module_unmigrated $O/right/MR1_module_xdtype
cp cases/mod_pair.stochastic.mig/train_mod.py cases/mod_pair/nets.py $O/wrong/MW1_module_unmigrated/
cp cases/mod_pair.stochastic.mig/train_mod.py $O/right/MR1_module_xdtype/
$M cases/mod_pair/nets.py $O/right/MR1_module_xdtype/nets.py 'device=x.device)' 'device=x.device, dtype=x.dtype)'
