// The launcher a generated instance registers (templates/instance.inc.j2): its family's
// FamilyLauncher (family.hpp), one header a family under families/.
#pragma once

#include "hipgn/kernels/families/looped.hpp"
#include "hipgn/kernels/families/onchip.hpp"
#include "hipgn/kernels/families/resident.hpp"
#include "hipgn/kernels/families/split.hpp"
#include "hipgn/kernels/families/stream.hpp"
#include "hipgn/kernels/family.hpp"

namespace hipgn::kernels {

template <typename Traits, Family F>
struct Launcher {
  static hipError_t launch(const Params& p, hipStream_t stream) { return FamilyLauncher<F>::template launch<Traits>(p, stream); }
};

}  // namespace hipgn::kernels
