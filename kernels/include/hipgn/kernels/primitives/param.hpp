// Reading a kernel's parameters off the chain to its first load.
//
// On NVIDIA a kernel's parameters lie in the constant bank, 64-byte lines from 0x200, and ptxas
// reads every field the code uses through uniform loads (ULDC) hoisted to the kernel's top. A
// wavefront waits at each such read whose line misses, one line after another, before it issues
// anything behind it: a small kernel's first global load waited on every line its later code
// reads (Nsight's stall_imc; bench/NOTES.md, "The parameters' lines"). A field read by
// param_late is loaded through a register index instead (LDC), which does not hold the
// wavefront at its miss: only its users wait, so the line arrives while the first loads are in
// flight.
#pragma once

#include "hipgn/platform.hpp"

// A kernel whose code calls param_late takes its Params so: the parameter is then addressable
// where it lies (without it, taking its address copies it to local memory).
#if defined(__CUDACC__) && !defined(__HIP_PLATFORM_AMD__)
#define HIPGN_GRID_CONSTANT __grid_constant__
#else
#define HIPGN_GRID_CONSTANT
#endif

namespace hipgn::kernels {

// `field`, a member of a HIPGN_GRID_CONSTANT kernel parameter, read by an indexed load. The
// index is threadIdx.y, zero in every launch of the kernels that call this (one-dimensional
// workgroups), which ptxas cannot know. On AMD the parameters are a kernarg segment of scalar
// loads that hold nothing up this way: a plain read.
template <typename T>
__device__ __forceinline__ T param_late(const T& field) {
#if defined(__CUDA_ARCH__)
  unsigned zero;
  asm("mov.u32 %0, %%tid.y;" : "=r"(zero));
  return (&field)[zero];
#else
  return field;
#endif
}

}  // namespace hipgn::kernels
