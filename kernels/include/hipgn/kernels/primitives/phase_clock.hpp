// Phase times, for development only. Built with HIPGN_PHASE_TIMES defined (bench/phase_times.sh
// builds so), a persistent kernel (or the channels-last onchip forward) stamps clock64() at
// each lap (after a block barrier, so a lap is where the whole workgroup got to), and thread 0
// of the first four workgroups and of every sixteenth prints each interval's cycles when the
// kernel ends. Nsight Compute's stall sampling charges a grid barrier's wait to the instruction
// after it, not to the phase that the workgroups being waited for are still in; these stamps
// tell which phase the grid waits on (bench/NOTES.md, "The channels-last stream forward's
// merge": the merge that five workgroups ran while the rest waited). Without the macro every
// member is empty and inlined away: the kernels' code is what it is without the laps.
#pragma once

#if defined(HIPGN_PHASE_TIMES)
#include <cstdio>
#endif

namespace hipgn::kernels {

// The GPU's global timer in ns (NVIDIA; 0 elsewhere): comparable across workgroups, where
// clock64() counts one compute unit's cycles. Also the probes' (bench/stream_rate_probe.cu).
__device__ __forceinline__ unsigned long long global_timer_ns() {
  unsigned long long t = 0;
#if defined(__CUDA_ARCH__)
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
#endif
  return t;
}

// kIntervals intervals (at most 8): lap(i) adds the cycles since the previous lap (or the
// start) to interval i, so a lap inside a loop over items sums that step over the workgroup's
// items. Every thread of the workgroup calls lap() at the same points.
template <int kIntervals>
struct PhaseClock {
  static_assert(kIntervals >= 1 && kIntervals <= 8, "the report prints eight intervals");
#if defined(HIPGN_PHASE_TIMES)
  long long sum[kIntervals] = {};
  long long last;
  unsigned long long start_ns;
  __device__ PhaseClock() { last = clock64(), start_ns = global_timer_ns(); }
  // lap(i) once every array of `held` (registers loads fill) has arrived: a lap alone does not
  // wait for loads, whose first use the compiler may place after it
  template <typename... Held>
  __device__ void lap_after(int i, const Held&... held) {
    (touch(held), ...);
    lap(i);
  }
  template <typename H, int N>
  __device__ static void touch(const H (&held)[N]) {
    static_assert(sizeof(H) % 4 == 0 || sizeof(H) == 2, "whole words, or one 16-bit value");
    for (int k = 0; k < N; ++k) {
      if constexpr (sizeof(H) == 2) {
        unsigned short w;
        __builtin_memcpy(&w, &held[k], sizeof(H));
        asm volatile("" ::"h"(w));
      } else {
        unsigned w[sizeof(H) / 4];
        __builtin_memcpy(w, &held[k], sizeof(H));
        for (unsigned x : w) asm volatile("" ::"r"(x));
      }
    }
  }
  __device__ void lap(int i) {
    __syncthreads();
    const long long now = clock64();
    sum[i] += now - last;
    last = now;
  }
  __device__ void report(const char* kernel) const {
    if (threadIdx.x != 0 || (blockIdx.x >= 4 && blockIdx.x % 16 != 0)) return;
    long long d[8] = {-1, -1, -1, -1, -1, -1, -1, -1};
    for (int i = 0; i < kIntervals; ++i) d[i] = sum[i];
    // then the workgroup's start and end on the GPU's global timer (ns): the launch's skew
    printf("phase_times %s block %d of %d: %lld %lld %lld %lld %lld %lld %lld %lld %llu %llu\n", kernel,
           int(blockIdx.x), int(gridDim.x), d[0], d[1], d[2], d[3], d[4], d[5], d[6], d[7], start_ns, global_timer_ns());
  }
#else
  __device__ __forceinline__ void lap(int) {}
  template <typename... Held>
  __device__ __forceinline__ void lap_after(int, const Held&...) {}
  __device__ __forceinline__ void report(const char*) const {}
#endif
};

}  // namespace hipgn::kernels
