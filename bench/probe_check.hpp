// What bench/'s standalone CUDA probes share: CHECK, which ends the probe on a CUDA error,
// naming the call, the timing of a captured graph, the sum of a 16-byte fp16 vector, random fp16
// inputs, a group's float64 mean and rstd for checking outputs; and what the forward probes of
// whole groups (pipe_probe, held_probe) share: an acquire load, Chan's merge (a warp's in a fixed
// order), a block's two sums, a vector's shifted sums and its SiLU, gamma and beta, the copy they
// are measured against, and the check of their y against a float64 forward.
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

// A 32-bit load with acquire semantics at GPU scope (a counter another workgroup releases).
__device__ __forceinline__ unsigned ld_acquire(const unsigned* p) {
  unsigned v;
  asm volatile("ld.acquire.gpu.global.u32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
  return v;
}

// (count, mean, M2) and Chan's merge of b into a (a first: the order fixes the bits)
struct St {
  float n, mean, m2;
};
__device__ __forceinline__ St merge(St a, St b) {
  const float t = a.n + b.n;
  if (t == 0.f) return a;
  const float d = b.mean - a.mean, f = b.n / t;
  return St{t, a.mean + d * f, a.m2 + b.m2 + d * d * a.n * f};
}

// Every lane's (count, mean, M2) merged by a butterfly, the lower lane first at each level, so
// every lane ends with the same bits (lane: the thread's lane in its warp).
__device__ __forceinline__ St warp_merge_ordered(St m, int lane) {
  for (int o = 1; o < 32; o *= 2) {
    const St other{__shfl_xor_sync(~0u, m.n, o), __shfl_xor_sync(~0u, m.mean, o), __shfl_xor_sync(~0u, m.m2, o)};
    m = (lane & o) ? merge(other, m) : merge(m, other);
  }
  return m;
}

// A block's two sums, every thread's answer the same; red holds B / 32 float2. kGuard: a barrier
// first, where the caller may still read red from the block's previous call.
template <int B, bool kGuard>
__device__ __forceinline__ float2 block_sum2(float a, float b, float2* red) {
  for (int o = 16; o > 0; o /= 2) a += __shfl_xor_sync(~0u, a, o), b += __shfl_xor_sync(~0u, b, o);
  if constexpr (kGuard) __syncthreads();
  if (threadIdx.x % 32 == 0) red[threadIdx.x / 32] = make_float2(a, b);
  __syncthreads();
  float2 t = make_float2(0.f, 0.f);
#pragma unroll
  for (int w = 0; w < B / 32; ++w) t.x += red[w].x, t.y += red[w].y;
  return t;
}

// The eight fp16 elements of r shifted by k: their sum into s1 and their squares into s2.
__device__ __forceinline__ void shifted_sums8(uint4 r, float k, float& s1, float& s2) {
  const __half2* h = reinterpret_cast<const __half2*>(&r);
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    const float2 f = __half22float2(h[i]);
    const float d0 = f.x - k, d1 = f.y - k;
    s1 += d0 + d1;
    s2 = fmaf(d0, d0, fmaf(d1, d1, s2));
  }
}

// silu(scale * x + shift) of the eight fp16 elements of r (ss: scale, shift).
__device__ __forceinline__ uint4 silu_affine8(uint4 r, float2 ss) {
  const __half2* h = reinterpret_cast<const __half2*>(&r);
  uint4 o;
  __half2* oh = reinterpret_cast<__half2*>(&o);
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    float2 f = __half22float2(h[i]);
    f.x = fmaf(f.x, ss.x, ss.y);
    f.y = fmaf(f.y, ss.x, ss.y);
    f.x = __fdividef(f.x, 1.f + __expf(-f.x));
    f.y = __fdividef(f.y, 1.f + __expf(-f.y));
    oh[i] = __floats2half2_rn(f.x, f.y);
  }
  return o;
}

// A channels-first fp16 problem of the whole-group probes: N samples of C channels in G groups
// over a spatial size hw; its groups, a group's elements and x's bytes
struct GnCase {
  const char* name;
  int n, c, g;
  long long hw;
  long long groups() const { return (long long)n * g; }
  long long group_elements() const { return (long long)(c / g) * hw; }
  std::size_t bytes() const { return std::size_t(groups() * group_elements()) * 2; }
};

