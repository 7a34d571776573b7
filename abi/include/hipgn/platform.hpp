// The GPU runtime API hipgn is written against: HIP. On AMD (and with
// -DHIPGN_NVIDIA_SYSTEM_HIP=ON, a system HIP's NVIDIA headers) it is the real HIP runtime;
// otherwise platform_cuda.hpp maps the subset we use onto CUDA, because HIP 5.2's NVIDIA
// headers (the only ones Debian ships) no longer compile against CUDA 13.
#pragma once

#if defined(HIPGN_PLATFORM_AMD) || defined(HIPGN_NVIDIA_SYSTEM_HIP)
#include <hip/hip_runtime.h>
#else
#include "hipgn/platform_cuda.hpp"
#endif
