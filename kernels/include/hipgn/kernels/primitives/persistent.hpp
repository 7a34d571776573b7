// Launching a persistent grid: as many workgroups as the device holds at once (never more
// than there are items), each walking items blockIdx.x, + gridDim.x, ... When workgroups
// exchange partial results and wait for each other, the launch is cooperative, which
// guarantees they are all resident together (else a waiting workgroup could hold the slot
// that the one it waits for needs), and the arrival counters are zeroed on the stream first
// unless they are zero already (Params::counters_zeroed).
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <map>
#include <mutex>
#include <utility>

#include "hipgn/params.hpp"
#include "hipgn/platform.hpp"

namespace hipgn::kernels {

using KernelFn = void (*)(Params);

// Shared memory a workgroup may take without the kernel opting in, static arrays and dynamic
// together (CUDA's and HIP's default limit).
inline constexpr std::size_t kSmemWithoutOptIn = 48 * 1024;

// Lets `kernel` launch with `smem` bytes of dynamic shared memory: where they and its static
// arrays pass kSmemWithoutOptIn, raises its limit once to the most any launch of it may ask for,
// so that a later, larger launch never meets a lower limit left by an earlier, smaller one. The
// static arrays count twice: against the default (a launch of 48 KB of dynamic bytes exactly,
// the channels-last resident forward 256 x 8 x 4 on one slice of C = 96, G = 32, tests/corpus.hpp's
// 1 x 96 x 8 x 8, was left at the default limit, which its static arrays pass), and against
// the device's opt-in limit, which bounds static and dynamic together: kResidentMaxSmem beside
// 34 KB of static arrays passes sm_90's 227 KB, and the device refused the attribute (bench/NOTES.md,
// "dy' staged in shared memory"). A launch past what is left is refused here (an invalid
// value), before the attribute is set or the kernel launched. What it asks the runtime is asked
// once per kernel and device: the onchip backward's staged launch calls it on every launch.
inline hipError_t allow_dynamic_smem(const void* kernel, std::size_t smem) {
  int device = 0;
  if (const hipError_t e = hipGetDevice(&device); e != hipSuccess) return e;
  struct Limit {
    std::size_t static_bytes = 0;
    std::size_t most = 0;  // what a launch may ask for once opted in
    bool raised = false;
  };
  static std::mutex mutex;
  static std::map<std::pair<const void*, int>, Limit> limits;
  std::lock_guard<std::mutex> lock(mutex);
  auto it = limits.find(std::make_pair(kernel, device));
  if (it == limits.end()) {
    hipFuncAttributes fa{};
    if (const hipError_t e = hipFuncGetAttributes(&fa, kernel); e != hipSuccess) return e;
    int optin = 0;
    if (const hipError_t e = hipDeviceGetAttribute(&optin, hipDeviceAttributeSharedMemPerBlockOptin, device);
        e != hipSuccess)
      return e;
    std::size_t most = std::size_t(kResidentMaxSmem);
    if (optin > 0)
      most = std::min(most, std::size_t(optin) > fa.sharedSizeBytes ? std::size_t(optin) - fa.sharedSizeBytes : 0);
    it = limits.emplace(std::make_pair(kernel, device), Limit{fa.sharedSizeBytes, most}).first;
  }
  Limit& limit = it->second;
  if (smem + limit.static_bytes <= kSmemWithoutOptIn) return hipSuccess;
  if (smem > limit.most) return hipErrorInvalidValue;
  if (!limit.raised) {
    if (const hipError_t e = hipFuncSetAttribute(kernel, hipFuncAttributeMaxDynamicSharedMemorySize, int(limit.most));
        e != hipSuccess)
      return e;
    limit.raised = true;
  }
  return hipSuccess;
}

// Workgroups of `kernel` resident per compute unit at (block, smem), asked once per shape:
// the occupancy query costs microseconds of host time, and eager callers pay it per call.
inline hipError_t resident_blocks(KernelFn kernel, int block, std::size_t smem, int* out) {
  static std::mutex mutex;
  static std::map<std::pair<KernelFn, std::pair<int, std::size_t>>, int> cache;
  const auto key = std::make_pair(kernel, std::make_pair(block, smem));
  {
    std::lock_guard<std::mutex> lock(mutex);
    const auto it = cache.find(key);
    if (it != cache.end()) return *out = it->second, hipSuccess;
  }
  if (const hipError_t e = allow_dynamic_smem(reinterpret_cast<const void*>(kernel), smem); e != hipSuccess) return e;
  int n = 0;
  const hipError_t e = hipOccupancyMaxActiveBlocksPerMultiprocessor(&n, reinterpret_cast<const void*>(kernel), block, smem);
  if (e != hipSuccess) return e;
  std::lock_guard<std::mutex> lock(mutex);
  cache[key] = n;
  return *out = n, hipSuccess;
}

// `exchange`: workgroups wait for each other through p.counters (`counter_words` of them): the
// p.slices of a unit (`whole_grid` false) or the whole grid (true: grid barriers).
inline hipError_t launch_persistent(KernelFn kernel, const Params& p, int block, std::size_t smem, bool exchange,
                                    std::int64_t counter_words, hipStream_t stream, bool whole_grid = false) {
  int device = 0, cus = 0, per_cu = 0;
  hipError_t e = hipGetDevice(&device);
  if (e == hipSuccess) e = hipDeviceGetAttribute(&cus, hipDeviceAttributeMultiprocessorCount, device);
  if (e == hipSuccess) e = resident_blocks(kernel, block, smem, &per_cu);
  if (e != hipSuccess) return e;
  const std::int64_t resident = std::int64_t(cus) * per_cu;
  const unsigned grid = unsigned(p.items < resident ? p.items : resident);
  if (!exchange) {
    kernel<<<dim3(grid), dim3(unsigned(block)), smem, stream>>>(p);
    return hipGetLastError();
  }
  // The support check promised slices <= compute units; a device too busy or too small to
  // hold them all at once must fail here, never wait forever.
  if (!whole_grid && p.slices > std::int64_t(grid)) return hipErrorInvalidValue;
  if (!p.counters_zeroed) {
    e = hipMemsetAsync(p.counters, 0, std::size_t(counter_words) * sizeof(std::uint32_t), stream);
    if (e != hipSuccess) return e;
  }
  Params copy = p;
  void* args[] = {&copy};
  return hipLaunchCooperativeKernel(reinterpret_cast<const void*>(kernel), dim3(grid), dim3(unsigned(block)), args,
                                    unsigned(smem), stream);
}

}  // namespace hipgn::kernels
