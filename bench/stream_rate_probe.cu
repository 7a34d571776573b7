// A probe, not a kernel of the library: which grids stream at the copy's rate on this GPU? (bench/
// NOTES.md, "The pipelined sweep, probed", the waves probe on the H200.) The waves probe's copy
// kernel, one 512-thread workgroup a compute unit, ran 15% below cudaMemcpy; the library's stream
// and onchip families are persistent grids of that kind. Three streams over fp16 tensors of 134
// MB, each a grid-stride loop in which a thread moves U 16-byte vectors a step:
//   copy   y = x (read + write), against cudaMemcpyAsync in the same process;
//   read   a sum of x (one float a workgroup stored);
//   write  y = a constant.
// Grids: persistent (as many workgroups as are resident at the launch bounds' minimum, MINB a
// compute unit) and oversubscribed (one step a workgroup, as many workgroups as steps). CUDA
// graph over rotating sets (> 3x the L2), event-timed, median.
//
// Build and run on the GPU machine (sm_90): bash bench/stream_rate_probe.sh
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdio>
#include <vector>

#include "probe_check.hpp"

namespace {

// kShareRead: `read` with each workgroup walking a contiguous share of x of its own (n / grid
// vectors), as the stream family's phase 1 does, where the grid-stride loop has the whole grid
// inside one window of grid x B x U vectors at a time
enum Kind { kCopy, kRead, kWrite, kShareRead };

template <int B, int U, int MINB, int K>
__global__ void __launch_bounds__(B, MINB) stream(const uint4* x, uint4* y, long long n, float* sink) {
  float acc = 0.f;
  if constexpr (K == kShareRead) {
    const long long share = (n + gridDim.x - 1) / gridDim.x, lo = blockIdx.x * share, hi = min(n, lo + share);
    for (long long i0 = lo + threadIdx.x; i0 < hi; i0 += B * U) {
      uint4 r[U];
#pragma unroll
      for (int u = 0; u < U; ++u)
        if (i0 + u * B < hi) r[u] = x[i0 + u * B];
#pragma unroll
      for (int u = 0; u < U; ++u)
        if (i0 + u * B < hi) acc += sum8(r[u]);
    }
    if (acc == 12345.f) sink[blockIdx.x] = acc;
    return;
  }
  const long long step = (long long)gridDim.x * B * U;
  for (long long i0 = (long long)blockIdx.x * B * U + threadIdx.x; i0 < n; i0 += step) {
    uint4 r[U];
#pragma unroll
    for (int u = 0; u < U; ++u)
      if (K != kWrite && i0 + u * B < n) r[u] = x[i0 + u * B];
#pragma unroll
    for (int u = 0; u < U; ++u) {
      if (i0 + u * B < n) {
        if (K == kCopy) y[i0 + u * B] = r[u];
        if (K == kRead) acc += sum8(r[u]);
        if (K == kWrite) y[i0 + u * B] = make_uint4(u, 1, 2, 3);
      }
    }
  }
  if (K == kRead && acc == 12345.f) sink[blockIdx.x] = acc;  // never, but the loads are live
}

struct Set {
  uint4* x;
  uint4* y;
};

// smem: dynamic shared memory a workgroup asks for (unused), to hold the workgroups a compute
// unit to what the library's kernels get (1024 threads a compute unit: 2 x 512 at 100 KB)
template <int B, int U, int MINB, int K>
void run(const std::vector<Set>& sets, long long n, bool persistent, double copy_us, float* sink, cudaStream_t s,
         int smem = 0) {
  auto kernel = stream<B, U, MINB, K>;
  int per_sm = 0, cus = 0;
  CHECK(cudaDeviceGetAttribute(&cus, cudaDevAttrMultiProcessorCount, 0));
  if (smem > 48 * 1024) CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
  CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, B, smem));
  const long long steps = (n + (long long)B * U - 1) / ((long long)B * U);
  const long long grid = persistent ? (long long)cus * per_sm : steps;
  CHECK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
  for (const Set& st : sets) kernel<<<unsigned(grid), B, smem, s>>>(st.x, st.y, n, sink);
  const double us = replay_median_us(s, 10, int(sets.size()));
  const double moved = (K == kCopy ? 2.0 : 1.0) * double(n) * 16;
  if (K == kShareRead && !persistent) return;  // one step a workgroup: the same as read
  std::printf("  %-10s B %4d U %d %-13s grid %7lld (%d a CU resident): %7.1f us, %.2f TB/s\n",
              K == kCopy ? "copy" : K == kRead ? "read" : K == kWrite ? "write" : "share read", B, U, persistent ? "persistent" : "oversubscribed",
              grid, per_sm, us, moved / us / 1e6);
  if (K == kCopy) std::printf("        %.0f%% of cudaMemcpy\n", 100.0 * copy_us / us);
  std::fflush(stdout);
}

}  // namespace

int main() {
  cudaStream_t s;
  CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  for (const long long bytes : {128ll << 20, 40ll << 20}) {
  const long long n = bytes / 16;
  std::vector<Set> sets(bytes > (64ll << 20) ? 2 : 3);
  for (Set& st : sets) {
    CHECK(cudaMalloc(&st.x, bytes));
    CHECK(cudaMalloc(&st.y, bytes));
    CHECK(cudaMemset(st.x, 1, bytes));
  }
  float* sink;
  CHECK(cudaMalloc(&sink, 1 << 20));
  CHECK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
  for (const Set& st : sets) CHECK(cudaMemcpyAsync(st.y, st.x, bytes, cudaMemcpyDeviceToDevice, s));
  const double copy = replay_median_us(s, 10, int(sets.size()));
  std::printf("x %.1f MB: cudaMemcpy %.1f us, %.2f TB/s (read + write)\n", bytes / 1e6, copy, 2.0 * bytes / copy / 1e6);
#define ALL(B, U, M, P, ...)                                         \
  run<B, U, M, kShareRead>(sets, n, P, copy, sink, s, ##__VA_ARGS__);  \
  run<B, U, M, kCopy>(sets, n, P, copy, sink, s, ##__VA_ARGS__);  \
  run<B, U, M, kRead>(sets, n, P, copy, sink, s, ##__VA_ARGS__);  \
  run<B, U, M, kWrite>(sets, n, P, copy, sink, s, ##__VA_ARGS__);
  ALL(512, 2, 1, true)
  // two workgroups of 512 a compute unit, as the stream family: 32, 64 and 16 bytes a thread
  ALL(512, 2, 2, true, 100 * 1024)
  ALL(512, 4, 2, true, 100 * 1024)
  ALL(512, 1, 2, true, 100 * 1024)
  // one of 512 a compute unit (the waves probe's copy kernel)
  ALL(512, 2, 1, true, 200 * 1024)
  ALL(512, 4, 1, true, 200 * 1024)
  ALL(512, 4, 2, true)
  ALL(256, 4, 4, true)
  ALL(256, 4, 8, true)
  ALL(1024, 2, 2, true)
  ALL(256, 2, 8, false)
  ALL(256, 4, 4, false)
  ALL(512, 4, 2, false)
  ALL(128, 8, 8, false)
  for (Set& st : sets) {
    CHECK(cudaFree(st.x));
    CHECK(cudaFree(st.y));
  }
  CHECK(cudaFree(sink));
  }
  return 0;
}
