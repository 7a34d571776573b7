// The launcher a generated instance registers (templates/instance.inc.j2): its family's
// FamilyLauncher (family.hpp), one header a family under families/.
#pragma once

#include <type_traits>

#include "hipgn/kernels/families/looped.hpp"
#include "hipgn/kernels/families/onchip.hpp"
#include "hipgn/kernels/families/resident.hpp"
#include "hipgn/kernels/families/split.hpp"
#include "hipgn/kernels/families/stream.hpp"
#include "hipgn/kernels/family.hpp"

namespace hipgn::kernels {

// Whether a family's launcher answers clusters_at_once (a family with a kernel in parts).
template <typename L, typename Traits, typename = void>
struct AnswersClusters : std::false_type {};
template <typename L, typename Traits>
struct AnswersClusters<L, Traits, std::void_t<decltype(L::template clusters_at_once<Traits>(2, PartsKernel::held))>> : std::true_type {};

template <typename Traits, Family F>
struct Launcher {
  static hipError_t launch(const Params& p, hipStream_t stream) { return FamilyLauncher<F>::template launch<Traits>(p, stream); }
  // How many clusters of `parts` workgroups of the instance's kernel in parts (of that `kind`)
  // the device runs at once (Instance::onchip_rounds); 0 for a family without one.
  static int clusters_at_once(int parts, PartsKernel kind) {
    if constexpr (AnswersClusters<FamilyLauncher<F>, Traits>::value)
      return FamilyLauncher<F>::template clusters_at_once<Traits>(parts, kind);
    else
      return 0;
  }
};

}  // namespace hipgn::kernels
