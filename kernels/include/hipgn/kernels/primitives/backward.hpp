// The backward's math, which every family's backward kernels share: dx (op dx), dgamma/dbeta
// (op dgb), or all three (op bwd).
//
// With xhat = (x - mean) * rstd and dy' the gradient at the normalized value (dy, or with
// Swish fused dy * d/dz[z sigmoid(s z)] at z = gamma * xhat + beta, recomputed here: the
// forward stores nothing extra):
//   dx       = rstd * (gamma dy' - A / M - xhat * B / M),  A = sum_g gamma dy', B = sum_g gamma dy' xhat
//   dgamma_c = sum_{n,s} dy' xhat,  dbeta_c = sum_{n,s} dy'
// M is the group's element count. Both gradients come from per-(n, c) sums S1 = sum_s dy' and
// S2 = sum_s dy' xhat: A = sum_c gamma_c S1, B = sum_c gamma_c S2. The kernels write S1, S2 to
// the workspace [N, C, 2] and a last kernel sums them over n, in a fixed order: no floating-
// point atomics anywhere, so every run gives the same bits.
#pragma once

#include <cstdint>

#include "hipgn/kernels/primitives/activation.hpp"
#include "hipgn/kernels/primitives/vector.hpp"
#include "hipgn/params.hpp"
#include "hipgn/platform.hpp"

namespace hipgn::kernels {

// Whether the instance's op writes dx (dx, bwd).
template <typename Traits>
inline constexpr bool kWritesDx = Traits::kOp == Op::dx || Traits::kOp == Op::bwd;

// The per-(n, c) sums are needed for dgamma/dbeta (ops dgb and bwd with gamma given).
template <typename Traits>
__device__ __forceinline__ bool wants_channel_sums(const Params& p) {
  return (Traits::kOp == Op::dgb || Traits::kOp == Op::bwd) && p.dgamma != nullptr;
}

__device__ __forceinline__ void store_channel_sums(const Params& p, std::int64_t sample, std::int64_t c, float s1,
                                                   float s2) {
  float* w = p.workspace + (sample * p.channels + c) * 2;
  w[0] = s1;
  w[1] = s2;
}

// A thread's constants for one channel of one sample: the group's mean and rstd, gamma * rstd
// (the slope of z = gamma * xhat + beta in x, and of dx in dy') and beta.
struct BwdChannel {
  float mean, rstd, slope, beta;
};

// One vector of x and dy as loaded, widened to x - mean (d) and dy' (g), channel by channel: what
// the channels-last backwards (stream_bwd.hpp, onchip.hpp) compute first, and again for dx.
template <Activation kAct, typename VecT, int V>
__device__ __forceinline__ void vector_terms(const VecT& rx, const VecT& rdy, const BwdChannel (&k)[V], float swish_beta,
                                             float (&d)[V], float (&g)[V]) {
  widen(rx, d);
  widen(rdy, g);
#pragma unroll
  for (int i = 0; i < V; ++i) {
    d[i] -= k[i].mean;
    if constexpr (kAct != Activation::none)
      g[i] *= activation_grad<kAct>(fmaf(k[i].slope, d[i], k[i].beta), swish_beta);
  }
}

}  // namespace hipgn::kernels
