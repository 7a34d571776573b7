// GroupNorm + SiLU on a Stable Diffusion activation (N=2, C=320, 64x64, G=32, fp16,
// channels-last) through the C++ API: the library picks the instance. hipgn's own platform
// and storage headers (internal) stand in for the program's GPU runtime and fp16 type.
#include <cstdio>
#include <string>
#include <vector>

#include "hipgn/hipgn.hpp"
#include "hipgn/platform.hpp"
#include "hipgn/storage.hpp"

int main() {
  hipgn::Problem p;
  p.n = 2;
  p.c = 320;
  p.spatial = {64, 64};
  p.groups = 32;
  p.x_dtype = p.gamma_dtype = hipgn::DataType::f16;
  p.layout = hipgn::Layout::channels_last;
  p.act = hipgn::Activation::swish;  // SiLU: swish_beta = 1

  std::unique_ptr<hipgn::Handle> handle;
  const hipgn::Status created = hipgn::Handle::create(&handle);
  std::string name;
  const hipgn::Status chosen = handle->instance_for(p, &name);
  std::printf("%s -> %s\n", p.to_string().c_str(), chosen.ok() ? name.c_str() : chosen.message.c_str());
  if (!created.ok()) {
    std::printf("%s; nothing to run\n", created.message.c_str());
    return 0;
  }
  const std::size_t bytes = std::size_t(p.elements()) * 2;
  std::vector<hipgn::f16_t> host(std::size_t(p.elements()));
  for (std::size_t i = 0; i < host.size(); ++i) host[i] = hipgn::from_float<hipgn::f16_t>(float(i % 97) / 97.f);
  void *x, *y;
  if (hipMalloc(&x, bytes) != hipSuccess || hipMalloc(&y, bytes) != hipSuccess) return 1;
  (void)hipMemcpy(x, host.data(), bytes, hipMemcpyHostToDevice);
  hipgn::Tensors t;  // affine off, statistics not saved
  t.x = x;
  t.y = y;
  const hipgn::Status s = handle->run(p, t);
  (void)hipMemcpy(host.data(), y, bytes, hipMemcpyDeviceToHost);
  std::printf("forward: %s; y[0..3] = %.4f %.4f %.4f %.4f\n", s.ok() ? "ok" : s.message.c_str(),
              hipgn::to_float(host[0]), hipgn::to_float(host[1]), hipgn::to_float(host[2]), hipgn::to_float(host[3]));
  (void)hipFree(x);
  (void)hipFree(y);
  return s.ok() ? 0 : 1;
}
