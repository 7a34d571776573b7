// Family split: several workgroups a group, partial results through the workspace and a second
// kernel, for problems with fewer groups than compute units.
#pragma once

#include <cstdint>

#include "hipgn/kernels/family.hpp"
#include "hipgn/kernels/families/grid.hpp"
#include "hipgn/kernels/primitives/dependent.hpp"
#include "hipgn/params.hpp"

namespace hipgn::kernels {

// Family split, pass 1: workgroup (group, slice) writes the statistics of its slice of
// kBlockSize * kPerThread vectors to the workspace. Group after group (the slice fastest), so
// that the groups read last are the last ones, where pass 2 starts.
template <typename Traits>
__global__ void __launch_bounds__(Traits::kBlockSize) fwd_split_stats_kernel(Params p) {
  allow_dependent_launch();  // the apply kernel (launch_dependent)
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
  wait_for_prior_grid();
  constexpr std::int64_t kChunk = std::int64_t(Traits::kBlockSize) * Traits::kPerThread;
  const std::uint32_t slices = std::uint32_t(p.slices), b = gridDim.x - 1 - blockIdx.x;
  const std::int64_t group = b / slices, slice = b - group * slices;
  const GroupView<Traits> view(p, group);
  // the slice (one batch a thread: kChunk vectors) and, channels-first, its gamma and beta are
  // loaded first, so that their latency (L2, where pass 1 just read x) runs beside the merge
  // below, not after it
  const std::int64_t first = slice * kChunk, end = first + kChunk < p.vectors ? first + kChunk : p.vectors;
  const Batch<Traits, Traits::kLayout == Layout::channels_first> batch(p, view, first + threadIdx.x, end);
  // every wavefront merges the group's partials itself, in one fixed order (lane i takes
  // partials i, i + kWarpSize, ..., then the shuffle tree, lane 0's result to all): every
  // workgroup of the group gets the same bits, with no workgroup barrier on the chain
  Stats s{0.f, 0.f, 0.f};
  for (std::int64_t i = threadIdx.x % kWarpSize; i < p.slices; i += kWarpSize) {
    const float* w = p.workspace + (group * p.slices + i) * 3;
    s = merge(s, Stats{w[0], w[1], w[2]});
  }
  s = lane0(warp_merge(s));
  const float rstd = rsqrtf(s.m2 / s.n + p.eps);
  if (slice == 0 && threadIdx.x == 0) save_stats(p, group, s.mean, rstd);
  batch.normalize(p, view, s.mean, rstd);
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
  allow_dependent_launch();  // the fold or dx kernel (launch_dependent)
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
    allow_dependent_launch();  // the fold, dx or dgamma/dbeta kernel (launch_dependent)
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
    // the dx or dgamma/dbeta kernel (launch_dependent) only now: let in at the start, its waiting
    // workgroups slowed this grid, whose few workgroups hold the GPU at once (cl bwd 1.12-1.14x)
    allow_dependent_launch();
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
  wait_for_prior_grid();
  allow_dependent_launch();
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
  const std::int64_t first = slice * kChunk, end = first + kChunk < p.vectors ? first + kChunk : p.vectors;
  // A / M and B / M from the group's channel sums, after this thread's first vector is loaded:
  // x and dy are the caller's, ready before the kernels before this one began, so their loads
  // do not wait for those kernels to finish; the sums (and dx, which may alias x) do
  const auto ab = [&] {
    wait_for_prior_grid();
    float s[2] = {0.f, 0.f};
    for (std::int64_t c = threadIdx.x; c < p.channels_per_group; c += Traits::kBlockSize) {
      const float* w = p.workspace + (sample * p.channels + view.channel0 + c) * 2;
      const float g = Affine<Traits>(p, view.channel0 + c).gamma;
      s[0] += g * w[0];
      s[1] += g * w[1];
    }
    block_sum_array<Traits::kBlockSize>(s);
    const float m = float(p.group_elements);
    return make_float2(s[0] / m, s[1] / m);
  };
  const float mean = p.mean[group], rstd = p.rstd[group];
  write_dx<Traits, true>(p, view, first, end, slice == 0, slice == p.slices - 1, mean, rstd, ab);
  // dgamma and dbeta where the op writes them: the sums are whole (the kernels before this one
  // made them), so the first sample's workgroups add them up over the samples, each group's
  // channels spread over its slices. A kernel of their own (launch_grid_gamma_beta) was one
  // more node in the caller's graph, ~1 us (bench/NOTES.md, "Fixed costs, measured apart").
  if (p.dgamma != nullptr && sample == 0)
    for (std::int64_t c = slice * Traits::kBlockSize + threadIdx.x; c < p.channels_per_group;
         c += std::int64_t(p.slices) * Traits::kBlockSize)
      write_gamma_beta<typename Traits::GammaType, 8>(p, p.num_groups / p.groups_per_sample, view.channel0 + c);
}

template <>
struct FamilyLauncher<Family::split> {
  template <typename Traits>
  static hipError_t launch(const Params& p, hipStream_t stream) {
    const dim3 block(Traits::kBlockSize);
    if constexpr (Traits::kOp == Op::fwd) {
      // one-dimensional (at most 2^31 - 1 workgroups: Instance::supports)
      const dim3 grid(unsigned(std::int64_t(p.num_groups) * p.slices));
      fwd_split_stats_kernel<Traits><<<grid, block, 0, stream>>>(p);
      const hipError_t e = hipGetLastError();
      if (e != hipSuccess) return e;
      return launch_dependent(&fwd_split_apply_kernel<Traits>, grid, block, 0, stream, p);
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
        const hipError_t f = launch_dependent(&bwd_fold_pieces_kernel<128>,
                                              dim3(unsigned(std::int64_t(p.num_groups) * p.channels_per_group)),
                                              dim3(128), 0, stream, p);
        if (f != hipSuccess) return f;
      }
      if constexpr (kWritesDx<Traits>) {
        const hipError_t e = hipGetLastError();
        if (e != hipSuccess) return e;
        // dgamma and dbeta with dx
        return launch_dependent(&bwd_split_dx_kernel<Traits>, dim3(unsigned(std::int64_t(p.num_groups) * p.slices)),
                                block, 0, stream, p);
      }
      return launch_grid_gamma_beta<Traits>(p, stream);
    }
  }
};

}  // namespace hipgn::kernels
