#!/bin/bash
cd "$(dirname "$0")"
repros/run_repro.sh r_functional_call_input stochastic
