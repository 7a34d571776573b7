// Workgroups of one grid exchanging partial results through global memory: arrival counters
// with release and acquire, and reads of the partials past the L1.
#pragma once

#include <cstdint>

#include "hipgn/platform.hpp"

namespace hipgn::kernels {

// Device-scope accesses of an arrival word: the acquire load both exchanges below wait on, and
// the relaxed load and the release and relaxed stores the barrier's generation and reset take
// (bench/grid_sync_probe.cu times variants of the barrier with the same four).
__device__ __forceinline__ std::uint32_t load_acquire(std::uint32_t* word) {
#if defined(HIPGN_PLATFORM_AMD)
  return __hip_atomic_load(word, __ATOMIC_ACQUIRE, __HIP_MEMORY_SCOPE_AGENT);
#else
  std::uint32_t v;
  asm volatile("ld.acquire.gpu.global.u32 %0, [%1];" : "=r"(v) : "l"(word) : "memory");
  return v;
#endif
}
__device__ __forceinline__ std::uint32_t load_relaxed(std::uint32_t* word) {
#if defined(HIPGN_PLATFORM_AMD)
  return __hip_atomic_load(word, __ATOMIC_RELAXED, __HIP_MEMORY_SCOPE_AGENT);
#else
  std::uint32_t v;
  asm volatile("ld.relaxed.gpu.global.u32 %0, [%1];" : "=r"(v) : "l"(word) : "memory");
  return v;
#endif
}
__device__ __forceinline__ void store_release(std::uint32_t* word, std::uint32_t v) {
#if defined(HIPGN_PLATFORM_AMD)
  __hip_atomic_store(word, v, __ATOMIC_RELEASE, __HIP_MEMORY_SCOPE_AGENT);
#else
  asm volatile("st.release.gpu.global.u32 [%0], %1;" ::"l"(word), "r"(v) : "memory");
#endif
}
__device__ __forceinline__ void store_relaxed(std::uint32_t* word, std::uint32_t v) {
#if defined(HIPGN_PLATFORM_AMD)
  __hip_atomic_store(word, v, __ATOMIC_RELAXED, __HIP_MEMORY_SCOPE_AGENT);
#else
  asm volatile("st.relaxed.gpu.global.u32 [%0], %1;" ::"l"(word), "r"(v) : "memory");
#endif
}

// One arrival at `counter` (a release and acquire at device scope; by one thread, after a
// workgroup barrier that follows the workgroup's stores, see arrive_and_wait): the arrivals
// before it, its ticket. Nothing waits on it until last_arrival asks.
__device__ __forceinline__ std::uint32_t arrive(std::uint32_t* counter) {
#if defined(HIPGN_PLATFORM_AMD)
  return __hip_atomic_fetch_add(counter, 1u, __ATOMIC_ACQ_REL, __HIP_MEMORY_SCOPE_AGENT);
#else
  std::uint32_t before;
  asm volatile("atom.acq_rel.gpu.global.add.u32 %0, [%1], %2;" : "=r"(before) : "l"(counter), "r"(1u) : "memory");
  return before;
#endif
}
// Whether the arrival with `ticket` was the last of `expected`; the last sets the counter back
// to zero, so that counters zeroed once stay zero (Params::counters_zeroed).
__device__ __forceinline__ bool last_arrival(std::uint32_t* counter, std::uint32_t ticket, std::uint32_t expected) {
  if (ticket + 1 != expected) return false;
  store_relaxed(counter, 0u);
  return true;
}

// Cross-workgroup exchange. Workgroups that share a unit of work each store their partial
// result, then one thread of each, after a workgroup barrier that follows every store of the
// partials, arrives at the unit's counter (a release at device scope, which the barrier makes
// cover the whole workgroup's stores) and waits until `expected` workgroups have arrived; a
// workgroup barrier after the call lets the other threads read the partials. No thread needs a
// fence of its own: a __threadfence() is a sequentially consistent fence (MEMBAR.SC.GPU on
// sm_90), and one in every thread of a 512-workgroup grid cost the stream family ~50 us a
// barrier (bench/NOTES.md). The caller guarantees all `expected` workgroups are resident
// together (a cooperative launch), else this waits forever.
//
// The last to arrive sets the counter back to zero, then advances `gen` (release), on which the
// others wait (acquire loads, backing off): each read `gen` before arriving, so the last arrival
// advances it only after every read. The counter must be zero when the first workgroup arrives
// and is zero again when the last leaves, whatever `gen` holds: counters that were zero once
// stay so across launches, and a launch on them needs no memset (Params::counters_zeroed; the
// memset node cost ~2 us a launch in a CUDA graph, bench/NOTES.md). Waiters poll `gen`, not
// the counter, and the stream family keeps the two in different 128-byte lines, so that polls
// do not queue in front of arrivals at the one L2 slice that holds the counter (512 workgroups
// polling the counter itself spent ~45 us a barrier, bench/NOTES.md).
__device__ __forceinline__ void arrive_and_wait(std::uint32_t* counter, std::uint32_t* gen, std::uint32_t expected) {
  const std::uint32_t g = load_relaxed(gen);
  // the release half of the arrival orders the load above before it
  if (last_arrival(counter, arrive(counter), expected)) {
    store_release(gen, g + 1);
    return;
  }
#if defined(HIPGN_PLATFORM_AMD)
  while (load_acquire(gen) == g) __builtin_amdgcn_s_sleep(2);
#else
  // the backoff stops doubling at 64 ns: against 512, 0.12-0.26 us less a barrier with 132 or
  // 264 workgroups and no other traffic (bench/grid_sync_probe.sh, H100), the polls a few more
  // L2 reads of the line that holds `gen` alone
  unsigned ns = 32;
  while (load_acquire(gen) == g) {
    __nanosleep(ns);
    ns = ns < 64 ? 2 * ns : 64;
  }
#endif
}

// A read of another workgroup's partial, past this unit's (incoherent) L1, after the
// exchange's fence. On NVIDIA an L2 load (ld.global.cg), which the hardware pipelines: a
// volatile load is a relaxed system-scope access, and a loop of them waited on each in turn
// (the stream family's merge of 264 partials a group: ~30 us, bench/NOTES.md).
__device__ __forceinline__ float load_shared_partial(const float* p) {
#if defined(__CUDA_ARCH__)
  return __ldcg(p);
#else
  return *static_cast<const volatile float*>(p);
#endif
}
__device__ __forceinline__ float2 load_shared_partial(const float2* p) {
#if defined(__CUDA_ARCH__)
  return __ldcg(p);
#else
  const volatile float* v = reinterpret_cast<const volatile float*>(p);
  return make_float2(v[0], v[1]);
#endif
}
__device__ __forceinline__ float4 load_shared_partial(const float4* p) {
#if defined(__CUDA_ARCH__)
  return __ldcg(p);
#else
  const volatile float* v = reinterpret_cast<const volatile float*>(p);
  return make_float4(v[0], v[1], v[2], v[3]);
#endif
}

}  // namespace hipgn::kernels
