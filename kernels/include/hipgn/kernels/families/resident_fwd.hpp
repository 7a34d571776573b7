// The resident forward: every element of x crosses device memory once in and y once out, the
// floor a copy sets. A persistent grid walks items (unit, slice); a slice is held in registers
// (kPerThread 16-byte vectors a thread, in x's storage type) from its load to its store. A unit
// is what one set of statistics covers: a group (channels-first) or a sample with all its
// groups (channels-last). A unit larger than one workgroup holds is cut into slices whose
// workgroups exchange partial statistics (count, mean, M2: Chan's merge), so no second launch
// and no second read of x is needed: channels-first, where a unit's slices fit one thread-block
// cluster (sm_90, up to 16), through distributed shared memory (primitives/cluster.hpp); otherwise through
// the workspace with an arrival counter, under a cooperative launch that keeps them co-resident.
//
// Channels-first: a group is one contiguous span of C/G * HW elements. Its body is read with
// aligned 16-byte vectors whatever HW and x's alignment are; the up to V-1 elements before and
// after the body (head, tail) are read one by one. gamma/beta become a scale and shift per
// channel, staged in shared memory once per item.
//
// Channels-last: a workgroup covers row_lanes x (C / V) vectors of whole rows (pixels), so
// every access is 16 bytes whatever C/G is; a thread keeps fixed channels, sums per channel
// over its rows, and shared memory reduces channels to groups (a vector may span two groups).
#pragma once

#include <cstdint>

#include "hipgn/kernels/primitives/activation.hpp"
#include "hipgn/kernels/primitives/bulk.hpp"
#include "hipgn/kernels/primitives/cluster.hpp"
#include "hipgn/kernels/primitives/exchange.hpp"
#include "hipgn/kernels/primitives/persistent.hpp"
#include "hipgn/kernels/primitives/phase_clock.hpp"
#include "hipgn/kernels/primitives/reduce.hpp"
#include "hipgn/kernels/primitives/target.hpp"
#include "hipgn/kernels/primitives/vector.hpp"
#include "hipgn/kernels/primitives/view.hpp"
#include "hipgn/params.hpp"

namespace hipgn::kernels {

// One channels-first item: group `unit`, slice `slice` of its body vectors.
template <int V>
struct SpanSlice {
  std::int64_t unit, slice, first;  // first: the group's first element in the tensor
  std::int64_t head, body, tail;    // elements before the body, body vectors, elements after
  std::int64_t q0, q1;              // this slice's body vectors
  std::int64_t lo, hi;              // this slice's group-relative elements

