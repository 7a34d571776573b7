// The stream forward, channels-last: one cooperative launch, three phases separated by grid
// barriers, each a pure stream with nothing held across it.
//
//   1. Items (sample, part of its rows) are read whole rows at a time, 16 bytes an access
//      whatever C/G is; a thread keeps fixed channels and sums x - K and (x - K)^2 per channel
//      in registers (K: the channel's value at the sample's first pixel, a shift that keeps the
//      sums of squares free of cancellation). Shared memory adds the lanes, then turns the
//      item's channels into its groups' (mean, M2), which go to the workspace: 8 bytes a
//      group an item, small next to the item.
//   2. A workgroup (or, with more groups than workgroups, a wavefront) per group merges its
//      parts (Chan) in a fixed order: the same bits every run.
//   3. Items are read again in the reverse order, and each item's rows from last to first, so
//      the rows read last in phase 1, which the L2 still holds, come first; y = act(x * scale
//      + shift) with each thread's scale and shift computed once an item. A workgroup's last
//      item of phase 1 (its first here) keeps its first `hold_vectors` rows a thread in shared
//      memory from phase 1 (as many as the compute unit's shared memory leaves room for), and
//      those are not read again: up to ~20 MB on an H100 crosses memory once, as in a copy.
//
// Against the resident family, which holds a slice in registers from load to store and so must
// exchange statistics item by item with the workgroups of its sample, every inner loop here is
// loads, a few FMAs and stores, and the only waits are the two barriers. x is read twice, the
// second time from the L2 where the tensor (or its last part) fits there.
#pragma once

#include <algorithm>
#include <cstdint>

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

// Rows each thread has in flight per step: two 16-byte loads at 1024 threads keep 32 KB in
// flight a compute unit, above an H100 SM's share of the bandwidth-latency product (about 18
// KB); four spilled registers at 64 a thread (ptxas 13, bf16: 100 bytes).
inline constexpr int kStreamUnroll = 2;

// Waits until every workgroup of the grid arrived at barrier `k` (its counter and generation:
// kStreamCounterWords). The writes before it are visible after it to every workgroup that reads
// past its L1.
__device__ __forceinline__ void grid_barrier(std::uint32_t* counters, int k) {
  __syncthreads();
  std::uint32_t* counter = counters + 2 * kStreamLineWords * k;
  if (threadIdx.x == 0) arrive_and_wait(counter, counter + kStreamGenerationOffset, gridDim.x);
  __syncthreads();
}

// Workgroups a compute unit runs at once (the launch bounds): stream_threads_per_cu.
template <typename Traits>
inline constexpr int kStreamMinBlocks =
    stream_threads_per_cu(Traits::kOp != Op::fwd, Traits::kPerThread) / Traits::kBlockSize > 0
        ? stream_threads_per_cu(Traits::kOp != Op::fwd, Traits::kPerThread) / Traits::kBlockSize
        : 1;

// What both stream kernels (forward and backward) share: the workgroup's geometry (a thread's
// column vectors, its lane, the rows a lane takes) and where an item's rows are. Rows, parts
// and items are below 2^31 (the support check): 32-bit index arithmetic.
template <typename Traits>
struct StreamGeometry {
  static constexpr int V = Traits::kVectorSize, E = Traits::kPerThread;
  int c, hw, parts, items, part_rows, groups, cpg, lanes, lane, row_vectors;
  bool active;
  int cols[E];               // this thread's column vectors, -1 past the row
  std::int64_t lane_stride;  // vectors between a thread's rows

