// The launcher a generated instance registers: forward or backward by the instance's op.
#pragma once

#include "hipgn/kernels/groupnorm_bwd.hpp"
#include "hipgn/kernels/groupnorm_fwd.hpp"
#include "hipgn/kernels/resident_bwd.hpp"
#include "hipgn/kernels/resident_fwd.hpp"
#include "hipgn/kernels/stream_bwd.hpp"
#include "hipgn/kernels/stream_fwd.hpp"
#include "hipgn/kernels/stream_fwd_cf.hpp"

namespace hipgn::kernels {

template <typename Traits, Family F>
struct Launcher {
  static hipError_t launch(const Params& p, hipStream_t stream) {
    if constexpr (F == Family::stream) {
      static_assert(Traits::kOp == Op::fwd || Traits::kLayout == Layout::channels_last,
                    "the stream backward is channels-last (codegen/families.py)");
      if constexpr (Traits::kOp == Op::fwd && Traits::kLayout == Layout::channels_first)
        return StreamCfFwdLauncher<Traits>::launch(p, stream);
      else if constexpr (Traits::kOp == Op::fwd) return StreamFwdLauncher<Traits>::launch(p, stream);
      else return StreamBwdLauncher<Traits>::launch(p, stream);
    } else if constexpr (Traits::kOp == Op::fwd && F == Family::resident) {
      return ResidentFwdLauncher<Traits>::launch(p, stream);
    } else if constexpr (F == Family::resident) {
      return ResidentBwdLauncher<Traits>::launch(p, stream);
    } else if constexpr (Traits::kOp == Op::fwd) {
      return FwdLauncher<Traits, F>::launch(p, stream);
    } else {
      return BwdLauncher<Traits, F>::launch(p, stream);
    }
  }
};

}  // namespace hipgn::kernels
