// What the three families with a grid of groups (onchip, looped, split: a workgroup or a few a
// group, kernels of one template each per op) share: the forward's normalize and its batched
// loads, and the backward's per-element terms, channel sums, dx writers and the dgamma/dbeta
// kernel. Channels-first, when the spatial size is not a multiple of the vector or the tensors
// start off a 16-byte boundary (Params::span), a channel row and a group are peeled runs
// (primitives/vector.hpp: Peel): their bodies still move 16 bytes an access, a vector may
// cross a row end, and an element's channel comes from a cursor (SpatialCursor), not a
// division per element.
#pragma once

#include <cstdint>

#include "hipgn/kernels/primitives/activation.hpp"
#include "hipgn/kernels/primitives/backward.hpp"
#include "hipgn/kernels/primitives/dependent.hpp"
#include "hipgn/kernels/primitives/exchange.hpp"
#include "hipgn/kernels/primitives/reduce.hpp"
#include "hipgn/kernels/primitives/vector.hpp"
#include "hipgn/kernels/primitives/view.hpp"
#include "hipgn/params.hpp"

namespace hipgn::kernels {

// Channels-last: gamma and beta (1 and 0 where absent) of channels channel, ..., channel + V -
// 1, one vector load each where Params::affine_vectors says they are aligned (element by
// element, a vector's 2 V loads were most of the channels-last dx writer's loads: bench/NOTES.md,
// "gamma and beta a vector at a time").
template <typename Traits>
__device__ __forceinline__ void vector_affine(const Params& p, std::int64_t channel, float (&g)[Traits::kVectorSize],
                                              float (&b)[Traits::kVectorSize]) {
  static_assert(Traits::kLayout == Layout::channels_last, "a channels-first vector is one channel's");
  using G = typename Traits::GammaType;
  constexpr int V = Traits::kVectorSize;
  const G* gamma = static_cast<const G*>(p.gamma);
  const G* beta = static_cast<const G*>(p.beta);
  auto fill = [&](const G* t, float(&out)[V], float absent) {
    if constexpr (V > 1) {  // (compiled out at V = 1: a looped instance spilled 8 bytes with it)
      if (t && p.affine_vectors) {
        load_vec<V>(t + channel, out);
        return;
      }
    }
#pragma unroll
    for (int i = 0; i < V; ++i) out[i] = t ? to_float(t[channel + i]) : absent;
  };
  fill(gamma, g, 1.f);
  fill(beta, b, 0.f);
}

// gamma_c and beta_c, 1 and 0 where absent.
template <typename Traits>
struct Affine {
  float gamma, beta;
  __device__ __forceinline__ Affine(float g, float b) : gamma(g), beta(b) {}
  // channel c's of the tensors at gamma_at and beta_at (null where absent)
  template <typename Index>
  __device__ __forceinline__ Affine(const typename Traits::GammaType* gamma_at,
                                    const typename Traits::GammaType* beta_at, Index c)
      : gamma(gamma_at ? to_float(gamma_at[c]) : 1.f), beta(beta_at ? to_float(beta_at[c]) : 0.f) {}
  // (the same expression, not a delegation to the above: delegating, the 128 x 8 x 1 and 256 x 8
  // x 4 onchip forwards' SASS came out otherwise, unmeasured)
  __device__ __forceinline__ Affine(const Params& p, std::int64_t c) {
    using G = typename Traits::GammaType;
    gamma = p.gamma ? to_float(static_cast<const G*>(p.gamma)[c]) : 1.f;
    beta = p.beta ? to_float(static_cast<const G*>(p.beta)[c]) : 0.f;
  }
};

// y = act((x - mean) * scale + shift) for one channels-first vector (one channel's: scale =
// gamma_c * rstd, shift = beta_c), written to y + offset.
template <typename Traits>
__device__ __forceinline__ void store_normalized(typename Traits::XType* y, float swish_beta,
                                                 const float (&v)[Traits::kVectorSize], std::int64_t offset,
                                                 float mean, float scale, float shift) {
  constexpr int V = Traits::kVectorSize;
  float out[V];
#pragma unroll
  for (int i = 0; i < V; ++i) out[i] = activate<Traits::kActivation>((v[i] - mean) * scale + shift, swish_beta);
  store_vec<V>(y + offset, out);
}
template <typename Traits>
__device__ __forceinline__ void store_normalized(const Params& p, const float (&v)[Traits::kVectorSize],
                                                 std::int64_t offset, float mean, float scale, float shift) {
  store_normalized<Traits>(static_cast<typename Traits::XType*>(p.y), p.swish_beta, v, offset, mean, scale, shift);
}

// y = act(gamma_c * (x - mean) * rstd + beta_c) for one vector, written to y + offset.
template <typename Traits>
__device__ __forceinline__ void normalize_store(const Params& p, const float (&v)[Traits::kVectorSize],
                                                std::int64_t offset, std::int64_t channel,
                                                float mean, float rstd) {
  constexpr int V = Traits::kVectorSize;
  if constexpr (Traits::kLayout == Layout::channels_first) {
    // A channels-first vector is one channel's: its gamma and beta once, not per element (per
    // element, with a null check each, they were 128 loads and ~200 branches of the onchip
    // 512 x 8 x 8 forward's 2,800 instructions; bench/NOTES.md, "gamma and beta once a vector")
    const Affine<Traits> a(p, channel);
    store_normalized<Traits>(p, v, offset, mean, a.gamma * rstd, a.beta);
  } else {
    float out[V];
    // (channels-last, element by element here: through vector_affine, before the channels-last
    // onchip forward walked rows with them loaded once, it ran 1.06-1.08x slower at 512 x 8
    // vectors; bench/NOTES.md, "gamma and beta a vector at a time")
    using G = typename Traits::GammaType;
    const G* gamma = static_cast<const G*>(p.gamma);
    const G* beta = static_cast<const G*>(p.beta);
#pragma unroll
    for (int i = 0; i < V; ++i) {
      const float scale = (gamma ? to_float(gamma[channel + i]) : 1.f) * rstd;
      const float shift = beta ? to_float(beta[channel + i]) : 0.f;
      out[i] = activate<Traits::kActivation>((v[i] - mean) * scale + shift, p.swish_beta);
    }
    store_vec<V>(static_cast<typename Traits::XType*>(p.y) + offset, out);
  }
}

// A thread's batch of a group's vectors: q0, q0 + B, ... (kPerThread of them, those below end),
// held in registers as fp32. All loads are issued before any use, so they are in flight
// together: widened in each load's own guarded block, a load had a use before the next block's
// load was issued, and ptxas kept that order (kPerThread round trips one after another: the
// split forward's statistics kernel took 7.2 us for 4 MB under Nsight Compute, DRAM 17% busy;
// bench/NOTES.md, "The split forward's chain"). With kEarlyAffine (channels-first, where a
// vector is one channel's) each vector's gamma and beta are loaded beside its x, so that their
// latency is not on the chain after the statistics.
template <typename Traits, bool kEarlyAffine = false>
struct Batch {
  static constexpr int B = Traits::kBlockSize, V = Traits::kVectorSize, U = Traits::kPerThread;
  static_assert(!kEarlyAffine || Traits::kLayout == Layout::channels_first, "a channels-first vector is one channel's");
  std::int64_t q0, end;
  using Gm = typename Traits::GammaType;
  float v[U][V];  // zeros past end
  // gamma and beta as loaded (1 and 0 where absent), widened at the store: widened here, the
  // conversion was a use of each load before the next vector's loads, as Vecs were (below)
  Gm gamma[kEarlyAffine ? U : 1], beta[kEarlyAffine ? U : 1];

