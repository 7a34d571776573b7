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
// Build and run on the GPU machine (sm_90): bash bench/stream_rate_probe.sh [after-write]
// (after-write: read_after_write's comparison alone)
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

#include "hipgn/kernels/primitives/phase_clock.hpp"
#include "probe_check.hpp"

namespace {

// kShareRead: `read` with each workgroup walking a contiguous share of x of its own (n / grid
// vectors), as the stream family's phase 1 does, where the grid-stride loop has the whole grid
// inside one window of grid x B x U vectors at a time
enum Kind { kCopy, kRead, kWrite, kShareRead };

// stamps (may be null): each workgroup's start and end on the global timer, [2 x grid]
template <int B, int U, int MINB, int K>
__global__ void __launch_bounds__(B, MINB) stream(const uint4* x, uint4* y, long long n, float* sink,
                                                  unsigned long long* stamps) {
  if (stamps && threadIdx.x == 0) stamps[2 * blockIdx.x] = hipgn::kernels::global_timer_ns();
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
  } else {
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
  }
  if ((K == kRead || K == kShareRead) && acc == 12345.f) sink[blockIdx.x] = acc;  // never, but the loads are live
  if (stamps) {
    __syncthreads();
    if (threadIdx.x == 0) stamps[2 * blockIdx.x + 1] = hipgn::kernels::global_timer_ns();
  }
}

struct Set {
  uint4* x;
  uint4* y;
};

// `count` sets of x (every byte 1) and y, `bytes` each; free_sets gives them back
std::vector<Set> make_sets(long long bytes, int count) {
  std::vector<Set> sets(count);
  for (Set& st : sets) {
    CHECK(cudaMalloc(&st.x, bytes));
    CHECK(cudaMalloc(&st.y, bytes));
    CHECK(cudaMemset(st.x, 1, bytes));
  }
  return sets;
}
void free_sets(const std::vector<Set>& sets) {
  for (const Set& st : sets) {
    CHECK(cudaFree(st.x));
    CHECK(cudaFree(st.y));
  }
}

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
  for (const Set& st : sets) kernel<<<unsigned(grid), B, smem, s>>>(st.x, st.y, n, sink, nullptr);
  const double us = replay_median_us(s, 10, int(sets.size()));
  const double moved = (K == kCopy ? 2.0 : 1.0) * double(n) * 16;
  if (K == kShareRead && !persistent) return;  // one step a workgroup: the same as read
  std::printf("  %-10s B %4d U %d %-13s grid %7lld (%d a CU resident): %7.1f us, %.2f TB/s\n",
              K == kCopy ? "copy" : K == kRead ? "read" : K == kWrite ? "write" : "share read", B, U, persistent ? "persistent" : "oversubscribed",
              grid, per_sm, us, moved / us / 1e6);
  if (K == kCopy) std::printf("        %.0f%% of cudaMemcpy\n", 100.0 * copy_us / us);
  std::fflush(stdout);
}

