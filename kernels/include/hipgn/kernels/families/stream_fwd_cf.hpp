// The stream forward, channels-first: one cooperative launch, two phases around one grid
// barrier, x held in shared memory between them where it fits.
//
// A channels-first group is a contiguous run of C/G * HW elements, and the groups of the tensor
// follow each other, so the tensor is cut as one flat run, not by group: the aligned 16-byte
// vectors of its body go in equal shares of `chunk` (FlatShares; share 0 also takes the head
// before the body, the last share the tail after it), one a workgroup, whatever the group size.
//   1. Each workgroup reads its share once, front to back, group segment by group segment (a
//      share meets a few groups, or a group spans a few shares), and sums x - K and (x - K)^2
//      per segment (K: the segment's first element, so no cancellation). Segments go in batches
//      of one a wavefront: each wavefront reduces its own sums, one barrier a batch, and a
//      wavefront per segment writes its (n, mean, M2) to slot share + group of the workspace,
//      a slot no other (share, group) takes (shares are ordered, so share + group is unique).
//      The share's first `hold_vectors` vectors are also kept in shared memory, and gamma and
//      beta of its channel rows staged there, their loads in flight with x's.
//   2. After the barrier a wavefront per segment of a batch merges the group's slots in a
//      fixed order (every workgroup of a group gets the same bits), and the workgroup writes y,
//      its share in reverse: the vectors read last in phase 1, which the L2 holds, first, and
//      the held ones, which need no memory at all, last. Its loop is bound by Swish's
//      quarter-rate exponential and reciprocal, so it takes activate_all (two elements to a
//      reciprocal), not activate().
// On an H100 (132 x 512 threads holding ~220 KB each, or 264 x 512 holding ~110 KB) a tensor of
// up to ~29 MB is read from memory once, the floor of a copy; past that the part not held is
// read again, the most recently read of it from L2. From 4 times that (kStreamCfWavesFromHeld)
// the kernel goes in waves (the kWaves instantiation, the launcher's plan: stream_cf_waves):
// whole groups at a time, each wave what the grid holds and a sixth of the L2, both phases and
// a grid barrier a wave, so x is read from memory once (the sixth again from L2) at ~8 us a
// wave beyond its bytes.
#pragma once

#include <cstdint>
#include <cstdlib>
#include <string>
#include <type_traits>

#include "hipgn/kernels/families/stream_fwd.hpp"
#include "hipgn/kernels/primitives/activation.hpp"
#include "hipgn/kernels/primitives/exchange.hpp"
#include "hipgn/kernels/primitives/persistent.hpp"
#include "hipgn/kernels/primitives/phase_clock.hpp"
#include "hipgn/kernels/primitives/reduce.hpp"
#include "hipgn/kernels/primitives/target.hpp"
#include "hipgn/kernels/primitives/vector.hpp"
#include "hipgn/kernels/primitives/view.hpp"
#include "hipgn/params.hpp"

