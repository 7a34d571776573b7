// Hopper's bulk copy engine (sm_90: cp.async.bulk) and its shared-memory barriers, for the
// resident family's pipelined path: one thread loads a whole contiguous slice from global into
// shared memory, asynchronously, so a workgroup has its next slice in flight while it reduces
// and exchanges the current one (results are stored from registers). Targets without it (AMD, older NVIDIA) take the
// register path; HIPGN_BULK_COPY says which one the device pass compiles.
#pragma once

#include <cstdint>

#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
#define HIPGN_BULK_COPY 1
#endif

namespace hipgn::kernels::bulk {

#if defined(HIPGN_BULK_COPY)
__device__ __forceinline__ std::uint32_t smem_address(const void* p) {
  return static_cast<std::uint32_t>(__cvta_generic_to_shared(p));
}

// A barrier counting one arrival plus the bytes its copies deliver.
__device__ __forceinline__ void init(std::uint64_t* bar) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" ::"r"(smem_address(bar)) : "memory");
  // make the initialization visible to the copy engine (the async proxy)
  asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
}

// Arrives on bar expecting `bytes`, and copies them global -> shared, completing on bar.
// bytes: a multiple of 16, both addresses 16-byte aligned; 0 copies nothing.
__device__ __forceinline__ void load(void* dst, const void* src, std::uint32_t bytes, std::uint64_t* bar) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(smem_address(bar)), "r"(bytes)
               : "memory");
  if (bytes)
    asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];" ::"r"(
                     smem_address(dst)),
                 "l"(src), "r"(bytes), "r"(smem_address(bar))
                 : "memory");
}

__device__ __forceinline__ void wait(std::uint64_t* bar, std::uint32_t parity) {
  std::uint32_t done = 0;
  while (!done)
    asm volatile(
        "{ .reg .pred p; mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2; selp.u32 %0, 1, 0, p; }"
        : "=r"(done)
        : "r"(smem_address(bar)), "r"(parity)
        : "memory");
}

#endif

}  // namespace hipgn::kernels::bulk