// `after-write`: a read the way bench.py times the library's kernels, where each launch follows
// one that wrote a tensor of x's size (the previous replay's y), so the read starts with the L2
// full of dirty lines that must go back to DRAM while it reads; beside it the same read after a
// read (as run() times it). Each read's own time is its workgroups' first start to last end on
// the global timer (a difference of graph times would not do: the write before it is itself
// faster after a read than after a write), the median over 10 replays x the sets. Why: the
// library's channels-last stream forward reads x in its phase 1 at 3.5 TB/s (134 MB) where
// run()'s reads of the same grid reach 3.9 and the best 4.1 (bench/NOTES.md, "The channels-last
// stream forward's phase 1: four probes"): whether a predecessor's dirty lines are that 10%.
template <int B, int U, int MINB, int K>
void read_after_write(const std::vector<Set>& sets, long long n, float* sink, cudaStream_t s, int smem) {
  auto rd = stream<B, U, MINB, K>;
  auto wr = stream<B, U, MINB, kWrite>;
  int per_sm = 0, cus = 0;
  CHECK(cudaDeviceGetAttribute(&cus, cudaDevAttrMultiProcessorCount, 0));
  CHECK(cudaFuncSetAttribute(rd, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
  CHECK(cudaFuncSetAttribute(wr, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
  CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, rd, B, smem));
  const int grid = cus * per_sm, slots = 2 * grid;
  unsigned long long* stamps;
  CHECK(cudaMalloc(&stamps, sets.size() * slots * sizeof(unsigned long long)));
  std::vector<unsigned long long> host(sets.size() * slots);
  auto read_us = [&](bool after_write) {
    CHECK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
    for (std::size_t i = 0; i < sets.size(); ++i) {
      if (after_write) wr<<<grid, B, smem, s>>>(sets[i].x, sets[i].y, n, sink, nullptr);
      rd<<<grid, B, smem, s>>>(sets[i].x, sets[i].y, n, sink, stamps + i * slots);
    }
    cudaGraph_t g;
    cudaGraphExec_t ge;
    CHECK(cudaStreamEndCapture(s, &g));
    CHECK(cudaGraphInstantiate(&ge, g, 0));
    std::vector<double> us;
    for (int r = 0; r < 13; ++r) {
      CHECK(cudaGraphLaunch(ge, s));
      CHECK(cudaStreamSynchronize(s));
      if (r < 3) continue;  // warm-up
      CHECK(cudaMemcpy(host.data(), stamps, host.size() * sizeof(host[0]), cudaMemcpyDeviceToHost));
      for (std::size_t i = 0; i < sets.size(); ++i) {
        unsigned long long lo = ~0ull, hi = 0;
        for (int b = 0; b < grid; ++b) {
          lo = std::min(lo, host[i * slots + 2 * b]);
          hi = std::max(hi, host[i * slots + 2 * b + 1]);
        }
        us.push_back(double(hi - lo) / 1e3);
      }
    }
    CHECK(cudaGraphExecDestroy(ge));
    CHECK(cudaGraphDestroy(g));
    std::sort(us.begin(), us.end());
    return us[us.size() / 2];
  };
  const double after_write = read_us(true), after_read = read_us(false);
  const double mb = double(n) * 16 / 1e6;
  std::printf("  %-10s B %4d U %d, %d workgroups: after a write %7.1f us (%.2f TB/s), after a read %7.1f us (%.2f TB/s)\n",
              K == kRead ? "read" : "share read", B, U, grid, after_write, mb / after_write, after_read,
              mb / after_read);  // MB / us = TB/s
  std::fflush(stdout);
  CHECK(cudaFree(stamps));
}

}  // namespace

int main(int argc, char** argv) {
  cudaStream_t s;
  CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  float* sink;
  CHECK(cudaMalloc(&sink, 1 << 20));
  if (argc > 1 && std::string(argv[1]) == "after-write") {
    // x as the stream forward's rows: vae_512x256's 64 MiB, sdxl_128x640's 20, and 128; sets
    // enough for more than 3x the L2
    for (const long long bytes : {64ll << 20, 20ll << 20, 128ll << 20}) {
      const std::vector<Set> sets = make_sets(bytes, bytes > (64ll << 20) ? 2 : bytes > (32ll << 20) ? 3 : 6);
      std::printf("x %.1f MB, %zu sets:\n", bytes / 1e6, sets.size());
      // two workgroups of 512 a compute unit at 100 KB of shared memory each, 32 bytes a thread:
      // the stream family's grid
      read_after_write<512, 2, 2, kShareRead>(sets, bytes / 16, sink, s, 100 * 1024);
      read_after_write<512, 2, 2, kRead>(sets, bytes / 16, sink, s, 100 * 1024);
      free_sets(sets);
    }
    CHECK(cudaFree(sink));
    return 0;
  }
  for (const long long bytes : {128ll << 20, 40ll << 20}) {
  const long long n = bytes / 16;
  const std::vector<Set> sets = make_sets(bytes, bytes > (64ll << 20) ? 2 : 3);
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
  free_sets(sets);
  }
  CHECK(cudaFree(sink));
  return 0;
}
