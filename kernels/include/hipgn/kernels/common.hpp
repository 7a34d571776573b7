// Device building blocks shared by the GroupNorm kernels: the target's wavefront size, vector
// memory access, fp32 reductions across a workgroup, and the fused activations.
#pragma once

#include <cstdint>

#include "hipgn/params.hpp"
#include "hipgn/platform.hpp"
#include "hipgn/types.hpp"

namespace hipgn::kernels {

// The wavefront size of the target being compiled: 64 on AMD gfx9 (CDNA), 32 on RDNA (wave32)
// and NVIDIA. Never assume 32: reductions below take it from here. The host pass sees 32, and
// no host code depends on it.
#if defined(__HIP_DEVICE_COMPILE__) && defined(__AMDGCN_WAVEFRONT_SIZE)
inline constexpr int kWarpSize = __AMDGCN_WAVEFRONT_SIZE;
#else
inline constexpr int kWarpSize = 32;
#endif
#if defined(__HIP_DEVICE_COMPILE__) && defined(__GFX9__)
static_assert(kWarpSize == 64, "gfx9 (CDNA) wavefronts are 64 wide");
#endif

// N elements of T in one access: with sizeof(T) * N = 16 this is one 128-bit load or store.
template <typename T, int N>
struct alignas(sizeof(T) * N) Vec {
  T v[N];
};

template <int N, typename T>
__device__ __forceinline__ void load_vec(const T* p, float (&out)[N]) {
  const Vec<T, N> r = *reinterpret_cast<const Vec<T, N>*>(p);
#pragma unroll
  for (int i = 0; i < N; ++i) out[i] = to_float(r.v[i]);
}

template <int N, typename T>
__device__ __forceinline__ void store_vec(T* p, const float (&in)[N]) {
  Vec<T, N> r;
#pragma unroll
  for (int i = 0; i < N; ++i) r.v[i] = from_float<T>(in[i]);
  *reinterpret_cast<Vec<T, N>*>(p) = r;
}

__device__ __forceinline__ float warp_sum(float v) {
#pragma unroll
  for (int o = kWarpSize / 2; o > 0; o >>= 1) v += __shfl_xor(v, o, kWarpSize);
  return v;
}

// The sum over the workgroup, returned to every thread. Safe to call repeatedly: the first
// barrier keeps a new call's writes behind the previous call's reads.
template <int kBlock>
__device__ __forceinline__ float block_sum(float v) {
  constexpr int kWarps = kBlock / kWarpSize;
  static_assert(kBlock % kWarpSize == 0 && kWarps <= kWarpSize, "block must be whole wavefronts");
  __shared__ float partial[kWarps];
  __shared__ float total;
  v = warp_sum(v);
  const int lane = threadIdx.x % kWarpSize, warp = threadIdx.x / kWarpSize;
  __syncthreads();
  if (lane == 0) partial[warp] = v;
  __syncthreads();
  if (warp == 0) {
    float t = lane < kWarps ? partial[lane] : 0.f;
    t = warp_sum(t);
    if (lane == 0) total = t;
  }
  __syncthreads();
  return total;
}

// Several sums over the workgroup at once, returned to every thread; the same fixed order on
// every run, so results are bitwise reproducible.
template <int kBlock, int K>
__device__ __forceinline__ void block_sum_array(float (&v)[K]) {
  constexpr int kWarps = kBlock / kWarpSize;
  __shared__ float partial[K][kWarps];
  __shared__ float total[K];
#pragma unroll
  for (int k = 0; k < K; ++k) v[k] = warp_sum(v[k]);
  const int lane = threadIdx.x % kWarpSize, warp = threadIdx.x / kWarpSize;
  __syncthreads();
  if (lane == 0)
#pragma unroll
    for (int k = 0; k < K; ++k) partial[k][warp] = v[k];
  __syncthreads();
  if (warp == 0) {
#pragma unroll
    for (int k = 0; k < K; ++k) {
      float t = lane < kWarps ? partial[k][lane] : 0.f;
      t = warp_sum(t);
      if (lane == 0) total[k] = t;
    }
  }
  __syncthreads();
#pragma unroll
  for (int k = 0; k < K; ++k) v[k] = total[k];
}

// Count, mean and sum of squared deviations of a set of values. Merging two sets (Chan et
// al.) never subtracts large raw sums, so it stays accurate where E[x^2] - E[x]^2 would not.
struct Stats {
  float n, mean, m2;
};

__device__ __forceinline__ Stats merge(Stats a, Stats b) {
  const float n = a.n + b.n;
  if (n == 0.f) return a;
  const float d = b.mean - a.mean, wb = b.n / n;
  return {n, a.mean + d * wb, a.m2 + b.m2 + d * d * a.n * wb};
}

// Statistics of one vector held in registers: two passes over registers, exact.
template <int N>
__device__ __forceinline__ Stats vector_stats(const float (&v)[N]) {
  float s = 0.f;
#pragma unroll
  for (int i = 0; i < N; ++i) s += v[i];
  const float m = s * (1.f / N);
  float q = 0.f;
#pragma unroll
  for (int i = 0; i < N; ++i) q += (v[i] - m) * (v[i] - m);
  return {float(N), m, q};
}

__device__ __forceinline__ Stats warp_merge(Stats s) {
#pragma unroll
  for (int o = kWarpSize / 2; o > 0; o >>= 1) {
    const Stats other{__shfl_xor(s.n, o, kWarpSize), __shfl_xor(s.mean, o, kWarpSize),
                      __shfl_xor(s.m2, o, kWarpSize)};
    s = merge(s, other);
  }
  return s;
}

// The merged statistics of the workgroup, returned to every thread (lane 0's merge order, so
// every thread and every run sees the same bits).
template <int kBlock>
__device__ __forceinline__ Stats block_merge(Stats s) {
  constexpr int kWarps = kBlock / kWarpSize;
  __shared__ Stats partial[kWarps];
  __shared__ Stats total;
  s = warp_merge(s);
  const int lane = threadIdx.x % kWarpSize, warp = threadIdx.x / kWarpSize;
  __syncthreads();
  if (lane == 0) partial[warp] = s;
  __syncthreads();
  if (warp == 0) {
    Stats t = lane < kWarps ? partial[lane] : Stats{0.f, 0.f, 0.f};
    t = warp_merge(t);
    if (lane == 0) total = t;
  }
  __syncthreads();
  return total;
}

template <Activation A>
__device__ __forceinline__ float activate(float z, float swish_beta) {
  if constexpr (A == Activation::swish) {
    // z * sigmoid(s z); as z -> -inf, exp -> inf and the quotient -> -0, the right limit.
    return z / (1.f + __expf(-swish_beta * z));
  } else {
    return z;
  }
}

// A group (n, g) is viewed as rows x cols with cols contiguous in memory:
//   channels-first (N, C, S...): rows = C/G channels,  cols = S (spatial), row stride S
//   channels-last  (N, S..., C): rows = S positions,   cols = C/G,         row stride C
// Threads access whole vectors of Traits::kVectorSize elements along cols (the runtime checks
// cols and the pointers allow it), so one vector lies in one channel (channels-first) or in
// consecutive channels (channels-last).
template <typename Traits>
struct GroupView {
  static constexpr int V = Traits::kVectorSize;
  static constexpr bool kChannelsFirst = Traits::kLayout == Layout::channels_first;
  std::int64_t base;      // offset of the group's first element
  std::int64_t channel0;  // the group's first channel

  __device__ __forceinline__ GroupView(const Params& p, std::int64_t group) {
    const std::int64_t n = group / p.groups_per_sample, g = group - n * p.groups_per_sample;
    base = n * p.sample_stride + g * p.group_stride;
    channel0 = g * p.channels_per_group;
  }
  // Vector q of the group: its element offset and the channel of its first element.
  __device__ __forceinline__ void locate(const Params& p, std::int64_t q, std::int64_t& offset,
                                         std::int64_t& channel) const {
    const std::int64_t row = p.vectors_per_row.div(q), col = (q - row * p.vectors_per_row.divisor) * V;
    offset = base + row * p.row_stride + col;
    channel = channel0 + (kChannelsFirst ? row : col);
  }
};

}  // namespace hipgn::kernels
