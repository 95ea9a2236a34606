./vqueue.sh probe.lowrank_param_xla probes/lowrank_param_xla finetune_sn.py stochastic -- --bf16
