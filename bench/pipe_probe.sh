#!/usr/bin/env bash
# On the GPU machine: builds and runs bench/pipe_probe.cu (the channels-first forward as one
# pipelined sweep: each step reads a tile and normalizes one read D steps before). Needs nvcc (sm_90).
set -euo pipefail
cd "$(dirname "$0")/.."
nvcc -O3 -std=c++17 -arch=sm_90 -Xptxas -warn-spills bench/pipe_probe.cu -o /tmp/pipe_probe
/tmp/pipe_probe
