// GroupNorm forward kernels, one template per family; a generated instance picks a family and
// fills a Traits struct (types, layout, activation, block size, vector size, per-thread work).
// The group layout (rows x cols) and vector access are described in common.hpp.
#pragma once

#include <cstdint>

#include "hipgn/kernels/common.hpp"
#include "hipgn/params.hpp"

namespace hipgn::kernels {

// y = act(gamma_c * (x - mean) * rstd + beta_c) for one vector, written to y + offset.
template <typename Traits>
__device__ __forceinline__ void normalize_store(const Params& p, const float (&v)[Traits::kVectorSize],
                                                std::int64_t offset, std::int64_t channel,
                                                float mean, float rstd) {
  using G = typename Traits::GammaType;
  constexpr int V = Traits::kVectorSize;
  const G* gamma = static_cast<const G*>(p.gamma);
  const G* beta = static_cast<const G*>(p.beta);
  float out[V];
#pragma unroll
  for (int i = 0; i < V; ++i) {
    const std::int64_t c = Traits::kLayout == Layout::channels_first ? channel : channel + i;
    const float scale = (gamma ? to_float(gamma[c]) : 1.f) * rstd;
    const float shift = beta ? to_float(beta[c]) : 0.f;
    out[i] = activate<Traits::kActivation>((v[i] - mean) * scale + shift, p.swish_beta);
  }
  store_vec<V>(static_cast<typename Traits::XType*>(p.y) + offset, out);
}

// Family onchip: one workgroup per group, the whole group in registers (kPerThread vectors a
// thread). x is read once; mean and variance are two exact passes over registers.
template <typename Traits>
__global__ void __launch_bounds__(Traits::kBlockSize) fwd_onchip_kernel(Params p) {
  constexpr int B = Traits::kBlockSize, V = Traits::kVectorSize, E = Traits::kPerThread;
  const std::int64_t group = blockIdx.x;
  const GroupView<Traits> view(p, group);
  const auto* x = static_cast<const typename Traits::XType*>(p.x);
  // Only the values stay in registers; offsets are recomputed for the store (a multiply-high
  // each), which keeps the 1024-thread configurations within 64 registers.
  float v[E][V];
  float sum = 0.f;
#pragma unroll
  for (int e = 0; e < E; ++e) {
    const std::int64_t q = threadIdx.x + std::int64_t(e) * B;
    if (q < p.vectors) {
      std::int64_t offset, channel;
      view.locate(p, q, offset, channel);
      load_vec<V>(x + offset, v[e]);
#pragma unroll
      for (int i = 0; i < V; ++i) sum += v[e][i];
    }
  }
  const float count = float(p.vectors * V);
  const float mean = block_sum<B>(sum) / count;
  float sq = 0.f;
#pragma unroll
  for (int e = 0; e < E; ++e) {
    if (threadIdx.x + std::int64_t(e) * B < p.vectors) {
#pragma unroll
      for (int i = 0; i < V; ++i) sq += (v[e][i] - mean) * (v[e][i] - mean);
    }
  }
  const float rstd = rsqrtf(block_sum<B>(sq) / count + p.eps);
  if (threadIdx.x == 0) save_stats(p, group, mean, rstd);
#pragma unroll
  for (int e = 0; e < E; ++e) {
    const std::int64_t q = threadIdx.x + std::int64_t(e) * B;
    if (q < p.vectors) {
      std::int64_t offset, channel;
      view.locate(p, q, offset, channel);
      normalize_store<Traits>(p, v[e], offset, channel, mean, rstd);
    }
  }
}

// Statistics of vectors [first, end) of a group, kPerThread vectors in flight per thread.
// Vectors q0, q0 + B, ... (kPerThread of them, those below end) into registers: all loads
// issued before any use, so they are in flight together.
template <typename Traits>
__device__ __forceinline__ void load_batch(const Params& p, const GroupView<Traits>& view, std::int64_t q0,
                                           std::int64_t end, float (&v)[Traits::kPerThread][Traits::kVectorSize]) {
  constexpr int B = Traits::kBlockSize, V = Traits::kVectorSize, U = Traits::kPerThread;
  const auto* x = static_cast<const typename Traits::XType*>(p.x);
#pragma unroll
  for (int u = 0; u < U; ++u) {
    const std::int64_t q = q0 + std::int64_t(u) * B;
    if (q < end) {
      std::int64_t offset, channel;
      view.locate(p, q, offset, channel);
      load_vec<V>(x + offset, v[u]);
    }
  }
}

template <typename Traits>
__device__ __forceinline__ Stats accumulate(const Params& p, const GroupView<Traits>& view,
                                            std::int64_t first, std::int64_t end) {
  constexpr int B = Traits::kBlockSize, V = Traits::kVectorSize, U = Traits::kPerThread;
  Stats s{0.f, 0.f, 0.f};
  for (std::int64_t q0 = first + threadIdx.x; q0 < end; q0 += std::int64_t(B) * U) {
    float v[U][V];
    load_batch<Traits>(p, view, q0, end, v);
#pragma unroll
    for (int u = 0; u < U; ++u)
      if (q0 + std::int64_t(u) * B < end) s = merge(s, vector_stats<V>(v[u]));
  }
  return s;
}

// Normalize vectors [first, end) of a group, reading x again.
template <typename Traits>
__device__ __forceinline__ void normalize_range(const Params& p, const GroupView<Traits>& view,
                                                std::int64_t first, std::int64_t end, float mean,
                                                float rstd) {
  constexpr int B = Traits::kBlockSize, V = Traits::kVectorSize, U = Traits::kPerThread;
  for (std::int64_t q0 = first + threadIdx.x; q0 < end; q0 += std::int64_t(B) * U) {
    float v[U][V];
    load_batch<Traits>(p, view, q0, end, v);
#pragma unroll
    for (int u = 0; u < U; ++u) {
      const std::int64_t q = q0 + std::int64_t(u) * B;
      if (q < end) {
        std::int64_t offset, channel;
        view.locate(p, q, offset, channel);
        normalize_store<Traits>(p, v[u], offset, channel, mean, rstd);
      }
    }
  }
}

// Family looped: one workgroup per group of any size, uneven groups too (instantiated with
// UnevenGroups<Traits>, launched for them alone); x read twice (statistics, then output).
template <typename Traits>
__global__ void __launch_bounds__(Traits::kBlockSize) fwd_looped_kernel(Params p) {
  const std::int64_t group = blockIdx.x;
  const GroupView<Traits> view(p, group);
  const Stats s = block_merge<Traits::kBlockSize>(accumulate<Traits>(p, view, 0, view.vectors(p)));
  const float rstd = rsqrtf(s.m2 / s.n + p.eps);
  if (threadIdx.x == 0) save_stats(p, group, s.mean, rstd);
  normalize_range<Traits>(p, view, 0, view.vectors(p), s.mean, rstd);
}

// Family split, pass 1: workgroup (group, slice) writes the statistics of its slice of
// kBlockSize * kPerThread vectors to the workspace. Group after group (the slice fastest), so
// that the groups read last are the last ones, where pass 2 starts.
template <typename Traits>
__global__ void __launch_bounds__(Traits::kBlockSize) fwd_split_stats_kernel(Params p) {
  constexpr std::int64_t kChunk = std::int64_t(Traits::kBlockSize) * Traits::kPerThread;
  const std::uint32_t slices = std::uint32_t(p.slices);
  const std::int64_t group = blockIdx.x / slices, slice = blockIdx.x - group * slices;
  const GroupView<Traits> view(p, group);
  const std::int64_t first = slice * kChunk, end = first + kChunk < p.vectors ? first + kChunk : p.vectors;
  const Stats s = block_merge<Traits::kBlockSize>(accumulate<Traits>(p, view, first, end));
  if (threadIdx.x == 0) {
    float* w = p.workspace + (group * p.slices + slice) * 3;
    w[0] = s.n;
    w[1] = s.mean;
    w[2] = s.m2;
  }
}

// Family split, pass 2: every workgroup of a group merges the group's partials (the same
// order in each, so all agree to the bit) and normalizes its slice. In reverse order: the
// groups pass 1 read last come first, while their x is in L2.
template <typename Traits>
__global__ void __launch_bounds__(Traits::kBlockSize) fwd_split_apply_kernel(Params p) {
  constexpr std::int64_t kChunk = std::int64_t(Traits::kBlockSize) * Traits::kPerThread;
  const std::uint32_t slices = std::uint32_t(p.slices), b = gridDim.x - 1 - blockIdx.x;
  const std::int64_t group = b / slices, slice = b - group * slices;
  const GroupView<Traits> view(p, group);
  Stats s{0.f, 0.f, 0.f};
  for (std::int64_t i = threadIdx.x; i < p.slices; i += Traits::kBlockSize) {
    const float* w = p.workspace + (group * p.slices + i) * 3;
    s = merge(s, Stats{w[0], w[1], w[2]});
  }
  s = block_merge<Traits::kBlockSize>(s);
  const float rstd = rsqrtf(s.m2 / s.n + p.eps);
  if (slice == 0 && threadIdx.x == 0) save_stats(p, group, s.mean, rstd);
  const std::int64_t first = slice * kChunk, end = first + kChunk < p.vectors ? first + kChunk : p.vectors;
  normalize_range<Traits>(p, view, first, end, s.mean, rstd);
}

template <typename Traits, Family F>
struct FwdLauncher;

template <typename Traits>
struct FwdLauncher<Traits, Family::onchip> {
  static hipError_t launch(const Params& p, hipStream_t stream) {
    fwd_onchip_kernel<Traits><<<dim3(p.num_groups), dim3(Traits::kBlockSize), 0, stream>>>(p);
    return hipGetLastError();
  }
};

template <typename Traits>
struct FwdLauncher<Traits, Family::looped> {
  static hipError_t launch(const Params& p, hipStream_t stream) {
    // uneven groups take a kernel of their own: the even problems' keeps its registers
    // (bench/NOTES.md, "Uneven groups")
    if (p.last_channels != p.channels_per_group)
      fwd_looped_kernel<UnevenGroups<Traits>><<<dim3(p.num_groups), dim3(Traits::kBlockSize), 0, stream>>>(p);
    else
      fwd_looped_kernel<Traits><<<dim3(p.num_groups), dim3(Traits::kBlockSize), 0, stream>>>(p);
    return hipGetLastError();
  }
};

template <typename Traits>
struct FwdLauncher<Traits, Family::split> {
  static hipError_t launch(const Params& p, hipStream_t stream) {
    // one-dimensional (at most 2^31 - 1 workgroups: Instance::supports)
    const dim3 grid(unsigned(std::int64_t(p.num_groups) * p.slices));
    fwd_split_stats_kernel<Traits><<<grid, dim3(Traits::kBlockSize), 0, stream>>>(p);
    const hipError_t e = hipGetLastError();
    if (e != hipSuccess) return e;
    fwd_split_apply_kernel<Traits><<<grid, dim3(Traits::kBlockSize), 0, stream>>>(p);
    return hipGetLastError();
  }
};

}  // namespace hipgn::kernels
