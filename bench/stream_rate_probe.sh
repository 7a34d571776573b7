#!/usr/bin/env bash
# On the GPU machine: builds and runs bench/stream_rate_probe.cu (which grids stream a copy, a
# read and a write at the copy's rate; with `after-write`, a read right after a write, as
# bench.py times the library's kernels). Needs nvcc (sm_90).
set -euo pipefail
cd "$(dirname "$0")/.."
nvcc -O3 -std=c++17 -arch=sm_90 -I kernels/include bench/stream_rate_probe.cu -o /tmp/stream_rate_probe
/tmp/stream_rate_probe "$@"