  __device__ __forceinline__ bool has(int u) const { return q0 + std::int64_t(u) * B < end; }

  __device__ __forceinline__ Batch(const Params& p, const GroupView<Traits>& view, std::int64_t first_vector,
                                   std::int64_t end_vector)
      : q0(first_vector), end(end_vector) {
    // held as loaded in 32-bit words: as Vecs, bf16's were split into 16-bit registers right
    // after each load, a use before the next load again (bf16 split forwards 1.2-1.3x fp16's
    // time; the same in the stream forward: bench/NOTES.md, "bf16's stream loads one at a time")
    using VecT = Vec<typename Traits::XType, V>;
    using Raw = Bits<VecT>;
    const auto* x = static_cast<const typename Traits::XType*>(p.x);
    Raw raw[U];
#pragma unroll
    for (int u = 0; u < U; ++u) {
      if (has(u)) {
        std::int64_t offset, channel;
        view.locate(p, q0 + std::int64_t(u) * B, offset, channel);
        raw[u] = *reinterpret_cast<const Raw*>(x + offset);
        if constexpr (kEarlyAffine) {
          gamma[u] = load_or(static_cast<const Gm*>(p.gamma), channel, from_float<Gm>(1.f));
          beta[u] = load_or(static_cast<const Gm*>(p.beta), channel, from_float<Gm>(0.f));
        }
      }
    }
#pragma unroll
    for (int u = 0; u < U; ++u) {
      if (has(u)) {
        widen(from_bits(raw[u]), v[u]);
      }
      else
#pragma unroll
        for (int i = 0; i < V; ++i) v[u][i] = 0.f;
    }
  }

