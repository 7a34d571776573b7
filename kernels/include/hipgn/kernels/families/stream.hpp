// Family stream: two streaming passes over x in one cooperative launch, around grid barriers
// (stream_fwd.hpp: the channels-last forward; stream_fwd_cf.hpp: the channels-first forward;
// stream_bwd.hpp: the channels-last backward).
#pragma once

#include "hipgn/kernels/families/stream_bwd.hpp"
#include "hipgn/kernels/families/stream_fwd.hpp"
#include "hipgn/kernels/families/stream_fwd_cf.hpp"
#include "hipgn/kernels/family.hpp"
#include "hipgn/params.hpp"

namespace hipgn::kernels {

template <>
struct FamilyLauncher<Family::stream> {
  template <typename Traits>
  static hipError_t launch(const Params& p, hipStream_t stream) {
    static_assert(Traits::kOp == Op::fwd || Traits::kLayout == Layout::channels_last,
                  "the stream backward is channels-last (codegen/families.py)");
    if constexpr (Traits::kOp == Op::fwd && Traits::kLayout == Layout::channels_first)
      return StreamCfFwdLauncher<Traits>::launch(p, stream);
    else if constexpr (Traits::kOp == Op::fwd)
      return StreamFwdLauncher<Traits>::launch(p, stream);
    else
      return StreamBwdLauncher<Traits>::launch(p, stream);
  }
};

}  // namespace hipgn::kernels
