#!/usr/bin/env bash
# One GPU-machine round: the default preset built and its whole test suite run
# (scripts/gpu_check.sh), then bench.py with BENCH_ARGS on that build. Logs under $OUT.
set -uo pipefail
OUT=${OUT:-/tmp/hipgn-out}
mkdir -p "$OUT"
bash scripts/gpu_check.sh > "$OUT/gpu_check.txt" 2>&1
echo "gpu_check rc=$?"; tail -15 "$OUT/gpu_check.txt"
if [ -n "${BENCH_ARGS:-}" ]; then
  PYTHONUNBUFFERED=1 timeout ${BENCH_TIMEOUT:-240} python3 bench/bench.py --lib build-gpu/runtime/libhipgn.so --out "$OUT" $BENCH_ARGS \
    > "$OUT/bench.log" 2>&1; echo "bench rc=$?"; grep -vE "^\|" "$OUT/bench.log" | tail -${BENCH_TAIL:-40}
fi