// gamma and beta of c channels, on the host and in device memory (fp32)
struct Affine {
  std::vector<float> gamma, beta;
  float *d_gamma = nullptr, *d_beta = nullptr;
  explicit Affine(int c) : gamma(std::size_t(c)), beta(std::size_t(c)) {
    for (int i = 0; i < c; ++i) gamma[std::size_t(i)] = 0.5f + 0.01f * float(i % 97), beta[std::size_t(i)] = 0.02f * float(i % 13) - 0.1f;
    CHECK(cudaMalloc(&d_gamma, std::size_t(c) * 4));
    CHECK(cudaMalloc(&d_beta, std::size_t(c) * 4));
    CHECK(cudaMemcpy(d_gamma, gamma.data(), std::size_t(c) * 4, cudaMemcpyHostToDevice));
    CHECK(cudaMemcpy(d_beta, beta.data(), std::size_t(c) * 4, cudaMemcpyHostToDevice));
  }
  ~Affine() {
    cudaFree(d_gamma);
    cudaFree(d_beta);
  }
  Affine(const Affine&) = delete;
  Affine& operator=(const Affine&) = delete;
};

// The compute units of device 0, and a non-blocking stream to time on.
inline cudaStream_t probe_stream(int* cus) {
  CHECK(cudaDeviceGetAttribute(cus, cudaDevAttrMultiProcessorCount, 0));
  cudaStream_t s;
  CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  return s;
}

// How many rotating sets of `bytes` each make more than `total` bytes (at least 2): the probes
// time over sets whose sum is more than 3x the L2, so each launch reads x from memory.
inline int rotating_sets(std::size_t bytes, std::size_t total) {
  return int(std::max<std::size_t>(2, total / bytes + 1));
}

// A set's x (n fp16 elements, fill_hashed with the set's seed, runs of 2^shift) and y.
template <typename Args>
void alloc_xy(Args& a, long long n, int set, int shift, float step, cudaStream_t s) {
  CHECK(cudaMalloc(&a.x, std::size_t(n) * 2));
  CHECK(cudaMalloc(&a.y, std::size_t(n) * 2));
  fill_hashed<<<1024, 256, 0, s>>>(const_cast<__half*>(a.x), n, 17u * unsigned(set) + 1u, shift, step);
}
template <typename Args>
void free_xy(Args& a) {
  CHECK(cudaFree(const_cast<__half*>(a.x)));
  CHECK(cudaFree(a.y));
}

// cudaMemcpy's microseconds for `bytes` from each set's x to its y, timed as the probes' kernels
// are (a graph over the sets, replayed)
template <typename Sets>
double copy_us(const Sets& sets, std::size_t bytes, cudaStream_t s) {
  CHECK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
  for (const auto& a : sets) CHECK(cudaMemcpyAsync(a.y, a.x, bytes, cudaMemcpyDeviceToDevice, s));
  return replay_median_us(s, 10, int(sets.size()));
}

// A cooperative kernel's microseconds a launch of grid x block threads, one launch a set, each
// taking its set's Args by value (a graph over the sets, replayed)
template <typename Args>
double cooperative_us(const void* kernel, const std::vector<Args>& sets, int grid, int block, std::size_t smem,
                      cudaStream_t s) {
  CHECK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
  for (const Args& a : sets) {
    Args cp = a;
    void* args[] = {&cp};
    CHECK(cudaLaunchCooperativeKernel(kernel, dim3(grid), dim3(block), args, smem, s));
  }
  return replay_median_us(s, 10, int(sets.size()));
}

// y = silu(gamma * xhat + beta) of a set's `groups` groups (a.L elements each, channels-first:
// channel rows of a.hw, a.cpg a group, G groups a sample) against a float64 forward, every group,
// elements sampled; then any error of the launches before
template <typename Args>
void check_silu_forward(const Args& a, long long groups, int G, const Affine& af) {
  const long long L = a.L, hw = a.hw;
  const std::size_t n = std::size_t(groups * L);
  const std::vector<__half> x = to_host(a.x, n), y = to_host(a.y, n);
  double worst = 0;
  for (long long g = 0; g < groups; ++g) {
    double mean, rstd;
    group_moments(x, g * L, L, mean, rstd);
    for (long long i = (g * 7) % 53; i < L; i += 53) {
      const std::size_t ch = std::size_t(int(g % G) * a.cpg + int(i / hw));
      const double v = (__half2float(x[std::size_t(g * L + i)]) - mean) * rstd * af.gamma[ch] + af.beta[ch];
      const double ref = v / (1.0 + std::exp(-v));
      worst = std::max(worst, std::fabs(ref - __half2float(y[std::size_t(g * L + i)])) / (1.0 + std::fabs(ref)));
    }
  }
  std::printf("    check: max rel |y - ref| %.4f%s\n", worst, worst < 0.01 ? "" : "  MISMATCH");
}
