# shared settings for the OT experiments; source me
export PJRT_DEVICE=NEURON
export XLA_USE_BF16=1
export OT_EPS=0.05
