// Family resident: a persistent grid holds each slice of a unit on chip from load to store, x
// (and dy) read once (resident_fwd.hpp, resident_bwd.hpp say how).
#pragma once

#include "hipgn/kernels/families/resident_bwd.hpp"
#include "hipgn/kernels/families/resident_fwd.hpp"
#include "hipgn/kernels/family.hpp"
#include "hipgn/params.hpp"

namespace hipgn::kernels {

template <>
struct FamilyLauncher<Family::resident> {
  template <typename Traits>
  static hipError_t launch(const Params& p, hipStream_t stream) {
    if constexpr (Traits::kOp == Op::fwd) return ResidentFwdLauncher<Traits>::launch(p, stream);
    else return ResidentBwdLauncher<Traits>::launch(p, stream);
  }
};

}  // namespace hipgn::kernels
