#!/usr/bin/env bash
# For the GPU machine, which reaches no package registry: unpack the header-only Debian
# packages it lacks (CLI11, nlohmann-json) into .deps/ (git-ignored) to carry along.
set -euo pipefail
cd "$(dirname "$0")/.."
mkdir -p .deps && cd .deps
apt-get download nlohmann-json3-dev libcli11-dev
for f in *.deb; do dpkg -x "$f" root; done
