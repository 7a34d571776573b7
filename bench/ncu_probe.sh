#!/usr/bin/env bash
# On the GPU machine: Nsight Compute sections for a few instances (PROBES: "instance:n:c:spatial:g:dtype:layout"),
# and the SASS of the first probe's kernel: memory instruction widths and the loop's size.
# KERNEL: the regex of the kernel's name to profile (default resident); CACHE: ncu's
# --cache-control (default all: caches flushed before the kernel, so no dirty line of the
# previous launch is written back during it; none keeps what the launches before it left)
set -uo pipefail
OUT=${OUT:-/tmp/hipgn-out}
BUILD=${BUILD:-/tmp/build-explore}
P=$BUILD/profiler/hipgn_profiler
for probe in ${PROBES}; do
  IFS=: read -r inst n c sp g dt lay <<< "$probe"
  ncu --section SpeedOfLight --section MemoryWorkloadAnalysis --section WarpStateStats --section SchedulerStats \
      --section Occupancy --section LaunchStats --section InstructionStats -k regex:${KERNEL:-resident} \
      --cache-control ${CACHE:-all} --launch-skip 2 --launch-count 1 \
      $P --instance $inst -n $n -c $c -s $sp -g $g --dtype $dt --layout $lay --act swish --iters 2 --warmup 1 > "$OUT/ncu_$inst.txt" 2>&1
  echo "== $inst $n $c $sp $g $lay"
  grep -E "DRAM Throughput|Memory Throughput|Duration|Compute \(SM\) Throughput|Registers Per|Achieved Occupancy|Theoretical Occupancy|Grid Size|Block Limit|Dynamic Shared|Issue Slots Busy|No Eligible|Warp Cycles Per Issued|Executed Ipc A|Stall|L1/TEX Hit|L2 Hit|Mem Busy|Max Bandwidth|Executed Instructions  " "$OUT/ncu_$inst.txt" | head -40
  grep -iE "warp.*stall|spent|cycles being stalled|one or more" "$OUT/ncu_$inst.txt" | cut -c1-260 | head -8
done
first=${PROBES%% *}; inst=${first%%:*}
obj=$(grep -l "$inst" $BUILD/generated/tu/*.cpp | head -1)
o=$BUILD/generated/CMakeFiles/hipgn_instances.dir/tu/$(basename $obj).o
cuobjdump -sass $o > "$OUT/sass_all.txt" 2>&1
awk -v k="$inst" '/Function :/ {p = index($0, k) > 0} p' "$OUT/sass_all.txt" > "$OUT/sass_probe.txt"
echo "SASS of $inst: $(grep -cE '^\s+/\*[0-9a-f]+\*/' "$OUT/sass_probe.txt") instructions"
grep -oE "(LDG|STG|LDS|STS|LD|ST|LDL|STL|UBLKCP|UTMA|SYNCS|BAR|MUFU|ATOMG|RED|F2F|HADD2|PRMT|I2F|F2I|IMAD|ISETP|LEA)[.A-Z0-9_]*" "$OUT/sass_probe.txt" | sort | uniq -c | sort -rn | head -40
