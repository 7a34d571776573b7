// Phase times, for development only. Built with HIPGN_PHASE_TIMES defined (bench/phase_times.sh
// builds so), a persistent kernel stamps clock64() at each mark (after a block barrier, so a
// mark is where the whole workgroup got to), and thread 0 of the first four workgroups and of
// every sixteenth prints the cycles between its marks when the kernel ends. Nsight Compute's
// stall sampling charges a grid barrier's wait to the instruction after it, not to the phase
// that the workgroups being waited for are still in; these stamps tell which phase the grid
// waits on (bench/NOTES.md, "The channels-last stream forward's merge": the merge that five
// workgroups ran while the rest waited). Without the macro every member is empty and inlined
// away: the kernels' code is what it is without the marks.
#pragma once

#if defined(HIPGN_PHASE_TIMES)
#include <cstdio>
#endif

namespace hipgn::kernels {

// kMarks marks at most (5 printed); every thread of the workgroup calls mark() at the same points.
template <int kMarks>
struct PhaseClock {
  static_assert(kMarks >= 1 && kMarks <= 5, "the report prints five intervals");
#if defined(HIPGN_PHASE_TIMES)
  long long at[kMarks + 1];
  int marks = 0;
  __device__ PhaseClock() { at[0] = clock64(); }
  __device__ void mark() {
    __syncthreads();
    if (marks < kMarks) at[++marks] = clock64();
  }
  __device__ void report(const char* kernel) const {
    if (threadIdx.x != 0 || (blockIdx.x >= 4 && blockIdx.x % 16 != 0)) return;
    long long d[5] = {-1, -1, -1, -1, -1};
    for (int i = 0; i < marks; ++i) d[i] = at[i + 1] - at[i];
    printf("phase_times %s block %d of %d: %lld %lld %lld %lld %lld\n", kernel, int(blockIdx.x), int(gridDim.x), d[0],
           d[1], d[2], d[3], d[4]);
  }
#else
  __device__ __forceinline__ void mark() {}
  __device__ __forceinline__ void report(const char*) const {}
#endif
};

}  // namespace hipgn::kernels
