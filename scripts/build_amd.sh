#!/usr/bin/env bash
# Compiles hipgn for AMD (gfx90a and gfx1100) with Debian's HIP 5.2: compile-only here, as no
# AMD GPU is available. Quiet like every build (scripts/build.sh; the arguments given here come
# after setup's platform choice, so they win). Usage: scripts/build_amd.sh [extra CMake arguments]
set -euo pipefail
cd "$(dirname "$0")/.."
HIPGN_AMD=1 scripts/build.sh build-amd -DHIPGN_PLATFORM=amd -DCMAKE_CXX_COMPILER=clang++-15 \
  -DHIPGN_PRESET=minimal -DHIPGN_BUILD_TESTS=OFF "$@"
