#!/usr/bin/env bash
# Installs hipgn's build and test dependencies from Debian, only those missing. Sourced by the
# other scripts; sets HIPGN_PLATFORM_ARGS for CMake (nvidia where nvcc exists, else amd).
#   cmake, ninja-build, g++        the build (Ninja: precise regeneration, see generated/)
#   python3, python3-jinja2        the instance generator (codegen/, templates/)
#   libgtest-dev                   the C++ tests
#   nlohmann-json3-dev             the library reads and writes the tuning database (JSON; header-only,
#                                  private to the library); the tests read the build's manifest.json
#   libcli11-dev                   the profiler's command line
#   python3-setuptools, python3-wheel, python3-pip
#                                  pip install of the Python package (python/), checked offline by a test
#   hipcc, libamdhip64-dev, rocm-device-libs, clang-15, llvm-15
#                                  the AMD build (HIP 5.2); installed when HIPGN_AMD=1 or no nvcc
set -euo pipefail
export PATH="$PATH:/usr/local/cuda/bin"
pkgs=(cmake ninja-build g++ python3 python3-jinja2 libgtest-dev nlohmann-json3-dev libcli11-dev
      python3-setuptools python3-wheel python3-pip)
if [ "${HIPGN_AMD:-0}" = 1 ] || ! command -v nvcc > /dev/null; then
  pkgs+=(hipcc libamdhip64-dev rocm-device-libs clang-15 llvm-15)
fi
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2> /dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "setup: installing ${missing[*]} (apt's output: only if it fails)"
  sudo=""
  [ "$(id -u)" = 0 ] || sudo=sudo
  apt_log=$(mktemp)
  if ! { $sudo apt-get update -qq && DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq \
         --no-install-recommends "${missing[@]}"; } > "$apt_log" 2>&1; then
    cat "$apt_log"
    rm -f "$apt_log"
    echo "setup: apt-get failed"
    exit 1
  fi
  rm -f "$apt_log"
fi
if command -v nvcc > /dev/null; then
  HIPGN_PLATFORM_ARGS=(-DHIPGN_PLATFORM=nvidia)
else
  HIPGN_PLATFORM_ARGS=(-DHIPGN_PLATFORM=amd -DCMAKE_CXX_COMPILER=clang++-15)
fi
