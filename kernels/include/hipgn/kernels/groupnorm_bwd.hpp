// GroupNorm backward kernels: dx (op dx), dgamma/dbeta (op dgb), or all three (op bwd).
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
//
// Channels-first, when the spatial size is not a multiple of the vector or the tensors start off
// a 16-byte boundary (Params::span), a channel row and a group are peeled runs (common.hpp:
// Peel): their bodies still move 16 bytes an access, a vector may cross a row end, and an
// element's channel comes from a cursor (SpatialCursor), not a division per element.
#pragma once

#include <cstdint>

#include "hipgn/kernels/common.hpp"
#include "hipgn/params.hpp"

namespace hipgn::kernels {

template <typename Traits>
struct Affine {
  float gamma, beta;
  __device__ __forceinline__ Affine(const Params& p, std::int64_t c) {
    using G = typename Traits::GammaType;
    gamma = p.gamma ? to_float(static_cast<const G*>(p.gamma)[c]) : 1.f;
    beta = p.beta ? to_float(static_cast<const G*>(p.beta)[c]) : 0.f;
  }
};

// xhat in x, dy' in dy, for one element of channel a.
template <typename Traits>
__device__ __forceinline__ void backward_terms(const Params& p, const Affine<Traits>& a, float mean, float rstd,
                                               float& x, float& dy) {
  x = (x - mean) * rstd;
  if constexpr (Traits::kActivation != Activation::none)
    dy *= activation_grad<Traits::kActivation>(a.gamma * x + a.beta, p.swish_beta);
}

template <typename Traits>
inline constexpr bool kWritesDx = Traits::kOp == Op::dx || Traits::kOp == Op::bwd;

// Whether an instance has the peeled channels-first paths (a scalar instance never peels:
// Instance::supports), and whether this launch takes them (Params::span).
template <typename Traits>
inline constexpr bool kPeels = Traits::kLayout == Layout::channels_first && Traits::kVectorSize > 1;
template <typename Traits>
__device__ __forceinline__ bool spans(const Params& p) {
  if constexpr (kPeels<Traits>) return p.span != 0;
  else return false;
}

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
// A wavefront's lanes' shares of channel c's sums, added and stored by its first lane.
__device__ __forceinline__ void store_warp_channel_sums(const Params& p, std::int64_t sample, std::int64_t c, int lane,
                                                        float s1, float s2) {
  s1 = warp_sum(s1);
  s2 = warp_sum(s2);
  if (lane == 0) store_channel_sums(p, sample, c, s1, s2);
}

// Channel row `row` of a channels-first group read as a peeled run (common.hpp: Peel; with no
// head or tail when the spatial size is a multiple of the vector and x is aligned): body vectors
// [first, end) by lanes lane, lane + stride, ..., and the head and tail elements where asked.
// Adds this thread's shares to s1 and s2.
template <typename Traits>
__device__ __forceinline__ void cf_row_share(const Params& p, const GroupView<Traits>& view, std::int64_t row,
                                             float mean, float rstd, std::uint32_t lane, std::uint32_t stride,
                                             std::int64_t first, std::int64_t end, bool head, bool tail, float& s1,
                                             float& s2) {
  constexpr int V = Traits::kVectorSize;
  using X = typename Traits::XType;
  const auto* xs = static_cast<const X*>(p.x);
  const auto* dys = static_cast<const X*>(p.dy);
  const std::int64_t start = view.base + row * p.spatial_size;
  const Peel<V> run(p.phase, start, p.spatial_size);
  const std::int64_t body = start + run.head;
  const Affine<Traits> a(p, view.channel0 + row);
  auto add = [&](float x, float dy) {
    backward_terms<Traits>(p, a, mean, rstd, x, dy);
    s1 += dy;
    s2 += dy * x;
  };
  if (head)
    for (std::int64_t j = lane; j < run.head; j += stride) add(to_float(xs[start + j]), to_float(dys[start + j]));
  if (tail)
    for (std::int64_t j = body + run.body * V + lane; j < start + p.spatial_size; j += stride)
      add(to_float(xs[j]), to_float(dys[j]));
  if (end > run.body) end = run.body;
  for (std::int64_t k = first + lane; k < end; k += stride) {
    float x[V], dy[V];
    load_vec<V>(xs + body + k * V, x);
    load_vec<V>(dys + body + k * V, dy);
#pragma unroll
    for (int i = 0; i < V; ++i) add(x[i], dy[i]);
  }
}

// One unit of a group's channels, summed over the workgroup: channels-first, the channel row
// u (one channel); channels-last, the column of vectors u (kVectorSize consecutive channels).
// Returns S1, S2 of each of the unit's channels (kUnit of them) to every thread.
template <typename Traits>
struct Unit {
  static constexpr bool kChannelsFirst = Traits::kLayout == Layout::channels_first;
  static constexpr int V = Traits::kVectorSize, kUnit = kChannelsFirst ? 1 : V;
  float s1[kUnit], s2[kUnit];

