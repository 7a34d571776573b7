// The stream backward, channels-last (ops dx, dgb, bwd): the forward's structure
// (stream_fwd.hpp), one cooperative launch in three phases split by grid barriers, each a pure
// stream with nothing held across it.
//
//   1. Items (sample, part of its rows) read x and dy whole rows at a time, 16 bytes an access
//      whatever C/G is. A thread keeps fixed channels and sums, per channel, dy' and
//      dy' (x - mean) in registers (the saved statistics give xhat directly; the shift by the
//      mean keeps the second sum free of cancellation). Shared memory adds the lanes, and the
//      item's per-channel (S1, S2) go to the workspace.
//   2. Teams of lanes add each (sample, channel)'s parts in a fixed order: S1, S2 of the
//      sample, the same bits every run.
//   3. dgamma and dbeta: a thread per channel adds the samples in order. dx: items are read
//      again in reverse, each item's rows last first, so the rows phase 1 read last come from
//      L2; the item's per-group A/M and B/M are formed once in shared memory, and every element
//      is a few FMAs: dx = rstd gamma dy' - rstd A/M - rstd^2 B/M (x - mean).
//
// Against the resident backward, which holds a slice of x and dy in registers and exchanges
// (A, B) with its sample's other workgroups item by item, the loops here only load, add and
// store, and the waits are the two barriers. x and dy are read twice, the second time from L2
// where the tensors (or their last part) fit there.
#pragma once

#include <cstdint>

#include "hipgn/kernels/families/stream_fwd.hpp"
#include "hipgn/kernels/primitives/activation.hpp"
#include "hipgn/kernels/primitives/backward.hpp"
#include "hipgn/kernels/primitives/exchange.hpp"
#include "hipgn/kernels/primitives/persistent.hpp"
#include "hipgn/kernels/primitives/phase_clock.hpp"
#include "hipgn/kernels/primitives/reduce.hpp"
#include "hipgn/kernels/primitives/target.hpp"
#include "hipgn/kernels/primitives/vector.hpp"
#include "hipgn/params.hpp"