  // The batch's statistics, exact over its registers (register_sum, register_squares): one
  // vector's statistics merged into the next's was a chain of U merges (a reciprocal and six
  // dependent operations each) on every workgroup's path to its block reduction.
  __device__ __forceinline__ Stats stats() const {
    const std::int64_t left = end - q0, whole = (left + B - 1) / B;  // vectors below end
    const int count = left <= 0 ? 0 : whole < U ? int(whole) : U;
    const float n = float(count * V);
    const float m = count > 0 ? __fdividef(register_sum(v), n) : 0.f;  // zeros past end
    return {n, m, register_squares(v, count, m)};
  }

  // y of the batch's vectors.
  __device__ __forceinline__ void normalize(const Params& p, const GroupView<Traits>& view, float mean,
                                            float rstd) const {
#pragma unroll
    for (int u = 0; u < U; ++u) {
      if (!has(u)) continue;
      std::int64_t offset, channel;
      view.locate(p, q0 + std::int64_t(u) * B, offset, channel);
      if constexpr (kEarlyAffine) {  // normalize_store's arithmetic, on the early gamma and beta
        store_normalized<Traits>(p, v[u], offset, mean, to_float(opaque_element(gamma[u])) * rstd,
                                 to_float(opaque_element(beta[u])));
      } else {
        normalize_store<Traits>(p, v[u], offset, channel, mean, rstd);
      }
    }
  }
};

// Statistics of vectors [first, end) of a group, a batch at a time.
template <typename Traits>
__device__ __forceinline__ Stats accumulate(const Params& p, const GroupView<Traits>& view,
                                            std::int64_t first, std::int64_t end) {
  constexpr std::int64_t kStep = std::int64_t(Traits::kBlockSize) * Traits::kPerThread;
  Stats s{0.f, 0.f, 0.f};
  for (std::int64_t q0 = first + threadIdx.x; q0 < end; q0 += kStep) s = merge(s, Batch<Traits>(p, view, q0, end).stats());
  return s;
}

// Normalize vectors [first, end) of a group, reading x again.
template <typename Traits>
__device__ __forceinline__ void normalize_range(const Params& p, const GroupView<Traits>& view,
                                                std::int64_t first, std::int64_t end, float mean,
                                                float rstd) {
  constexpr std::int64_t kStep = std::int64_t(Traits::kBlockSize) * Traits::kPerThread;
  for (std::int64_t q0 = first + threadIdx.x; q0 < end; q0 += kStep)
    Batch<Traits>(p, view, q0, end).normalize(p, view, mean, rstd);
}

// xhat in x, dy' in dy, for one element of channel a.
template <typename Traits>
__device__ __forceinline__ void backward_terms(const Params& p, const Affine<Traits>& a, float mean, float rstd,
                                               float& x, float& dy) {
  x = (x - mean) * rstd;
  if constexpr (Traits::kActivation != Activation::none)
    dy *= activation_grad<Traits::kActivation>(a.gamma * x + a.beta, p.swish_beta);
}

// Whether an instance has the peeled channels-first paths (a scalar instance never peels:
// Instance::supports), and whether this launch takes them (Params::span).
template <typename Traits>
inline constexpr bool kPeels = Traits::kLayout == Layout::channels_first && Traits::kVectorSize > 1;
template <typename Traits>
__device__ __forceinline__ bool spans(const Params& p) {
  if constexpr (kPeels<Traits>) return p.span != 0;
  else return false;
}

// A wavefront's lanes' shares of channel c's sums, added and stored by its first lane.
__device__ __forceinline__ void store_warp_channel_sums(const Params& p, std::int64_t sample, std::int64_t c, int lane,
                                                        float s1, float s2) {
  s1 = warp_sum(s1);
  s2 = warp_sum(s2);
  if (lane == 0) store_channel_sums(p, sample, c, s1, s2);
}

// A group's channel sums from partials staged in shared memory, each handed to store(c, s1, s2):
// channel c's partials are s1[slots.at(c, k)] (s2 the same) for k in [slots.begin(c),
// slots.end(c)). A wavefront a channel where the workgroup's wavefronts take every channel at
// once; past that, teams of lanes a channel, the largest power of two whose teams still take
// every channel at once (a lane a channel, in rounds, past B channels), team q taking channel
// slots.channel(q) (an order the caller picks so that a wavefront's teams read distinct banks),
// each lane adding its channel's partials in slot order and then the team by shuffles, the
// team's first lane storing: the team size is fixed by the problem, so the bits are the same
// every run. A wavefront a channel in rounds put five shuffles on the chain of every channel,
// one channel after another: r50_7x2048_n32's 64 channels of ~7 slots, 8 rounds, half of the
// channels-first onchip backward's stall samples (bench/NOTES.md, "Channel sums in teams"); its
// channels-last backward's 64 channels of 32 rows' partials the same ("Channel sums in teams,
// channels-last").
template <int B, typename Slots, typename Store>
__device__ __forceinline__ void team_channel_sums(int channels, const Slots& slots, const float* s1, const float* s2,
                                                  Store&& store) {
  constexpr int kWarps = B / kWarpSize;
  const int t = int(threadIdx.x);
  if (channels <= kWarps) {
    const int lane = t % kWarpSize, c = t / kWarpSize;  // a wavefront's own channel: no order to pick
    if (c < channels) {
      float t1 = 0.f, t2 = 0.f;
      for (int k = slots.begin(c) + lane, end = slots.end(c); k < end; k += kWarpSize) {
        const int u = slots.at(c, k);
        t1 += s1[u], t2 += s2[u];
      }
      t1 = warp_sum(t1);
      t2 = warp_sum(t2);
      if (lane == 0) store(c, t1, t2);
    }
    return;
  }
  int shift = 0;  // team = 1 << shift lanes, fewer than a wavefront's
  while ((2 << shift) < kWarpSize && (B >> (shift + 1)) >= channels) ++shift;
  const int team = 1 << shift, lane = t & (team - 1);
  for (int round = 0; round < channels; round += B >> shift) {
    const int q = round + (t >> shift), c = q < channels ? slots.channel(q) : 0;
    float t1 = 0.f, t2 = 0.f;
    if (q < channels)
      for (int k = slots.begin(c) + lane, end = slots.end(c); k < end; k += team) {
        const int u = slots.at(c, k);
        t1 += s1[u], t2 += s2[u];
      }
#pragma unroll
    for (int o = kWarpSize / 4; o > 0; o /= 2)
      if (o < team) t1 += __shfl_xor(t1, o, kWarpSize), t2 += __shfl_xor(t2, o, kWarpSize);
    if (q < channels && lane == 0) store(c, t1, t2);
  }
}

// The channels-first group's channel sums (bwd_onchip_run): channel c has slots [first(c),
// first(c + 1)) of s1 and s2, in channel order; team_channel_sums stores them.
template <int B, typename First>
__device__ __forceinline__ void store_slot_channel_sums(const Params& p, std::int64_t sample, std::int64_t channel0,
                                                        int channels, First first, const float* s1, const float* s2) {
  struct Span {
    First first;
    __device__ int channel(int q) const { return q; }
    __device__ int begin(int c) const { return first(c); }
    __device__ int end(int c) const { return first(c + 1); }
    __device__ int at(int, int k) const { return k; }
  };
  team_channel_sums<B>(channels, Span{first}, s1, s2,
                       [&](int c, float t1, float t2) { store_channel_sums(p, sample, channel0 + c, t1, t2); });
}

// The group's channel sums from shared memory, `width` staged entries a channel (s1[c * width +
// k], s2 the same), stored: wavefront w of the B / kWarpSize adds channels w, w + B /
// kWarpSize, ... (Not store_slot_channel_sums' teams: at the dgb fp32 256 x 4 x 2 kernels' 32
// registers they spilled 8-16 bytes, and the onchip rule takes these groups where a wavefront a
// channel takes them in one round: tiny, instance_norm_32x64; bench/NOTES.md, "Channel sums in
// teams".)
template <int B>
__device__ __forceinline__ void store_staged_channel_sums(const Params& p, std::int64_t sample, std::int64_t channel0,
                                                          const float* s1, const float* s2, std::int64_t width) {
  constexpr int kWarps = B / kWarpSize;
  const int lane = threadIdx.x % kWarpSize, warp = threadIdx.x / kWarpSize;
  for (std::int64_t c = warp; c < p.channels_per_group; c += kWarps) {
    float t1 = 0.f, t2 = 0.f;
    for (std::int64_t k = lane; k < width; k += kWarpSize) t1 += s1[c * width + k], t2 += s2[c * width + k];
    store_warp_channel_sums(p, sample, channel0 + c, lane, t1, t2);
  }
}

// Channel row `row` of a channels-first group read as a peeled run (primitives/vector.hpp: Peel; with no
// head or tail when the spatial size is a multiple of the vector and x is aligned): body vectors
// [first, end) by lanes lane, lane + stride, ..., and the head and tail elements where asked.
// Adds this thread's shares to s1 and s2. A lane's first head element, first tail element and
// first body vector are loaded before any is used (each next body vector loaded one ahead too
// made the fp32 256 x 2 x 8 rows kernels spill 8 bytes, nvcc 13.0.88): as three loops of a load
// and its use each, a lane's loads waited on one another (the rows kernel of r50_7x2048_n32,
// rows of 49 in teams of 8 lanes, took 14.7 us for 12.8 MB read from L2 under Nsight Compute,
// 12.6 cycles an issued instruction; bench/NOTES.md, "Where the fifth session of 2026-11-28
// ended"). Batches of kPerThread vectors a step, fp32,
// were slower (64 registers where 32: "Loads in flight in the split backward").
template <typename Traits>
__device__ __forceinline__ void cf_row_share(const Params& p, const GroupView<Traits>& view, std::int64_t row,
                                             float mean, float rstd, std::uint32_t lane, std::uint32_t stride,
                                             std::int64_t first, std::int64_t end, bool head, bool tail, float& s1,
                                             float& s2) {
  constexpr int V = Traits::kVectorSize;
  using X = typename Traits::XType;
  using Raw = Bits<Vec<X, V>>;
  const auto* xs = static_cast<const X*>(p.x);
  const auto* dys = static_cast<const X*>(p.dy);
  const std::int64_t start = view.base + row * p.spatial_size, row_end = start + p.spatial_size;
  const Peel<V> run(p.phase, start, p.spatial_size);
  const std::int64_t body = start + run.head, tail0 = body + run.body * V;
  if (end > run.body) end = run.body;
  const std::int64_t h = start + lane, t = tail0 + lane, k0 = first + lane;
  const bool first_head = head && h < body, first_tail = tail && t < row_end;
  float hx = 0.f, hdy = 0.f, tx = 0.f, tdy = 0.f;
  if (first_head) hx = to_float(xs[h]), hdy = to_float(dys[h]);
  if (first_tail) tx = to_float(xs[t]), tdy = to_float(dys[t]);
  Raw vx, vdy;
  if (k0 < end) {
    vx = *reinterpret_cast<const Raw*>(xs + body + k0 * V);
    vdy = *reinterpret_cast<const Raw*>(dys + body + k0 * V);
  }
  const Affine<Traits> a(p, view.channel0 + row);
  auto add = [&](float x, float dy) {
    backward_terms<Traits>(p, a, mean, rstd, x, dy);
    s1 += dy;
    s2 += dy * x;
  };
  if (first_head) add(hx, hdy);
  if (first_tail) add(tx, tdy);
  // heads and tails of more elements than lanes (teams of fewer than V lanes)
  if (head)
    for (std::int64_t j = h + stride; j < body; j += stride) add(to_float(xs[j]), to_float(dys[j]));
  if (tail)
    for (std::int64_t j = t + stride; j < row_end; j += stride) add(to_float(xs[j]), to_float(dys[j]));
  for (std::int64_t k = k0; k < end; k += stride) {
    if (k != k0) {
      vx = *reinterpret_cast<const Raw*>(xs + body + k * V);
      vdy = *reinterpret_cast<const Raw*>(dys + body + k * V);
    }
    float x[V], dy[V];
    widen(from_bits(vx), x);
    widen(from_bits(vdy), dy);
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
    block_sum_array<Traits::kBlockSize, 2 * kUnit, false>(both);  // one wavefront folds: it spilled here (reduce.hpp)
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

// One vector of x and dy that dx is written for, loaded ahead of its use: the writer below
// loads a thread's next vector before it writes the one it holds, and its caller's A and B
// (the split dx kernel's, from the workspace) are formed after the first one's loads, so that
// their latency runs beside that work, not after it. Held as loaded (16-bit types: half the
// registers). Channels-first, its channel rows' gamma and beta come with it: a span vector
// (kSpan: a body vector of the group's peeled run, Params::span) crosses at most one row end
// where the spatial size is at least the vector, its elements from `cut` on the next row's,
// found by one division a vector (a cursor stepped element by element, SpanAffine, took a branch
// and a reload of gamma and beta at the row end on every element: bench/NOTES.md, "The split
// backward's span vectors"); with rows narrower than the vector (a spatial size below 8), its
// elements' rows one by one from the vector's first, element `cut` of its row.
template <typename Traits, bool kSpan>
struct DxVector {
  static constexpr int V = Traits::kVectorSize;
  static constexpr bool kChannelsFirst = Traits::kLayout == Layout::channels_first;
  static_assert(!kSpan || kChannelsFirst, "a span is a channels-first group's run");
  using X = typename Traits::XType;
  using VecT = Vec<X, V>;
  Bits<VecT> x, dy;
  std::int64_t offset, channel;
  float g0, b0, g1, b1;  // channels-first: the vector's row's gamma and beta, and the next row's
  int cut;               // span: the vector's first element in the next row (V: none); narrow
                         // rows: the vector's first element's place in its row

  static __device__ __forceinline__ bool narrow_rows(const Params& p) { return kSpan && p.spatial_size < V; }

  // vector q of the group, or with kSpan of its peeled run's body, which begins at group-relative
  // element `head`
  __device__ __forceinline__ void load(const Params& p, const GroupView<Traits>& view, std::int64_t q,
                                       std::int64_t head) {
    if constexpr (kSpan) {
      const std::int64_t j = head + q * V, r = std::int64_t(p.spatial.div(std::uint64_t(j)));
      const std::int64_t next_row = (r + 1) * p.spatial_size - j;
      offset = view.base + j;
      channel = view.channel0 + r;
      cut = narrow_rows(p) ? int(j - r * p.spatial_size) : next_row < V ? int(next_row) : V;
    } else {
      view.locate(p, q, offset, channel);
    }
    x = *reinterpret_cast<const Bits<VecT>*>(static_cast<const X*>(p.x) + offset);
    dy = *reinterpret_cast<const Bits<VecT>*>(static_cast<const X*>(p.dy) + offset);
    if constexpr (kChannelsFirst) {
      const Affine<Traits> a0(p, channel);
      g0 = g1 = a0.gamma, b0 = b1 = a0.beta;
      if constexpr (kSpan)
        if (cut < V && !narrow_rows(p)) {
          const Affine<Traits> a1(p, channel + 1);
          g1 = a1.gamma, b1 = a1.beta;
        }
    }
  }

  __device__ __forceinline__ void write(const Params& p, float mean, float rstd, float a_mean, float b_mean) const {
    float xv[V], dyv[V], g[V], b[V], dx[V];
    widen(from_bits(x), xv);
    widen(from_bits(dy), dyv);
    if (narrow_rows(p)) {
      std::int64_t c = channel;
#pragma unroll
      for (int i = 0, at = cut; i < V; ++i, ++at) {
        if (at == p.spatial_size) at = 0, ++c;
        const Affine<Traits> a(p, c);
        g[i] = a.gamma, b[i] = a.beta;
      }
    } else if constexpr (kChannelsFirst) {
#pragma unroll
      for (int i = 0; i < V; ++i) g[i] = kSpan && i >= cut ? g1 : g0, b[i] = kSpan && i >= cut ? b1 : b0;
    } else {
      vector_affine<Traits>(p, channel, g, b);
    }
#pragma unroll
    for (int i = 0; i < V; ++i) {
      const Affine<Traits> a(g[i], b[i]);
      backward_terms<Traits>(p, a, mean, rstd, xv[i], dyv[i]);
      dx[i] = rstd * (a.gamma * dyv[i] - a_mean - xv[i] * b_mean);
    }
    store_vec<V>(static_cast<X*>(p.dx) + offset, dx);
  }
};

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

// dx for vectors [first, end) of a group, given (A / M, B / M) by `ab`, which every thread
// calls once. With kSpan (Params::span), the vectors of the group's peeled run's body, and its
// head and tail elements where asked. With kAhead (the split dx kernel), a thread's first vector
// is loaded before `ab` (DxVector says why) and each next one before it writes the one it holds;
// without (the looped backward, whose A and B are in registers already), each is loaded where it
// is written: with vectors held ahead its kernel spilled under nvcc 13.0.88 (8 bytes at 64
// registers, 256 x 8 x 1; with the first one only, 12-72 bytes at 32, 256 x 2 x 1), where the
// split dx kernel holds them in 64 with none.
template <typename Traits, bool kSpan, bool kAhead, typename AB>
__device__ __forceinline__ void write_dx_vectors(const Params& p, const GroupView<Traits>& view, std::int64_t first,
                                                 std::int64_t end, bool head, bool tail, float mean, float rstd,
                                                 AB&& ab) {
  constexpr int B = Traits::kBlockSize, V = Traits::kVectorSize;
  using X = typename Traits::XType;
  std::int64_t skip = 0, last = end;  // the body's first element in the group, and its end
  Peel<V> run(0, 0, 0);
  if constexpr (kSpan) {
    run = Peel<V>(p.phase, view.base, view.elements(p));
    skip = run.head;
    last = end < run.body ? end : run.body;
  }
  std::int64_t q = first + threadIdx.x;
  DxVector<Traits, kSpan> held;
  if (kAhead && q < last) held.load(p, view, q, skip);
  const float2 m = ab();
  if constexpr (kSpan) {
    const std::int64_t t = threadIdx.x;
    const auto* xs = static_cast<const X*>(p.x);
    const auto* dys = static_cast<const X*>(p.dy);
    auto one = [&](std::int64_t j) {  // group-relative element j
      const std::int64_t o = view.base + j;
      const SpanAffine<Traits> s(p, view.channel0, j);
      float x = to_float(xs[o]), dy = to_float(dys[o]);
      backward_terms<Traits>(p, s.a, mean, rstd, x, dy);
      static_cast<X*>(p.dx)[o] = from_float<X>(rstd * (s.a.gamma * dy - m.x - x * m.y));
    };
    if (head && t < run.head) one(t);
    if (tail && t < run.tail) one(run.head + run.body * V + t);
  }
  for (; q < last; q += B) {
    if constexpr (kAhead) {
      DxVector<Traits, kSpan> next;  // loaded before the store: dx may alias x, but not at vector q + B
      if (q + B < last) next.load(p, view, q + B, skip);
      held.write(p, mean, rstd, m.x, m.y);
      held = next;
    } else {
      held.load(p, view, q, skip);
      held.write(p, mean, rstd, m.x, m.y);
    }
  }
}

// write_dx_vectors in span mode where the launch asks for it (spans), the aligned vectors else.
template <typename Traits, bool kAhead, typename AB>
__device__ __forceinline__ void write_dx(const Params& p, const GroupView<Traits>& view, std::int64_t first,
                                         std::int64_t end, bool head, bool tail, float mean, float rstd, AB&& ab) {
  if (spans<Traits>(p)) {
    if constexpr (kPeels<Traits>)
      write_dx_vectors<Traits, true, kAhead>(p, view, first, end, head, tail, mean, rstd, ab);
  } else {
    write_dx_vectors<Traits, false, kAhead>(p, view, first, end, false, false, mean, rstd, ab);
  }
}

// dgamma_c = sum_n S2[n, c], dbeta_c = sum_n S1[n, c], n in order, from the per-(n, c) sums in
// the workspace: the same bits wherever it runs. L2 reads: other workgroups of this launch may
// have stored them (GroupArrival). With kAtOnce > 1, that many samples' sums loaded before any
// is added (the same order, so the same bits), so that a channel's samples cost a few L2 round
// trips, not one each (the compiler's own unroll issued 4: 32 samples, r50_*_n32, took 8): the
// split family's dx kernel, whose first sample, which adds them up, runs last. The kernels that
// do it at their end by the last arrival (GroupArrival) keep the plain loop: with 8 at once
// inlined there, the channels-last onchip backward (bf16 256 x 8 x 2) spilled 8 bytes, with 16
// the channels-first one 8-16.
template <typename GammaType, int kAtOnce = 1>
__device__ __forceinline__ void write_gamma_beta(const Params& p, std::int64_t samples, std::int64_t c) {
  float s1 = 0.f, s2 = 0.f;
  if constexpr (kAtOnce == 1) {
    for (std::int64_t n = 0; n < samples; ++n) {
      const float2 w = load_shared_partial(reinterpret_cast<const float2*>(p.workspace + (n * p.channels + c) * 2));
      s1 += w.x;
      s2 += w.y;
    }
  } else {
    const float2* w = reinterpret_cast<const float2*>(p.workspace) + c;
    for (std::int64_t n0 = 0; n0 < samples; n0 += kAtOnce) {
      float2 v[kAtOnce];
#pragma unroll
      for (int k = 0; k < kAtOnce; ++k)
        v[k] = n0 + k < samples ? load_shared_partial(w + (n0 + k) * p.channels) : make_float2(0.f, 0.f);
#pragma unroll
      for (int k = 0; k < kAtOnce; ++k)
        if (n0 + k < samples) s1 += v[k].x, s2 += v[k].y;
    }
  }
  static_cast<GammaType*>(p.dgamma)[c] = from_float<GammaType>(s2);
  static_cast<GammaType*>(p.dbeta)[c] = from_float<GammaType>(s1);
}

// Whether the backward kernel writes dgamma and dbeta itself (the onchip and looped families:
// FamilyDescriptor::gamma_beta_arrivals), the last of a group's samples to store its sums
// adding them up (GroupArrival): with an arrival counter a group of a sample that is zero at
// launch (the handle's, Params::counters_zeroed), or none where there is one sample. Else the
// kernel of launch_grid_gamma_beta follows, one more graph node (~1.1 us, bench/NOTES.md).
template <typename Traits>
__host__ __device__ __forceinline__ bool gamma_beta_by_arrival(const Params& p) {
  return (Traits::kOp == Op::dgb || Traits::kOp == Op::bwd) && p.dgamma != nullptr &&
         (p.counters_zeroed || p.num_groups == p.groups_per_sample);
}

// A group's workgroup (one a (sample, group)) arriving once its per-(n, c) sums are stored; the
// last of the group's samples writes dgamma and dbeta of its channels. Thread 0 arrives early
// and the others learn the outcome late (finish), so the atomic's round trip hides behind the
// workgroup's dx.
struct GroupArrival {
  std::uint32_t ticket = 0;  // thread 0's: the arrivals before its own
  // Thread 0, after every store of the workgroup's sums (a workgroup barrier where other threads
  // stored them); g is the group's index in its sample, its count word 2 g (unit_counter_words).
  __device__ __forceinline__ void arrive(const Params& p, std::int64_t g) {
    if (p.num_groups != p.groups_per_sample) ticket = kernels::arrive(p.counters + 2 * g);
  }
  // Every thread of the workgroup, last in the kernel (nothing where the launch does not count:
  // gamma_beta_by_arrival).
  template <typename Traits>
  __device__ __forceinline__ void finish(const Params& p, const GroupView<Traits>& view, std::int64_t g) {
    finish<Traits>(p, g, view.channel0, view.channels(p));
  }
  // The same for a workgroup whose sums cover `channels` channels from channel0 and that arrived
  // at counter g (bwd_onchip_columns: a column of several groups of a sample, one counter).
  template <typename Traits>
  __device__ __forceinline__ void finish(const Params& p, std::int64_t g, std::int64_t channel0, std::int64_t channels) {
    if (!gamma_beta_by_arrival<Traits>(p)) return;
    __shared__ int last;
    const std::int64_t samples = p.num_groups / p.groups_per_sample;
    if (threadIdx.x == 0) last = samples == 1 || last_arrival(p.counters + 2 * g, ticket, std::uint32_t(samples));
    __syncthreads();
    if (!last) return;
    for (std::int64_t c = threadIdx.x; c < channels; c += blockDim.x)
      write_gamma_beta<typename Traits::GammaType>(p, samples, channel0 + c);
  }
};

// After a workgroup's stores of its group's sums (by any of its threads).
template <typename Traits>
__device__ __forceinline__ void arrive_after_sums(const Params& p, std::int64_t g, GroupArrival& arrival) {
  if (!gamma_beta_by_arrival<Traits>(p)) return;
  __syncthreads();
  if (threadIdx.x == 0) arrival.arrive(p, g);
}

// write_gamma_beta, a thread per channel.
template <typename GammaType>
__global__ void __launch_bounds__(256) bwd_gamma_beta_kernel(Params p, std::int64_t samples) {
  wait_for_prior_grid();
  const std::int64_t c = std::int64_t(blockIdx.x) * 256 + threadIdx.x;
  if (c < p.channels) write_gamma_beta<GammaType>(p, samples, c);
}

// After a grid family's backward kernels: dgamma and dbeta from the per-(n, c) sums, where the
// op writes them and affine is on.
template <typename Traits>
hipError_t launch_grid_gamma_beta(const Params& p, hipStream_t stream) {
  hipError_t e = hipGetLastError();
  if (e != hipSuccess || p.dgamma == nullptr || Traits::kOp == Op::dx) return e;
  const std::int64_t samples = p.num_groups / p.groups_per_sample;
  return launch_dependent(&bwd_gamma_beta_kernel<typename Traits::GammaType>, dim3(unsigned((p.channels + 255) / 256)),
                          dim3(256), 0, stream, p, samples);
}

}  // namespace hipgn::kernels