  __device__ __forceinline__ SpanSlice(const Params& p, std::int64_t item) {
    const std::int64_t slices = p.slices, m = p.group_elements;
    unit = std::int64_t(p.slices_div.div(std::uint64_t(item)));
    slice = item - unit * slices;
    first = unit * m;
    const Peel<V> peel(p.phase, first, m);
    head = peel.head, body = peel.body, tail = peel.tail;
    at(p, slice, q0, q1, lo, hi);
  }
  // Body vectors and elements of any slice s of this group.
  __device__ __forceinline__ void at(const Params& p, std::int64_t s, std::int64_t& a, std::int64_t& b,
                                     std::int64_t& l, std::int64_t& h) const {
    const std::int64_t per = p.slice_vectors;
    a = s * per < body ? s * per : body;
    b = a + per < body ? a + per : body;
    l = s == 0 ? 0 : head + a * V;
    h = s == p.slices - 1 ? p.group_elements : head + b * V;
  }
  __device__ __forceinline__ float count(const Params& p, std::int64_t s) const {
    std::int64_t a, b, l, h;
    at(p, s, a, b, l, h);
    return float(h - l);
  }
};

// Merges the `slices` partials (mean, M2) of a unit's statistics, stored at stride `stride`
// floats, in one fixed order: every workgroup of the unit gets the same bits.
template <int kBlock, typename Count>
__device__ __forceinline__ Stats merge_partials(const float* partials, std::int64_t slices, std::int64_t stride,
                                                Count count) {
  Stats acc{0.f, 0.f, 0.f};
  for (std::int64_t i = threadIdx.x; i < slices; i += blockDim.x) {
    const float* w = partials + i * stride;
    acc = merge(acc, Stats{count(i), load_shared_partial(w), load_shared_partial(w + 1)});
  }
  return block_merge<kBlock>(acc);
}

// Occupancy: a thread holding 2 vectors fits in 64 registers, so 1024 threads share a compute
// unit; 4 vectors in 80, so 768 (three workgroups of 256, which the cluster tie-break counts
// on: heuristics.cpp, resident_rounds; at 84 registers, rounded up to 88 a thread, two held
// 256 x 4 at sd15_64x320 to 14.9 us against 12.0); 8 vectors take up to twice the first
// (spilling at 64 costs more than the occupancy).
template <typename Traits>
inline constexpr int kResidentMinBlocks =
    Traits::kBlockSize >= 1024
        ? 1
        : (Traits::kPerThread <= 2 ? 1024 : Traits::kPerThread == 4 ? 768 : 512) / Traits::kBlockSize;

// With the bulk copy engine, two shared-memory stages of block x per_thread vectors: while a
// workgroup reduces, exchanges and stores item k (stage k % 2), item k + 1 is arriving in the
// other stage, and the store of item k drains from shared memory on its own.
template <typename Traits>
struct Stages {
  using VecT = Vec<typename Traits::XType, Traits::kVectorSize>;
  static constexpr int kVectors = Traits::kBlockSize * Traits::kPerThread;
#if defined(HIPGN_BULK_COPY)
  VecT* base;
  std::uint64_t* bars;
  __device__ __forceinline__ Stages(void* dynamic, std::uint64_t* barriers) : base(static_cast<VecT*>(dynamic)), bars(barriers) {
    if (threadIdx.x == 0) bulk::init(&bars[0]), bulk::init(&bars[1]);
    __syncthreads();
  }
  __device__ __forceinline__ VecT* stage(int k) const { return base + (k & 1) * kVectors; }
  __device__ __forceinline__ void load(int k, const void* src, std::int64_t vectors) const {
    bulk::load(stage(k), src, std::uint32_t(vectors * sizeof(VecT)), &bars[k & 1]);
  }
  __device__ __forceinline__ void wait(int k) const { bulk::wait(&bars[k & 1], std::uint32_t((k >> 1) & 1)); }
#endif
};

template <typename Traits>
__global__ void __launch_bounds__(Traits::kBlockSize, kResidentMinBlocks<Traits>) fwd_resident_cf_kernel(Params p) {
  constexpr int B = Traits::kBlockSize, V = Traits::kVectorSize, E = Traits::kPerThread;
  using T = typename Traits::XType;
  using Gm = typename Traits::GammaType;
  using VecT = Vec<T, V>;
  __shared__ float scale[kResidentStageChannels], shift[kResidentStageChannels];
#if defined(HIPGN_CLUSTERS)
  __shared__ ClusterExchange exchange;  // the slices' pairs when they are a cluster (p.cluster)
  if (p.cluster) {
    if (threadIdx.x == 0) exchange.init();
    cluster_sync();
  }
#endif
  const T* x = static_cast<const T*>(p.x);
  T* y = static_cast<T*>(p.y);
  const Gm* gamma = static_cast<const Gm*>(p.gamma);
  const Gm* beta = static_cast<const Gm*>(p.beta);
  const int t = threadIdx.x;
#if defined(HIPGN_BULK_COPY)
  extern __shared__ __align__(16) unsigned char dynamic_smem[];
  __shared__ std::uint64_t bars[2];
  const Stages<Traits> stages(dynamic_smem, bars);
  auto issue = [&](std::int64_t item, int k) {
    const SpanSlice<V> s(p, item);
    stages.load(k, x + s.first + s.head + s.q0 * V, s.q1 - s.q0);
  };
  if (t == 0)
    for (int k = 0; k < 2; ++k)
      if (blockIdx.x + std::int64_t(k) * gridDim.x < p.items) issue(blockIdx.x + std::int64_t(k) * gridDim.x, k);
#endif
  PhaseClock<7> phases;  // bench/phase_times.sh
  phases.lap(6);
  int k = 0;
  for (std::int64_t item = blockIdx.x; item < p.items; item += gridDim.x, ++k) {
    const SpanSlice<V> sl(p, item);
    const T* xg = x + sl.first;
    const T* xb = xg + sl.head;  // 16-byte aligned
    const bool has_head = sl.slice == 0 && t < sl.head;
    const bool has_tail = sl.slice == p.slices - 1 && t < sl.tail;
    const float xh = has_head ? to_float(xg[t]) : 0.f;
    const float xt = has_tail ? to_float(xb[sl.body * V + t]) : 0.f;
    // gamma and beta of the slice's channels, fetched now so that their latency hides behind
    // x's; they become scale and shift once the statistics are known
    const std::int64_t c_lo = std::int64_t(p.spatial.div(std::uint64_t(sl.lo)));
    const std::int64_t c_hi = std::int64_t(p.spatial.div(std::uint64_t(sl.hi - 1)));
    const std::int64_t c_base =
        (sl.unit - std::int64_t(p.groups_div.div(std::uint64_t(sl.unit))) * p.groups_per_sample) * p.channels_per_group;
    for (std::int64_t c = c_lo + t; c <= c_hi; c += B) {
      scale[c - c_lo] = gamma ? to_float(gamma[c_base + c]) : 1.f;
      shift[c - c_lo] = beta ? to_float(beta[c_base + c]) : 0.f;
    }
    const int count = int(sl.q1 - sl.q0);  // body vectors of the slice: at most B * E
    // x of the slice, widened once to fp32 registers: both statistics passes and the output
    // read them there
    float v[E][V];
    {
#if defined(HIPGN_BULK_COPY)
      stages.wait(k);
      const VecT* src = stages.stage(k);
#else
      const VecT* src = reinterpret_cast<const VecT*>(xb) + sl.q0;
#endif
#pragma unroll
      for (int e = 0; e < E; ++e) {
        if (e * B + t < count) widen(src[e * B + t], v[e]);
        else
#pragma unroll
          for (int i = 0; i < V; ++i) v[e][i] = 0.f;
      }
    }
    phases.lap_after(0, v);

    // Statistics of the slice: each thread's values exactly (two passes over its registers),
    // then Chan's merge across the workgroup: one reduction, not two.
    Stats mine{0.f, 0.f, 0.f};
    {
      const int mine_vectors = count > t ? (count - t + B - 1) / B : 0;  // of the E
      const float n_t = float(mine_vectors * V + has_head + has_tail);
      // register_sum's V chains and tree: the E x V adds one after another were a chain of 4
      // cycles an add on the item's critical path (every workgroup of the unit waits on the slowest)
      const float m = n_t > 0.f ? __fdividef(register_sum(v) + (xh + xt), n_t) : 0.f;  // zeros past the slice
      const float sq = register_squares(v, mine_vectors, m) +
                       ((has_head ? (xh - m) * (xh - m) : 0.f) + (has_tail ? (xt - m) * (xt - m) : 0.f));
      mine = Stats{n_t, m, sq};
    }
    const Stats local = block_merge<B>(mine);
#if defined(HIPGN_BULK_COPY)
    // every thread has read the stage (block_merge's barriers): refill it two items ahead
    if (t == 0 && item + 2 * std::int64_t(gridDim.x) < p.items) issue(item + 2 * std::int64_t(gridDim.x), k);
#endif
    phases.lap(1);
    const float n_local = local.n, mean_local = local.mean, m2_local = local.m2;

    float mean, rstd;
    if (p.slices == 1) {
      mean = mean_local;
      rstd = rsqrtf(m2_local / n_local + p.eps);
#if defined(HIPGN_CLUSTERS)
    } else if (p.cluster) {  // the cluster's ranks are the unit's slices, in order
      exchange.push(k, int(sl.slice), int(p.slices), make_float2(mean_local, m2_local));
      const Stats s = exchange.merge_item(k, int(p.slices), [&](int i) { return sl.count(p, i); });
      mean = s.mean;
      rstd = rsqrtf(s.m2 / s.n + p.eps);
#endif
    } else {
      if (t == 0) {
        float* w = p.partials + item * 2;  // item = unit * slices + slice
        w[0] = mean_local;
        w[1] = m2_local;
        arrive_and_wait(p.counters + 2 * sl.unit, p.counters + 2 * sl.unit + 1, std::uint32_t(p.slices));
      }
      __syncthreads();
      const Stats s = merge_partials<B>(p.partials + sl.unit * p.slices * 2, p.slices, 2,
                                        [&](std::int64_t i) { return sl.count(p, i); });
      mean = s.mean;
      rstd = rsqrtf(s.m2 / s.n + p.eps);
    }
    phases.lap(2);
    if (sl.slice == 0 && t == 0) save_stats(p, sl.unit, mean, rstd);
    for (std::int64_t c = c_lo + t; c <= c_hi; c += B) {
      const float sc = scale[c - c_lo] * rstd;
      scale[c - c_lo] = sc;
      shift[c - c_lo] -= mean * sc;
    }
    __syncthreads();
    phases.lap(3);

    // y = act(x * scale_c + shift_c), stored from registers
    VecT* dst = reinterpret_cast<VecT*>(y + sl.first + sl.head) + sl.q0;
    // the channel (relative to c_lo) and offset in it of this thread's first vector; later
    // vectors step by B * V elements (a multiply-high each, never a division)
    const std::int64_t rel0 = sl.head + (sl.q0 + t) * V;
    std::int64_t c = std::int64_t(p.spatial.div(std::uint64_t(rel0)));
    std::int64_t off = rel0 - c * p.spatial_size;
    c -= c_lo;
    const auto advance = [&] {
      off += std::int64_t(B) * V;
      const std::int64_t steps = std::int64_t(p.spatial.div(std::uint64_t(off)));
      c += steps;
      off -= steps * p.spatial_size;
    };
    if (p.spatial_size >= V) {
      // A vector meets at most two channels: one path for every vector, each element taking
      // channel c's scale and shift or the next one's by a select. Two paths a vector (whole,
      // or crossing a channel's end) put a jump over the second path's code in each of the E
      // unrolled vectors: 0.92-0.99x the time with one (bench/NOTES.md, "Loads in one round;
      // the resident forward's stores on one path", where the rest of the loop's instruction
      // fetch stalls are).
#pragma unroll
      for (int e = 0; e < E; ++e) {
        if (e * B + t < count) {
          const std::int64_t left = p.spatial_size - off;  // elements of channel c from the vector's first
          const int cut = left < V ? int(left) : V;
          const std::int64_t c1 = cut < V ? c + 1 : c;  // staged: the vector's elements from cut are c + 1's
          const float sc0 = scale[c], sh0 = shift[c], sc1 = scale[c1], sh1 = shift[c1];
          float f[V];
#pragma unroll
          for (int i = 0; i < V; ++i)
            f[i] = activate<Traits::kActivation>(v[e][i] * (i < cut ? sc0 : sc1) + (i < cut ? sh0 : sh1), p.swish_beta);
          dst[e * B + t] = narrow<T, V>(f);
        }
        advance();
      }
    } else {  // channels shorter than a vector: an element's channel by steps
#pragma unroll
      for (int e = 0; e < E; ++e) {
        if (e * B + t < count) {
          float f[V];
          std::int64_t ci = c, oi = off;
#pragma unroll
          for (int i = 0; i < V; ++i) {
            while (oi >= p.spatial_size) ++ci, oi -= p.spatial_size;
            f[i] = activate<Traits::kActivation>(v[e][i] * scale[ci] + shift[ci], p.swish_beta);
            ++oi;
          }
          dst[e * B + t] = narrow<T, V>(f);
        }
        advance();
      }
    }
    if (has_head) {
      const std::int64_t ch = std::int64_t(p.spatial.div(std::uint64_t(t))) - c_lo;
      y[sl.first + t] = from_float<T>(activate<Traits::kActivation>(xh * scale[ch] + shift[ch], p.swish_beta));
    }
    if (has_tail) {
      const std::int64_t rel = sl.head + sl.body * V + t;
      const std::int64_t ch = std::int64_t(p.spatial.div(std::uint64_t(rel))) - c_lo;
      y[sl.first + rel] = from_float<T>(activate<Traits::kActivation>(xt * scale[ch] + shift[ch], p.swish_beta));
    }
    __syncthreads();  // the staging is rewritten by the next item
    phases.lap(4);
  }
#if defined(HIPGN_CLUSTERS)
  // no workgroup leaves while its pushes to peers may be in flight (peers read no other
  // workgroup's shared memory: nothing to order, so no fence)
  if (p.cluster) cluster_barrier_relaxed();
#endif
  phases.lap(5);
  phases.report("fwd_resident_cf");
}

// Channels-last statistics of a slice of `rows` rows: lane l's per-channel (mean, M2) over its
// rows sit in mean[l * C + c], m2[l * C + c]; lane l holds rows / lanes rows, one more where
// l < rows % lanes. Per channel, then per group over its channels, into gstat[2 g] = mean,
// gstat[2 g + 1] = M2. Each sum is shifted by a value from its own data (lane 0's mean of the
// channel; the group's first channel's mean), so one pass forms both moments without the
// cancellation of raw sums: with d = part mean - K, mean = K + S1 / N and M2 = S2 - S1^2 / N,
// S1 = sum n d, S2 = sum (M2 + n d^2). Per channel, the block's threads split the lanes into
// `split` interleaved sets (threads beyond C are otherwise idle here), so the dependent chain
// is lanes / split long, not lanes (51 at 256 threads and 40 channels: ~3 us of shared-memory
// latency in one workgroup, which every workgroup of a unit waits on).
// `phases` laps once the lanes are summed (bench/phase_times.sh: "to groups (lanes)").
template <typename Clock>
__device__ __forceinline__ void lanes_to_groups(float* mean, float* m2, float* gstat, int c, int lanes, int groups,
                                                int cpg, int rows, Clock& phases) {
  __syncthreads();
  const int q = rows / lanes, r = rows - q * lanes;
  const int split_max = int(blockDim.x) / c, split = split_max < 1 ? 1 : split_max < lanes ? split_max : lanes;
  const int t = threadIdx.x, ch = t % c, set = t / c;
  const bool mine = set < split;
  const float k = mine ? mean[ch] : 0.f;
  __syncthreads();  // every thread read its shift before lane 0's row is overwritten
  float s1 = 0.f, s2 = 0.f;
  if (mine) {
    for (int l = set; l < lanes; l += split) {
      const float nl = float(q + (l < r)), d = mean[l * c + ch] - k;
      s1 = fmaf(nl, d, s1);
      s2 += fmaf(nl * d, d, m2[l * c + ch]);
    }
    mean[set * c + ch] = s1;  // row `set`: read above by this thread only
    m2[set * c + ch] = s2;
  }
  // channels past the block (C > blockDim.x, so split is 1) fold in one pass each
  for (int cx = t + int(blockDim.x); cx < c; cx += blockDim.x) {
    const float kx = mean[cx];
    float a = 0.f, b = 0.f;
    for (int l = 0; l < lanes; ++l) {
      const float nl = float(q + (l < r)), d = mean[l * c + cx] - kx;
      a = fmaf(nl, d, a);
      b += fmaf(nl * d, d, m2[l * c + cx]);
    }
    mean[cx] = kx + a / float(rows);
    m2[cx] = fmaxf(b - a * a / float(rows), 0.f);
  }
  __syncthreads();
  phases.lap(7);
  const float per_channel = float(rows), inv_rows = 1.f / per_channel;
  if (mine && set == 0) {
    for (int j = 1; j < split; ++j) s1 += mean[j * c + ch], s2 += m2[j * c + ch];
    mean[ch] = k + s1 * inv_rows;  // row 0's slot: read by no other thread
    m2[ch] = fmaxf(s2 - s1 * s1 * inv_rows, 0.f);  // rounding can take it below zero
  }
  __syncthreads();
  const float inv_n = 1.f / (per_channel * float(cpg));
  for (int g = t; g < groups; g += blockDim.x) {
    const float kg = mean[g * cpg];
    float a = 0.f, b = 0.f;
    for (int j = 0; j < cpg; ++j) {
      const float d = mean[g * cpg + j] - kg;
      a += d;
      b += fmaf(per_channel * d, d, m2[g * cpg + j]);
    }
    a *= per_channel;
    gstat[2 * g] = kg + a * inv_n;
    gstat[2 * g + 1] = fmaxf(b - a * a * inv_n, 0.f);
  }
  __syncthreads();
}

// The same where a vector's V channels are one group's (C/G a multiple of V): lane l's partial
// (mean, M2) of its j-th vector sit in mean[l * C / V + j], m2[...], each over V x (rows /
// lanes) elements (V more where l < rows % lanes). A group's lanes x C/G / V partials are summed
// by a team of threads in one pass: S1 = sum n d and S2 = sum (M2_e + n d^2), d = mean_e - K,
// with K the group's first partial (lane 0's mean: the group's own data, the shift
// lanes_to_groups uses too), both through one shuffle tree as a pair; mean = K + S1 / N, M2 = S2
// - S1^2 / N. A team is as many threads as the groups leave (a power of two, no more than a
// group's partials): part of a wavefront where the groups outnumber the wavefronts, several
// (their sums met in `scratch`, a pair a wavefront) where the groups are few. Two passes (the
// mean, then M2 about it) made a forward 3-6% slower (bench/NOTES.md, "One pass to groups"),
// where a team over per-channel partials, in one pass or two, lost to lanes_to_groups.
__device__ __forceinline__ void vectors_to_groups(const float* mean, const float* m2, float* gstat, float2* scratch,
                                                  int lanes, int groups, int cpg, int width, int rows) {
  __syncthreads();
  const int per = cpg / width, row = groups * per;  // entries a lane has of a group; of all groups
  const int q = rows / lanes, r = rows - q * lanes, entries = lanes * per, t = int(threadIdx.x),
            block = int(blockDim.x);
  // ts (a team's threads) and tj are powers of two known only at run time: placed by shifts and
  // masks, as a division by them is ~20 dependent integer instructions on this chain (SASS)
  int lts = kLogWarpSize;
  while (lts > 0 && ((1 << lts) / 2 >= entries || (block >> lts) < groups)) --lts;
  if (lts == kLogWarpSize)
    while ((2 << lts) * groups <= block && (2 << lts) <= entries) ++lts;
  const int ts = 1 << lts, team = t >> lts, tl = t & (ts - 1), teams = block >> lts;
  // a team's threads as tj entries of a lane (the power of two that covers them, or the team)
  // by ts / tj lanes: no division to place an entry
  int ltj = 0;
  while ((1 << ltj) < per && ltj < lts) ++ltj;
  const int tj = 1 << ltj, j0 = tl & (tj - 1), l0 = tl >> ltj, lstep = ts >> ltj;
  const float inv_n = 1.f / (float(rows) * float(cpg));
  const auto sums = [&](int g, float k) {
    float s1 = 0.f, s2 = 0.f;
    for (int l = l0; l < lanes; l += lstep) {
      const float n = float((q + (l < r)) * width);
      const float* ml = mean + l * row + g * per;
      const float* m2l = m2 + l * row + g * per;
      for (int j = j0; j < per; j += tj) {
        const float d = ml[j] - k;
        s1 = fmaf(n, d, s1);
        s2 += fmaf(n * d, d, m2l[j]);
      }
    }
    return make_float2(s1, s2);
  };
  const auto team_sum = [&](float2 s) {  // over the team, to each of its threads
    for (int o = (ts < kWarpSize ? ts : kWarpSize) / 2; o > 0; o >>= 1) {
      s.x += __shfl_xor(s.x, o, kWarpSize);
      s.y += __shfl_xor(s.y, o, kWarpSize);
    }
    if (ts > kWarpSize) {  // uniform: every thread of the workgroup is here
      const int w = t / kWarpSize, warps = ts / kWarpSize, w0 = w & ~(warps - 1);
      if (t % kWarpSize == 0) scratch[w] = s;
      __syncthreads();
      s = make_float2(0.f, 0.f);
      for (int i = 0; i < warps; ++i) s.x += scratch[w0 + i].x, s.y += scratch[w0 + i].y;
    }
    return s;
  };
  const auto finish = [&](int g, float k, float2 s) {
    gstat[2 * g] = k + s.x * inv_n;
    gstat[2 * g + 1] = fmaxf(s.y - s.x * s.x * inv_n, 0.f);  // rounding can take it below zero
  };
  if (ts > kWarpSize) {  // a team a group, one round
    const bool valid = team < groups;
    const float k = valid ? mean[team * per] : 0.f;
    const float2 s = team_sum(valid ? sums(team, k) : make_float2(0.f, 0.f));
    if (valid && tl == 0) finish(team, k, s);
  } else {
    // the loop's bound is the wavefront's first team's group: the same for all its lanes, which
    // every shuffle needs; a team past the groups reads nothing and writes nothing
    const int in_warp = team & ((kWarpSize >> lts) - 1);  // this team's place in its wavefront
    for (int gb = team - in_warp; gb < groups; gb += teams) {
      const int g = gb + in_warp;
      const bool valid = g < groups;
      const float k = valid ? mean[g * per] : 0.f;
      const float2 s = team_sum(valid ? sums(g, k) : make_float2(0.f, 0.f));
      if (valid && tl == 0) finish(g, k, s);
    }
  }
  __syncthreads();
}

template <typename Traits>
__global__ void __launch_bounds__(Traits::kBlockSize, kResidentMinBlocks<Traits>) fwd_resident_cl_kernel(Params p) {
  constexpr int V = Traits::kVectorSize, E = Traits::kPerThread;
  using T = typename Traits::XType;
  using Gm = typename Traits::GammaType;
  using VecT = Vec<T, V>;
  extern __shared__ __align__(16) unsigned char dynamic_smem[];
  __shared__ float2 scratch[Traits::kBlockSize / kWarpSize];  // vectors_to_groups' wavefront sums
  // A unit is `cc` channels of a sample (whole groups, `chunks` to a sample); a row of it is
  // cv_count vectors, row_vectors apart in x.
  const int c = int(p.channels), cc = p.chunk_channels, cv_count = cc / V, row_vectors = c / V, lanes = p.row_lanes;
  const int cpg = int(p.channels_per_group), groups = cc / cpg, chunks = c / cc;
  const int t = threadIdx.x;
  const bool active = t < lanes * cv_count;
  // a vector's channels are one group's: merged over them in registers, then vectors_to_groups
  // (at 64 registers, E = 2, that second path made ptxas spill 200 bytes, 24 without it)
  const bool whole = E >= 4 && cpg % V == 0;
  const int cv = active ? t % cv_count : 0, lane = active ? t / cv_count : 0;
  // a slice of whole rows is one contiguous span, which the bulk copy engine reads
  const bool slab = cc == c;
#if defined(HIPGN_BULK_COPY)
  __shared__ std::uint64_t bars[2];
  const Stages<Traits> stages(dynamic_smem, bars);
  float* slots = reinterpret_cast<float*>(dynamic_smem + (slab ? 2 * Stages<Traits>::kVectors * sizeof(VecT) : 0));
#else
  float* slots = reinterpret_cast<float*>(dynamic_smem);
#endif
  float* red = slots + resident_cl_slot_floats(groups, p.slices);  // the cluster's pairs first
  // per-lane partials, lanes x cc (lanes x cc / V where whole); the first later holds scale
  // and shift (2 x cc)
  float* red_mean = red;
  float* red_m2 = red + (lanes > 2 ? lanes : 2) * cc;
  float* gstat = red_m2 + (lanes > 2 ? lanes : 2) * cc;  // per group: (mean, M2), then (mean, rstd)
#if defined(HIPGN_CLUSTERS)
  __shared__ std::uint64_t exchange_bars[2];
  const ClusterPairs exchange{reinterpret_cast<float2*>(slots), exchange_bars, int(p.slices), groups};
  if (p.cluster) {
    if (t == 0) exchange.init();
    cluster_sync();
  }
#endif
  const T* x = static_cast<const T*>(p.x);
  T* y = static_cast<T*>(p.y);
  const Gm* gamma = static_cast<const Gm*>(p.gamma);
  const Gm* beta = static_cast<const Gm*>(p.beta);
  // a slice's rows: the launcher's equal share of the spatial size, at most lanes x E
  const std::int64_t hw = p.spatial_size, rows_per_slice = p.part_rows;
  auto rows_of = [&](std::int64_t slice) { return int(part_share(hw, rows_per_slice, slice)); };
#if defined(HIPGN_BULK_COPY)
  auto issue = [&](std::int64_t item, int k) {  // slab: a unit is a sample
    const std::int64_t n = std::int64_t(p.slices_div.div31(std::uint32_t(item))), slice = item - n * p.slices;
    stages.load(k, x + (n * hw + slice * rows_per_slice) * c, std::int64_t(rows_of(slice)) * cv_count);
  };
  if (t == 0 && slab)
    for (int k = 0; k < 2; ++k)
      if (blockIdx.x + std::int64_t(k) * gridDim.x < p.items) issue(blockIdx.x + std::int64_t(k) * gridDim.x, k);
#endif
  PhaseClock<8> phases;
  phases.lap(6);
  int k = 0;
  for (std::int64_t item = blockIdx.x; item < p.items; item += gridDim.x, ++k) {
    // items are below 2^31 (Instance::supports_resident), so div31: div()'s 64-bit fallback,
    // inlined, made ptxas spill more (f16 e8 116 bytes against 76; bench/NOTES.md, "The
    // resident forward's equal slices")
    const std::int64_t unit = std::int64_t(p.slices_div.div31(std::uint32_t(item))), slice = item - unit * p.slices;
    const std::int64_t n = unit / chunks;  // once an item
    const int c0 = int(unit - n * chunks) * cc;
    const int rows = rows_of(slice);
    const std::int64_t first = (n * hw + slice * rows_per_slice) * c + c0;
    // this thread's vectors: rows e * lanes + lane, column cv; held as loaded (16-bit types: half
    // the registers of fp32, which spilled 56-316 bytes at 64-128 registers) and widened where
    // used (vector.hpp, Bits; opaque keeps the widenings apart)
    using Raw = Bits<VecT>;
    Raw raw[E] = {};  // zeros past the slice
    {
      const VecT* src = reinterpret_cast<const VecT*>(x + first);
#if defined(HIPGN_BULK_COPY)
      if (slab) {  // then cv_count == row_vectors
        stages.wait(k);
        src = stages.stage(k);
      }
#endif
#pragma unroll
      for (int e = 0; e < E; ++e)
        if (active && e * lanes + lane < rows) raw[e] = reinterpret_cast<const Raw*>(src)[(e * lanes + lane) * row_vectors + cv];
    }
    phases.lap_after(0, raw);

    // Each thread's per-channel statistics over its rows (exact: two passes over registers);
    // where a vector lies in one group (cpg a multiple of V), merged over its channels here;
    // then across lanes and channels in shared memory.
    const int my_rows = active && rows > lane ? (rows - lane + lanes - 1) / lanes : 0;
    {
      const float inv = my_rows > 0 ? 1.f / float(my_rows) : 0.f;
      float m[V] = {}, sq[V] = {};
#pragma unroll
      for (int e = 0; e < E; ++e) {
        float f[V];
        widen(from_bits<VecT>(raw[e]), f);
#pragma unroll
        for (int i = 0; i < V; ++i) m[i] += f[i];
      }
#pragma unroll
      for (int i = 0; i < V; ++i) m[i] *= inv;
#pragma unroll
      for (int e = 0; e < E; ++e) {
        if (e < my_rows) {
          float f[V];
          widen(opaque(from_bits<VecT>(raw[e])), f);
#pragma unroll
          for (int i = 0; i < V; ++i) sq[i] += (f[i] - m[i]) * (f[i] - m[i]);
        }
      }
      if (active && whole) {
        float mv = 0.f;
#pragma unroll
        for (int i = 0; i < V; ++i) mv += m[i];
        mv *= 1.f / float(V);
        float s = 0.f;
#pragma unroll
        for (int i = 0; i < V; ++i) {
          const float d = m[i] - mv;
          s += fmaf(float(my_rows) * d, d, sq[i]);
        }
        red_mean[lane * cv_count + cv] = mv, red_m2[lane * cv_count + cv] = s;
      } else if (active) {
        // V floats a store: one at a time, with a lane's threads V floats apart, each was a
        // V-way bank conflict (the stream kernels' stage_lane, bench/NOTES.md)
        store_floats<V>(red_mean + lane * cc + cv * V, m);
        store_floats<V>(red_m2 + lane * cc + cv * V, sq);
      }
    }
    phases.lap(1);
    if (whole) vectors_to_groups(red_mean, red_m2, gstat, scratch, lanes, groups, cpg, V, rows);
    else lanes_to_groups(red_mean, red_m2, gstat, cc, lanes, groups, cpg, rows, phases);
    phases.lap(2);
#if defined(HIPGN_BULK_COPY)
    // every thread has read the stage (the barriers above): refill it two items ahead
    if (slab && t == 0 && item + 2 * std::int64_t(gridDim.x) < p.items) issue(item + 2 * std::int64_t(gridDim.x), k);
#endif
    const float per_group = float(rows) * float(cpg);

    if (p.slices == 1) {
      for (int g = t; g < groups; g += blockDim.x) gstat[2 * g + 1] = rsqrtf(gstat[2 * g + 1] / per_group + p.eps);
    } else {
      // A wavefront per group merges the unit's partials: lanes stride over slices, then a
      // fixed shuffle tree, the same order in every workgroup and on both paths.
      const int lane_id = t % kWarpSize, warp = t / kWarpSize, warps = int(blockDim.x) / kWarpSize;
      const auto merge_group = [&](int g, auto pair_of) {
        Stats st{0.f, 0.f, 0.f};
        for (std::int64_t i = lane_id; i < p.slices; i += kWarpSize) {
          const float2 w = pair_of(i);
          st = merge(st, Stats{float(rows_of(i)) * float(cpg), w.x, w.y});
        }
        st = warp_merge(st);
        if (lane_id == 0) {
          gstat[2 * g] = st.mean;
          gstat[2 * g + 1] = rsqrtf(st.m2 / st.n + p.eps);
        }
      };
#if defined(HIPGN_CLUSTERS)
      if (p.cluster) {  // the cluster's ranks are the unit's slices, in order
        exchange.push(k, int(slice), gstat);
        __syncthreads();  // every push has read gstat, which the merge overwrites
        const float2* pairs = exchange.wait(k);
        for (int g = warp; g < groups; g += warps)
          merge_group(g, [&](std::int64_t i) { return pairs[i * groups + g]; });
      } else
#endif
      {
        float* w = p.partials + item * groups * 2;
        for (int g = t; g < groups; g += blockDim.x) {
          w[2 * g] = gstat[2 * g];
          w[2 * g + 1] = gstat[2 * g + 1];
        }
        __syncthreads();
        if (t == 0) arrive_and_wait(p.counters + 2 * unit, p.counters + 2 * unit + 1, std::uint32_t(p.slices));
        __syncthreads();
        const float* part = p.partials + unit * p.slices * groups * 2;
        for (int g = warp; g < groups; g += warps)
          merge_group(g, [&](std::int64_t i) {
            const float* pi = part + (i * groups + g) * 2;
            return make_float2(load_shared_partial(pi), load_shared_partial(pi + 1));
          });
      }
    }
    phases.lap(3);
    __syncthreads();
    if (slice == 0)
      for (int g = t; g < groups; g += blockDim.x)
        save_stats(p, n * p.groups_per_sample + c0 / cpg + g, gstat[2 * g], gstat[2 * g + 1]);
    // scale and shift a channel, from gamma and beta read here (staged in shared memory behind
    // x, their latency followed x's: 0.6 us an item at sd15_32x1280; held in registers from x's
    // loads or the exchange, they made ptxas spill 100-300 bytes)
    float* scale = red_mean;  // free: the partials are merged
    for (int ch = t; ch < cc; ch += blockDim.x) {
      const int g = int(p.cpg_div.div31(std::uint32_t(ch)));
      const float sc = (gamma ? to_float(gamma[c0 + ch]) : 1.f) * gstat[2 * g + 1];
      scale[ch] = sc;
      scale[cc + ch] = (beta ? to_float(beta[c0 + ch]) : 0.f) - gstat[2 * g] * sc;
    }
    __syncthreads();
    phases.lap(4);
    if (active) {
      float sc[V], sh[V];
      load_vec<V>(scale + cv * V, sc);
      load_vec<V>(scale + cc + cv * V, sh);
      VecT* dst = reinterpret_cast<VecT*>(y + first);
#pragma unroll
      for (int e = 0; e < E; ++e) {
        if (e * lanes + lane < rows) {
          float f[V];
          widen(opaque(from_bits<VecT>(raw[e])), f);
#pragma unroll
          for (int i = 0; i < V; ++i) f[i] = activate<Traits::kActivation>(f[i] * sc[i] + sh[i], p.swish_beta);
          dst[(e * lanes + lane) * row_vectors + cv] = narrow<T, V>(f);
        }
      }
    }
    phases.lap(5);
    __syncthreads();  // shared memory is rewritten by the next item
  }
  phases.report("fwd_resident_cl");
#if defined(HIPGN_CLUSTERS)
  // no workgroup leaves while its pushes to peers may be in flight
  if (p.cluster) cluster_barrier_relaxed();
#endif
}

template <typename Traits>
struct ResidentFwdLauncher {
  static hipError_t launch(const Params& p, hipStream_t stream) {
    const bool exchange = p.slices > 1;
    const std::size_t stages = resident_stage_bytes(Traits::kBlockSize, Traits::kPerThread);
    if constexpr (Traits::kLayout == Layout::channels_first) {
      // a grid of clusters, one a group, where the device has them (primitives/cluster.hpp)
      hipError_t e = hipSuccess;
      // (slices are not rounded to a power of two to tile a GPC: measured on an H100, fp16
      // SiLU, every resident instance, that spread each slice thinner and cost 6% in geomean,
      // sd15_64x320 256 x 4: 15.5 us against 11.9; bench/NOTES.md, "Clusters")
      if (exchange && p.slices <= kClusterSlicesMax &&
          launch_clusters(&fwd_resident_cf_kernel<Traits>, p, Traits::kBlockSize, stages, int(p.slices),
                          p.items / p.slices, stream, &e))
        return e;
      return launch_persistent(&fwd_resident_cf_kernel<Traits>, p, Traits::kBlockSize, stages, exchange,
                               unit_counter_words(p.items / p.slices), stream);
    } else {
      // a unit: a sample's chunk_channels (whole groups); narrower than C, its rows are not one
      // span, and the stages are not used
      const std::int64_t groups = p.chunk_channels / p.channels_per_group;
      const std::size_t smem =
          (p.chunk_channels == p.channels ? stages : 0) +
          std::size_t(resident_cl_smem_floats(p.chunk_channels, groups, p.row_lanes, p.slices)) *
              sizeof(float);
      const int block = resident_cl_block(p.chunk_channels, Traits::kVectorSize, p.row_lanes);
      hipError_t e = hipSuccess;
      if (exchange && p.slices <= kClusterSlicesMax &&
          launch_clusters(&fwd_resident_cl_kernel<Traits>, p, block, smem, int(p.slices), p.items / p.slices, stream, &e))
        return e;
      return launch_persistent(&fwd_resident_cl_kernel<Traits>, p, block, smem, exchange,
                               unit_counter_words(p.items / p.slices), stream);
    }
  }
};

}  // namespace hipgn::kernels
