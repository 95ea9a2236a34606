#!/bin/bash
cd "$(dirname "$0")"
while pgrep -f "vq2.sh" >/dev/null; do sleep 5; done
echo "## amp_default_f64 amp"; ./vrepro.sh amp_default_f64 amp
echo "## downcast_f64_params stochastic"; ./vrepro.sh downcast_f64_params stochastic
echo "## external_param_call_fill stochastic"; ./vrepro.sh external_param_call_fill stochastic
echo "## infer_csv stochastic"; ./vqueue.sh infer_csv infer_csv predict.py stochastic --legacy-env XLA_USE_BF16=1 -- churn.pt
