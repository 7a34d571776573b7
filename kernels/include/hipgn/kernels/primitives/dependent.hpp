// Programmatic dependent launch (sm_90, CUDA 12.3+ in graphs): a kernel that needs the one
// before it on the stream may be launched early, its workgroups starting while the first one's
// last workgroups drain; it waits (wait_for_prior_grid) before its first access of memory that
// the kernel before it writes (or reads, where it writes there), at which point every write of
// that kernel is visible. What kernels before that one wrote is visible from the start: it began
// after them. The graph edge between two such
// kernels costs ~1.7 us at 1 MB, and this takes back 0.3-0.4 us of it (bench/pdl_probe.cu,
// bench/NOTES.md "Two probes"). Elsewhere (AMD, a system HIP) an ordinary launch, and the
// device calls compile to nothing.
#pragma once

#include <cstddef>

#include "hipgn/platform.hpp"

namespace hipgn::kernels {

// In a kernel launched by launch_dependent, before it touches what the kernel before it writes
// (a no-op in one launched otherwise).
__device__ __forceinline__ void wait_for_prior_grid() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
}

// In the kernel before one launched by launch_dependent: the dependent may be scheduled once
// every workgroup of this one has got here (without it, once this one ends).
__device__ __forceinline__ void allow_dependent_launch() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
#endif
}

// kernel<<<grid, block, smem, stream>>>(args...), allowed to start early as above.
template <typename... Params, typename... Args>
hipError_t launch_dependent(void (*kernel)(Params...), dim3 grid, dim3 block, std::size_t smem, hipStream_t stream,
                            Args... args) {
#if defined(HIPGN_PLATFORM_NVIDIA)
  cudaLaunchConfig_t config = {};
  config.gridDim = grid;
  config.blockDim = block;
  config.dynamicSmemBytes = smem;
  config.stream = stream;
  cudaLaunchAttribute attribute[1];
  attribute[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
  attribute[0].val.programmaticStreamSerializationAllowed = 1;
  config.attrs = attribute;
  config.numAttrs = 1;
  return cudaLaunchKernelEx(&config, kernel, args...);
#else
  kernel<<<grid, block, smem, stream>>>(args...);
  return hipGetLastError();
#endif
}

}  // namespace hipgn::kernels
