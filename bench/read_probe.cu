// A probe, not a kernel of the library: how fast a kernel that only reads can read, L2-cold, in
// the way bench.py times (launches captured in a CUDA graph over rotating buffer sets larger than
// 3x the L2, event-timed, medians), against a copy of the same bytes timed the same way.
//
// Why (bench/NOTES.md, "A read-only kernel's rate"): the split backward's sums kernel and the
// stream forward's phase 1 read at 1.5-1.9 TB/s on 10-40 MB, whatever their loads in flight, and
// whether that is the DRAM's rate for a read-only burst of that size or our kernels' is open.
//
// Kernels (fp16 data, 16-byte vectors; a sum of every element so the loads cannot be dropped):
//   copy        y = x, grid-stride.
//   write       y = a constant, grid-stride.
//   read/gs     grid-stride: a thread's U loads a step are a grid's width apart.
//   read/piece  each workgroup sums one contiguous piece (the split sums kernel's shape).
// Each is timed alone, and "after write": a graph of write(set i) then read(set i + 1) launches,
// less the write-only graph's time, so the read runs while the previous launch's dirty lines
// leave the L2, as a kernel that follows one that wrote does in bench.py.
//
// Build and run on the GPU machine (sm_90): bash bench/read_probe.sh
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <vector>

#include "probe_check.hpp"

namespace {

__device__ __forceinline__ void block_out(float s, float* out) {
  __shared__ float part[32];
  for (int o = 16; o > 0; o >>= 1) s += __shfl_xor_sync(0xffffffffu, s, o);
  if ((threadIdx.x & 31) == 0) part[threadIdx.x >> 5] = s;
  __syncthreads();
  if (threadIdx.x == 0) {
    float t = 0.f;
    for (int w = 0; w < int(blockDim.x >> 5); ++w) t += part[w];
    out[blockIdx.x] = t;
  }
}

__global__ void copy_kernel(const uint4* __restrict__ x, uint4* __restrict__ y, long long n) {
  const long long stride = (long long)gridDim.x * blockDim.x;
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n; i += stride) y[i] = x[i];
}

__global__ void write_kernel(uint4* __restrict__ y, long long n) {
  const long long stride = (long long)gridDim.x * blockDim.x;
  const uint4 c = make_uint4(0x3c003c00u, 0x3c003c00u, 0x3c003c00u, 0x3c003c00u);
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n; i += stride) y[i] = c;
}

// The sum of vectors i, i + stride, ... below end, U loads in flight a step.
template <int U>
__device__ __forceinline__ float sum_strided(const uint4* __restrict__ x, long long i, long long end, long long stride) {
  float s = 0.f;
  for (; i + (U - 1) * stride < end; i += U * stride) {
    uint4 v[U];
#pragma unroll
    for (int u = 0; u < U; ++u) v[u] = x[i + u * stride];
#pragma unroll
    for (int u = 0; u < U; ++u) s += sum8(v[u]);
  }
  for (; i < end; i += stride) s += sum8(x[i]);
  return s;
}

template <int U>
__global__ void read_gs_kernel(const uint4* __restrict__ x, float* out, long long n) {
  const long long stride = (long long)gridDim.x * blockDim.x;
  block_out(sum_strided<U>(x, blockIdx.x * (long long)blockDim.x + threadIdx.x, n, stride), out);
}

template <int U>
__global__ void read_piece_kernel(const uint4* __restrict__ x, float* out, long long n) {
  const long long per = (n + gridDim.x - 1) / gridDim.x;
  const long long lo = blockIdx.x * per, hi = lo + per < n ? lo + per : n;
  block_out(sum_strided<U>(x, lo + threadIdx.x, hi, blockDim.x), out);
}

}  // namespace

