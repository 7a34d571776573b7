// Where a group's elements lie: the sample of a group, the layout view of a group as rows x
// cols (opt-in uneven groups included), a cursor over a channels-first group's elements, and
// the forward's saved statistics.
#pragma once

#include <cstdint>
#include <type_traits>

#include "hipgn/kernels/primitives/vector.hpp"
#include "hipgn/params.hpp"
#include "hipgn/platform.hpp"

namespace hipgn::kernels {

// The sample of group (n, g) = n * G + g for the families with a grid of groups, whose group is
// a grid index below 2^31: a 32-bit division, inline, where a 64-bit one is a called helper
// around which ptxas spills registers.
__device__ __forceinline__ std::int64_t group_sample(const Params& p, std::int64_t group) {
  return std::int64_t(std::uint32_t(group) / std::uint32_t(p.groups_per_sample));
}
// ... and by the host's multiply-high for G (Params::groups_div): the onchip forward's, whose
// gamma and beta loads waited on the division's ~25 dependent instructions (bench/NOTES.md, "The
// small forward, piece by piece"). Not elsewhere: its multiplier and shift took the split
// forward's stats kernel from 63 to 70 registers (three 256-thread workgroups a compute unit
// where four ran: vae_64x512 9.5 -> 11.6 us) and made ptxas spill 8-32 bytes in eight looped
// and onchip backward kernels.
__device__ __forceinline__ std::int64_t group_sample_by_multiply(const Params& p, std::int64_t group) {
  return std::int64_t(p.groups_div.div31(std::uint32_t(group)));
}

// The channel (of its group) and spatial position of consecutive elements of a channels-first
// group, from one division at the first and a step per element after it: a vector of a span
// crosses a row end when the spatial size is not a multiple of the vector.
struct SpatialCursor {
  std::int64_t channel, position;
  __device__ __forceinline__ SpatialCursor(const Params& p, std::int64_t element)
      : channel(std::int64_t(p.spatial.div(std::uint64_t(element)))),
        position(element - channel * p.spatial_size) {}
  // steps to the next element; true when it starts a new channel
  __device__ __forceinline__ bool next(const Params& p) {
    if (++position < p.spatial_size) return false;
    position = 0;
    ++channel;
    return true;
  }
};

// Opt-in uneven groups (Problem::uneven_groups: C % G != 0; groups 0..G-2 of a sample take
// C/G channels, floored, and the last one the rest). A family that runs them instantiates its
// kernels with UnevenGroups<Traits>, whose GroupView takes each group's own size from Params'
// last_* fields; every other family's view reads the launch's one size, with no per-group
// choice in its code.
template <typename Traits>
struct UnevenGroups : Traits {
  static constexpr bool kUnevenGroups = true;
};
template <typename Traits, typename = void>
inline constexpr bool kUneven = false;
template <typename Traits>
inline constexpr bool kUneven<Traits, std::void_t<decltype(Traits::kUnevenGroups)>> = Traits::kUnevenGroups;

// A group (n, g) is viewed as rows x cols with cols contiguous in memory:
//   channels-first (N, C, S...): rows = C/G channels,  cols = S (spatial), row stride S
//   channels-last  (N, S..., C): rows = S positions,   cols = C/G,         row stride C
// Threads access whole vectors of Traits::kVectorSize elements along cols (the runtime checks
// cols and the pointers allow it), so one vector lies in one channel (channels-first) or in
// consecutive channels (channels-last). With uneven groups the last group of a sample has more
// channels: more rows (channels-first) or wider rows (channels-last).
template <typename Traits>
struct GroupView {
  static constexpr int V = Traits::kVectorSize;
  static constexpr bool kChannelsFirst = Traits::kLayout == Layout::channels_first;
  std::int64_t base;      // offset of the group's first element
  std::int64_t channel0;  // the group's first channel
  // The last group of its sample, wider where the groups are uneven (only families that run
  // uneven groups ask). Its sizes are read from Params where used, not held: a held copy of
  // each kept the looped backward's registers past its budget (ptxas spilled).
  bool last;

  __device__ __forceinline__ GroupView(const Params& p, std::int64_t group)
      : GroupView(p, group, group_sample(p, group)) {}
  // with the group's sample n found by the caller
  __device__ __forceinline__ GroupView(const Params& p, std::int64_t group, std::int64_t n) {
    const std::int64_t g = group - n * p.groups_per_sample;
    base = n * p.sample_stride + g * p.group_stride;
    channel0 = g * p.channels_per_group;
    last = kUneven<Traits> && g == p.groups_per_sample - 1;
  }
  // the group's channels, vectors (Params::vectors), elements and vectors a row
  __device__ __forceinline__ std::int64_t channels(const Params& p) const {
    return last ? p.last_channels : p.channels_per_group;
  }
  __device__ __forceinline__ std::int64_t vectors(const Params& p) const { return last ? p.last_vectors : p.vectors; }
  __device__ __forceinline__ std::int64_t elements(const Params& p) const {
    return last ? p.last_group_elements : p.group_elements;
  }
  __device__ __forceinline__ const FastDivmod& per_row(const Params& p) const {
    return last ? p.last_vectors_per_row : p.vectors_per_row;
  }
  // Vector q of the group: its element offset and the channel of its first element.
  __device__ __forceinline__ void locate(const Params& p, std::int64_t q, std::int64_t& offset,
                                         std::int64_t& channel) const {
    const FastDivmod& cols = per_row(p);
    const std::int64_t row = cols.div(q), col = (q - row * cols.divisor) * V;
    offset = base + row * p.row_stride + col;
    channel = channel0 + (kChannelsFirst ? row : col);
  }
};

// The forward's optional saved statistics, [N, G] fp32: where the caller has already chosen the
// thread (its own branch, or a loop over groups), a branch on each pointer.
__device__ __forceinline__ void save_stats(const Params& p, std::int64_t group, float mean, float rstd) {
  if (p.mean) p.mean[group] = mean;
  if (p.rstd) p.rstd[group] = rstd;
}
// The same by the thread where `writer` holds, with no branch (store_if): for the onchip forward,
// whose writer's wavefront otherwise waits at the branch's end on its chain. (Not everywhere: in
// the channels-last resident forward's loop over groups it cost ptxas a register, 4 more bytes
// of spill loads.) The pointers as the caller read them (the onchip forward's by param_late).
__device__ __forceinline__ void save_stats(float* mean_out, float* rstd_out, std::int64_t group, float mean, float rstd,
                                           bool writer) {
  store_if(mean_out, group, mean, writer);
  store_if(rstd_out, group, rstd, writer);
}
__device__ __forceinline__ void save_stats(const Params& p, std::int64_t group, float mean, float rstd, bool writer) {
  save_stats(p.mean, p.rstd, group, mean, rstd, writer);
}

}  // namespace hipgn::kernels
