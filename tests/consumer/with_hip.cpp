// A program that includes the real HIP runtime's headers beside hipgn's public header and
// passes a hipStream_t: hipgn's header must declare no hip* name of its own (it once mapped
// them onto CUDA globally, which collided here). Built by check_install.sh wherever HIP's
// headers are found, whatever platform hipgn was built for; it links libhipgn.so alone.
#include <hip/hip_runtime.h>

#include <cstdio>
#include <memory>

#include "hipgn/hipgn.h"
#include "hipgn/hipgn.hpp"

int main() {
  std::unique_ptr<hipgn::Handle> handle;
  const hipgn::Status created = hipgn::Handle::create(&handle);
  hipgn::Problem p;
  p.n = 2;
  p.c = 64;
  p.spatial = {8, 8};
  p.groups = 8;
  hipStream_t stream = nullptr;
  // invalid tensors (x null): refused before any launch, on any machine
  const hipgn::Status s = handle->run(p, hipgn::Tensors{}, stream);
  std::printf("with HIP's headers: create %s, run without tensors %s\n", to_string(created.code), to_string(s.code));
  return s.code == hipgn::StatusCode::invalid_argument && hipgn_api_version() == HIPGN_API_VERSION ? 0 : 1;
}