  __device__ __forceinline__ explicit StreamGeometry(const Params& p)
      : c(int(p.channels)), hw(int(p.spatial_size)), parts(p.slices), items(int(p.items)),
        part_rows(int(p.part_rows)), groups(int(p.groups_per_sample)), cpg(int(p.channels_per_group)) {
    const StreamShape shape = stream_cl_shape(c, V, Traits::kBlockSize);
    const int t = threadIdx.x, per_row = shape.threads_per_row, tc = t % per_row;
    lanes = shape.lanes;
    lane = t / per_row;
    active = lane < lanes;
    row_vectors = c / V;
#pragma unroll
    for (int j = 0; j < E; ++j)
      cols[j] = active && j < shape.cols && tc + j * per_row < row_vectors ? tc + j * per_row : -1;
    lane_stride = std::int64_t(lanes) * row_vectors;
  }
  // item -> its sample, the sample's first vector, the item's first row and row count. div31
  // here and wherever these kernels divide an int index (an item, a group, a channel): div()'s
  // 64-bit fallback, dead for such dividends, was inlined at every call (~30 in the backward at
  // V = 8, a fifth to a third of its SASS; bench/NOTES.md, "div()'s fallback left out")
  __device__ __forceinline__ int locate(const Params& p, int item, std::int64_t& base, int& r0, int& rows) const {
    const int n = int(p.slices_div.div31(std::uint32_t(item))), q = item - n * parts;  // q: the part
    r0 = q * part_rows;
    rows = part_share(hw, part_rows, q);
    base = std::int64_t(n) * hw * row_vectors;
    return n;
  }
  // A workgroup takes items blockIdx.x, + gridDim.x, ... in phase 1 and walks them back after
  // the barrier: its last item of phase 1 is its first after, whose first rows phase 1 may keep
  // on chip for it (hold_vectors). The one test of that item, both phases ...
  __device__ __forceinline__ bool last_of_workgroup(int item) const { return item + int(gridDim.x) >= items; }
  // ... and where the walk back starts
  __device__ __forceinline__ int workgroup_last_item() const {
    const int first = int(blockIdx.x), step = int(gridDim.x);
    return first + (items - 1 - first) / step * step;
  }
  // this thread's rows of an item: r0 + lane + m * lanes, m < mine
  __device__ __forceinline__ int mine(int rows) const {
    return active && rows > lane ? (rows - lane + lanes - 1) / lanes : 0;
  }
  // rows of part q of a sample
  __device__ __forceinline__ int part_rows_of(int q) const {
    return part_share(hw, part_rows, q);
  }
  // The lanes' per-channel sums meet in shared memory, `red` [2][lanes][C]: this thread's two
  // sums go to its lane's rows, V floats a store (one at a time, with threads V floats apart,
  // each store was a V-way bank conflict: ~2K cycles a workgroup an item at V = 8,
  // bench/NOTES.md) ...
  __device__ __forceinline__ void stage_lane(float* red, const float (&s1)[E][V], const float (&s2)[E][V]) const {
#pragma unroll
    for (int j = 0; j < E; ++j)
      if (cols[j] >= 0) {
        store_floats<V>(red + lane * c + cols[j] * V, s1[j]);
        store_floats<V>(red + (lanes + lane) * c + cols[j] * V, s2[j]);
      }
  }
  // ... and, after a barrier, channel ch's two sums over the lanes, in lane order
  __device__ __forceinline__ void lane_total(const float* red, int ch, float& a, float& b) const {
    a = 0.f, b = 0.f;
    for (int l = 0; l < lanes; ++l) a += red[l * c + ch], b += red[(lanes + l) * c + ch];
  }
};

