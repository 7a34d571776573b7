// The fused activation of z = gamma * xhat + beta and its derivative, for the forward and the
// backward alike.
#pragma once

#include "hipgn/platform.hpp"
#include "hipgn/types.hpp"

namespace hipgn::kernels {

// Swish's exponential and reciprocal as the hardware's approximations (relative error near
// 2^-22): the library versions add denormal scaling around each, which doubles the
// instructions per element of a kernel that has about ten to spend at fp16 bandwidth.
__device__ __forceinline__ float exp2_fast(float x) {
#if defined(__CUDA_ARCH__)
  float y;
  asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
  return y;
#else
  return exp2f(x);
#endif
}
__device__ __forceinline__ float rcp_fast(float x) {
#if defined(__CUDA_ARCH__)
  float y;
  asm("rcp.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
  return y;
#else
  return __frcp_rn(x);
#endif
}

// The activation of z = gamma * xhat + beta. swish_k is -swish_beta * log2(e): Swish is
// z * sigmoid(s z) = z / (1 + 2^(k z)); as z -> -inf the power overflows to inf and the
// reciprocal to 0, the right limit, and as z -> +inf it tends to z.
template <Activation A>
__device__ __forceinline__ float activate(float z, float swish_beta) {
  if constexpr (A == Activation::swish) {
    return z * rcp_fast(1.f + exp2_fast(z * (-1.4426950408889634f * swish_beta)));
  } else {
    return z;
  }
}

// The activation of each of z[0..N), in place, for a loop that Swish's two quarter-rate
// operations an element bound (an exponential and a reciprocal: 16 lanes a clock an SM on NVIDIA).
// The channels-first stream forward's phase 2 is one: 16 of its ~80 instructions a 16-byte fp16
// vector, 128 cycles of the unit a wavefront's vector against ~70 of issue (SASS, Nsight
// Compute), and no activation at all is 5-13% faster (bench/NOTES.md, "Swish's cost"). So two
// elements share one reciprocal, 1/a = b/(ab) and 1/b = a/(ab): 12 of the unit's operations a
// vector for ~30 more of issue. Elsewhere (the resident forwards, the channels-last stream
// forward) the unit is not the bound, and with the extra issue and registers they ran 0.98-1.08x
// the time (H100 A/B), so they keep activate().
// For the pair the denominators are kept in (1, 2]: with u = swish_beta z and e =
// 2^(-log2(e) |u|) in (0, 1], sigmoid(u) is 1/(1+e) where u >= 0 and e/(1+e) where not, and
// z sigmoid(u) is max(z, z e)/(1+e) where swish_beta >= 0 (z e lies between 0 and z and is the
// one taken where u < 0), min(z, z e)/(1+e) where swish_beta < 0. For finite z the results are
// activate()'s to a few ulps of fp32 (ab lies in (1, 4]: no overflow); a NaN z gives NaN and
// leaves its pair's other element alone (its denominator counts as 1 in the product). An odd
// last element takes activate().
//
// One pair; kMax: swish_beta >= 0, k: -log2(e) |swish_beta|.
template <bool kMax>
__device__ __forceinline__ void swish_pair(float& z0, float& z1, float k) {
  const float e0 = exp2_fast(k * fabsf(z0)), e1 = exp2_fast(k * fabsf(z1));
  const float d0 = fmaxf(1.f + e0, 1.f), d1 = fmaxf(1.f + e1, 1.f);  // 1 for a NaN e
  const float r = rcp_fast(d0 * d1);
  z0 = (kMax ? fmaxf(z0, z0 * e0) : fminf(z0, z0 * e0)) * (r * d1);
  z1 = (kMax ? fmaxf(z1, z1 * e1) : fminf(z1, z1 * e1)) * (r * d0);
}
template <bool kMax, int N>
__device__ __forceinline__ void swish_pairs(float (&z)[N], float k) {
#pragma unroll
  for (int i = 0; i + 1 < N; i += 2) swish_pair<kMax>(z[i], z[i + 1], k);
}
template <Activation A, int N>
__device__ __forceinline__ void activate_all(float (&z)[N], float swish_beta) {
  if constexpr (A == Activation::swish) {
    const float k = -1.4426950408889634f * fabsf(swish_beta);
    if (swish_beta >= 0.f) swish_pairs<true>(z, k);
    else swish_pairs<false>(z, k);
    if constexpr (N % 2 == 1) z[N - 1] = activate<A>(z[N - 1], swish_beta);
  }
}

// d act(z) / dz, for the backward: Swish's sigmoid with the same hardware exp2 and reciprocal as
// the forward (an IEEE division is a called subroutine, around which ptxas spilled registers).
template <Activation A>
__device__ __forceinline__ float activation_grad(float z, float swish_beta) {
  if constexpr (A == Activation::swish) {
    const float sig = rcp_fast(1.f + exp2_fast(z * (-1.4426950408889634f * swish_beta)));
    return sig * (1.f + swish_beta * z * (1.f - sig));
  } else {
    return 1.f;
  }
}

}  // namespace hipgn::kernels
