#!/usr/bin/env bash
# Installs a built tree into a scratch prefix and builds and runs projects against it through
# find_package(hipgn) (tests/consumer): the C API through libhipgn.so in a project that cannot
# find the CUDA toolkit, whose link line must not name the CUDA runtime; the C++ API beside the
# real HIP headers (with_hip.cpp); then the README's C++ snippet through the static and the
# shared library. Only the public headers may be installed. Usage: scripts/check_install.sh [build dir]
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
prefix=$(mktemp -d)
trap 'rm -rf "$prefix"' EXIT
log=$prefix/log
quiet() { "$@" > "$log" 2>&1 || { cat "$log"; echo "check_install: failed: $*"; exit 1; }; }
quiet cmake --install "$build" --prefix "$prefix/install"
installed=$(cd "$prefix/install/include/hipgn" && ls | sort | tr '\n' ' ')
if [ "$installed" != "hipgn.h hipgn.hpp problem.hpp status.hpp types.h types.hpp " ]; then
  echo "check_install: the install ships more or less than the public layer: $installed"
  exit 1
fi

# libhipgn.so alone: no CUDA toolkit to find, and none on the link line
quiet cmake -S tests/consumer -B "$prefix/c" -G Ninja -DCMAKE_PREFIX_PATH="$prefix/install" \
  -DHIPGN_CONSUMER_CUDA=OFF -DCMAKE_DISABLE_FIND_PACKAGE_CUDAToolkit=ON
quiet cmake --build "$prefix/c"
if ninja -C "$prefix/c" -t commands consumer_c | grep -E "cudart|libcuda"; then
  echo "check_install: a consumer of hipgn::hipgn_shared links the CUDA runtime"
  exit 1
fi
"$prefix/c/consumer_c"
# the real HIP headers beside hipgn's public header (Debian's libamdhip64-dev): no collision
if [ -x "$prefix/c/consumer_with_hip" ]; then
  "$prefix/c/consumer_with_hip"
else
  echo "check_install: HIP's headers not found: the consumer beside them was not built"
  [ "${HIPGN_REQUIRE_HIP_CONSUMER:-0}" = 0 ] || exit 1
fi

# the README's C++ snippet, through the static library and the shared one
quiet cmake -S tests/consumer -B "$prefix/cpp" -G Ninja -DCMAKE_PREFIX_PATH="$prefix/install"
quiet cmake --build "$prefix/cpp"
for exe in consumer_cpp consumer_cpp_shared; do
  [ -x "$prefix/cpp/$exe" ] || continue
  printf '%s: ' "$exe"
  "$prefix/cpp/$exe"
done
echo "check_install: find_package(hipgn): C API through libhipgn.so without the CUDA toolkit, C++ API static and shared: ok"
# the Python package installed beside the library finds it, with no HIPGN_LIBRARY to help
env -u HIPGN_LIBRARY PYTHONPATH="$prefix/install/lib/python3/dist-packages" python3 -c '
import os, sys, hipgn
path = hipgn.find_library()
assert os.path.realpath(path).startswith(os.path.realpath(sys.argv[1])), path
print("check_install: import hipgn loads", path, "with", len(hipgn.library().instance_names()), "instances")' \
  "$prefix/install"
# with PyTorch here and the C++ operators built: hipgn.torch takes the installed ones
if [ -n "$(find "$prefix/install" -name libhipgn_torch.so)" ]; then
  env -u HIPGN_LIBRARY -u HIPGN_TORCH_EXTENSION PYTHONPATH="$prefix/install/lib/python3/dist-packages" python3 -c '
import os, sys, hipgn.torch
path = hipgn.torch.cpp_operators()
assert path and os.path.realpath(path).startswith(os.path.realpath(sys.argv[1])), path
print("check_install: import hipgn.torch loads the C++ operators", path)' "$prefix/install"
fi
