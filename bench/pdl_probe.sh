#!/usr/bin/env bash
# On the GPU machine: builds and runs bench/pdl_probe.cu (two dependent kernels with and without
# programmatic dependent launch, in CUDA graphs). Needs nvcc (sm_90).
set -euo pipefail
cd "$(dirname "$0")/.."
nvcc -O3 -std=c++17 -arch=sm_90 bench/pdl_probe.cu -o /tmp/pdl_probe
/tmp/pdl_probe
