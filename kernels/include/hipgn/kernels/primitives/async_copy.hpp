// A thread's own asynchronous copies, global -> shared (sm_80 and later: cp.async), for loops
// whose loads must be many in flight without a register each: a thread issues the rows of a
// ring of shared-memory slots ahead, then reads each slot back once its copy landed. Every slot
// is its own thread's (copied and read by it alone), so no workgroup barrier guards the ring:
// cp.async.wait_group makes a thread's completed copies visible to that thread.
// Targets without it (AMD, older NVIDIA) load through registers; HIPGN_ASYNC_COPY says which
// one the device pass compiles, and the host sizes the ring by stream_ring_depth (params.hpp).
#pragma once

#include <cstdint>

#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
#define HIPGN_ASYNC_COPY 1
#endif

namespace hipgn::kernels::async_copy {

#if defined(HIPGN_ASYNC_COPY)
// Copies one vector of Bytes (4, 8 or 16; both addresses aligned to it) into shared memory.
// 16 bytes bypass L1 (.cg: each line is read once); smaller ones must go through it (.ca).
template <int Bytes>
__device__ __forceinline__ void copy(void* smem, const void* global) {
  static_assert(Bytes == 4 || Bytes == 8 || Bytes == 16, "cp.async copies 4, 8 or 16 bytes");
  const auto dst = static_cast<std::uint32_t>(__cvta_generic_to_shared(smem));
  if constexpr (Bytes == 16)
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" ::"r"(dst), "l"(global) : "memory");
  else
    asm volatile("cp.async.ca.shared.global [%0], [%1], %2;" ::"r"(dst), "l"(global), "n"(Bytes) : "memory");
}

// Closes the copies issued since the last commit into one group (possibly empty).
__device__ __forceinline__ void commit() { asm volatile("cp.async.commit_group;" ::: "memory"); }

// Waits until at most `pending` of this thread's groups are still in flight (pending < 8: the
// ring's depth is at most kStreamRingMost). wait_group takes an immediate, hence the switch; a
// uniform branch a row.
__device__ __forceinline__ void wait(int pending) {
  switch (pending) {
    case 0: asm volatile("cp.async.wait_group 0;" ::: "memory"); break;
    case 1: asm volatile("cp.async.wait_group 1;" ::: "memory"); break;
    case 2: asm volatile("cp.async.wait_group 2;" ::: "memory"); break;
    case 3: asm volatile("cp.async.wait_group 3;" ::: "memory"); break;
    case 4: asm volatile("cp.async.wait_group 4;" ::: "memory"); break;
    case 5: asm volatile("cp.async.wait_group 5;" ::: "memory"); break;
    case 6: asm volatile("cp.async.wait_group 6;" ::: "memory"); break;
    default: asm volatile("cp.async.wait_group 7;" ::: "memory"); break;
  }
}
#endif

}  // namespace hipgn::kernels::async_copy
