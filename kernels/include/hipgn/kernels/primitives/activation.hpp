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
