// A probe, not a kernel of the library: what programmatic dependent launch (PDL: the
// griddepcontrol instructions, sm_90) saves between two kernels where the second needs the
// first's results, as the split forward's statistics then apply kernels do (bench/NOTES.md,
// "Launches that wait for the one before").
//
// The pair: `stats` reads x (a workgroup a share, 16-byte loads) and stores one float a
// workgroup; `apply` reads x again and the stats of its share and writes y. Per pair (a CUDA
// graph of 20 pairs over 20 buffer sets, replayed 25 times, event-timed, median), variants:
//   plain         two ordinary launches (a graph edge: the second starts when the first ends)
//   pdl           apply launched with programmatic stream serialization, waiting
//                 (griddepcontrol.wait) before its first load; stats lets dependents launch
//                 once each of its workgroups has issued its loads (launch_dependents)
//   pdl_prefetch  as pdl, but apply issues its loads of x before the wait (they do not depend
//                 on stats), then waits, then reads the stats and writes y
// and, for the floor, `apply` alone (one launch a graph node, no stats). Sizes 1 to 64 MB of x.
//
// Build and run on the GPU machine (sm_90): bash bench/pdl_probe.sh
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <vector>

#include "probe_check.hpp"

namespace {

constexpr int kBlock = 512, kPerThread = 4, kLaunches = 20;

__device__ __forceinline__ void launch_dependents() { asm volatile("griddepcontrol.launch_dependents;" ::: "memory"); }
__device__ __forceinline__ void wait_for_primary() { asm volatile("griddepcontrol.wait;" ::: "memory"); }

// Each workgroup sums kPerThread float4 a thread of its share (share = gridDim.x * kBlock *
// kPerThread float4s in all; the grid strides over x).
__global__ void __launch_bounds__(kBlock) stats(const float4* x, float* part, std::int64_t n4, int trigger) {
  __shared__ float red[kBlock / 32];
  float s = 0.f;
  for (std::int64_t base = std::int64_t(blockIdx.x) * kBlock * kPerThread; base < n4;
       base += std::int64_t(gridDim.x) * kBlock * kPerThread) {
    float4 v[kPerThread];
#pragma unroll
    for (int k = 0; k < kPerThread; ++k) v[k] = x[base + k * kBlock + threadIdx.x];
#pragma unroll
    for (int k = 0; k < kPerThread; ++k) s += v[k].x + v[k].y + v[k].z + v[k].w;
  }
  if (trigger) launch_dependents();
  for (int o = 16; o > 0; o /= 2) s += __shfl_xor_sync(0xffffffffu, s, o);
  if (threadIdx.x % 32 == 0) red[threadIdx.x / 32] = s;
  __syncthreads();
  if (threadIdx.x == 0) {
    float t = 0.f;
    for (int w = 0; w < kBlock / 32; ++w) t += red[w];
    part[blockIdx.x] = t;
  }
}

// mode 0: no wait (plain launches, or apply alone); 1: wait, then load; 2: load, wait.
__global__ void __launch_bounds__(kBlock) apply(const float4* x, float4* y, const float* part, std::int64_t n4,
                                                int mode) {
  if (mode == 1) wait_for_primary();
  for (std::int64_t base = std::int64_t(blockIdx.x) * kBlock * kPerThread; base < n4;
       base += std::int64_t(gridDim.x) * kBlock * kPerThread) {
    float4 v[kPerThread];
#pragma unroll
    for (int k = 0; k < kPerThread; ++k) v[k] = x[base + k * kBlock + threadIdx.x];
    if (mode == 2 && base == std::int64_t(blockIdx.x) * kBlock * kPerThread) wait_for_primary();
    const float m = part ? __ldcg(part + blockIdx.x) * 1e-9f : 0.f;
#pragma unroll
    for (int k = 0; k < kPerThread; ++k) {
      const float4 a = v[k];
      y[base + k * kBlock + threadIdx.x] = make_float4(a.x - m, a.y - m, a.z - m, a.w - m);
    }
  }
}

struct Buffers {
  std::vector<float4*> x, y;
  float* part;
};

enum class Variant { plain, pdl, pdl_prefetch, apply_alone };

void launch_apply(const Buffers& b, int i, std::int64_t n4, int grid, int mode, bool programmatic, cudaStream_t s) {
  cudaLaunchConfig_t cfg = {};
  cfg.gridDim = dim3(unsigned(grid));
  cfg.blockDim = dim3(kBlock);
  cfg.stream = s;
  cudaLaunchAttribute attr[1];
  attr[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
  attr[0].val.programmaticStreamSerializationAllowed = 1;
  cfg.attrs = attr;
  cfg.numAttrs = programmatic ? 1 : 0;
  const float* part = mode < 0 ? nullptr : b.part + std::int64_t(i) * grid;
  CHECK(cudaLaunchKernelEx(&cfg, apply, static_cast<const float4*>(b.x[i]), b.y[i], part, n4, mode < 0 ? 0 : mode));
}

double time_variant(Variant v, const Buffers& b, std::int64_t n4, int grid) {
  cudaStream_t s;
  CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  CHECK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
  for (int i = 0; i < kLaunches; ++i) {
    if (v != Variant::apply_alone)
      stats<<<grid, kBlock, 0, s>>>(b.x[i], b.part + std::int64_t(i) * grid, n4, v != Variant::plain);
    CHECK(cudaGetLastError());
    const int mode = v == Variant::apply_alone ? -1 : v == Variant::plain ? 0 : v == Variant::pdl ? 1 : 2;
    launch_apply(b, i, n4, grid, mode, v == Variant::pdl || v == Variant::pdl_prefetch, s);
  }
  const double us = replay_median_us(s, 25, kLaunches);
  CHECK(cudaStreamDestroy(s));
  return us;
}

// y of the pair against x minus its share's stats, on the last buffer set: the variants must
// compute the same thing (a wait in the wrong place would read stale stats).
void check_result(const Buffers& b, std::int64_t n4, int grid) {
  std::vector<float4> x(static_cast<std::size_t>(n4)), y(static_cast<std::size_t>(n4));
  std::vector<float> part(static_cast<std::size_t>(grid));
  const int i = kLaunches - 1;
  CHECK(cudaMemcpy(x.data(), b.x[i], n4 * sizeof(float4), cudaMemcpyDeviceToHost));
  CHECK(cudaMemcpy(y.data(), b.y[i], n4 * sizeof(float4), cudaMemcpyDeviceToHost));
  CHECK(cudaMemcpy(part.data(), b.part + std::int64_t(i) * grid, grid * sizeof(float), cudaMemcpyDeviceToHost));
  for (std::int64_t j = 0; j < n4; j += 997) {
    const int wg = int((j / (kBlock * kPerThread)) % grid);
    const float m = part[std::size_t(wg)] * 1e-9f;
    if (y[std::size_t(j)].x != x[std::size_t(j)].x - m) {
      std::printf("MISMATCH at %lld\n", static_cast<long long>(j));
      std::exit(1);
    }
  }
}

}  // namespace

int main() {
  int cus = 0;
  CHECK(cudaDeviceGetAttribute(&cus, cudaDevAttrMultiProcessorCount, 0));
  const int grid = 2 * cus;
  for (std::int64_t mb : {1, 4, 16, 64}) {
    const std::int64_t n4 = mb * (1 << 20) / 16;
    Buffers b;
    for (int i = 0; i < kLaunches; ++i) {
      float4 *x, *y;
      CHECK(cudaMalloc(&x, n4 * 16));
      CHECK(cudaMalloc(&y, n4 * 16));
      CHECK(cudaMemset(x, 0x3c, n4 * 16));
      b.x.push_back(x);
      b.y.push_back(y);
    }
    CHECK(cudaMalloc(&b.part, std::size_t(kLaunches) * grid * sizeof(float)));
    const struct {
      const char* name;
      Variant v;
    } variants[] = {{"apply alone", Variant::apply_alone},
                    {"plain", Variant::plain},
                    {"pdl", Variant::pdl},
                    {"pdl_prefetch", Variant::pdl_prefetch}};
    for (const auto& var : variants) {
      const double us = time_variant(var.v, b, n4, grid);
      if (var.v != Variant::apply_alone) check_result(b, n4, grid);
      std::printf("x %3lld MB  grid %d  %-13s %8.2f us a pair\n", static_cast<long long>(mb), grid, var.name, us);
    }
    for (int i = 0; i < kLaunches; ++i) {
      CHECK(cudaFree(b.x[i]));
      CHECK(cudaFree(b.y[i]));
    }
    CHECK(cudaFree(b.part));
  }
  return 0;
}
