// The README's C++ snippet, built against the installed package and run (check_install.sh).
// CMake pastes it from README.md, so the README cannot drift from the API. On a GPU the
// snippet's run() must succeed; without one it must stop at no_device, before any launch.
// hipgn's header names no GPU runtime: this program brings its own (HIP on AMD, CUDA else).
#include <cstdio>
#include <memory>

#include "hipgn/hipgn.hpp"

#if defined(HIPGN_CONSUMER_AMD)
#include <hip/hip_runtime.h>
namespace gpu {
using Stream = hipStream_t;
inline int count() { int n = 0; return hipGetDeviceCount(&n) == hipSuccess ? n : 0; }
inline bool alloc(void** p, std::size_t n) { return hipMalloc(p, n) == hipSuccess; }
inline void release(void* p) { (void)hipDeviceSynchronize(); (void)hipFree(p); }
}  // namespace gpu
#else
#include <cuda_runtime_api.h>
namespace gpu {
using Stream = cudaStream_t;
inline int count() { int n = 0; return cudaGetDeviceCount(&n) == cudaSuccess ? n : 0; }
inline bool alloc(void** p, std::size_t n) { return cudaMalloc(p, n) == cudaSuccess; }
inline void release(void* p) { (void)cudaDeviceSynchronize(); (void)cudaFree(p); }
}  // namespace gpu
#endif

int main() {
  // The snippet's free names. Without a GPU the pointers are never dereferenced.
  const bool gpu = gpu::count() > 0;
  const std::size_t bytes = std::size_t(2) * 320 * 64 * 64 * 2;  // the snippet's f16 problem
  void* x = reinterpret_cast<void*>(4096);
  void* y = reinterpret_cast<void*>(8192);
  if (gpu && (!gpu::alloc(&x, bytes) || !gpu::alloc(&y, bytes))) return 1;
  const void* gamma = nullptr;
  const void* beta = nullptr;
  float* mean = nullptr;
  float* rstd = nullptr;
  gpu::Stream stream = nullptr;
  {
#include "readme_snippet.inc"
    const hipgn::StatusCode want = gpu ? hipgn::StatusCode::success : hipgn::StatusCode::no_device;
    if (gpu) {
      gpu::release(x);
      gpu::release(y);
    }
    std::printf("README C++ snippet: %s (%s)\n", to_string(s.code), s.code == want ? "as expected" : "UNEXPECTED");
    return s.code == want ? 0 : 1;
  }
}
