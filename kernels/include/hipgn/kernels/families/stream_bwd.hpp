// The stream backward, channels-last (ops dx, dgb, bwd): the forward's structure
// (stream_fwd.hpp), one cooperative launch in two phases split by one grid barrier, each a pure
// stream with nothing held across it.
//
//   1. Items (sample, part of its rows) read x and dy whole rows at a time, 16 bytes an access
//      whatever C/G is. A thread keeps fixed channels and sums, per channel, dy' and
//      dy' (x - mean) in registers (the saved statistics give xhat directly; the shift by the
//      mean keeps the second sum free of cancellation). Shared memory adds the lanes; the
//      item's per-channel (S1, S2) go to the workspace for dgamma and dbeta, and (for dx) its
//      per-group (gamma S1, gamma S2) sums, which are all that dx needs of the others' items.
//   2. dx: items are read again in reverse, each item's rows last first, so the rows phase 1
//      read last come from L2. Each workgroup adds its sample's items' group sums itself, in a
//      fixed order (every workgroup gets the same bits): A/M and B/M per group, and every element
//      is a few FMAs: dx = rstd gamma dy' - rstd A/M - rstd^2 B/M (x - mean). Before it, dgamma
//      and dbeta: each channel's items added in a fixed order, a few workgroups' work.
// A second barrier used to separate a phase that added the items' per-channel sums a sample at
// a time from dx (bench/NOTES.md, "One barrier for the channels-last stream backward": it and
// that phase were 3-4 us of 30-40).
//
// Against the resident backward, which holds a slice of x and dy in registers and exchanges
// (A, B) with its sample's other workgroups item by item, the loops here only load, add and
// store, and the wait is the barrier. x and dy are read twice, the second time from L2
// where the tensors (or their last part) fit there; with short items (no ring), a workgroup's
// last item's rows, as many as its shared memory holds, are kept there from phase 1 for dx.
#pragma once

#include <algorithm>
#include <cstdint>

#include "hipgn/kernels/families/stream_fwd.hpp"
#include "hipgn/kernels/primitives/activation.hpp"
#include "hipgn/kernels/primitives/async_copy.hpp"
#include "hipgn/kernels/primitives/backward.hpp"
#include "hipgn/kernels/primitives/exchange.hpp"
#include "hipgn/kernels/primitives/persistent.hpp"
#include "hipgn/kernels/primitives/phase_clock.hpp"
#include "hipgn/kernels/primitives/reduce.hpp"
#include "hipgn/kernels/primitives/target.hpp"
#include "hipgn/kernels/primitives/vector.hpp"
#include "hipgn/params.hpp"