template <typename Traits>
__global__ void __launch_bounds__(Traits::kBlockSize, kStreamMinBlocks<Traits>) fwd_stream_cl_kernel(Params p) {
  constexpr int B = Traits::kBlockSize, V = Traits::kVectorSize, E = Traits::kPerThread, U = kStreamUnroll;
  using T = typename Traits::XType;
  using Gm = typename Traits::GammaType;
  using VecT = Vec<T, V>;
  // x's vectors are held as loaded in 32-bit words: as Vecs, bf16's were split into 16-bit
  // registers (PRMT) right after each load, and at 64 registers ptxas then waited for one load
  // before issuing the next (one 16-byte load in flight a thread, not U x E; bf16 ran 1.1x
  // fp16's time, bench/NOTES.md, "bf16's stream loads one at a time")
  using Raw = Bits<VecT>;
  extern __shared__ __align__(16) unsigned char dynamic_smem[];
  // shared memory (stream_cl_smem_floats): [2][lanes][C] S1 and S2 (later scale and shift),
  // [C] the shifts K, [2][C] gamma and beta; then the held rows, [hold_vectors][E][B] vectors
  const StreamGeometry<Traits> sg(p);
  const int c = sg.c, hw = sg.hw, parts = sg.parts, items = sg.items, part_rows = sg.part_rows;
  const int groups = sg.groups, cpg = sg.cpg, t = threadIdx.x, lanes = sg.lanes, lane = sg.lane;
  const int(&cols)[E] = sg.cols;
  const std::int64_t lane_stride = sg.lane_stride;
  const int row_vectors = sg.row_vectors;
  float* red = reinterpret_cast<float*>(dynamic_smem);
  float* shift_k = red + 2 * lanes * c;
  float* affine = shift_k + c;
  Raw* held = reinterpret_cast<Raw*>(dynamic_smem + stream_cl_held_offset(c, lanes));
  const int hold = p.hold_vectors;
  const T* x = static_cast<const T*>(p.x);
  T* y = static_cast<T*>(p.y);
  auto locate = [&](int item, std::int64_t& base, int& r0, int& rows) { sg.locate(p, item, base, r0, rows); };
  auto mine_of = [&](int rows) { return sg.mine(rows); };

  {
    // gamma and beta, staged for phase 3 now: their loads are off its critical path
    const Gm* gamma = static_cast<const Gm*>(p.gamma);
    const Gm* beta = static_cast<const Gm*>(p.beta);
    for (int ch = t; ch < c; ch += B) {
      affine[ch] = gamma ? to_float(gamma[ch]) : 1.f;
      affine[c + ch] = beta ? to_float(beta[ch]) : 0.f;
    }
  }

  // bench/phase_times.sh: phase 1's loads | its reductions | barrier | merge | barrier | phase 3's
  // scale and shift | its rows
  PhaseClock<7> phases;

  // Phase 1: per-channel shifted sums of each item.
  for (int item = blockIdx.x; item < items; item += gridDim.x) {
    std::int64_t base;
    int r0, rows;
    locate(item, base, r0, rows);
    const VecT* xs = reinterpret_cast<const VecT*>(x) + base;
    float k[E][V], s1[E][V], s2[E][V];
#pragma unroll
    for (int j = 0; j < E; ++j) {
      if (cols[j] >= 0) widen(xs[cols[j]], k[j]);
#pragma unroll
      for (int i = 0; i < V; ++i) {
        if (cols[j] < 0) k[j][i] = 0.f;
        s1[j][i] = 0.f, s2[j][i] = 0.f;
      }
    }
    const int mine = mine_of(rows);
    // the workgroup's last item here is its first in phase 3: its first rows stay on chip
    const int keep = sg.last_of_workgroup(item) ? hold : 0;
    const Raw* src = reinterpret_cast<const Raw*>(xs + std::int64_t(r0 + lane) * row_vectors);
    // U rows a step and no more: ptxas would unroll the loop further and spill
#pragma unroll 1
    for (int m = 0; m < mine; m += U, src += U * lane_stride) {
      Raw raw[U][E];
#pragma unroll
      for (int u = 0; u < U; ++u)
#pragma unroll
        for (int j = 0; j < E; ++j)
          if (cols[j] >= 0 && m + u < mine) raw[u][j] = src[u * lane_stride + cols[j]];
#pragma unroll
      for (int u = 0; u < U; ++u)
#pragma unroll
        for (int j = 0; j < E; ++j)
          if (cols[j] >= 0 && m + u < mine && m + u < keep) held[((m + u) * E + j) * B + t] = raw[u][j];
#pragma unroll
      for (int u = 0; u < U; ++u)
#pragma unroll
        for (int j = 0; j < E; ++j) {
          if (cols[j] >= 0 && m + u < mine) {
            float v[V];
            widen(from_bits<VecT>(raw[u][j]), v);
#pragma unroll
            for (int i = 0; i < V; ++i) {
              const float d = v[i] - k[j][i];
              s1[j][i] += d;
              s2[j][i] = fmaf(d, d, s2[j][i]);
            }
          }
        }
    }
    phases.lap(0);
    __syncthreads();  // the previous item's lanes were read
    sg.stage_lane(red, s1, s2);
    if (lane == 0)
#pragma unroll
      for (int j = 0; j < E; ++j)
        if (cols[j] >= 0) store_floats<V>(shift_k + cols[j] * V, k[j]);
    __syncthreads();
    // the item's per-channel mean and M2 (over its rows), in place of lane 0's sums
    const float inv_rows = 1.f / float(rows);
    for (int ch = t; ch < c; ch += B) {
      float a, b;
      sg.lane_total(red, ch, a, b);
      const float d = a * inv_rows;
      red[ch] = shift_k[ch] + d;
      red[lanes * c + ch] = fmaxf(b - a * d, 0.f);
    }
    __syncthreads();
    // then the item's per-group mean and M2: its channels' (all of `rows` values) merged, half a
    // wavefront a group, lanes over the channels: 32 groups in one round of 16 wavefronts, where
    // a wavefront a group took two rounds, 1.1-1.2 us of the item's 2.6 of reductions; the
    // launch ran 0.96-0.98 of its time at 10-60 MB (bench/NOTES.md, "Fixed latencies of the
    // channels-last stream kernels"). Both halves of a wavefront loop together (the shuffles
    // take every lane); a half past the groups adds zeros.
    constexpr int kHalf = kWarpSize / 2;
    float2* out = reinterpret_cast<float2*>(p.partials) + std::int64_t(item) * groups;
    const int half_lane = t % kHalf;
    for (int g2 = 2 * (t / kWarpSize); g2 < groups; g2 += 2 * (B / kWarpSize)) {
      const int g = g2 + (t % kWarpSize) / kHalf;
      const int n_c = g < groups ? cpg : 0;
      const float* mean_c = red + g * cpg;
      const float* m2_c = red + lanes * c + g * cpg;
      float s = 0.f;
      for (int i = half_lane; i < n_c; i += kHalf) s += mean_c[i];
      const float mean = warp_sum<kHalf>(s) / float(cpg);
      float q = 0.f;
      for (int i = half_lane; i < n_c; i += kHalf) q += m2_c[i] + float(rows) * (mean_c[i] - mean) * (mean_c[i] - mean);
      q = warp_sum<kHalf>(q);
      if (half_lane == 0 && g < groups) out[g] = make_float2(mean, q);
    }
    phases.lap(1);
  }
  grid_barrier(p.counters, 0);
  phases.lap(2);

  // Phase 2: each group's parts' (count, mean, M2) merged in a fixed order, so every run gives
  // the same bits. Where the grid has a workgroup for every group, a workgroup a group: threads
  // over the parts, a (mean, M2) pair a load, then block_merge's tree. A wavefront a group
  // there put every merge on the first few workgroups, whose compute units read all the
  // partials, a 32-byte sector for each 8-byte pair: 5-8 us (clock64 around the phase,
  // sdxl_128x320 and vae_128x512), the rest of the grid waiting. With more groups than
  // workgroups (r50_56x256_n32: 1024), a wavefront a group, which spreads them over the grid
  // in one round where a workgroup a group takes four (3-6% slower there).
  auto finish = [&](int gi, Stats st) {
    const float rstd = rsqrtf(st.m2 / st.n + p.eps);
    p.group_stats[2 * gi] = st.mean;
    p.group_stats[2 * gi + 1] = rstd;
    save_stats(p, gi, st.mean, rstd);
  };
  // part q's (mean, M2) pair of the group whose pairs start at w, and its count
  auto pair_of = [&](const float2* w, int q) { return load_shared_partial(w + std::int64_t(q) * groups); };
  auto count_of = [&](int q) { return float(sg.part_rows_of(q)) * float(cpg); };
  auto partials_of = [&](int gi) {
    const int n = int(p.groups_div.div31(std::uint32_t(gi)));
    return reinterpret_cast<const float2*>(p.partials) + std::int64_t(n) * parts * groups + (gi - n * groups);
  };
  if (p.num_groups <= int(gridDim.x)) {
    if (int(blockIdx.x) < p.num_groups) {
      const int gi = blockIdx.x;
      const float2* w = partials_of(gi);
      Stats st{0.f, 0.f, 0.f};
      for (int q = t; q < parts; q += B) {
        const float2 v = pair_of(w, q);
        st = merge(st, Stats{count_of(q), v.x, v.y});
      }
      st = block_merge<B>(st);
      if (t == 0) finish(gi, st);
    }
  } else {
    const int lane_id = t % kWarpSize;
    for (int gi = int(blockIdx.x) * (B / kWarpSize) + t / kWarpSize; gi < p.num_groups;
         gi += int(gridDim.x) * (B / kWarpSize)) {
      const float2* w = partials_of(gi);
      // four partials a lane in flight before any is merged: the loop is a chain of L2
      // latencies otherwise, with every other workgroup waiting at the next barrier
      constexpr int kBatch = 4;
      Stats st{0.f, 0.f, 0.f};
      // The pairs alone are held across the loads (counts are formed at the merge, which is
      // guarded rather than fed empty parts): with a Stats array the bf16 instances spill.
      for (int q0 = lane_id; q0 < parts; q0 += kBatch * kWarpSize) {
        float2 v[kBatch];
#pragma unroll
        for (int b = 0; b < kBatch; ++b)
          v[b] = q0 + b * kWarpSize < parts ? pair_of(w, q0 + b * kWarpSize) : make_float2(0.f, 0.f);
#pragma unroll
        for (int b = 0; b < kBatch; ++b)
          if (q0 + b * kWarpSize < parts)
            st = merge(st, Stats{count_of(q0 + b * kWarpSize), v[b].x, v[b].y});
      }
      st = warp_merge(st);
      if (lane_id == 0) finish(gi, st);
    }
  }
  phases.lap(3);
  grid_barrier(p.counters, 1);
  phases.lap(4);

  // Phase 3: y, items and rows in reverse: the rows phase 1 read last, which the L2 still
  // holds, first, and the held rows (an item's first) last; written first, their y pushed those
  // rows out of the L2 before they were read again (1.15x, bench/NOTES.md, "Phase 3 from a
  // count", which also measured chunks handed out at run time in place of these fixed shares).
  // x's rows read here and y's written are not read again by this launch: their lines go
  // first when the L2 needs room, and the rows phase 1 read last stay for this loop to find
  // (0.93-0.94x at 42-67 MB in one A/B round, level at 21 MB and past 134 MB: bench/NOTES.md,
  // "Eviction hints"; re-timed beside the copy, level in % of copy: "The heuristic after the
  // eviction hints")
  const L2Policy spent = l2_evict_first();
  const int step = int(gridDim.x);
  for (int item = sg.workgroup_last_item(); item >= 0; item -= step) {
    std::int64_t base;
    int r0, rows;
    locate(item, base, r0, rows);
    const int mine = mine_of(rows);
    const std::int64_t first_vector = base + std::int64_t(r0 + lane) * row_vectors;
    const Raw* src = reinterpret_cast<const Raw*>(x) + first_vector;
    VecT* dst = reinterpret_cast<VecT*>(y) + first_vector;
    // rows m, m - 1, ... m - U + 1 of this thread (those >= 0), the held ones from shared memory
    const int keep = sg.last_of_workgroup(item) ? hold : 0;
    auto load_rows = [&](Raw (&raw)[U][E], int m) {
#pragma unroll
      for (int u = 0; u < U; ++u)
#pragma unroll
        for (int j = 0; j < E; ++j)
          if (cols[j] >= 0 && m - u >= 0)
            raw[u][j] = m - u < keep ? held[((m - u) * E + j) * B + t] : load_global(src + (m - u) * lane_stride + cols[j], spent);
    };

    // the item's per-channel scale and shift, once in shared memory: a thread per channel
    // reads its group's statistics with plain loads (cached: the barrier's acquire emptied
    // this unit's L1, and nothing writes them any more), where every thread reading its own
    // channels' through L2 made a few lines the target of every workgroup's loads
    const int gbase = int(p.slices_div.div31(std::uint32_t(item))) * groups;
    __syncthreads();  // the previous item's scale and shift were read
    for (int ch = t; ch < c; ch += B) {
      const int gi = gbase + int(p.cpg_div.div31(std::uint32_t(ch)));
      const float mean = p.group_stats[2 * gi], rstd = p.group_stats[2 * gi + 1];
      const float scale = affine[ch] * rstd;
      red[ch] = scale;
      red[c + ch] = affine[c + ch] - mean * scale;
    }
    __syncthreads();
    float sc[E][V], sh[E][V];
#pragma unroll
    for (int j = 0; j < E; ++j) {
      if (cols[j] >= 0) {  // V floats a load, as stage_lane's stores
        load_vec<V>(red + cols[j] * V, sc[j]);
        load_vec<V>(red + c + cols[j] * V, sh[j]);
      } else {
#pragma unroll
        for (int i = 0; i < V; ++i) sc[j][i] = sh[j][i] = 0.f;
      }
    }
    phases.lap(5);
#pragma unroll 1
    for (int m = mine - 1; m >= 0; m -= U) {
      Raw raw[U][E];
      load_rows(raw, m);
#pragma unroll
      for (int u = 0; u < U; ++u)
#pragma unroll
        for (int j = 0; j < E; ++j) {
          if (cols[j] >= 0 && m - u >= 0) {
            float v[V];
            widen(from_bits<VecT>(raw[u][j]), v);
#pragma unroll
            for (int i = 0; i < V; ++i) v[i] = activate<Traits::kActivation>(fmaf(v[i], sc[j][i], sh[j][i]), p.swish_beta);
            store_global(dst + (m - u) * lane_stride + cols[j], narrow<T, V>(v), spent);
          }
        }
    }
    phases.lap(6);
  }
  phases.report("fwd_stream_cl");
}

