// Family looped: one workgroup per group of any size, x (and dy) read twice; the generic
// family, which runs every valid problem (at vector 1), uneven groups included.
#pragma once

#include <cstdint>

#include "hipgn/kernels/family.hpp"
#include "hipgn/kernels/families/grid.hpp"
#include "hipgn/params.hpp"

namespace hipgn::kernels {

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

// Family looped: one workgroup per group of any size, uneven groups too (instantiated with
// UnevenGroups<Traits>, launched for them alone). Pass 1 sums unit by unit (and keeps A and
// B); pass 2 writes dx, reading x and dy again.
template <typename Traits>
__global__ void __launch_bounds__(Traits::kBlockSize) bwd_looped_kernel(Params p) {
  using U = Unit<Traits>;
  const std::int64_t group = blockIdx.x, sample = group_sample(p, group), g = group - sample * p.groups_per_sample;
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
  // thread 0 stored every sum: it arrives with no barrier first
  GroupArrival arrival;
  if (gamma_beta_by_arrival<Traits>(p) && threadIdx.x == 0) arrival.arrive(p, g);
  if constexpr (kWritesDx<Traits>) {
    const float m = float(view.elements(p));
    const auto ab = [&] { return make_float2(a / m, b / m); };
    write_dx<Traits, false>(p, view, 0, view.vectors(p), true, true, mean, rstd, ab);
  }
  arrival.finish(p, view, g);
}

template <>
struct FamilyLauncher<Family::looped> {
  // uneven groups take kernels of their own: the even problems' keep their registers (47
  // against 146 for the channels-first Swish backward at 8 fp16 a vector; bench/NOTES.md,
  // "Uneven groups")
  template <typename Traits>
  static hipError_t launch(const Params& p, hipStream_t stream) {
    const bool uneven = p.last_channels != p.channels_per_group;
    const dim3 grid(p.num_groups), block(Traits::kBlockSize);
    if constexpr (Traits::kOp == Op::fwd) {
      const auto kernel = uneven ? &fwd_looped_kernel<UnevenGroups<Traits>> : &fwd_looped_kernel<Traits>;
      kernel<<<grid, block, 0, stream>>>(p);
      return hipGetLastError();
    } else {
      const auto kernel = uneven ? &bwd_looped_kernel<UnevenGroups<Traits>> : &bwd_looped_kernel<Traits>;
      kernel<<<grid, block, 0, stream>>>(p);
      return gamma_beta_by_arrival<Traits>(p) ? hipGetLastError() : launch_grid_gamma_beta<Traits>(p, stream);
    }
  }
};

}  // namespace hipgn::kernels
