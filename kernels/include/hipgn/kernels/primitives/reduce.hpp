// fp32 reductions across a wavefront and a workgroup, in a fixed order (every run gives the
// same bits): sums, and statistics (count, mean, M2) merged by Chan's formula.
#pragma once

#include "hipgn/kernels/primitives/target.hpp"
#include "hipgn/platform.hpp"

namespace hipgn::kernels {

// The sum over each kWidth-lane set of a wavefront (kWidth a power of two), to each of its lanes.
template <int kWidth = kWarpSize>
__device__ __forceinline__ float warp_sum(float v) {
#pragma unroll
  for (int o = kWidth / 2; o > 0; o >>= 1) v += __shfl_xor(v, o, kWarpSize);
  return v;
}

// Sums over the workgroup, K at once, returned to every thread. kBlock is the largest workgroup
// the kernel is launched with; the launch may use fewer whole wavefronts (blockDim.x). After the
// second barrier each wavefront adds the wavefronts' partials itself, over kBlock / kWarpSize
// lanes (lanes past the launch's wavefronts hold zero), in the same order as every other: no
// third barrier for one wavefront's totals to be read back, and log2 of the wavefronts' count
// in shuffles, not of the wavefront's width. The bits are those of a full-width sum, whose
// extra steps add zeros. With kEveryWavefront false (by default past 8 sums), one wavefront
// folds them and a third barrier hands them out, as every call did before: every wavefront
// holding the sums and their shuffles made bwd_onchip_columns' 512 x 8 x 4 (16 sums, 64
// registers) spill 4 bytes more, and the looped backward's fp32 channels-last 256 x 2 (4 sums,
// 40 registers) 8-16 bytes. Safe to call repeatedly: the first barrier keeps a new call's
// writes behind the previous call's reads.
template <int kBlock, int K, bool kEveryWavefront = (K <= 8), bool kWhole = false>
__device__ __forceinline__ void block_sum_array(float (&v)[K]) {
  constexpr int kWarps = kBlock / kWarpSize;
  static_assert(kBlock % kWarpSize == 0 && kWarps <= kWarpSize, "block must be whole wavefronts");
  __shared__ float partial[K][kWarps];
#pragma unroll
  for (int k = 0; k < K; ++k) v[k] = warp_sum(v[k]);
  const int lane = threadIdx.x % kWarpSize, warp = threadIdx.x / kWarpSize;
  const int warps = kWhole ? kWarps : int(blockDim.x) / kWarpSize;
  __syncthreads();
  if (lane == 0)
#pragma unroll
    for (int k = 0; k < K; ++k) partial[k][warp] = v[k];
  __syncthreads();
  if constexpr (kEveryWavefront) {
    const int w = lane % kWarps;  // every lane: each kWarps-lane set adds the same values to the same bits
#pragma unroll
    for (int k = 0; k < K; ++k) v[k] = warp_sum<kWarps>(w < warps ? partial[k][w] : 0.f);
  } else {
    __shared__ float total[K];
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
}

// K sums over the workgroup at once, each to every thread, where K is a power of two up to the
// wavefront's width: a transposing butterfly. At each of the first log2 K shuffle steps a lane
// keeps half of the values it holds (the upper half where its lane bit of that step is set) and
// adds its partner's of that half, so that lane l ends with channel l / (kWarpSize / K)'s sum over
// K lanes, and the remaining steps add those over the wavefront: K - 1 + log2(kWarpSize / K)
// shuffles where block_sum_array makes K log2(kWarpSize) (9 against 40 for 8 sums). Every lane
// of a channel gets the same bits (each step adds a pair in both orders); the wavefronts'
// partials are added as block_sum_array adds them. kBlock as block_sum_array's; safe to call
// repeatedly the same way. Written for the channels-last onchip forward's columns, whose two
// reductions of V sums each are on the chain of a kernel bound by its instructions (with
// group_sums: 1,214 -> 1,031 executed a wavefront; bench/NOTES.md, "Columns in parts").
template <int kBlock, int K>
__device__ __forceinline__ void block_sum_transposed(float (&v)[K]) {
  constexpr int kWarps = kBlock / kWarpSize, kLanes = kWarpSize / K;  // lanes a channel, in the end
  static_assert(K > 0 && (K & (K - 1)) == 0 && K <= kWarpSize, "a power of two, at most the wavefront");
  static_assert(kBlock % kWarpSize == 0, "block must be whole wavefronts");
  __shared__ float partial[K][kWarps];
  const int lane = threadIdx.x % kWarpSize, warp = threadIdx.x / kWarpSize;
  const int warps = int(blockDim.x) / kWarpSize;
#pragma unroll
  for (int m = K; m > 1; m >>= 1) {  // m values live in v[0, m)
    const int o = kLanes * m / 2;
    const bool upper = (lane & o) != 0;
#pragma unroll
    for (int j = 0; j < m / 2; ++j) {
      const float send = upper ? v[j] : v[j + m / 2], keep = upper ? v[j + m / 2] : v[j];
      v[j] = keep + __shfl_xor(send, o, kWarpSize);
    }
  }
#pragma unroll
  for (int o = kLanes / 2; o > 0; o >>= 1) v[0] += __shfl_xor(v[0], o, kWarpSize);
  __syncthreads();
  if (lane % kLanes == 0) partial[lane / kLanes][warp] = v[0];
  __syncthreads();
  const int w = lane % kWarps;  // the wavefronts' partials as block_sum_array adds them
#pragma unroll
  for (int k = 0; k < K; ++k) v[k] = warp_sum<kWarps>(w < warps ? partial[k][w] : 0.f);
}

// Each of V per-channel values replaced by its group's total, the groups runs of cg channels (a
// power of two dividing V): a butterfly over the channel index's low log2(cg) bits, every
// channel of a group the same bits (each step adds a pair in both orders). log2(cg) x V adds,
// where comparing every pair of channels took V x V selects and adds.
template <int V>
__device__ __forceinline__ void group_sums(float (&a)[V], int cg) {
#pragma unroll
  for (int w = 1; w < V; w <<= 1) {
    if (w < cg) {
      float t[V];
#pragma unroll
      for (int i = 0; i < V; ++i) t[i] = a[i] + a[i ^ w];
#pragma unroll
      for (int i = 0; i < V; ++i) a[i] = t[i];
    }
  }
}

// One sum over the workgroup, to every thread. In workgroups of up to 128 threads, sixteen
// partials, each over kBlock / 16 lanes, meet in shared memory and every thread adds all sixteen
// (four 16-byte reads, a fixed tree): log2(kBlock / 16) shuffles on the chain where
// block_sum_array makes log2 of the wavefront's width and again of the wavefronts' count (128
// threads: 3 dependent shuffle steps, not 5 + 2). The 128-thread onchip forwards are the small
// problems', one workgroup a compute unit and their time one chain from x's load to y's store:
// 0.96-0.98x (tiny, hw1_512, det_7x11x256, instance_norm_32x64; H200 A/B). Larger workgroups keep
// block_sum_array: there the extra reads and adds (~14 instructions a wavefront a sum) cost more
// than the shuffles save, 256 x 8 x 2 0.98-1.02x and 256 / 512 threads of 4-8 slots 1.06-1.25x
// (bench/NOTES.md, "Sixteen partials"). Every thread adds the same values in the same order: the
// same bits everywhere. Partials of wavefronts the launch lacks (blockDim below kBlock) are zeros;
// with kWhole the kernel is always launched with kBlock threads, and the launch's shape is not
// read (a constant-bank line that a small kernel's chain waited on: bench/NOTES.md, "The
// parameters' lines, late").
template <int kBlock, bool kWhole = false>
__device__ __forceinline__ float block_sum(float v) {
  constexpr int kParts = 16, kLanes = kBlock / kParts;  // partials; lanes a partial
  if constexpr (kBlock > 128 || kLanes < 1) {
    float one[1] = {v};
    block_sum_array<kBlock, 1, true, kWhole>(one);
    return one[0];
  } else {
    __shared__ float4 partial[kParts / 4];
    float* slot = reinterpret_cast<float*>(partial);
    v = warp_sum<kLanes>(v);
    const int t = threadIdx.x, present = kWhole ? kParts : int(blockDim.x) / kLanes;
    __syncthreads();  // a previous call's reads are done
    if (t % kLanes == 0) slot[t / kLanes] = v;
    if (t >= present && t < kParts) slot[t] = 0.f;
    __syncthreads();
    float4 a = partial[0];
#pragma unroll
    for (int i = 1; i < kParts / 4; ++i) {
      const float4 b = partial[i];
      a.x += b.x, a.y += b.y, a.z += b.z, a.w += b.w;
    }
    return (a.x + a.y) + (a.z + a.w);
  }
}

// The sum of N values held in registers by halves (N a power of two): log2 N dependent adds,
// not N - 1.
template <int N>
__device__ __forceinline__ float tree_sum(float (&v)[N]) {
  static_assert(N > 0 && (N & (N - 1)) == 0, "a power of two");
#pragma unroll
  for (int w = N / 2; w > 0; w /= 2)
#pragma unroll
    for (int i = 0; i < w; ++i) v[i] += v[i + w];
  return v[0];
}

// A thread's E vectors of V values in registers: their sum as V chains over the vectors, then a
// tree over the V (E - 1 + log2 V dependent adds, not E x V: bench/NOTES.md, "The resident
// forward's chain"), and the same for the squared deviations from m of the first `count`
// vectors.
template <int E, int V>
__device__ __forceinline__ float register_sum(const float (&v)[E][V]) {
  float acc[V];
#pragma unroll
  for (int i = 0; i < V; ++i) {
    acc[i] = v[0][i];
#pragma unroll
    for (int e = 1; e < E; ++e) acc[i] += v[e][i];
  }
  return tree_sum(acc);
}
template <int E, int V>
__device__ __forceinline__ float register_squares(const float (&v)[E][V], int count, float m) {
  float acc[V];
#pragma unroll
  for (int i = 0; i < V; ++i) {
    acc[i] = 0.f;
#pragma unroll
    for (int e = 0; e < E; ++e)
      if (e < count) acc[i] = fmaf(v[e][i] - m, v[e][i] - m, acc[i]);
  }
  return tree_sum(acc);
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

// The statistics of the lane `o` lanes across (lane ^ o).
__device__ __forceinline__ Stats shfl_xor(const Stats& s, int o) {
  return {__shfl_xor(s.n, o, kWarpSize), __shfl_xor(s.mean, o, kWarpSize), __shfl_xor(s.m2, o, kWarpSize)};
}

// The merge over each kWidth-lane set of a wavefront (kWidth a power of two); lane 0 of a set
// holds the set's merge in lane order (other lanes merge in other orders: broadcast lane 0's).
template <int kWidth = kWarpSize>
__device__ __forceinline__ Stats warp_merge(Stats s) {
#pragma unroll
  for (int o = kWidth / 2; o > 0; o >>= 1) s = merge(s, shfl_xor(s, o));
  return s;
}

// Lane 0's statistics, to every lane of the wavefront.
__device__ __forceinline__ Stats lane0(Stats s) {
  return {__shfl(s.n, 0, kWarpSize), __shfl(s.mean, 0, kWarpSize), __shfl(s.m2, 0, kWarpSize)};
}

// The merged statistics of the workgroup, returned to every thread: each wavefront merges the
// wavefronts' partials itself, as block_sum adds them (merging an empty set is exact, so the
// bits are those of a full-width merge by one wavefront), and broadcasts its lane 0's, which
// every wavefront and every run gets to the bit.
template <int kBlock>
__device__ __forceinline__ Stats block_merge(Stats s) {
  constexpr int kWarps = kBlock / kWarpSize;
  __shared__ Stats partial[kWarps];
  s = warp_merge(s);
  const int lane = threadIdx.x % kWarpSize, warp = threadIdx.x / kWarpSize;
  const int warps = int(blockDim.x) / kWarpSize;
  __syncthreads();
  if (lane == 0) partial[warp] = s;
  __syncthreads();
  return lane0(warp_merge<kWarps>(lane < warps ? partial[lane % kWarps] : Stats{0.f, 0.f, 0.f}));
}

}  // namespace hipgn::kernels