namespace hipgn::kernels {

// Column sums of a [rows][stride] matrix of float pairs (row q of column j at m[q stride + j]),
// for its columns [0, cols), cols <= kWarpSize: wavefront w adds rows w, w + W, ... in order,
// its lanes a column each (one 256-byte load a row), then thread j adds the W wavefronts' sums
// in order and hands them to put(j, a, b). The order depends on the shape only: every workgroup
// that sums the same matrix gets the same bits. The whole workgroup calls it (two barriers);
// `scratch` holds 2 B floats of shared memory.
template <int B, typename Put>
__device__ __forceinline__ void column_sums(const float2* m, std::int64_t stride, int rows, int cols, float* scratch,
                                            Put put) {
  constexpr int W = B / kWarpSize, kBatch = 8;  // kBatch loads in flight before any is added
  static_assert(B % kWarpSize == 0, "whole wavefronts");
  const int t = threadIdx.x, lane = t % kWarpSize, w = t / kWarpSize;
  float a = 0.f, b = 0.f;
  if (lane < cols)
    for (int q0 = w; q0 < rows; q0 += kBatch * W) {
      float2 v[kBatch];
#pragma unroll
      for (int u = 0; u < kBatch; ++u) {
        const int q = q0 + u * W;
        v[u] = q < rows ? load_shared_partial(m + std::int64_t(q) * stride + lane) : make_float2(0.f, 0.f);
      }
#pragma unroll
      for (int u = 0; u < kBatch; ++u) a += v[u].x, b += v[u].y;
    }
  scratch[t] = a, scratch[B + t] = b;
  __syncthreads();
  if (t < cols) {
    a = 0.f, b = 0.f;
    for (int k = 0; k < W; ++k) a += scratch[k * kWarpSize + t], b += scratch[B + k * kWarpSize + t];
    put(t, a, b);
  }
  __syncthreads();
}

// Where this thread's row m, column vector j of x (or of dy) sits in shared memory: the ring's
// slot m (each_row) or the held row m (a workgroup's last item of phase 1, its first of dx). A
// wavefront's 16-byte accesses are 512 contiguous bytes: no bank conflicts.
template <typename Traits>
__device__ __forceinline__ int held_slot(int m, int j, bool dy) {
  return ((2 * m + (dy ? 1 : 0)) * Traits::kPerThread + j) * Traits::kBlockSize + int(threadIdx.x);
}

// U rows of this thread's x and dy (of an item's `mine`, from row k0 in each_row's order: kReverse,
// last first), held as loaded, in 32-bit words (Bits: a Vec of bf16 taken apart right after its
// load kept one load in flight, bench/NOTES.md, "bf16's stream loads one at a time").
template <typename Traits, bool kReverse>
struct RowBatch {
  static constexpr int U = kStreamUnroll, E = Traits::kPerThread;
  using VecT = Vec<typename Traits::XType, Traits::kVectorSize>;
  using Raw = Bits<VecT>;
  Raw x[U][E], dy[U][E];

