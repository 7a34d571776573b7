#!/usr/bin/env bash
# On the GPU machine: builds and runs bench/grid_sync_probe.cu (grid barriers with and without
# the memset of their counters; whether %gridid differs between launches; variants of the
# library's barrier, each checked). Needs nvcc (sm_90).
set -euo pipefail
cd "$(dirname "$0")/.."
nvcc -O3 -std=c++17 -arch=sm_90 -I abi/include -I kernels/include bench/grid_sync_probe.cu -o /tmp/grid_sync_probe
/tmp/grid_sync_probe