namespace hipgn::kernels {

// Vectors a thread has in flight per step: per_thread x kStreamUnroll (32 bytes a thread at e1,
// 32 KB a compute unit, as the channels-last kernel).
template <typename Traits>
inline constexpr int kStreamCfUnroll = kStreamUnroll * Traits::kPerThread;

// A wave's flat run of elements [origin, origin + total) (x's element 0 lies `phase` past a
// 16-byte boundary): `head` elements before its first aligned vector, `body` aligned vectors, the
// tail after them. Share s is body vectors [s chunk, (s + 1) chunk), with the head (share 0) and
// the tail (the last share); the support check keeps the tensor's body below 2^31.
template <int V>
struct FlatShares {
  std::int64_t origin, total, head;
  int body, chunk, shares;
  __device__ __forceinline__ FlatShares(const Params& p, std::int64_t origin_, std::int64_t total_)
      : origin(origin_), total(total_), chunk(p.slice_vectors) {
    const Peel<V> pe(p.phase, origin, total);
    head = pe.head;
    body = int(pe.body);
    shares = body > 0 ? int(p.slices_div.div31(std::uint32_t(body - 1))) + 1 : 1;
  }
  // the element where share s's first body vector starts, and the share's elements [begin, end)
  __device__ __forceinline__ std::int64_t base(int s) const { return origin + head + std::int64_t(s) * chunk * V; }
  __device__ __forceinline__ std::int64_t begin(int s) const { return s == 0 ? origin : base(s); }
  __device__ __forceinline__ std::int64_t end(int s) const { return s == shares - 1 ? origin + total : base(s + 1); }
  // the share holding element e of the wave
  __device__ __forceinline__ int owner(const Params& p, std::int64_t e) const {
    if (e - origin < head) return 0;
    const std::int64_t v = (e - origin - head) / V;
    return v >= body ? shares - 1 : int(p.slices_div.div31(std::uint32_t(v)));
  }
};

// A segment: the elements [s, e) that share `share` has of group gi, peeled.
template <int V>
struct CfSegment {
  std::int64_t s, e;
  int head, body, tail;
  __device__ __forceinline__ CfSegment(const Params& p, const FlatShares<V>& f, int share, int gi) {
    const std::int64_t L = p.group_elements, lo = f.begin(share), hi = f.end(share);
    const std::int64_t first = std::int64_t(gi) * L;
    s = first > lo ? first : lo;
    e = first + L < hi ? first + L : hi;
    const Peel<V> pe(p.phase, s, e - s);
    head = int(pe.head), body = int(pe.body), tail = int(pe.tail);
  }
  // element i (< head + tail) of the head, then of the tail, as an offset from s
  __device__ __forceinline__ int edge(int i) const { return i < head ? i : head + body * V + (i - head); }
};

// gamma and beta of the channel rows [r_lo, r_lo + rows) of the flat tensor (row r: channel r
// mod C), into shared memory; 1 and 0 where absent.
template <typename Traits>
__device__ __forceinline__ void stage_affine(const Params& p, std::int64_t r_lo, int rows, float2* table) {
  using Gm = typename Traits::GammaType;
  const Gm* gamma = static_cast<const Gm*>(p.gamma);
  const Gm* beta = static_cast<const Gm*>(p.beta);
  const int c = int(p.channels), c_lo = int(r_lo - floor_div(r_lo, c, p.channels_rcp) * c);
  for (int r = threadIdx.x; r < rows; r += Traits::kBlockSize) {
    const int ch = (c_lo + r) % c;
    table[r] = make_float2(gamma ? to_float(gamma[ch]) : 1.f, beta ? to_float(beta[ch]) : 0.f);
  }
}

template <typename Traits, bool kWaves>
__global__ void __launch_bounds__(Traits::kBlockSize, kStreamMinBlocks<Traits>) fwd_stream_cf_kernel(Params p) {
  constexpr int B = Traits::kBlockSize, V = Traits::kVectorSize, U = kStreamCfUnroll<Traits>;
  // segments are handled in batches of one a wavefront: their sums meet in shared memory at
  // one barrier a batch, not a block reduction each, and their merges run side by side
  constexpr int W = B / kWarpSize;
  using T = typename Traits::XType;
  using VecT = Vec<T, V>;
  // x's vectors held as loaded in 32-bit words, as the channels-last kernel holds them: as Vecs,
  // bf16's ran 1.02-1.06x fp16's time on the same bytes (H200, one process; bench/NOTES.md,
  // "bf16's channels-first stream forward")
  using Raw = Bits<VecT>;
  extern __shared__ __align__(16) unsigned char dynamic_smem[];
  __shared__ float red[2][W][W];  // phase 1: [sum][segment of the batch][wavefront]
  __shared__ float seg_k[W];      // phase 1: each segment's shift K
  __shared__ float2 seg_stat[W];  // phase 2: each segment's group (mean, rstd)
  const T* x = static_cast<const T*>(p.x);
  T* y = static_cast<T*>(p.y);
  const int t = threadIdx.x, lane = t % kWarpSize, warp = t / kWarpSize, b = blockIdx.x, grid = gridDim.x;
  const std::int64_t L = p.group_elements;
  const int hw = int(p.spatial_size);
  // one wave, the tensor, unless kWaves (the launcher's plan)
  const int waves = kWaves ? (p.num_groups - 1) / p.wave_groups + 1 : 1;
  const std::int64_t area = stream_cf_slot_area(p.items, p.wave_groups);
  // A wave's shares; its slots (share + its group in the wave, in area wave % 2: stream_cf_slots);
  // the share's gamma and beta by channel row (p.affine_rows) in shared memory, then the held
  // vectors.
  struct Wave {
    FlatShares<V> f;
    float4* slots;
  };
  float2* const table = reinterpret_cast<float2*>(dynamic_smem);
  Raw* const held = reinterpret_cast<Raw*>(dynamic_smem + std::size_t(p.affine_rows) * sizeof(float2));
  auto wave_of = [&](int wave) {
    const std::int64_t total = std::int64_t(p.num_groups) * L;
    if constexpr (!kWaves) return Wave{FlatShares<V>(p, 0, total), reinterpret_cast<float4*>(p.partials)};
    const std::int64_t origin = std::int64_t(wave) * p.wave_groups * L;
    const std::int64_t end = std::int64_t(wave + 1) * p.wave_groups < p.num_groups ? origin + std::int64_t(p.wave_groups) * L : total;
    return Wave{FlatShares<V>(p, origin, end - origin),
                reinterpret_cast<float4*>(p.partials) + (wave & 1) * area - std::int64_t(wave) * p.wave_groups};
  };
  // the held index of the segment's first body vector: the vectors this workgroup keeps are
  // the first hold_vectors of its first share, so a prefix of each of that share's segments
  auto kept_of = [&](const FlatShares<V>& f, int share, const CfSegment<V>& sg, int& k0) {
    k0 = share == b ? int((sg.s + sg.head - f.base(share)) / V) : p.hold_vectors;
    return k0 >= p.hold_vectors ? 0 : p.hold_vectors - k0 < sg.body ? p.hold_vectors - k0 : sg.body;
  };
  // the channel rows a share touches (its gamma and beta table's)
  auto first_row = [&](const FlatShares<V>& f, int share) { return floor_div(f.begin(share), hw, p.spatial_rcp); };
  auto row_count = [&](const FlatShares<V>& f, int share) {
    return int(floor_div(f.end(share) - 1, hw, p.spatial_rcp) - first_row(f, share)) + 1;
  };
  // Lines this launch will not read again go first when the L2 needs room: x's held vectors
  // (phase 1), x's second read and y (phase 2). So the part of a share read twice stays in the
  // L2 for phase 2, and a wave may take more of it (kStreamCfWaveL2Share): 0.88-0.98x at 21-335
  // MB (bench/NOTES.md, "Eviction hints").
  const L2Policy spent = l2_evict_first();
  PhaseClock<7> phases;  // bench/phase_times.sh: phase 1's sums | its batch reductions (and the
                        // table) | barrier | phase 2's merges | its writes | phase 1 before its
                        // share loop (from the start) | phase 2's share setup (and its table),
                        // summed over batches, shares and waves

  // Phase 1 of a wave: each segment's (n, mean, M2), to its slot. Returns the last share read,
  // whose gamma and beta phase 2 finds staged.
  auto phase1 = [&](const Wave& wv) {
    const FlatShares<V>& f = wv.f;
    float4* const slots = wv.slots;
    int last_share = b;
    for (int share = b; share < f.shares; share += grid) {
      last_share = share;
      phases.lap(5);
      stage_affine<Traits>(p, first_row(f, share), row_count(f, share), table);  // for phase 2, in flight with x's loads
      const int g_first = int(floor_div(f.begin(share), L, p.group_rcp)), g_last = int(floor_div(f.end(share) - 1, L, p.group_rcp));
      for (int g0 = g_first; g0 <= g_last; g0 += W) {
        const int batch = g_last - g0 + 1 < W ? g_last - g0 + 1 : W;
        for (int j = 0; j < batch; ++j) {
          const CfSegment<V> sg(p, f, share, g0 + j);
          const float k = to_float(x[sg.s]);
          const Raw* src = reinterpret_cast<const Raw*>(x + sg.s + sg.head);
          int k0;
          const int kept = kept_of(f, share, sg, k0);
          float s1 = 0.f, s2 = 0.f;
          // body vectors [qa, qb), kept in shared memory too when `keep`
          auto sum_range = [&](int qa, int qb, auto keep) {
            // U vectors a step and no more: ptxas would unroll further and spill
#pragma unroll 1
            for (int q0 = qa + t; q0 < qb; q0 += B * U) {
              Raw raw[U];
#pragma unroll
              for (int u = 0; u < U; ++u)
                if (q0 + u * B < qb) raw[u] = decltype(keep)::value ? load_global(src + q0 + u * B, spent) : src[q0 + u * B];
#pragma unroll
              for (int u = 0; u < U; ++u) {
                if (q0 + u * B < qb) {
                  if constexpr (decltype(keep)::value) held[k0 + q0 + u * B] = raw[u];
                  float v[V];
                  widen(from_bits<VecT>(raw[u]), v);
#pragma unroll
                  for (int i = 0; i < V; ++i) {
                    const float d = v[i] - k;
                    s1 += d;
                    s2 = fmaf(d, d, s2);
                  }
                }
              }
            }
          };
          sum_range(0, kept, std::true_type{});
          sum_range(kept, sg.body, std::false_type{});
          if (t < sg.head + sg.tail) {  // the head and tail, an element a thread
            const float d = to_float(x[sg.s + sg.edge(t)]) - k;
            s1 += d;
            s2 = fmaf(d, d, s2);
          }
          s1 = warp_sum(s1);
          s2 = warp_sum(s2);
          if (lane == 0) red[0][j][warp] = s1, red[1][j][warp] = s2;
          if (t == 0) seg_k[j] = k;
        }
        __syncthreads();
        phases.lap(0);
        if (warp < batch) {  // a wavefront a segment: its wavefronts' sums in a fixed order
          float s1 = 0.f, s2 = 0.f;
          for (int w = lane; w < W; w += kWarpSize) s1 += red[0][warp][w], s2 += red[1][warp][w];
          s1 = warp_sum(s1);
          s2 = warp_sum(s2);
          if (lane == 0) {
            const CfSegment<V> sg(p, f, share, g0 + warp);
            const float n = float(sg.e - sg.s), d = s1 / n;
            slots[share + std::int64_t(g0 + warp)] = make_float4(n, seg_k[warp] + d, fmaxf(s2 - s1 * d, 0.f), 0.f);
          }
        }
        __syncthreads();  // red and seg_k are free for the next batch
        phases.lap(1);
      }
    }
    return last_share;
  };
  // Phase 2 of a wave, once its slots are all written: y, shares, segments and vectors in reverse.
  auto phase2 = [&](const Wave& wv, int last_share) {
    const FlatShares<V>& f = wv.f;
    float4* const slots = wv.slots;
    for (int share = b < f.shares ? b + (f.shares - 1 - b) / grid * grid : -1; share >= b; share -= grid) {
      const std::int64_t r_lo = first_row(f, share);
      if (share != last_share) {  // phase 1 left the table of its last share
        __syncthreads();
        stage_affine<Traits>(p, r_lo, row_count(f, share), table);
      }
      const int g_first = int(floor_div(f.begin(share), L, p.group_rcp)), g_last = int(floor_div(f.end(share) - 1, L, p.group_rcp));
      phases.lap(6);
      for (int g0 = g_first + (g_last - g_first) / W * W; g0 >= g_first; g0 -= W) {
        const int batch = g_last - g0 + 1 < W ? g_last - g0 + 1 : W;
        __syncthreads();  // the previous batch's statistics were read
        if (warp < batch) {
          // the group's slots j + gi of the shares j it spans, lanes striding, then a fixed tree:
          // every workgroup of the group merges them in the same order
          const int gi = g0 + warp;
          const int j_lo = f.owner(p, std::int64_t(gi) * L), j_hi = f.owner(p, std::int64_t(gi + 1) * L - 1);
          Stats st{0.f, 0.f, 0.f};
          for (int j = j_lo + lane; j <= j_hi; j += kWarpSize) {
            const float4 w = load_shared_partial(slots + j + std::int64_t(gi));
            st = merge(st, Stats{w.x, w.y, w.z});
          }
          st = warp_merge(st);
          if (lane == 0) {
            const float rstd = rsqrtf(st.m2 / st.n + p.eps);
            seg_stat[warp] = make_float2(st.mean, rstd);
            if (share == j_lo) save_stats(p, gi, st.mean, rstd);
          }
        }
        __syncthreads();
        phases.lap(3);
        for (int j = batch - 1; j >= 0; --j) {
          const CfSegment<V> sg(p, f, share, g0 + j);
          const float mean = seg_stat[j].x, rstd = seg_stat[j].y;
          // elements are placed by their offset from the share's first channel row
          const int rel = int(sg.s - r_lo * hw);
          const Raw* src = reinterpret_cast<const Raw*>(x + sg.s + sg.head);
          VecT* dst = reinterpret_cast<VecT*>(y + sg.s + sg.head);
          int k0;
          const int kept = kept_of(f, share, sg, k0);
          // body vectors [qa, qb) in reverse, read from shared memory (those held) or from x
          auto write_range = [&](int qa, int qb, auto from_held) {
            constexpr int kStep = B * U;
#pragma unroll 1
            for (int q0 = qa + (qb > qa ? (qb - 1 - qa) / kStep * kStep : -kStep) + t; q0 >= qa; q0 -= kStep) {
              Raw raw[U];
#pragma unroll
              for (int u = 0; u < U; ++u) {
                const int q = q0 + u * B;
                if (q < qb) raw[u] = decltype(from_held)::value ? held[k0 + q] : load_global(src + q, spent);
              }
#pragma unroll
              for (int u = 0; u < U; ++u) {
                const int q = q0 + u * B;
                if (q < qb) {
                  float v[V];
                  widen(from_bits<VecT>(raw[u]), v);
                  // the vector's first element is in channel row r of the share; a vector that
                  // crosses the row's end (HW >= V: one crossing at most) takes the next row's
                  // scale and shift from element `cut` on
                  const int at = rel + sg.head + q * V, r = int(p.spatial.div31(std::uint32_t(at))), cut = hw - (at - r * hw);
                  float2 g = table[r];
                  float scale = g.x * rstd, shift = fmaf(-mean, scale, g.y);
                  if (cut >= V) {
#pragma unroll
                    for (int i = 0; i < V; ++i) v[i] = fmaf(v[i], scale, shift);
                  } else {
#pragma unroll
                    for (int i = 0; i < V; ++i) {
                      if (i == cut) g = table[r + 1], scale = g.x * rstd, shift = fmaf(-mean, scale, g.y);
                      v[i] = fmaf(v[i], scale, shift);
                    }
                  }
                  activate_all<Traits::kActivation>(v, p.swish_beta);
                  store_global(dst + q, narrow<T, V>(v), spent);
                }
              }
            }
          };
          // the vectors phase 1 read last first (from L2), the held ones last
          write_range(kept, sg.body, std::false_type{});
          write_range(0, kept, std::true_type{});
          if (t < sg.head + sg.tail) {
            const float2 g = table[int(p.spatial.div31(std::uint32_t(rel + sg.edge(t))))];
            const float scale = g.x * rstd, v = to_float(x[sg.s + sg.edge(t)]);
            y[sg.s + sg.edge(t)] = from_float<T>(activate<Traits::kActivation>(fmaf(v, scale, fmaf(-mean, scale, g.y)), p.swish_beta));
          }
        }
        phases.lap(4);
      }
    }
  };

  // The waves one after the other, a grid barrier each: the table and held vectors of a wave
  // are read (phase 2) before the next wave's phase 1 overwrites them, and a wave's slots are
  // in area wave % 2, as phase 1 of wave i + 1 may run while others still merge wave i's.
  for (int i = 0; i < waves; ++i) {
    const Wave wv = wave_of(i);
    if (i > 0) __syncthreads();  // the previous wave's buffer was read
    const int last_share = phase1(wv);
    phases.lap(1);
    grid_barrier(p.counters, 0);
    phases.lap(2);
    phase2(wv, last_share);
    phases.lap(4);
  }
  phases.report("fwd_stream_cf");
}

// From how many times what the grid holds the launcher cuts a tensor into waves:
// kStreamCfWavesFromHeld, or HIPGN_STREAM_WAVES (read once) `0` never (for measuring against the
// single wave), `always` from once (the GPU check tests the waves so on tensors of ~30 MB).
inline std::int64_t stream_cf_waves_from() {
  static const std::int64_t from = [] {
    const char* e = std::getenv("HIPGN_STREAM_WAVES");
    if (e && std::string(e) == "0") return std::int64_t(0);
    return e && std::string(e) == "always" ? std::int64_t(1) : kStreamCfWavesFromHeld;
  }();
  return from;
}

template <typename Traits>
struct StreamCfFwdLauncher {
  static hipError_t launch(const Params& p, hipStream_t stream) {
    constexpr int V = Traits::kVectorSize;
    // a workgroup holds up to its share of the tensor, as much as there is room for beside the
    // table of the runtime's shares (no smaller than a wave's)
    const std::int64_t table = std::int64_t(p.affine_rows) * 8;
    std::int64_t room = 0;
    if (const hipError_t e = stream_hold_bytes(kStreamMinBlocks<Traits>, table, &room); e != hipSuccess) return e;
    Params q = p;
    KernelFn kernel = &fwd_stream_cf_kernel<Traits, false>;
    const std::int64_t from = stream_cf_waves_from();
    if (from > 0 && p.slice_vectors > room / 16 && p.slice_vectors >= from * (room / 16)) {
      // waves of whole groups, x read from memory once: each what the grid holds and a share of
      // the L2 (that part of each share read again, from L2; fewer waves). Where one group is
      // more than a wave takes, the single wave reads again what it does not hold.
      int device = 0, l2 = 0;
      if (const hipError_t e = hipGetDevice(&device); e != hipSuccess) return e;
      if (const hipError_t e = hipDeviceGetAttribute(&l2, hipDeviceAttributeL2CacheSize, device); e != hipSuccess) return e;
      const std::int64_t beyond = std::int64_t(l2) / kStreamCfWaveL2Share / 16 / p.items;
      const StreamCfWaves w = stream_cf_waves(p.group_elements, p.num_groups, V, p.items, room / 16 + beyond);
      if (w.groups > 0 && w.waves > 1) {
        kernel = &fwd_stream_cf_kernel<Traits, true>;
        q.wave_groups = std::int32_t(w.groups);
        q.slice_vectors = std::int32_t(w.chunk);
        q.slices_div = FastDivmod::make(std::uint64_t(w.chunk));
        q.affine_rows = std::int32_t(stream_cf_affine_rows(w.chunk, V, p.spatial_size));
      }
    }
    q.hold_vectors = std::int32_t(std::min<std::int64_t>(q.slice_vectors, room / 16));
    const std::int64_t smem = std::int64_t(q.affine_rows) * 8 + std::int64_t(q.hold_vectors) * 16;
    return launch_persistent(kernel, q, Traits::kBlockSize, std::size_t(smem), true, kStreamCounterWords, stream, true);
  }
};

}  // namespace hipgn::kernels