namespace hipgn::kernels {

// Phase 3b of the kernel below: dx, items and rows in reverse.
template <typename Traits, typename Channels, typename Clock>
__device__ __forceinline__ void stream_bwd_dx(const Params& p, const StreamGeometry<Traits>& sg, const float* affine,
                                              float* weighted, float* red, Channels channels, Clock& phases) {
  constexpr int B = Traits::kBlockSize, V = Traits::kVectorSize, E = Traits::kPerThread, U = kStreamUnroll;
  using T = typename Traits::XType;
  using VecT = Vec<T, V>;
  const int c = sg.c, groups = sg.groups, cpg = sg.cpg, t = threadIdx.x, lane = sg.lane;
  const int(&cols)[E] = sg.cols;
  const T* x = static_cast<const T*>(p.x);
  const T* dy = static_cast<const T*>(p.dy);
  const float2* totals = reinterpret_cast<const float2*>(p.group_stats);
  const float inv_m = 1.f / (float(cpg) * float(sg.hw));
  const int first_item = int(blockIdx.x), step = int(gridDim.x);
  for (int item = first_item + (sg.items - 1 - first_item) / step * step; item >= 0; item -= step) {
    std::int64_t base;
    int r0, rows;
    const int n = sg.locate(p, item, base, r0, rows);
    // the sample's A/M, B/M per group: gamma S1 and gamma S2 per channel, then a wavefront per
    // group adds its channels (into red, free since phase 1)
    __syncthreads();  // the previous item's sums were read
    for (int ch = t; ch < c; ch += B) {
      const float2 v = load_shared_partial(totals + std::int64_t(n) * c + ch);
      weighted[ch] = affine[ch] * v.x;
      weighted[c + ch] = affine[ch] * v.y;
    }
    __syncthreads();
    for (int g = t / kWarpSize; g < groups; g += B / kWarpSize) {
      float a = 0.f, b = 0.f;
      for (int i = t % kWarpSize; i < cpg; i += kWarpSize) a += weighted[g * cpg + i], b += weighted[c + g * cpg + i];
      a = warp_sum(a);
      b = warp_sum(b);
      if (t % kWarpSize == 0) red[g] = a * inv_m, red[groups + g] = b * inv_m;
    }
    __syncthreads();
    BwdChannel k[E][V];
    float dslope[E][V], dconst[E][V];  // dx = slope dy' + dslope (x - mean) + dconst
#pragma unroll
    for (int j = 0; j < E; ++j) {
      channels(n, j, k[j]);
#pragma unroll
      for (int i = 0; i < V; ++i) {
        if (cols[j] >= 0) {
          const int g = int(p.cpg_div.div(std::uint32_t(cols[j] * V + i)));
          dslope[j][i] = -k[j][i].rstd * k[j][i].rstd * red[groups + g];
          dconst[j][i] = -k[j][i].rstd * red[g];
        } else {
          dslope[j][i] = dconst[j][i] = 0.f;
        }
      }
    }
    phases.lap(5);
    const int mine = sg.mine(rows);
    const std::int64_t first = base + std::int64_t(r0 + lane) * sg.row_vectors;
    const VecT* xs = reinterpret_cast<const VecT*>(x) + first;
    const VecT* dys = reinterpret_cast<const VecT*>(dy) + first;
    VecT* dxs = static_cast<VecT*>(p.dx) + first;
#pragma unroll 1
    for (int m = mine - 1; m >= 0; m -= U) {
      VecT rx[U][E], rdy[U][E];
#pragma unroll
      for (int u = 0; u < U; ++u)
#pragma unroll
        for (int j = 0; j < E; ++j)
          if (cols[j] >= 0 && m - u >= 0) {
            rx[u][j] = xs[(m - u) * sg.lane_stride + cols[j]];
            rdy[u][j] = dys[(m - u) * sg.lane_stride + cols[j]];
          }
#pragma unroll
      for (int u = 0; u < U; ++u)
#pragma unroll
        for (int j = 0; j < E; ++j) {
          if (cols[j] >= 0 && m - u >= 0) {
            float d[V], g[V];
            vector_terms<Traits::kActivation>(rx[u][j], rdy[u][j], k[j], p.swish_beta, d, g);
#pragma unroll
            for (int i = 0; i < V; ++i) d[i] = fmaf(k[j][i].slope, g[i], fmaf(dslope[j][i], d[i], dconst[j][i]));
            dxs[(m - u) * sg.lane_stride + cols[j]] = narrow<T, V>(d);
          }
        }
    }
    phases.lap(6);
  }
}

template <typename Traits>
__global__ void __launch_bounds__(Traits::kBlockSize, kStreamMinBlocks<Traits>) bwd_stream_cl_kernel(Params p) {
  constexpr int B = Traits::kBlockSize, V = Traits::kVectorSize, E = Traits::kPerThread, U = kStreamUnroll;
  constexpr Activation kAct = Traits::kActivation;
  using T = typename Traits::XType;
  using Gm = typename Traits::GammaType;
  using VecT = Vec<T, V>;
  extern __shared__ __align__(16) unsigned char dynamic_smem[];
  const StreamGeometry<Traits> sg(p);
  const int c = sg.c, groups = sg.groups, cpg = sg.cpg, t = threadIdx.x, lanes = sg.lanes, lane = sg.lane;
  const int(&cols)[E] = sg.cols;
  const int n_samples = int(p.groups_div.div(std::uint32_t(p.num_groups)));
  // shared memory (stream_cl_smem_floats, backward): [2][lanes][C] S1 and S2 of the lanes,
  // [2][C] gamma and beta, [2][C] an item's gamma S1 and gamma S2 (phase 3)
  float* red = reinterpret_cast<float*>(dynamic_smem);
  float* affine = red + 2 * lanes * c;
  float* weighted = affine + 2 * c;
  const T* x = static_cast<const T*>(p.x);
  const T* dy = static_cast<const T*>(p.dy);
  float2* partials = reinterpret_cast<float2*>(p.partials);  // [items][C]
  float2* totals = reinterpret_cast<float2*>(p.group_stats);  // [N][C]
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
      const int gi = n * groups + int(p.cpg_div.div(std::uint32_t(cols[j] * V + i)));
      const float mean = p.mean[gi], rstd = p.rstd[gi];
      kj[i] = BwdChannel{mean, rstd, gm[i] * rstd, bt[i]};
    }
  };

  // bench/phase_times.sh: phase 1's loads | its reductions | barrier | phase 2 | barrier | phase 3's
  // dgamma, dbeta and per-item constants | its rows
  PhaseClock<7> phases;

  // Phase 1: per-channel sums of each item.
  for (int item = blockIdx.x; item < sg.items; item += gridDim.x) {
    std::int64_t base;
    int r0, rows;
    const int n = sg.locate(p, item, base, r0, rows);
    BwdChannel k[E][V];
    float s1[E][V], s2[E][V];
#pragma unroll
    for (int j = 0; j < E; ++j) {
      channels(n, j, k[j]);
#pragma unroll
      for (int i = 0; i < V; ++i) s1[j][i] = 0.f, s2[j][i] = 0.f;
    }
    const int mine = sg.mine(rows);
    const std::int64_t first = base + std::int64_t(r0 + lane) * sg.row_vectors;
    const VecT* xs = reinterpret_cast<const VecT*>(x) + first;
    const VecT* dys = reinterpret_cast<const VecT*>(dy) + first;
#pragma unroll 1
    for (int m = 0; m < mine; m += U) {
      VecT rx[U][E], rdy[U][E];
#pragma unroll
      for (int u = 0; u < U; ++u)
#pragma unroll
        for (int j = 0; j < E; ++j)
          if (cols[j] >= 0 && m + u < mine) {
            rx[u][j] = xs[(m + u) * sg.lane_stride + cols[j]];
            rdy[u][j] = dys[(m + u) * sg.lane_stride + cols[j]];
          }
#pragma unroll
      for (int u = 0; u < U; ++u)
#pragma unroll
        for (int j = 0; j < E; ++j) {
          if (cols[j] >= 0 && m + u < mine) {
            float d[V], g[V];
            vector_terms<kAct>(rx[u][j], rdy[u][j], k[j], p.swish_beta, d, g);
#pragma unroll
            for (int i = 0; i < V; ++i) {
              s1[j][i] += g[i];
              s2[j][i] = fmaf(g[i], d[i], s2[j][i]);
            }
          }
        }
    }
#pragma unroll
    for (int j = 0; j < E; ++j)
#pragma unroll
      for (int i = 0; i < V; ++i) s2[j][i] *= k[j][i].rstd;  // S2 = rstd sum dy' (x - mean)
    phases.lap(0);
    __syncthreads();  // the previous item's lanes were read
    sg.stage_lane(red, s1, s2);
    __syncthreads();
    for (int ch = t; ch < c; ch += B) {
      float a, b;
      sg.lane_total(red, ch, a, b);
      partials[std::int64_t(item) * c + ch] = make_float2(a, b);
    }
    phases.lap(1);
  }
  grid_barrier(p.counters, 0);
  phases.lap(2);

  // Phase 2: S1, S2 of every (sample, channel), a team of L lanes each (L a power of two, so
  // that a team's parts are few): lanes add parts q = l, l + L, ... in order, then a fixed
  // shuffle tree; the team's first lane writes.
  {
    int team_lanes = 1;
    while (team_lanes < kWarpSize && (sg.parts + team_lanes - 1) / team_lanes > 8) team_lanes *= 2;
    const std::int64_t pairs = std::int64_t(n_samples) * c, lanes_needed = pairs * team_lanes;
    const int lane_id = t % kWarpSize, warps = B / kWarpSize;
    const std::int64_t all_warps = std::int64_t(gridDim.x) * warps;
    for (std::int64_t w0 = (std::int64_t(blockIdx.x) * warps + t / kWarpSize) * kWarpSize; w0 < lanes_needed;
         w0 += all_warps * kWarpSize) {
      const std::int64_t idx = w0 + lane_id, team = idx / team_lanes;
      const int l = int(idx - team * team_lanes);
      float a = 0.f, b = 0.f;
      if (team < pairs) {
        const int n = int(team / c), ch = int(team - std::int64_t(n) * c);
        const float2* w = partials + std::int64_t(n) * sg.parts * c + ch;
        constexpr int kBatch = 4;  // loads in flight before any is added
        for (int q0 = l; q0 < sg.parts; q0 += kBatch * team_lanes) {
          float2 v[kBatch];
#pragma unroll
          for (int u = 0; u < kBatch; ++u) {
            const int q = q0 + u * team_lanes;
            v[u] = q < sg.parts ? load_shared_partial(w + std::int64_t(q) * c) : make_float2(0.f, 0.f);
          }
#pragma unroll
          for (int u = 0; u < kBatch; ++u) a += v[u].x, b += v[u].y;
        }
      }
      for (int o = team_lanes / 2; o > 0; o /= 2) {
        a += __shfl_xor(a, o, kWarpSize);
        b += __shfl_xor(b, o, kWarpSize);
      }
      if (team < pairs && l == 0) totals[team] = make_float2(a, b);
    }
  }
  phases.lap(3);
  grid_barrier(p.counters, 1);
  phases.lap(4);

  // Phase 3a: dgamma = sum_n S2, dbeta = sum_n S1, a thread per channel, samples in order.
  if (wants_channel_sums<Traits>(p))
    for (int ch = int(blockIdx.x) * B + t; ch < c; ch += int(gridDim.x) * B) {
      float a = 0.f, b = 0.f;
      for (int n = 0; n < n_samples; ++n) {
        const float2 v = load_shared_partial(totals + std::int64_t(n) * c + ch);
        a += v.x, b += v.y;
      }
      static_cast<Gm*>(p.dgamma)[ch] = from_float<Gm>(b);
      static_cast<Gm*>(p.dbeta)[ch] = from_float<Gm>(a);
    }
  if constexpr (kWritesDx<Traits>) stream_bwd_dx<Traits>(p, sg, affine, weighted, red, channels, phases);
  else phases.lap(5);
  phases.report("bwd_stream_cl");
}

template <typename Traits>
struct StreamBwdLauncher {
  static hipError_t launch(const Params& p, hipStream_t stream) {
    const StreamShape shape = stream_cl_shape(p.channels, Traits::kVectorSize, Traits::kBlockSize);
    const std::size_t smem = std::size_t(stream_cl_smem_floats(p.channels, shape.lanes, true)) * sizeof(float);
    return launch_persistent(&bwd_stream_cl_kernel<Traits>, p, Traits::kBlockSize, smem, true, kStreamCounterWords,
                             stream, true);
  }
};

}  // namespace hipgn::kernels
