#!/bin/bash
cd "$(dirname "$0")"
echo "## moduledict_subscript_call"; ./vrepro.sh moduledict_subscript_call stochastic
echo "## sn_ckpt_recompile"; ./vrepro.sh sn_ckpt_recompile stochastic
