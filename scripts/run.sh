#!/usr/bin/env bash
# Sets up, builds (quietly: scripts/build.sh) and runs the main job: the profiler on Stable
# Diffusion's GroupNorm+SiLU (N=2, C=320, 64x64, G=32, fp16, channels-last): every supporting
# instance verified and timed next to a device copy, or, without a GPU, the instances and the
# heuristic's choice. Arguments go to the profiler (build/profiler/hipgn_profiler --help).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/build.sh build
echo
if [ $# = 0 ]; then
  echo "==== result: hipgn_profiler on Stable Diffusion's GroupNorm+SiLU (its default problem) ===="
else
  echo "==== result: hipgn_profiler $* ===="
fi
build/profiler/hipgn_profiler "$@"
