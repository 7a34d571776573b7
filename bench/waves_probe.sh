#!/usr/bin/env bash
# On the GPU machine: builds and runs bench/waves_probe.cu (what reading x once in waves would
# cost against a copy and against reading it twice; see the probe's header). Needs nvcc (sm_90).
set -euo pipefail
cd "$(dirname "$0")/.."
nvcc -O3 -std=c++17 -arch=sm_90 -I kernels/include bench/waves_probe.cu -o /tmp/waves_probe
/tmp/waves_probe
