// fp32 reductions across a wavefront and a workgroup, in a fixed order (every run gives the
// same bits): sums, and statistics (count, mean, M2) merged by Chan's formula.
#pragma once

#include "hipgn/kernels/primitives/target.hpp"
#include "hipgn/platform.hpp"

namespace hipgn::kernels {

__device__ __forceinline__ float warp_sum(float v) {
#pragma unroll
  for (int o = kWarpSize / 2; o > 0; o >>= 1) v += __shfl_xor(v, o, kWarpSize);
  return v;
}

// The sum over the workgroup, returned to every thread. kBlock is the largest workgroup the
// kernel is launched with; the launch may use fewer whole wavefronts (blockDim.x). Safe to
// call repeatedly: the first barrier keeps a new call's writes behind the previous call's reads.
template <int kBlock>
__device__ __forceinline__ float block_sum(float v) {
  constexpr int kWarps = kBlock / kWarpSize;
  static_assert(kBlock % kWarpSize == 0 && kWarps <= kWarpSize, "block must be whole wavefronts");
  __shared__ float partial[kWarps];
  __shared__ float total;
  v = warp_sum(v);
  const int lane = threadIdx.x % kWarpSize, warp = threadIdx.x / kWarpSize;
  const int warps = int(blockDim.x) / kWarpSize;
  __syncthreads();
  if (lane == 0) partial[warp] = v;
  __syncthreads();
  if (warp == 0) {
    float t = lane < warps ? partial[lane] : 0.f;
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
  const int warps = int(blockDim.x) / kWarpSize;
  __syncthreads();
  if (lane == 0)
#pragma unroll
    for (int k = 0; k < K; ++k) partial[k][warp] = v[k];
  __syncthreads();
  if (warp == 0) {
#pragma unroll
    for (int k = 0; k < K; ++k) {
      float t = lane < warps ? partial[k][lane] : 0.f;
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
  // counts are integers held exactly: the fast reciprocal's 2^-23 error is all the division
  // adds, against ten instructions for an IEEE one in every merge of every reduction
  const float d = b.mean - a.mean, wb = __fdividef(b.n, n);
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
  const int warps = int(blockDim.x) / kWarpSize;
  __syncthreads();
  if (lane == 0) partial[warp] = s;
  __syncthreads();
  if (warp == 0) {
    Stats t = lane < warps ? partial[lane] : Stats{0.f, 0.f, 0.f};
    t = warp_merge(t);
    if (lane == 0) total = t;
  }
  __syncthreads();
  return total;
}

}  // namespace hipgn::kernels
