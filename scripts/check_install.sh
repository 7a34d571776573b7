#!/usr/bin/env bash
# Installs a built tree into a scratch prefix and builds and runs a separate project against it
# through find_package(hipgn). Usage: scripts/check_install.sh [build dir]
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
prefix=$(mktemp -d)
trap 'rm -rf "$prefix"' EXIT
cmake --install "$build" --prefix "$prefix/install" > /dev/null
cmake -S tests/consumer -B "$prefix/consumer" -G Ninja -DCMAKE_PREFIX_PATH="$prefix/install" > /dev/null
cmake --build "$prefix/consumer" > /dev/null
"$prefix/consumer/consumer"
echo "check_install: find_package(hipgn) and link: ok"
# the Python package installed beside the library finds it, with no HIPGN_LIBRARY to help
env -u HIPGN_LIBRARY PYTHONPATH="$prefix/install/lib/python3/dist-packages" python3 -c '
import os, sys, hipgn
path = hipgn.find_library()
assert os.path.realpath(path).startswith(os.path.realpath(sys.argv[1])), path
print("check_install: import hipgn loads", path, "with", len(hipgn.library().instance_names()), "instances")' \
  "$prefix/install"