// Bytes of shared memory a stream forward workgroup, `per_cu` of them a compute unit, may keep
// x in beside the `used` its kernel takes: its part of the compute unit's, less what the
// hardware and the kernel's static arrays take, within what a launch may ask for.
inline hipError_t stream_hold_bytes(int per_cu, std::int64_t used, std::int64_t* bytes) {
  int device = 0, smem_per_cu = 0;
  hipError_t e = hipGetDevice(&device);
  if (e == hipSuccess) e = hipDeviceGetAttribute(&smem_per_cu, hipDeviceAttributeMaxSharedMemoryPerMultiprocessor, device);
  if (e != hipSuccess) return e;
  *bytes = std::max<std::int64_t>(0, std::min<std::int64_t>(smem_per_cu / per_cu - kStreamSmemReserve, kResidentMaxSmem) - used);
  return hipSuccess;
}

template <typename Traits>
struct StreamFwdLauncher {
  static hipError_t launch(const Params& p, hipStream_t stream) {
    const StreamShape shape = stream_cl_shape(p.channels, Traits::kVectorSize, Traits::kBlockSize);
    const std::int64_t base = stream_cl_held_offset(p.channels, shape.lanes);
    std::int64_t room = 0;
    if (const hipError_t e = stream_hold_bytes(kStreamMinBlocks<Traits>, base, &room); e != hipSuccess) return e;
    // a thread holds up to all its rows of an item, as many as there is room for
    const std::int64_t row_bytes = std::int64_t(Traits::kBlockSize) * Traits::kPerThread * 16;
    Params q = p;
    q.hold_vectors = std::int32_t(std::min<std::int64_t>((p.part_rows + shape.lanes - 1) / shape.lanes, room / row_bytes));
    // two grid barriers, a counter and a generation each, each in its own 128-byte line
    return launch_persistent(&fwd_stream_cl_kernel<Traits>, q, Traits::kBlockSize,
                             std::size_t(base + q.hold_vectors * row_bytes), true, kStreamCounterWords, stream, true);
  }
};

}  // namespace hipgn::kernels
