#!/usr/bin/env bash
# On the GPU machine: builds and runs bench/lag_probe.cu (a channels-first forward's two passes
# a lag apart in one persistent launch, so the second read of x hits the L2), at one and at two
# workgroups a compute unit (MIN_BLOCKS: the launch bounds). Needs nvcc (sm_90).
set -euo pipefail
cd "$(dirname "$0")/.."
for b in ${MIN_BLOCKS:-1 2}; do
  nvcc -O3 -std=c++17 -arch=sm_90 -DMIN_BLOCKS=$b bench/lag_probe.cu -o /tmp/lag_probe_$b
  /tmp/lag_probe_$b
done
