// Host: which thread-block clusters (sm_90) the current device launches, for the kernels'
// launchers (kernels/.../primitives/cluster.hpp) and the runtime's support checks alike: the
// onchip forward's parts of a group exist only where a cluster holds them (Instance::
// onchip_parts), so support and launch must read the same answer.
#pragma once

#include <cstdlib>
#include <map>
#include <mutex>
#include <string>

#include "hipgn/params.hpp"
#include "hipgn/platform.hpp"
#include "hipgn/targets.hpp"

namespace hipgn {

// The most workgroups one cluster may have: 8 is every sm_90 part's guarantee ("portable");
// an H100 also runs 16 (kClusterSlicesMax, params.hpp) once the kernel opts in, which the
// launcher asks for and checks with the occupancy query (a part or a shared-memory size that
// cannot gets the portable path).
inline constexpr int kClusterPortable = 8;

// The most workgroups a cluster may have on the current device (0: no clusters), asked once per
// device: kClusterSlicesMax where its compute capability is 9 or more; without a device (a
// listing, the heuristics' tests on a machine without a GPU), the assumed target's, as the
// heuristics assume its compute units (hipgn/targets.hpp). HIPGN_CLUSTERS in the environment
// (read once): 0 keeps every launch on the portable path (the GPU tests run the resident family
// both ways, and the benchmark compares them); `portable`, clusters of up to kClusterPortable
// workgroups only (compute-sanitizer's synccheck reports errors on larger ones that the other
// tools and the results do not bear out: bench/NOTES.md, "Chunks of a sample";
// scripts/gpu_check.sh).
inline int cluster_launch_max() {
#if !defined(HIPGN_PLATFORM_AMD)
  static const int allowed = [] {
    const char* v = std::getenv("HIPGN_CLUSTERS");
    const std::string s = v ? v : "";
    return s == "0" ? 0 : s == "portable" ? kClusterPortable : kClusterSlicesMax;
  }();
  if (allowed == 0) return 0;
  static const bool present = [] {
    int count = 0;
    const bool any = hipGetDeviceCount(&count) == hipSuccess && count > 0;
    (void)hipGetLastError();
    return any;
  }();
  if (!present) return kAssumedTarget.cluster_workgroups < allowed ? kAssumedTarget.cluster_workgroups : allowed;
  static std::mutex mutex;
  static std::map<int, bool> known;
  int device = 0;
  if (hipGetDevice(&device) != hipSuccess) return 0;
  std::lock_guard<std::mutex> lock(mutex);
  const auto it = known.find(device);
  if (it != known.end()) return it->second ? allowed : 0;
  int major = 0;
  const bool ok = cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device) == cudaSuccess && major >= 9;
  (void)cudaGetLastError();  // a failed query leaves no error behind
  return (known[device] = ok) ? allowed : 0;
#else
  return 0;
#endif
}

}  // namespace hipgn
