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
    constexpr int B = Traits::kBlockSize;
    const auto* xs = static_cast<const typename Traits::XType*>(p.x);
    const auto* dys = static_cast<const typename Traits::XType*>(p.dy);
    const std::int64_t per_row = std::int64_t(p.vectors_per_row.divisor);
#pragma unroll
    for (int i = 0; i < kUnit; ++i) s1[i] = s2[i] = 0.f;
    // channels-first: the row's vectors u*per_row ... ; channels-last: vector u of every row
    const std::int64_t count =
        kChannelsFirst ? per_row : std::int64_t(p.vectors_per_row.div(std::uint64_t(p.vectors)));
    for (std::int64_t k = threadIdx.x; k < count; k += B) {
      const std::int64_t q = kChannelsFirst ? u * per_row + k : k * per_row + u;
      std::int64_t offset, channel;
      view.locate(p, q, offset, channel);
      float x[V], dy[V];
      load_vec<V>(xs + offset, x);
      load_vec<V>(dys + offset, dy);
#pragma unroll
      for (int i = 0; i < V; ++i) {
        const Affine<Traits> a(p, kChannelsFirst ? channel : channel + i);
        backward_terms<Traits>(p, a, mean, rstd, x[i], dy[i]);
        s1[kChannelsFirst ? 0 : i] += dy[i];
        s2[kChannelsFirst ? 0 : i] += dy[i] * x[i];
      }
    }
    float both[2 * kUnit];
#pragma unroll
    for (int i = 0; i < kUnit; ++i) both[i] = s1[i], both[kUnit + i] = s2[i];
    block_sum_array<B, 2 * kUnit>(both);
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

// Family looped: one workgroup per group of any size. Pass 1 sums unit by unit (and keeps
// A and B); pass 2 writes dx, reading x and dy again.
template <typename Traits>
__global__ void __launch_bounds__(Traits::kBlockSize) bwd_looped_kernel(Params p) {
  using U = Unit<Traits>;
  const std::int64_t group = blockIdx.x, sample = group_sample(p, group);
  const GroupView<Traits> view(p, group);
  const float mean = p.mean[group], rstd = p.rstd[group];
  const bool sums = wants_channel_sums<Traits>(p);
  float a = 0.f, b = 0.f;
  for (std::int64_t u = 0; u < U::count(p); ++u) {
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
    const float m = float(p.vectors * Traits::kVectorSize);
    write_dx<Traits>(p, view, 0, p.vectors, mean, rstd, a / m, b / m);
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
  const std::int64_t group = blockIdx.x, sample = group_sample(p, group);
  const GroupView<Traits> view(p, group);
  const float mean = p.mean[group], rstd = p.rstd[group];
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
    __shared__ float s1[kSlots], s2[kSlots];
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
      t1 = warp_sum(t1);
      t2 = warp_sum(t2);
      if (lane == 0) store_channel_sums(p, sample, view.channel0 + c, t1, t2);
    }
  }
  if constexpr (kWritesDx<Traits>) {
    block_sum_array<B>(ab);
    const float m = float(p.vectors * V), a_mean = ab[0] / m, b_mean = ab[1] / m;
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

// Family split, pass 1: workgroup (group, unit) sums one unit of channels into the workspace.
template <typename Traits>
__global__ void __launch_bounds__(Traits::kBlockSize) bwd_split_sums_kernel(Params p) {
  using U = Unit<Traits>;
  const std::int64_t group = blockIdx.x, sample = group_sample(p, group), u = blockIdx.y;
  const GroupView<Traits> view(p, group);
  const U unit(p, view, u, p.mean[group], p.rstd[group]);
  if (threadIdx.x == 0)
#pragma unroll
    for (int i = 0; i < U::kUnit; ++i)
      store_channel_sums(p, sample, U::first_channel(view.channel0, u) + i, unit.s1[i], unit.s2[i]);
}

// Family split, pass 2: workgroup (group, slice) forms A and B from the group's channel sums
// (the same order in every workgroup) and writes dx for its slice of kBlockSize * kPerThread
// vectors.
template <typename Traits>
__global__ void __launch_bounds__(Traits::kBlockSize) bwd_split_dx_kernel(Params p) {
  constexpr std::int64_t kChunk = std::int64_t(Traits::kBlockSize) * Traits::kPerThread;
  const std::int64_t group = blockIdx.x, sample = group_sample(p, group), slice = blockIdx.y;
  const GroupView<Traits> view(p, group);
  float ab[2] = {0.f, 0.f};
  for (std::int64_t c = threadIdx.x; c < p.channels_per_group; c += Traits::kBlockSize) {
    const float* w = p.workspace + (sample * p.channels + view.channel0 + c) * 2;
    const float g = Affine<Traits>(p, view.channel0 + c).gamma;
    ab[0] += g * w[0];
    ab[1] += g * w[1];
  }
  block_sum_array<Traits::kBlockSize>(ab);
  const float m = float(p.vectors * Traits::kVectorSize);
  const std::int64_t first = slice * kChunk, end = first + kChunk < p.vectors ? first + kChunk : p.vectors;
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
      bwd_onchip_kernel<Traits><<<dim3(p.num_groups), block, 0, stream>>>(p);
    } else if constexpr (F == Family::looped) {
      bwd_looped_kernel<Traits><<<dim3(p.num_groups), block, 0, stream>>>(p);
    } else {
      bwd_split_sums_kernel<Traits><<<dim3(p.num_groups, Unit<Traits>::count(p)), block, 0, stream>>>(p);
      if constexpr (kWritesDx<Traits>) {
        const hipError_t e = hipGetLastError();
        if (e != hipSuccess) return e;
        bwd_split_dx_kernel<Traits><<<dim3(p.num_groups, p.slices), block, 0, stream>>>(p);
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
