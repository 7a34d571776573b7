// The target being compiled: its wavefront size, which every cross-lane step reads from here.
#pragma once

#include "hipgn/platform.hpp"

namespace hipgn::kernels {

// The wavefront size of the target being compiled: 64 on AMD gfx9 (CDNA), 32 on RDNA (wave32)
// and NVIDIA. Never assume 32: reductions below take it from here. The host pass sees 32, and
// no host code depends on it.
#if defined(__HIP_DEVICE_COMPILE__) && defined(__AMDGCN_WAVEFRONT_SIZE)
inline constexpr int kWarpSize = __AMDGCN_WAVEFRONT_SIZE;
#else
inline constexpr int kWarpSize = 32;
#endif
// its log2, for placing lanes by shifts where a division by a run-time power of two would be a
// chain of ~20 dependent integer instructions
inline constexpr int kLogWarpSize = kWarpSize == 64 ? 6 : kWarpSize == 32 ? 5 : -1;
static_assert(kLogWarpSize >= 0 && (1 << kLogWarpSize) == kWarpSize, "a wavefront of 32 or 64 lanes");
#if defined(__HIP_DEVICE_COMPILE__) && defined(__GFX9__)
static_assert(kWarpSize == 64, "gfx9 (CDNA) wavefronts are 64 wide");
#endif

}  // namespace hipgn::kernels
