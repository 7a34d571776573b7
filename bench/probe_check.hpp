// What bench/'s standalone CUDA probes share: CHECK, which ends the probe on a CUDA error,
// naming the call, the timing of a captured graph, the sum of a 16-byte fp16 vector, random fp16
// inputs, and a group's float64 mean and rstd for checking outputs.
#pragma once

#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <vector>

#define CHECK(x)                                                                            \
  do {                                                                                      \
    cudaError_t e_ = (x);                                                                   \
    if (e_ != cudaSuccess) {                                                                \
      std::fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e_)); \
      std::exit(1);                                                                         \
    }                                                                                       \
  } while (0)

// Ends the capture on `s` begun by the caller, replays the graph `replays` times after 3 warm-up
// replays (event-timed), destroys it, and returns the median replay's microseconds divided by
// `launches` (the graph's launches).
inline double replay_median_us(cudaStream_t s, int replays, int launches) {
  cudaGraph_t g;
  cudaGraphExec_t ge;
  CHECK(cudaStreamEndCapture(s, &g));
  CHECK(cudaGraphInstantiate(&ge, g, 0));
  cudaEvent_t e0, e1;
  CHECK(cudaEventCreate(&e0));
  CHECK(cudaEventCreate(&e1));
  std::vector<float> ms;
  for (int r = 0; r < replays + 3; ++r) {
    CHECK(cudaEventRecord(e0, s));
    CHECK(cudaGraphLaunch(ge, s));
    CHECK(cudaEventRecord(e1, s));
    CHECK(cudaEventSynchronize(e1));
    float t;
    CHECK(cudaEventElapsedTime(&t, e0, e1));
    if (r >= 3) ms.push_back(t);
  }
  std::sort(ms.begin(), ms.end());
  CHECK(cudaEventDestroy(e0));
  CHECK(cudaEventDestroy(e1));
  CHECK(cudaGraphExecDestroy(ge));
  CHECK(cudaGraphDestroy(g));
  return 1000.0 * ms[ms.size() / 2] / launches;
}

// The eight fp16 elements of a 16-byte vector, added in fp32.
__device__ __forceinline__ float sum8(uint4 v) {
  const __half2* h = reinterpret_cast<const __half2*>(&v);
  float s = 0.f;
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    const float2 f = __half22float2(h[i]);
    s += f.x + f.y;
  }
  return s;
}

// x[i] = a hashed value in [-0.5, 1.5) of (i, seed), plus `step` x ((i / 2^shift) % 7): runs of
// 2^shift elements with different means, so groups are not all alike.
__global__ void fill_hashed(__half* x, long long n, unsigned seed, int shift, float step) {
  for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x) {
    unsigned h = unsigned(i) * 2654435761u ^ seed;
    h ^= h >> 13;
    h *= 0x5bd1e995u;
    h ^= h >> 15;
    x[i] = __float2half(0.5f + float(h & 0xffff) / 65536.f * 2.f - 1.f + float((i >> shift) % 7) * step);
  }
}

// n fp16 elements of device memory, copied to the host.
inline std::vector<__half> to_host(const __half* p, std::size_t n) {
  std::vector<__half> v(n);
  CHECK(cudaMemcpy(v.data(), p, n * sizeof(__half), cudaMemcpyDeviceToHost));
  return v;
}

// The float64 mean and rstd (eps 1e-5) of the `count` elements of x from `first`, two passes.
inline void group_moments(const std::vector<__half>& x, long long first, long long count, double& mean, double& rstd) {
  double s = 0, q = 0;
  for (long long i = 0; i < count; ++i) s += __half2float(x[std::size_t(first + i)]);
  mean = s / double(count);
  for (long long i = 0; i < count; ++i) {
    const double d = __half2float(x[std::size_t(first + i)]) - mean;
    q += d * d;
  }
  rstd = 1.0 / std::sqrt(q / double(count) + 1e-5);
}