  __device__ __forceinline__ static int row(int mine, int k) { return kReverse ? mine - 1 - k : k; }
  // rows below `keep` from `held` (held_slot's layout: phase 1 kept them there), the rest from
  // xs and dys
  __device__ __forceinline__ void load(const StreamGeometry<Traits>& sg, const VecT* xs, const VecT* dys, int mine, int k0,
                                       const Raw* held, int keep) {
    const Raw* xw = reinterpret_cast<const Raw*>(xs);
    const Raw* dyw = reinterpret_cast<const Raw*>(dys);
#pragma unroll
    for (int u = 0; u < U; ++u)
#pragma unroll
      for (int j = 0; j < E; ++j)
        if (sg.cols[j] >= 0 && k0 + u < mine) {
          const int r = row(mine, k0 + u);
          if (r < keep) {
            x[u][j] = held[held_slot<Traits>(r, j, false)];
            dy[u][j] = held[held_slot<Traits>(r, j, true)];
          } else {
            const std::int64_t at = std::int64_t(r) * sg.lane_stride + sg.cols[j];
            x[u][j] = xw[at];
            dy[u][j] = dyw[at];
          }
        }
  }
};

// each_row's loop through registers, its first batch (rows 0..U-1) already loaded into `b`: a
// caller issues it early where it has other latency to hide (the stream backward's phase 2,
// before its group sums).
template <typename Traits, bool kReverse, typename F>
__device__ __forceinline__ void each_row_from(const StreamGeometry<Traits>& sg, const Vec<typename Traits::XType, Traits::kVectorSize>* xs,
                                              const Vec<typename Traits::XType, Traits::kVectorSize>* dys, int mine,
                                              RowBatch<Traits, kReverse>& b, const Bits<Vec<typename Traits::XType, Traits::kVectorSize>>* held,
                                              int keep, F f) {
  constexpr int E = Traits::kPerThread, U = kStreamUnroll;
#pragma unroll 1
  for (int k0 = 0; k0 < mine; k0 += U) {
#pragma unroll
    for (int u = 0; u < U; ++u)
#pragma unroll
      for (int j = 0; j < E; ++j)
        if (sg.cols[j] >= 0 && k0 + u < mine)
          f(b.row(mine, k0 + u), j, from_bits(b.x[u][j]), from_bits(b.dy[u][j]));
    b.load(sg, xs, dys, mine, k0 + U, held, keep);  // past mine: nothing
  }
}

// This thread's rows of an item, x and dy a column vector at a time: f(m, j, x, dy) for each row
// m < mine (row r0 + lane + m lanes; xs and dys at row m = 0) and column vector j, rows in order
// (kReverse: last first). Where the target copies asynchronously (async_copy.hpp) and the
// launcher gave the workgroup a ring (depth = p.hold_vectors > 0), `depth` rows a thread are in
// flight at once through shared memory; else U rows at a time through registers. With U = 2 a
// thread has 64 bytes in flight, a compute unit ~32 KB at 512 threads, and a long item's rows
// come in round trips (bench/NOTES.md, "Rows in flight through shared memory"). kHold (the
// register loop only): rows below `depth` are also kept, as loaded, at held_slot in `ring`, for
// dx to take from there.
template <typename Traits, bool kReverse, bool kHold = false, typename F>
__device__ __forceinline__ void each_row(const StreamGeometry<Traits>& sg, const Vec<typename Traits::XType, Traits::kVectorSize>* xs,
                                         const Vec<typename Traits::XType, Traits::kVectorSize>* dys, int mine,
                                         [[maybe_unused]] Bits<Vec<typename Traits::XType, Traits::kVectorSize>>* ring,
                                         [[maybe_unused]] int depth, F f) {
#if defined(HIPGN_ASYNC_COPY)
  if (!kHold && depth > 0) {
    constexpr int E = Traits::kPerThread;
    using VecT = Vec<typename Traits::XType, Traits::kVectorSize>;
    const int(&cols)[E] = sg.cols;
    auto row = [&](int k) { return kReverse ? mine - 1 - k : k; };
    auto issue = [&](int k, int s) {  // row k's copies into slot s, one group (empty past mine)
      if (k < mine) {
        const std::int64_t at = std::int64_t(row(k)) * sg.lane_stride;
#pragma unroll
        for (int j = 0; j < E; ++j)
          if (cols[j] >= 0) {
            async_copy::copy<sizeof(VecT)>(ring + held_slot<Traits>(s, j, false), xs + at + cols[j]);
            async_copy::copy<sizeof(VecT)>(ring + held_slot<Traits>(s, j, true), dys + at + cols[j]);
          }
      }
      async_copy::commit();
    };
    for (int k = 0; k < depth; ++k) issue(k, k);
    int s = 0;
    for (int k = 0; k < mine; ++k) {
      async_copy::wait(depth - 1);  // row k's group, and every one before it, landed
#pragma unroll
      for (int j = 0; j < E; ++j)
        if (cols[j] >= 0)
          f(row(k), j, from_bits(ring[held_slot<Traits>(s, j, false)]), from_bits(ring[held_slot<Traits>(s, j, true)]));
      issue(k + depth, s);  // after the slot was read: its next row
      s = s + 1 == depth ? 0 : s + 1;
    }
    return;
  }
#endif
  // held as loaded, in 32-bit words (Bits: a Vec of bf16 taken apart right after its load kept
  // one load in flight, bench/NOTES.md, "bf16's stream loads one at a time"). Not on RowBatch:
  // each_row_from's rotated loop compiled into the ring's kernel cost its long items 1-5%, and
  // RowBatch's load and use in this loop's own order still compile the ring's kernel differently
  // (its PTX changes, the register loop's kernel's does not), so the loop keeps its own copy.
  constexpr int E = Traits::kPerThread, U = kStreamUnroll;
  using VecT = Vec<typename Traits::XType, Traits::kVectorSize>;
  const int(&cols)[E] = sg.cols;
  auto row = [&](int k) { return kReverse ? mine - 1 - k : k; };
  using Raw = Bits<VecT>;
  const Raw* xw = reinterpret_cast<const Raw*>(xs);
  const Raw* dyw = reinterpret_cast<const Raw*>(dys);
#pragma unroll 1
  for (int k0 = 0; k0 < mine; k0 += U) {
    Raw rx[U][E], rdy[U][E];
#pragma unroll
    for (int u = 0; u < U; ++u)
#pragma unroll
      for (int j = 0; j < E; ++j)
        if (cols[j] >= 0 && k0 + u < mine) {
          const std::int64_t at = std::int64_t(row(k0 + u)) * sg.lane_stride + cols[j];
          rx[u][j] = xw[at];
          rdy[u][j] = dyw[at];
        }
    if constexpr (kHold) {
#pragma unroll
      for (int u = 0; u < U; ++u)
#pragma unroll
        for (int j = 0; j < E; ++j)
          if (cols[j] >= 0 && k0 + u < mine && row(k0 + u) < depth) {
            ring[held_slot<Traits>(row(k0 + u), j, false)] = rx[u][j];
            ring[held_slot<Traits>(row(k0 + u), j, true)] = rdy[u][j];
          }
    }
#pragma unroll
    for (int u = 0; u < U; ++u)
#pragma unroll
      for (int j = 0; j < E; ++j)
        if (cols[j] >= 0 && k0 + u < mine) f(row(k0 + u), j, from_bits(rx[u][j]), from_bits(rdy[u][j]));
  }
}

// Phase 2 of the kernel below: dx, items and rows in reverse. kRegisterLoop (no ring): `k` holds
// the channels of phase 1's last item, which is this phase's first, and an item's first rows are
// loaded before its group sums, their latency beside the sums' (bench/NOTES.md, "The register
// loop's kernel of its own").
template <typename Traits, bool kRegisterLoop, typename Channels, typename Clock>
__device__ __forceinline__ void stream_bwd_dx(const Params& p, const StreamGeometry<Traits>& sg, float* red,
                                              float* weighted, Bits<Vec<typename Traits::XType, Traits::kVectorSize>>* ring,
                                              int depth, Channels channels, BwdChannel (&k)[Traits::kPerThread][Traits::kVectorSize],
                                              Clock& phases) {
  constexpr int B = Traits::kBlockSize, V = Traits::kVectorSize, E = Traits::kPerThread;
  using T = typename Traits::XType;
  using VecT = Vec<T, V>;
  const int groups = sg.groups, lane = sg.lane;
  const int(&cols)[E] = sg.cols;
  const VecT* x = static_cast<const VecT*>(p.x);
  const VecT* dy = static_cast<const VecT*>(p.dy);
  const float2* group_parts = reinterpret_cast<const float2*>(p.group_stats);  // [items][G]
  const float inv_m = 1.f / (float(sg.cpg) * float(sg.hw));
  const int step = int(gridDim.x);
  for (int item = sg.workgroup_last_item(); item >= 0; item -= step) {
    std::int64_t base;
    int r0, rows;
    const int n = sg.locate(p, item, base, r0, rows);
    if (!kRegisterLoop || !sg.last_of_workgroup(item))
#pragma unroll
      for (int j = 0; j < E; ++j) channels(n, j, k[j]);  // first: its loads fly beside the group sums' loads
    // this thread's first row of the item (computed where it is used: earlier, the ring's kernel
    // compiled differently)
    auto first_row = [&] { return base + std::int64_t(r0 + lane) * sg.row_vectors; };
    [[maybe_unused]] RowBatch<Traits, true> batch;  // the register loop's first rows
    // the register loop's first item here was phase 1's last: its rows below p.hold_vectors come
    // from shared memory, where phase 1 kept them
    [[maybe_unused]] const int keep = kRegisterLoop && sg.last_of_workgroup(item) ? p.hold_vectors : 0;
    if constexpr (kRegisterLoop) batch.load(sg, x + first_row(), dy + first_row(), sg.mine(rows), 0, ring, keep);
    phases.lap(6);
    // the sample's A/M, B/M per group (into `weighted`, free since phase 1): its items' group sums
    // added, kWarpSize groups at a time (`red`, free since phase 1, their scratch)
    const float2* sums = group_parts + std::int64_t(n) * sg.parts * groups;
    for (int g0 = 0; g0 < groups; g0 += kWarpSize)
      column_sums<B>(sums + g0, groups, sg.parts, groups - g0 < kWarpSize ? groups - g0 : kWarpSize, red,
                     [&](int j, float a, float b) { weighted[g0 + j] = a * inv_m, weighted[groups + g0 + j] = b * inv_m; });
    phases.lap(7);
    float dslope[E][V], dconst[E][V];  // dx = slope dy' + dslope (x - mean) + dconst
#pragma unroll
    for (int j = 0; j < E; ++j) {
#pragma unroll
      for (int i = 0; i < V; ++i) {
        if (cols[j] >= 0) {
          const int g = int(p.cpg_div.div31(std::uint32_t(cols[j] * V + i)));
          dslope[j][i] = -k[j][i].rstd * k[j][i].rstd * weighted[groups + g];
          dconst[j][i] = -k[j][i].rstd * weighted[g];
        } else {
          dslope[j][i] = dconst[j][i] = 0.f;
        }
      }
    }
    phases.lap(3);
    const std::int64_t first = first_row();
    VecT* dxs = static_cast<VecT*>(p.dx) + first;
    auto store_dx = [&](int m, int j, const VecT& rx, const VecT& rdy) {
      float d[V], g[V];
      vector_terms<Traits::kActivation>(rx, rdy, k[j], p.swish_beta, d, g);
#pragma unroll
      for (int i = 0; i < V; ++i) d[i] = fmaf(k[j][i].slope, g[i], fmaf(dslope[j][i], d[i], dconst[j][i]));
      dxs[m * sg.lane_stride + cols[j]] = narrow<T, V>(d);
    };
    if constexpr (kRegisterLoop)
      each_row_from<Traits, true>(sg, x + first, dy + first, sg.mine(rows), batch, ring, keep, store_dx);
    else
      each_row<Traits, true>(sg, x + first, dy + first, sg.mine(rows), ring, depth, store_dx);
    phases.lap(4);
  }
}

// kRegisterLoop: the launcher gave no ring (short items, each_row's loop through registers), and
// phase 1's last item's channels are held for phase 2's first, and its first p.hold_vectors rows
// a thread (x and dy as loaded, in the ring's place in shared memory), so dx reads them from
// there, not from the L2. A kernel of its own, since the same reuse in the ring's kernel, even
// gated at run time, cost its long items 1-5% (8 more registers; bench/NOTES.md, "The stream
// backward's phase-2 setup").
template <typename Traits, bool kRegisterLoop>
__global__ void __launch_bounds__(Traits::kBlockSize, kStreamMinBlocks<Traits>) bwd_stream_cl_kernel(Params p) {
  constexpr int B = Traits::kBlockSize, V = Traits::kVectorSize, E = Traits::kPerThread;
  constexpr Activation kAct = Traits::kActivation;
  using T = typename Traits::XType;
  using Gm = typename Traits::GammaType;
  using VecT = Vec<T, V>;
  extern __shared__ __align__(16) unsigned char dynamic_smem[];
  const StreamGeometry<Traits> sg(p);
  const int c = sg.c, groups = sg.groups, cpg = sg.cpg, t = threadIdx.x, lanes = sg.lanes, lane = sg.lane;
  const int(&cols)[E] = sg.cols;
  const bool channel_sums = wants_channel_sums<Traits>(p);
  // shared memory (stream_cl_smem_floats, backward): [2][lanes][C] S1 and S2 of the lanes,
  // [2][C] gamma and beta, [2][C] an item's gamma S1 and gamma S2
  // (red, 2 lanes C floats, is at least 2 B, column_sums' scratch: lanes C >= B V / 2); then
  // the ring of rows in flight, [hold_vectors][2][E][B] vectors (each_row), or in the register
  // loop's kernel the rows held for dx, as many
  static_assert(V >= 2, "column_sums' scratch in red");
  float* red = reinterpret_cast<float*>(dynamic_smem);
  float* affine = red + 2 * lanes * c;
  float* weighted = affine + 2 * c;
  auto* ring = reinterpret_cast<Bits<VecT>*>(dynamic_smem + stream_cl_held_offset(c, lanes, true));
  const VecT* x = static_cast<const VecT*>(p.x);
  const VecT* dy = static_cast<const VecT*>(p.dy);
  float2* partials = reinterpret_cast<float2*>(p.partials);        // [items][C]: S1, S2
  float2* group_parts = reinterpret_cast<float2*>(p.group_stats);  // [items][G]: gamma S1, gamma S2
  {
    const Gm* gamma = static_cast<const Gm*>(p.gamma);
    const Gm* beta = static_cast<const Gm*>(p.beta);
    for (int ch = t; ch < c; ch += B) {
      affine[ch] = gamma ? to_float(gamma[ch]) : 1.f;
      affine[c + ch] = beta ? to_float(beta[ch]) : 0.f;
    }
    __syncthreads();
  }
  // the channels of column vector j of sample n (zeros past the row); gamma and beta V floats a
  // load, as stage_lane's stores: a thread's V channels one at a time are V-way bank conflicts
  auto channels = [&](int n, int j, BwdChannel(&kj)[V]) {
    if (cols[j] < 0) {
#pragma unroll
      for (int i = 0; i < V; ++i) kj[i] = BwdChannel{0.f, 0.f, 0.f, 0.f};
      return;
    }
    float gm[V], bt[V];
    load_vec<V>(affine + cols[j] * V, gm);
    load_vec<V>(affine + c + cols[j] * V, bt);
#pragma unroll
    for (int i = 0; i < V; ++i) {
      const int gi = n * groups + int(p.cpg_div.div31(std::uint32_t(cols[j] * V + i)));
      const float mean = p.mean[gi], rstd = p.rstd[gi];
      kj[i] = BwdChannel{mean, rstd, gm[i] * rstd, bt[i]};
    }
  };

  // bench/phase_times.sh: phase 1's loads | its reductions | barrier | phase 2's per-element constants |
  // its rows | dgamma, dbeta (before phase 2) | phase 2's channels and first rows issued | its group sums
  PhaseClock<8> phases;
  const int depth = kRegisterLoop ? 0 : p.hold_vectors;  // the ring's

  // Phase 1: per-channel sums of each item.
  BwdChannel k[E][V];
  for (int item = blockIdx.x; item < sg.items; item += gridDim.x) {
    std::int64_t base;
    int r0, rows;
    const int n = sg.locate(p, item, base, r0, rows);
    float s1[E][V], s2[E][V];
#pragma unroll
    for (int j = 0; j < E; ++j) {
      channels(n, j, k[j]);
#pragma unroll
      for (int i = 0; i < V; ++i) s1[j][i] = 0.f, s2[j][i] = 0.f;
    }
    const std::int64_t first = base + std::int64_t(r0 + lane) * sg.row_vectors;
    // the workgroup's last item here is its first in dx: the register loop keeps its first rows
    const int held = kRegisterLoop && sg.last_of_workgroup(item) ? p.hold_vectors : 0;
    each_row<Traits, false, kRegisterLoop>(sg, x + first, dy + first, sg.mine(rows), ring, kRegisterLoop ? held : depth,
                            [&](int, int j, const VecT& rx, const VecT& rdy) {
                              float d[V], g[V];
                              vector_terms<kAct>(rx, rdy, k[j], p.swish_beta, d, g);
#pragma unroll
                              for (int i = 0; i < V; ++i) {
                                s1[j][i] += g[i];
                                s2[j][i] = fmaf(g[i], d[i], s2[j][i]);
                              }
                            });
#pragma unroll
    for (int j = 0; j < E; ++j)
#pragma unroll
      for (int i = 0; i < V; ++i) s2[j][i] *= k[j][i].rstd;  // S2 = rstd sum dy' (x - mean)
    phases.lap(0);
    __syncthreads();  // the previous item's lanes and weighted sums were read
    sg.stage_lane(red, s1, s2);
    __syncthreads();
    for (int ch = t; ch < c; ch += B) {
      float a, b;
      sg.lane_total(red, ch, a, b);
      if (channel_sums) partials[std::int64_t(item) * c + ch] = make_float2(a, b);
      if constexpr (kWritesDx<Traits>) weighted[ch] = affine[ch] * a, weighted[c + ch] = affine[ch] * b;
    }
    if constexpr (kWritesDx<Traits>) {
      __syncthreads();
      for (int g = t / kWarpSize; g < groups; g += B / kWarpSize) {  // a wavefront a group
        float a = 0.f, b = 0.f;
        for (int i = t % kWarpSize; i < cpg; i += kWarpSize) a += weighted[g * cpg + i], b += weighted[c + g * cpg + i];
        a = warp_sum(a);
        b = warp_sum(b);
        if (t % kWarpSize == 0) group_parts[std::int64_t(item) * groups + g] = make_float2(a, b);
      }
    }
    phases.lap(1);
  }
  grid_barrier(p.counters, 0);
  phases.lap(2);

  // dgamma = sum S2, dbeta = sum S1 over every item, kWarpSize channels a workgroup at a time
  // (before dx: after it, what they need was kept live through dx's loop, and bf16 spilled)
  if (channel_sums)
    for (int c0 = int(blockIdx.x) * kWarpSize; c0 < c; c0 += int(gridDim.x) * kWarpSize)
      column_sums<B>(partials + c0, c, sg.items, c - c0 < kWarpSize ? c - c0 : kWarpSize, red, [&](int j, float a, float b) {
        static_cast<Gm*>(p.dgamma)[c0 + j] = from_float<Gm>(b);
        static_cast<Gm*>(p.dbeta)[c0 + j] = from_float<Gm>(a);
      });
  phases.lap(5);
  if constexpr (kWritesDx<Traits>) stream_bwd_dx<Traits, kRegisterLoop>(p, sg, red, weighted, ring, depth, channels, k, phases);
  phases.report("bwd_stream_cl");
}

template <typename Traits>
struct StreamBwdLauncher {
  static hipError_t launch(const Params& p, hipStream_t stream) {
    const StreamShape shape = stream_cl_shape(p.channels, Traits::kVectorSize, Traits::kBlockSize);
    const std::int64_t base = stream_cl_held_offset(p.channels, shape.lanes, true);
    std::int64_t room = 0;
    if (const hipError_t e = stream_hold_bytes(kStreamMinBlocks<Traits>, base, &room); e != hipSuccess) return e;
    // a ring of as many rows a thread as there is room for, up to kStreamRingMost, where a
    // thread's rows of an item are that many (stream_ring_depth); without one, as many of a
    // thread's rows of its last item as there is room for are held for dx (none for dgb, which
    // writes no dx)
    const std::int64_t row_bytes =
        2 * std::int64_t(Traits::kBlockSize) * Traits::kPerThread * std::int64_t(sizeof(Vec<typename Traits::XType, Traits::kVectorSize>));
    const std::int64_t rows = (p.part_rows + shape.lanes - 1) / shape.lanes, fits = room / row_bytes;
    const std::int64_t depth = stream_ring_depth(rows, fits);
    Params q = p;
    q.hold_vectors = std::int32_t(depth > 0 ? depth : kWritesDx<Traits> ? std::min(rows, fits) : 0);
    return launch_persistent(depth == 0 ? &bwd_stream_cl_kernel<Traits, true> : &bwd_stream_cl_kernel<Traits, false>,
                             q, Traits::kBlockSize,
                             std::size_t(base + q.hold_vectors * row_bytes), true, kStreamCounterWords, stream, true);
  }
};

}  // namespace hipgn::kernels
