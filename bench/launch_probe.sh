#!/usr/bin/env bash
# On the GPU machine: builds and runs bench/launch_probe.cu (the onchip forward's shape of work,
# by launch shape, with and without clusters, in CUDA graphs; `two`: two items a workgroup
# against one). Needs nvcc (sm_90).
set -euo pipefail
cd "$(dirname "$0")/.."
nvcc -O3 -std=c++17 -arch=sm_90 bench/launch_probe.cu -o /tmp/launch_probe
/tmp/launch_probe "$@"