  __device__ __forceinline__ Unit(const Params& p, const GroupView<Traits>& view, std::int64_t u, float mean,
                                  float rstd) {
#pragma unroll
    for (int i = 0; i < kUnit; ++i) s1[i] = s2[i] = 0.f;
    if constexpr (kChannelsFirst) {  // channel row u, a peeled run whatever the spatial size
      cf_row_share<Traits>(p, view, u, mean, rstd, threadIdx.x, Traits::kBlockSize, 0, p.spatial_size, true, true,
                           s1[0], s2[0]);
    } else {  // vector column u of every row
      const auto* xs = static_cast<const typename Traits::XType*>(p.x);
      const auto* dys = static_cast<const typename Traits::XType*>(p.dy);
      const FastDivmod& cols = view.per_row(p);
      const std::int64_t per_row = std::int64_t(cols.divisor);
      const std::int64_t count = std::int64_t(cols.div(std::uint64_t(view.vectors(p))));
      for (std::int64_t k = threadIdx.x; k < count; k += Traits::kBlockSize) {
        std::int64_t offset, channel;
        view.locate(p, k * per_row + u, offset, channel);
        float x[V], dy[V];
        load_vec<V>(xs + offset, x);
        load_vec<V>(dys + offset, dy);
#pragma unroll
        for (int i = 0; i < V; ++i) {
          const Affine<Traits> a(p, channel + i);
          backward_terms<Traits>(p, a, mean, rstd, x[i], dy[i]);
          s1[i] += dy[i];
          s2[i] += dy[i] * x[i];
        }
      }
    }
    reduce();
  }
  // the workgroup's sums, to every thread
  __device__ __forceinline__ void reduce() {
    float both[2 * kUnit];
#pragma unroll
    for (int i = 0; i < kUnit; ++i) both[i] = s1[i], both[kUnit + i] = s2[i];
    block_sum_array<Traits::kBlockSize, 2 * kUnit>(both);
#pragma unroll
    for (int i = 0; i < kUnit; ++i) s1[i] = both[i], s2[i] = both[kUnit + i];
  }
  // the first channel of unit u
  static __device__ __forceinline__ std::int64_t first_channel(std::int64_t channel0, std::int64_t u) {
    return channel0 + (kChannelsFirst ? u : u * V);
  }
  static HIPGN_HD std::int64_t count(const Params& p) {
    return kChannelsFirst ? p.channels_per_group : p.channels_per_group / V;
  }
  // the units of one group (the last group of uneven groups has more)
  static __device__ __forceinline__ std::int64_t count(const Params& p, const GroupView<Traits>& view) {
    return kChannelsFirst ? view.channels(p) : view.channels(p) / V;
  }
};

// dx for vectors [first, end) of a group, given A / M and B / M.
template <typename Traits>
__device__ __forceinline__ void write_dx(const Params& p, const GroupView<Traits>& view, std::int64_t first,
                                         std::int64_t end, float mean, float rstd, float a_mean, float b_mean) {
  constexpr int B = Traits::kBlockSize, V = Traits::kVectorSize;
  constexpr bool kChannelsFirst = Traits::kLayout == Layout::channels_first;
  using X = typename Traits::XType;
  const auto* xs = static_cast<const X*>(p.x);
  const auto* dys = static_cast<const X*>(p.dy);
  for (std::int64_t q = first + threadIdx.x; q < end; q += B) {
    std::int64_t offset, channel;
    view.locate(p, q, offset, channel);
    float x[V], dy[V], dx[V];
    load_vec<V>(xs + offset, x);
    load_vec<V>(dys + offset, dy);
#pragma unroll
    for (int i = 0; i < V; ++i) {
      const Affine<Traits> a(p, kChannelsFirst ? channel : channel + i);
      backward_terms<Traits>(p, a, mean, rstd, x[i], dy[i]);
      dx[i] = rstd * (a.gamma * dy[i] - a_mean - x[i] * b_mean);
    }
    store_vec<V>(static_cast<X*>(p.dx) + offset, dx);
  }
}

// The gamma and beta of consecutive elements of a channels-first group, from a cursor: the
// affine parameters change where a vector crosses a row end (span mode).
template <typename Traits>
struct SpanAffine {
  SpatialCursor at;
  Affine<Traits> a;
  std::int64_t channel0;
  __device__ __forceinline__ SpanAffine(const Params& p, std::int64_t channel0_, std::int64_t element)
      : at(p, element), a(p, channel0_ + at.channel), channel0(channel0_) {}
  __device__ __forceinline__ void next(const Params& p) {
    if (at.next(p)) a = Affine<Traits>(p, channel0 + at.channel);
  }
};

// dx of a channels-first group in span mode: body vectors [first, end) of the group's peeled
// run, and its head and tail elements where asked, given A / M and B / M.
template <typename Traits>
__device__ __forceinline__ void write_dx_span(const Params& p, const GroupView<Traits>& view, std::int64_t first,
                                              std::int64_t end, bool head, bool tail, float mean, float rstd,
                                              float a_mean, float b_mean) {
  constexpr int B = Traits::kBlockSize, V = Traits::kVectorSize;
  using X = typename Traits::XType;
  const auto* xs = static_cast<const X*>(p.x);
  const auto* dys = static_cast<const X*>(p.dy);
  X* dxs = static_cast<X*>(p.dx);
  const Peel<V> run(p.phase, view.base, view.elements(p));
  const std::int64_t t = threadIdx.x, last = end < run.body ? end : run.body;
  auto one = [&](std::int64_t j) {  // group-relative element j
    const std::int64_t o = view.base + j;
    const SpanAffine<Traits> s(p, view.channel0, j);
    float x = to_float(xs[o]), dy = to_float(dys[o]);
    backward_terms<Traits>(p, s.a, mean, rstd, x, dy);
    dxs[o] = from_float<X>(rstd * (s.a.gamma * dy - a_mean - x * b_mean));
  };
  if (head && t < run.head) one(t);
  if (tail && t < run.tail) one(run.head + run.body * V + t);
  for (std::int64_t q = first + t; q < last; q += B) {
    const std::int64_t j = run.head + q * V;
    float x[V], dy[V], dx[V];
    load_vec<V>(xs + view.base + j, x);
    load_vec<V>(dys + view.base + j, dy);
    SpanAffine<Traits> s(p, view.channel0, j);
#pragma unroll
    for (int i = 0; i < V; ++i) {
      if (i > 0) s.next(p);
      backward_terms<Traits>(p, s.a, mean, rstd, x[i], dy[i]);
      dx[i] = rstd * (s.a.gamma * dy[i] - a_mean - x[i] * b_mean);
    }
    store_vec<V>(dxs + view.base + j, dx);
  }
}

// Family looped: one workgroup per group of any size, uneven groups too (instantiated with
// UnevenGroups<Traits>, launched for them alone). Pass 1 sums unit by unit (and keeps A and
// B); pass 2 writes dx, reading x and dy again.
template <typename Traits>
__global__ void __launch_bounds__(Traits::kBlockSize) bwd_looped_kernel(Params p) {
  using U = Unit<Traits>;
  const std::int64_t group = blockIdx.x, sample = group_sample(p, group);
  const GroupView<Traits> view(p, group);
  const float mean = p.mean[group], rstd = p.rstd[group];
  const bool sums = wants_channel_sums<Traits>(p);
  float a = 0.f, b = 0.f;
  for (std::int64_t u = 0; u < U::count(p, view); ++u) {
    const U unit(p, view, u, mean, rstd);
#pragma unroll
    for (int i = 0; i < U::kUnit; ++i) {
      const std::int64_t c = U::first_channel(view.channel0, u) + i;
      const float g = Affine<Traits>(p, c).gamma;
      a += g * unit.s1[i];
      b += g * unit.s2[i];
      if (sums && threadIdx.x == 0) store_channel_sums(p, sample, c, unit.s1[i], unit.s2[i]);
    }
  }
  if constexpr (kWritesDx<Traits>) {
    const float m = float(view.elements(p));
    if (spans<Traits>(p))
      write_dx_span<Traits>(p, view, 0, view.vectors(p), true, true, mean, rstd, a / m, b / m);
    else
      write_dx<Traits>(p, view, 0, view.vectors(p), mean, rstd, a / m, b / m);
  }
}

// Family onchip, channels-first span mode: the group's peeled run held in registers (body
// vectors, and a head and a tail element a thread at most), the per-channel sums staged one
// slot per element in dynamic shared memory (2 M floats, M <= kBwdStagedSlots: Instance::
// supports; the launch asks for it): channel c's are the contiguous slots c*HW ... (c+1)*HW - 1,
// added up a wavefront per channel.
template <typename Traits>
__device__ __forceinline__ void bwd_onchip_span(const Params& p, const GroupView<Traits>& view, std::int64_t sample,
                                                float mean, float rstd, float* s1, float* s2) {
  constexpr int B = Traits::kBlockSize, V = Traits::kVectorSize, E = Traits::kPerThread;
  using X = typename Traits::XType;
  const auto* xs = static_cast<const X*>(p.x);
  const auto* dys = static_cast<const X*>(p.dy);
  const Peel<V> run(p.phase, view.base, p.group_elements);
  const std::int64_t t = threadIdx.x, tail0 = run.head + run.body * V;
  // the head (k = 0) and tail (k = 1) element this thread holds, if any: group-relative index
  const std::int64_t edge[2] = {t < run.head ? t : -1, t < run.tail ? tail0 + t : -1};
  float x[E][V], dy[E][V], xe[2] = {0.f, 0.f}, dye[2] = {0.f, 0.f};
  float ab[2] = {0.f, 0.f};
#pragma unroll
  for (int e = 0; e < E; ++e) {
    const std::int64_t q = t + std::int64_t(e) * B;
    if (q >= run.body) continue;
    const std::int64_t j = run.head + q * V;
    load_vec<V>(xs + view.base + j, x[e]);
    load_vec<V>(dys + view.base + j, dy[e]);
    SpanAffine<Traits> s(p, view.channel0, j);
#pragma unroll
    for (int i = 0; i < V; ++i) {
      if (i > 0) s.next(p);
      backward_terms<Traits>(p, s.a, mean, rstd, x[e][i], dy[e][i]);
      ab[0] += s.a.gamma * dy[e][i];
      ab[1] += s.a.gamma * dy[e][i] * x[e][i];
    }
  }
#pragma unroll
  for (int k = 0; k < 2; ++k) {
    if (edge[k] < 0) continue;
    const SpanAffine<Traits> s(p, view.channel0, edge[k]);
    xe[k] = to_float(xs[view.base + edge[k]]);
    dye[k] = to_float(dys[view.base + edge[k]]);
    backward_terms<Traits>(p, s.a, mean, rstd, xe[k], dye[k]);
    ab[0] += s.a.gamma * dye[k];
    ab[1] += s.a.gamma * dye[k] * xe[k];
  }
  if (wants_channel_sums<Traits>(p)) {
#pragma unroll
    for (int e = 0; e < E; ++e) {
      const std::int64_t q = t + std::int64_t(e) * B;
      if (q >= run.body) continue;
      const std::int64_t j = run.head + q * V;
#pragma unroll
      for (int i = 0; i < V; ++i) s1[j + i] = dy[e][i], s2[j + i] = dy[e][i] * x[e][i];
    }
#pragma unroll
    for (int k = 0; k < 2; ++k)
      if (edge[k] >= 0) s1[edge[k]] = dye[k], s2[edge[k]] = dye[k] * xe[k];
    __syncthreads();
    constexpr int kWarps = B / kWarpSize;
    const int lane = threadIdx.x % kWarpSize, warp = threadIdx.x / kWarpSize;
    const std::int64_t hw = p.spatial_size;
    for (std::int64_t c = warp; c < p.channels_per_group; c += kWarps) {
      float t1 = 0.f, t2 = 0.f;
      for (std::int64_t k = lane; k < hw; k += kWarpSize) t1 += s1[c * hw + k], t2 += s2[c * hw + k];
      store_warp_channel_sums(p, sample, view.channel0 + c, lane, t1, t2);
    }
  }
  if constexpr (kWritesDx<Traits>) {
    block_sum_array<B>(ab);
    const float m = float(p.group_elements), a_mean = ab[0] / m, b_mean = ab[1] / m;
    X* dxs = static_cast<X*>(p.dx);
#pragma unroll
    for (int e = 0; e < E; ++e) {
      const std::int64_t q = t + std::int64_t(e) * B;
      if (q >= run.body) continue;
      const std::int64_t j = run.head + q * V;
      SpanAffine<Traits> s(p, view.channel0, j);
      float dx[V];
#pragma unroll
      for (int i = 0; i < V; ++i) {
        if (i > 0) s.next(p);
        dx[i] = rstd * (s.a.gamma * dy[e][i] - a_mean - x[e][i] * b_mean);
      }
      store_vec<V>(dxs + view.base + j, dx);
    }
#pragma unroll
    for (int k = 0; k < 2; ++k) {
      if (edge[k] < 0) continue;
      const float g = SpanAffine<Traits>(p, view.channel0, edge[k]).a.gamma;
      dxs[view.base + edge[k]] = from_float<X>(rstd * (g * dye[k] - a_mean - xe[k] * b_mean));
    }
  }
}

// Family onchip: one workgroup per group, x and dy read once into registers. The per-channel
// sums go through shared memory (one slot per vector channels-first, per element channels-
// last) and are added up a wavefront per channel, in a fixed order.
template <typename Traits>
__global__ void __launch_bounds__(Traits::kBlockSize) bwd_onchip_kernel(Params p) {
  constexpr int B = Traits::kBlockSize, V = Traits::kVectorSize, E = Traits::kPerThread;
  constexpr bool kChannelsFirst = Traits::kLayout == Layout::channels_first;
  constexpr int kSlots = B * E * (kChannelsFirst ? 1 : V);
  static_assert(kSlots <= kBwdStagedSlots, "the per-channel staging must fit in 32 KB of shared memory");
  using X = typename Traits::XType;
  __shared__ float s1[kSlots], s2[kSlots];
  const std::int64_t group = blockIdx.x, sample = group_sample(p, group);
  const GroupView<Traits> view(p, group);
  const float mean = p.mean[group], rstd = p.rstd[group];
  if constexpr (kPeels<Traits>)
    if (p.span) {
      extern __shared__ float staged[];
      bwd_onchip_span<Traits>(p, view, sample, mean, rstd, staged, staged + p.group_elements);
      return;
    }
  float x[E][V], dy[E][V];
  float ab[2] = {0.f, 0.f};
#pragma unroll
  for (int e = 0; e < E; ++e) {
    const std::int64_t q = threadIdx.x + std::int64_t(e) * B;
    if (q < p.vectors) {
      std::int64_t offset, channel;
      view.locate(p, q, offset, channel);
      load_vec<V>(static_cast<const X*>(p.x) + offset, x[e]);
      load_vec<V>(static_cast<const X*>(p.dy) + offset, dy[e]);
#pragma unroll
      for (int i = 0; i < V; ++i) {
        const Affine<Traits> a(p, kChannelsFirst ? channel : channel + i);
        backward_terms<Traits>(p, a, mean, rstd, x[e][i], dy[e][i]);
        ab[0] += a.gamma * dy[e][i];
        ab[1] += a.gamma * dy[e][i] * x[e][i];
      }
    }
  }
  if (wants_channel_sums<Traits>(p)) {
#pragma unroll
    for (int e = 0; e < E; ++e) {
      const std::int64_t q = threadIdx.x + std::int64_t(e) * B;
      if (q >= p.vectors) continue;
      if constexpr (kChannelsFirst) {
        float t1 = 0.f, t2 = 0.f;
#pragma unroll
        for (int i = 0; i < V; ++i) t1 += dy[e][i], t2 += dy[e][i] * x[e][i];
        s1[q] = t1;
        s2[q] = t2;
      } else {
#pragma unroll
        for (int i = 0; i < V; ++i) s1[q * V + i] = dy[e][i], s2[q * V + i] = dy[e][i] * x[e][i];
      }
    }
    __syncthreads();
    constexpr int kWarps = B / kWarpSize;
    const int lane = threadIdx.x % kWarpSize, warp = threadIdx.x / kWarpSize;
    const std::int64_t per_row = std::int64_t(p.vectors_per_row.divisor);
    for (std::int64_t c = warp; c < p.channels_per_group; c += kWarps) {
      float t1 = 0.f, t2 = 0.f;
      if constexpr (kChannelsFirst) {  // channel c is row c: slots c*per_row ...
        for (std::int64_t k = lane; k < per_row; k += kWarpSize) t1 += s1[c * per_row + k], t2 += s2[c * per_row + k];
      } else {  // channel c is element c % V of vector column c / V in every row
        const std::int64_t rows = std::int64_t(p.vectors_per_row.div(std::uint64_t(p.vectors))), col = c / V,
                           i = c % V;
        for (std::int64_t r = lane; r < rows; r += kWarpSize) {
          const std::int64_t slot = (r * per_row + col) * V + i;
          t1 += s1[slot], t2 += s2[slot];
        }
      }
      store_warp_channel_sums(p, sample, view.channel0 + c, lane, t1, t2);
    }
  }
  if constexpr (kWritesDx<Traits>) {
    block_sum_array<B>(ab);
    const float m = float(p.group_elements), a_mean = ab[0] / m, b_mean = ab[1] / m;
#pragma unroll
    for (int e = 0; e < E; ++e) {
      const std::int64_t q = threadIdx.x + std::int64_t(e) * B;
      if (q >= p.vectors) continue;
      std::int64_t offset, channel;
      view.locate(p, q, offset, channel);
      float dx[V];
#pragma unroll
      for (int i = 0; i < V; ++i) {
        const float g = Affine<Traits>(p, kChannelsFirst ? channel : channel + i).gamma;
        dx[i] = rstd * (g * dy[e][i] - a_mean - x[e][i] * b_mean);
      }
      store_vec<V>(static_cast<X*>(p.dx) + offset, dx);
    }
  }
}

// Family split, pass 1, channels-first: the group's channel rows in units of Params::split_rows
// (params.hpp: split_bwd_cf_rows). Units run group after group, so the groups read last are the
// last groups; pass 2 starts from them, while their x and dy are still in L2. Index arithmetic
// in 32 bits: units per group and the grid are below 2^31 (Instance::supports). Short rows and
// long rows are two kernels, each with its own register count: in one, the teams' path held the
// pieces' at 48 registers a thread (five workgroups a compute unit) where alone it takes 32
// (eight), and the pieces' launches are the many small workgroups of latency-bound rows.
//
// Short rows: a team of lanes a row, `rows` rows a workgroup at once, added by a shuffle tree
// within the team (a power of two of at most 32 lanes, so within one wavefront).
template <typename Traits>
__global__ void __launch_bounds__(Traits::kBlockSize) bwd_split_rows_kernel(Params p) {
  const SplitRows& r = p.split_rows;
  const std::uint32_t units = std::uint32_t(r.units), team = std::uint32_t(r.team);
  const std::uint32_t group = blockIdx.x / units, u = blockIdx.x - group * units;
  const std::uint32_t t = threadIdx.x / team, lane = threadIdx.x - t * team;
  const std::int64_t row = std::int64_t(u) * r.rows + t;
  const GroupView<Traits> view(p, group);
  const bool mine = t < r.rows && row < p.channels_per_group;
  float s1 = 0.f, s2 = 0.f;
  if (mine)
    cf_row_share<Traits>(p, view, row, p.mean[group], p.rstd[group], lane, team, 0, p.spatial_size, true, true, s1, s2);
  for (int o = int(team) / 2; o > 0; o >>= 1) {  // every lane shuffles
    s1 += __shfl_xor(s1, o, kWarpSize);
    s2 += __shfl_xor(s2, o, kWarpSize);
  }
  if (mine && lane == 0) store_channel_sums(p, group_sample(p, group), view.channel0 + row, s1, s2);
}

// Long rows: the whole workgroup on one of a row's pieces (a whole row where pieces = 1),
// written to the workspace's [N, C] pairs or, cut, to `partials` for the fold below.
// Channels-last: workgroup (group, unit) sums one column of vectors.
template <typename Traits>
__global__ void __launch_bounds__(Traits::kBlockSize) bwd_split_sums_kernel(Params p) {
  constexpr int B = Traits::kBlockSize;
  if constexpr (Traits::kLayout == Layout::channels_first) {
    const SplitRows& r = p.split_rows;
    const std::uint32_t units = std::uint32_t(r.units), pieces = std::uint32_t(r.pieces);
    const std::uint32_t group = blockIdx.x / units, u = blockIdx.x - group * units;
    const std::uint32_t row = u / pieces, piece = u - row * pieces;
    const std::int64_t sample = group_sample(p, group), first = std::int64_t(piece) * r.piece_vectors;
    const GroupView<Traits> view(p, group);
    float s[2] = {0.f, 0.f};
    cf_row_share<Traits>(p, view, row, p.mean[group], p.rstd[group], threadIdx.x, B, first, first + r.piece_vectors,
                         piece == 0, piece == pieces - 1, s[0], s[1]);
    block_sum_array<B>(s);
    if (threadIdx.x != 0) return;
    if (pieces == 1) {
      store_channel_sums(p, sample, view.channel0 + row, s[0], s[1]);
    } else {
      float* w = p.partials + ((sample * p.channels + view.channel0 + row) * pieces + piece) * 2;
      w[0] = s[0];
      w[1] = s[1];
    }
  } else {
    using U = Unit<Traits>;
    const std::uint32_t units = std::uint32_t(U::count(p));
    const std::int64_t group = blockIdx.x / units, sample = group_sample(p, group), u = blockIdx.x - group * units;
    const GroupView<Traits> view(p, group);
    const U unit(p, view, u, p.mean[group], p.rstd[group]);
    if (threadIdx.x == 0)
#pragma unroll
      for (int i = 0; i < U::kUnit; ++i)
        store_channel_sums(p, sample, U::first_channel(view.channel0, u) + i, unit.s1[i], unit.s2[i]);
  }
}

// The pieces of long channel rows (pass 1 above), added in order: a workgroup per (n, c), its
// threads over the pieces, then the fixed block reduction; the [N, C] (S1, S2) pairs that pass 2
// and the dgamma/dbeta kernel read. (A template, so that every unit including this header may
// define it.)
template <int kBlock>
__global__ void __launch_bounds__(kBlock) bwd_fold_pieces_kernel(Params p) {
  const std::int64_t i = blockIdx.x, pieces = p.split_rows.pieces;
  float s[2] = {0.f, 0.f};
  for (std::int64_t k = threadIdx.x; k < pieces; k += kBlock) {
    const float2 w = reinterpret_cast<const float2*>(p.partials)[i * pieces + k];
    s[0] += w.x;
    s[1] += w.y;
  }
  block_sum_array<kBlock>(s);
  if (threadIdx.x == 0) p.workspace[2 * i] = s[0], p.workspace[2 * i + 1] = s[1];
}

// Family split, pass 2: workgroup (group, slice) forms A and B from the group's channel sums
// (the same order in every workgroup) and writes dx for its slice of kBlockSize * kPerThread
// vectors. In reverse order: the last group first, whose x and dy pass 1 read last.
template <typename Traits>
__global__ void __launch_bounds__(Traits::kBlockSize) bwd_split_dx_kernel(Params p) {
  constexpr std::int64_t kChunk = std::int64_t(Traits::kBlockSize) * Traits::kPerThread;
  const std::uint32_t slices = std::uint32_t(p.slices), b = gridDim.x - 1 - blockIdx.x;
  const std::int64_t group = b / slices, sample = group_sample(p, group), slice = b - group * slices;
  const GroupView<Traits> view(p, group);
  float ab[2] = {0.f, 0.f};
  for (std::int64_t c = threadIdx.x; c < p.channels_per_group; c += Traits::kBlockSize) {
    const float* w = p.workspace + (sample * p.channels + view.channel0 + c) * 2;
    const float g = Affine<Traits>(p, view.channel0 + c).gamma;
    ab[0] += g * w[0];
    ab[1] += g * w[1];
  }
  block_sum_array<Traits::kBlockSize>(ab);
  const float m = float(p.group_elements);
  const std::int64_t first = slice * kChunk, end = first + kChunk < p.vectors ? first + kChunk : p.vectors;
  if (spans<Traits>(p))
    write_dx_span<Traits>(p, view, first, end, slice == 0, slice == p.slices - 1, p.mean[group], p.rstd[group],
                          ab[0] / m, ab[1] / m);
  else
    write_dx<Traits>(p, view, first, end, p.mean[group], p.rstd[group], ab[0] / m, ab[1] / m);
}

// dgamma_c = sum_n S2[n, c], dbeta_c = sum_n S1[n, c]: a thread per channel, n in order.
template <typename GammaType>
__global__ void __launch_bounds__(256) bwd_gamma_beta_kernel(Params p, std::int64_t samples) {
  const std::int64_t c = std::int64_t(blockIdx.x) * 256 + threadIdx.x;
  if (c >= p.channels) return;
  float s1 = 0.f, s2 = 0.f;
  for (std::int64_t n = 0; n < samples; ++n) {
    const float* w = p.workspace + (n * p.channels + c) * 2;
    s1 += w[0];
    s2 += w[1];
  }
  static_cast<GammaType*>(p.dgamma)[c] = from_float<GammaType>(s2);
  static_cast<GammaType*>(p.dbeta)[c] = from_float<GammaType>(s1);
}

template <typename Traits, Family F>
struct BwdLauncher {
  static hipError_t launch(const Params& p, hipStream_t stream) {
    const dim3 block(Traits::kBlockSize);
    if constexpr (F == Family::onchip) {
      // span mode stages 2 M floats (bwd_onchip_span)
      const std::size_t staged = p.span ? std::size_t(p.group_elements) * 2 * sizeof(float) : 0;
      bwd_onchip_kernel<Traits><<<dim3(p.num_groups), block, staged, stream>>>(p);
    } else if constexpr (F == Family::looped) {
      // uneven groups take a kernel of their own: the even problems' keeps its registers
      // (47 against 146 for the channels-first Swish backward at 8 fp16 a vector; bench/NOTES.md)
      if (p.last_channels != p.channels_per_group)
        bwd_looped_kernel<UnevenGroups<Traits>><<<dim3(p.num_groups), block, 0, stream>>>(p);
      else
        bwd_looped_kernel<Traits><<<dim3(p.num_groups), block, 0, stream>>>(p);
    } else {
      // one-dimensional grids (at most 2^31 - 1 workgroups: Instance::supports)
      constexpr bool kChannelsFirst = Traits::kLayout == Layout::channels_first;
      const std::int64_t units = kChannelsFirst ? p.split_rows.units : Unit<Traits>::count(p);
      const dim3 grid(unsigned(p.num_groups * units));
      bool rows = false;
      if constexpr (kChannelsFirst) {
        rows = p.split_rows.team < Traits::kBlockSize;
        if (rows) bwd_split_rows_kernel<Traits><<<grid, block, 0, stream>>>(p);
      }
      if (!rows) bwd_split_sums_kernel<Traits><<<grid, block, 0, stream>>>(p);
      if (kChannelsFirst && p.split_rows.pieces > 1) {
        const hipError_t e = hipGetLastError();
        if (e != hipSuccess) return e;
        bwd_fold_pieces_kernel<128><<<dim3(unsigned(std::int64_t(p.num_groups) * p.channels_per_group)), dim3(128), 0,
                                        stream>>>(p);
      }
      if constexpr (kWritesDx<Traits>) {
        const hipError_t e = hipGetLastError();
        if (e != hipSuccess) return e;
        bwd_split_dx_kernel<Traits><<<dim3(unsigned(std::int64_t(p.num_groups) * p.slices)), block, 0, stream>>>(p);
      }
    }
    hipError_t e = hipGetLastError();
    if (e != hipSuccess || p.dgamma == nullptr || Traits::kOp == Op::dx) return e;
    const std::int64_t samples = p.num_groups / p.groups_per_sample;
    bwd_gamma_beta_kernel<typename Traits::GammaType>
        <<<dim3(unsigned((p.channels + 255) / 256)), dim3(256), 0, stream>>>(p, samples);
    return hipGetLastError();
  }
};

}  // namespace hipgn::kernels