int main() {
  int dev = 0, cus = 0, l2 = 0;
  CHECK(cudaGetDevice(&dev));
  CHECK(cudaDeviceGetAttribute(&cus, cudaDevAttrMultiProcessorCount, dev));
  CHECK(cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, dev));
  std::printf("compute units %d, L2 %.1f MB\n", cus, l2 / 1e6);
  cudaStream_t s;
  CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  float* out;
  CHECK(cudaMalloc(&out, 1 << 20));
  // MB read: sd15_64x320's x, sd15_64x640's x + dy, vae_128x512's x + dy, sdxl_128x640's, vae_512x256's.
  const double sizes_mb[] = {5.2, 10.5, 21.0, 33.6, 84.0, 268.4};
  for (const double mb : sizes_mb) {
    const long long n = (long long)(mb * 1e6 / 16);
    const int sets = std::max(2, int(3.0 * l2 / (mb * 1e6)) + 2);
    std::vector<uint4*> xs(sets), ys(sets);
    for (int i = 0; i < sets; ++i) {
      CHECK(cudaMalloc(&xs[i], n * 16));
      CHECK(cudaMalloc(&ys[i], n * 16));
      CHECK(cudaMemset(xs[i], 0x3c, n * 16));
      CHECK(cudaMemset(ys[i], 0x3c, n * 16));
    }
    CHECK(cudaDeviceSynchronize());
    auto graph = [&](auto body) {
      CHECK(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal));
      for (int i = 0; i < sets; ++i) body(i);
      return replay_median_us(s, 15, sets);
    };
    const double copy = graph([&](int i) { copy_kernel<<<cus * 8, 512, 0, s>>>(xs[i], ys[i], n); });
    const double write = graph([&](int i) { write_kernel<<<cus * 8, 512, 0, s>>>(ys[i], n); });
    std::printf("\n%.1f MB read (%d sets): copy of it %.2f us (%.2f TB/s r+w), write-only %.2f us (%.2f TB/s)\n", mb,
                sets, copy, 2 * mb / copy, write, mb / write);
    auto report = [&](const char* what, int blocks, int threads, auto launch) {
      const double alone = graph([&](int i) { launch(xs[i], blocks, threads); });
      const double pair = graph([&](int i) {
        write_kernel<<<cus * 8, 512, 0, s>>>(ys[i], n);
        launch(xs[(i + 1) % sets], blocks, threads);
      });
      const double after = pair - write;
      std::printf("  %-10s %5d x %4d: alone %7.2f us (%.2f TB/s)  after write %7.2f us (%.2f TB/s)\n", what, blocks,
                  threads, alone, mb / alone, after, mb / after);
    };
    for (const int per_cu : {2, 4, 8, 16}) {
      for (const int threads : {256, 512}) {
        if (per_cu * threads > 4096) continue;
        const int blocks = cus * per_cu;
        report("gs U1", blocks, threads,
               [&](const uint4* x, int b, int t) { read_gs_kernel<1><<<b, t, 0, s>>>(x, out, n); });
        report("gs U4", blocks, threads,
               [&](const uint4* x, int b, int t) { read_gs_kernel<4><<<b, t, 0, s>>>(x, out, n); });
        report("piece U1", blocks, threads,
               [&](const uint4* x, int b, int t) { read_piece_kernel<1><<<b, t, 0, s>>>(x, out, n); });
        report("piece U4", blocks, threads,
               [&](const uint4* x, int b, int t) { read_piece_kernel<4><<<b, t, 0, s>>>(x, out, n); });
      }
    }
    // Many more, smaller pieces than one wave holds (a grid of several waves).
    for (const int pieces : {cus * 32, cus * 64}) {
      report("piece U4", pieces, 256,
             [&](const uint4* x, int b, int t) { read_piece_kernel<4><<<b, t, 0, s>>>(x, out, n); });
    }
    for (int i = 0; i < sets; ++i) {
      CHECK(cudaFree(xs[i]));
      CHECK(cudaFree(ys[i]));
    }
  }
  return 0;
}
