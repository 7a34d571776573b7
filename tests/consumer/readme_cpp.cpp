// The README's C++ snippet, built against the installed package and run (check_install.sh).
// CMake pastes it from README.md, so the README cannot drift from the API. On a GPU the
// snippet's run() must succeed; without one it must stop at no_device, before any launch.
#include <cstdio>
#include <memory>

#include "hipgn/hipgn.hpp"

int main() {
  // The snippet's free names. Without a GPU the pointers are never dereferenced.
  int devices = 0;
  const bool gpu = hipGetDeviceCount(&devices) == hipSuccess && devices > 0;
  const std::size_t bytes = std::size_t(2) * 320 * 64 * 64 * 2;  // the snippet's f16 problem
  void* x = reinterpret_cast<void*>(4096);
  void* y = reinterpret_cast<void*>(8192);
  if (gpu && (hipMalloc(&x, bytes) != hipSuccess || hipMalloc(&y, bytes) != hipSuccess)) return 1;
  const void* gamma = nullptr;
  const void* beta = nullptr;
  float* mean = nullptr;
  float* rstd = nullptr;
  hipStream_t stream = nullptr;
  {
#include "readme_snippet.inc"
    const hipgn::StatusCode want = gpu ? hipgn::StatusCode::success : hipgn::StatusCode::no_device;
    if (gpu) {
      (void)hipDeviceSynchronize();
      (void)hipFree(x);
      (void)hipFree(y);
    }
    std::printf("README C++ snippet: %s (%s)\n", to_string(s.code), s.code == want ? "as expected" : "UNEXPECTED");
    return s.code == want ? 0 : 1;
  }
}
