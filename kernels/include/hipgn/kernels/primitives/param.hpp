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

#include <cstddef>

#include "hipgn/params.hpp"
#include "hipgn/platform.hpp"

// A kernel whose code calls param_late takes its Params so: the parameter is then addressable
// where it lies (without it, taking its address copies it to local memory).
#if defined(__CUDACC__) && !defined(__HIP_PLATFORM_AMD__)
#define HIPGN_GRID_CONSTANT __grid_constant__
#else
#define HIPGN_GRID_CONSTANT
#endif

namespace hipgn::kernels {

// Params' head that with_late_params reads late: through a peeled element's channel
// (spatial), the last field the channels-first peeled forward reads before its first load
inline constexpr std::size_t kLateParamBytes = offsetof(Params, dx);

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

// The first kBytes of a HIPGN_GRID_CONSTANT kernel parameter read by param_late, the rest as
// it is: a copy whose head fields (the lines a kernel reads before its first load, Params'
// order) are indexed loads, so that none holds the wavefront at its miss and those lines arrive
// together, while the fields after the head stay uniform reads that ptxas takes where used.
// (The whole parameter copied so kept every field live in registers from the top: 75 onchip
// kernels spilled 8-224 bytes; bench/NOTES.md, "The parameters' head, late".)
template <std::size_t kBytes, typename T>
__device__ __forceinline__ T params_late(const T& params) {
  T copy = params;
#if defined(__CUDA_ARCH__)
  static_assert(kBytes % 8 == 0 && kBytes <= sizeof(T) && alignof(T) >= 8, "read by 8-byte words");
  unsigned zero;
  asm("mov.u32 %0, %%tid.y;" : "=r"(zero));
  const auto* from = reinterpret_cast<const unsigned long long*>(&params) + zero;
  auto* to = reinterpret_cast<unsigned long long*>(&copy);
#pragma unroll
  for (int i = 0; i < int(kBytes / 8); ++i) to[i] = from[i];
#endif
  return copy;
}

// run(params_late of Params' head) where a thread holds one vector (Traits::kPerThread == 1: the
// 128 x 8 x 1 and 256 x 8 x 1 instances), the parameter as it is elsewhere. Measured on the onchip
// forward's span and rows kernels (H200 A/B against the parameter as it is, fp16 and bf16;
// bench/NOTES.md, "The parameters' head, late"): det_7x11x256 and hw1_512 (one vector a
// thread) 0.94-0.99x; with more vectors a thread the LDCs' results hold registers over the loads
// and the rows ran 1.0-1.06x (layer_norm_32x64, sd15_16x1280 channels-last at 256 x 8 x 2), the
// peeled 256 x 8 x 8 1.10-1.27x (odd_3d_7x31x37_c120_cg3), the parts 1.03-1.28x (their
// cluster's exchange beside them). (Call param_late on the kernel's parameter, never on this
// copy: on a local copy an indexed read is a local-memory one.) Elsewhere `run` takes the
// parameter itself: a copy of it as it is moved ptxas's schedule, 1.06-1.09x on 512 x 4 x 8.
template <typename Traits, typename Run>
__device__ __forceinline__ void with_late_params(const Params& params, Run&& run) {
  if constexpr (Traits::kPerThread == 1) run(params_late<kLateParamBytes>(params));
  else run(params);
}

}  // namespace hipgn::kernels
