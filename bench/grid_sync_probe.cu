// A probe, not a kernel of the library: what a cooperative launch's grid barriers cost with and
// without the memset of their counters before the launch, and whether a launch-unique token
// (%gridid, hashed) could let barriers start from any memory content (bench/NOTES.md, "Barriers
// without a memset").
//
//   1. %gridid, read by launches made directly and by the kernel nodes of a CUDA graph replayed
//      several times: the token is only sound if no two launches of a context share it.
//   2. Per launch (CUDA graph of 20 launches replayed 25 times, event-timed, median), 264 and
//      132 workgroups of 512 threads, each variant with 2 barriers and no other work:
//        coop        a cooperative launch with no barrier, no memset
//        counter     the library's barrier (exchange.hpp), after a memset node as the caller's
//                    workspace needs it, or without one on counters zeroed once ("kept"); the
//                    numbers in bench/NOTES.md were taken with its predecessor, a flag barrier
//                    with a memset, at 801adb6
//        slot_master no memset: each workgroup stores the token to its own slot; workgroup 0's
//                    first wavefront polls every slot, then stores the token to a release word
//                    that the others poll
//        slot_all    no memset: each workgroup's first wavefront polls every slot itself
//   3. The library's barrier against variants of it that might shorten its ~2 us (bench/NOTES.md,
//      "Where the fourth session of 2026-11-26 ended"), all on counters zeroed once, each checked:
//      before barrier k a workgroup writes k + 1 to its flag, after it reads its neighbour's (k + 1
//      or k + 2) and counts another value as an error (printed; a barrier with errors is none).
//        cap N       the library's, its waiters' backoff capped at N ns instead of 512
//        relaxed     waiters poll the generation with relaxed loads and fence once it moved
//        tree F      arrivals in F counters (workgroup b at b % F, a line each); the last of
//                    each arrives at the top counter, whose last advances the generation
//
// Build and run on the GPU machine (sm_90): bash bench/grid_sync_probe.sh
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <set>
#include <string>
#include <vector>

#include "probe_check.hpp"

#include "hipgn/kernels/primitives/exchange.hpp"

namespace {

constexpr int kBlock = 512, kLineWords = 32;

__device__ std::uint64_t gridid() {
  std::uint64_t g;
  asm volatile("mov.u64 %0, %%gridid;" : "=l"(g));
  return g;
}
__device__ std::uint64_t mix(std::uint64_t z) {
  z += 0x9E3779B97F4A7C15ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}
__device__ void st_release(std::uint64_t* p, std::uint64_t v) {
  asm volatile("st.release.gpu.global.u64 [%0], %1;" ::"l"(p), "l"(v) : "memory");
}
__device__ std::uint64_t ld_acquire(const std::uint64_t* p) {
  std::uint64_t v;
  asm volatile("ld.acquire.gpu.global.u64 %0, [%1];" : "=l"(v) : "l"(p) : "memory");
  return v;
}

// The first wavefront polls slots [first, n) until every one holds tok, sleeping between polls
// from 32 ns, doubling up to `cap`.
__device__ void wait_slots(const std::uint64_t* s, int first, int n, std::uint64_t tok, unsigned cap) {
  unsigned ns = 32;
  for (;;) {
    bool done = true;
    for (int i = first + int(threadIdx.x); i < n; i += 32) done &= ld_acquire(s + i) == tok;
    if (__all_sync(0xffffffffu, done)) return;
    __nanosleep(ns);
    ns = ns < cap ? 2 * ns : cap;
  }
}

__global__ void record(std::uint64_t* out, int i) {
  if (blockIdx.x == 0 && threadIdx.x == 0) out[i] = gridid();
}

__global__ void coop(std::uint32_t*, std::uint64_t*, int) {}

__global__ void counter(std::uint32_t* counters, std::uint64_t*, int bars) {
  for (int k = 0; k < bars; ++k) {
    __syncthreads();
    std::uint32_t* c = counters + 2 * kLineWords * k;
    if (threadIdx.x == 0) hipgn::kernels::arrive_and_wait(c, c + kLineWords, gridDim.x);
    __syncthreads();
  }
}

// slots: [bars][grid] words, then [bars] release words a line apart
__global__ void slot_master(std::uint32_t*, std::uint64_t* slots, int bars) {
  const std::uint64_t tok = mix(gridid());
  const int n = int(gridDim.x);
  for (int k = 0; k < bars; ++k) {
    std::uint64_t* s = slots + std::int64_t(k) * n;
    std::uint64_t* release = slots + std::int64_t(bars) * n + 16 * k + 16;
    __syncthreads();
    if (blockIdx.x == 0) {
      if (threadIdx.x < 32) {
        wait_slots(s, 1, n, tok, 32);
        if (threadIdx.x == 0) st_release(release, tok);
      }
    } else if (threadIdx.x == 0) {
      st_release(s + blockIdx.x, tok);
      unsigned ns = 32;
      while (ld_acquire(release) != tok) {
        __nanosleep(ns);
        ns = ns < 256 ? 2 * ns : 256;
      }
    }
    __syncthreads();
  }
}

__global__ void slot_all(std::uint32_t*, std::uint64_t* slots, int bars) {
  const std::uint64_t tok = mix(gridid());
  const int n = int(gridDim.x);
  for (int k = 0; k < bars; ++k) {
    std::uint64_t* s = slots + std::int64_t(k) * n;
    __syncthreads();
    if (threadIdx.x == 0) st_release(s + blockIdx.x, tok);
    if (threadIdx.x < 32) wait_slots(s, 0, n, tok, 256);
    __syncthreads();
  }
}

// Waits until *gen differs from g, backing off from 32 ns to kCap; relaxed polls and one fence
// after them where kRelaxed, acquire polls (the library's) where not.
template <unsigned kCap, bool kRelaxed>
__device__ void wait_gen(std::uint32_t* gen, std::uint32_t g) {
  unsigned ns = 32;
  for (;;) {
    const std::uint32_t v = kRelaxed ? hipgn::kernels::load_relaxed(gen) : hipgn::kernels::load_acquire(gen);
    if (v != g) break;
    __nanosleep(ns);
    ns = ns < kCap ? 2 * ns : kCap;
  }
  if (kRelaxed) asm volatile("fence.acq_rel.gpu;" ::: "memory");
}

// The library's barrier (exchange.hpp: arrive_and_wait) with its wait as above; kFan > 1: the
// arrivals first in kFan counters, a line each after the top counter's and the generation's.
template <unsigned kCap, bool kRelaxed, int kFan>
__device__ void barrier_variant(std::uint32_t* lines, std::uint32_t grid) {
  using namespace hipgn::kernels;
  std::uint32_t* top = lines;
  std::uint32_t* gen = lines + kLineWords;
  const std::uint32_t g = load_relaxed(gen);
  bool last;
  if constexpr (kFan > 1) {
    const std::uint32_t b = blockIdx.x, s = b % kFan;
    const std::uint32_t members = grid / kFan + (s < grid % kFan ? 1u : 0u);
    std::uint32_t* sub = lines + kLineWords * (2 + s);
    last = last_arrival(sub, arrive(sub), members) &&
           last_arrival(top, arrive(top), grid < std::uint32_t(kFan) ? grid : std::uint32_t(kFan));
  } else {
    last = last_arrival(top, arrive(top), grid);
  }
  if (last) {
    store_release(gen, g + 1);
    return;
  }
  wait_gen<kCap, kRelaxed>(gen, g);
}

// The variants' kernel: `bars` barriers, each on 64 lines of its own; flags: a word a workgroup
// (after the slots' region), errors: one word after them.
template <unsigned kCap, bool kRelaxed, int kFan>
__global__ void checked(std::uint32_t* counters, std::uint64_t* slots, int bars) {
  std::uint32_t* flags = reinterpret_cast<std::uint32_t*>(slots + (1 << 16));
  std::uint32_t* errors = flags + 4096;
  const std::uint32_t grid = gridDim.x, b = blockIdx.x;
  for (int k = 0; k < bars; ++k) {
    if (threadIdx.x == 0) hipgn::kernels::store_relaxed(flags + b, std::uint32_t(k + 1));
    __syncthreads();
    if (threadIdx.x == 0) barrier_variant<kCap, kRelaxed, kFan>(counters + std::int64_t(64) * kLineWords * k, grid);
    __syncthreads();
    // the neighbour wrote k + 1 before this barrier and may have written k + 2 after it; the
    // previous launch left `bars`
    const std::uint32_t v = threadIdx.x == 0 ? hipgn::kernels::load_relaxed(flags + (b + 1) % grid) : 0;
    if (threadIdx.x == 0 && v != std::uint32_t(k + 1) && v != std::uint32_t(k + 2)) atomicAdd(errors, 1u);
  }
}

using Kernel = void (*)(std::uint32_t*, std::uint64_t*, int);

void check_gridid() {
  std::uint64_t* d;
  const int direct = 4, nodes = 3, replays = 4, total = direct + nodes * replays;
  CHECK(cudaMalloc(&d, total * sizeof(std::uint64_t)));
  std::vector<std::uint64_t> seen;
  cudaStream_t s;
  CHECK(cudaStreamCreate(&s));
  for (int i = 0; i < direct; ++i) record<<<1, 32, 0, s>>>(d, i);
  CHECK(cudaStreamSynchronize(s));
  std::vector<std::uint64_t> h(total);
  CHECK(cudaMemcpy(h.data(), d, direct * sizeof(std::uint64_t), cudaMemcpyDeviceToHost));
  for (int i = 0; i < direct; ++i) seen.push_back(h[i]);
  cudaGraph_t g;
  cudaGraphExec_t ge;
  CHECK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
  for (int i = 0; i < nodes; ++i) record<<<1, 32, 0, s>>>(d, direct + i);
  CHECK(cudaStreamEndCapture(s, &g));
  CHECK(cudaGraphInstantiate(&ge, g, 0));
  for (int r = 0; r < replays; ++r) {
    CHECK(cudaGraphLaunch(ge, s));
    CHECK(cudaStreamSynchronize(s));
    CHECK(cudaMemcpy(h.data(), d + direct, nodes * sizeof(std::uint64_t), cudaMemcpyDeviceToHost));
    for (int i = 0; i < nodes; ++i) seen.push_back(h[i]);
  }
  std::printf("gridid:");
  for (std::uint64_t v : seen) std::printf(" %llu", static_cast<unsigned long long>(v));
  const std::set<std::uint64_t> distinct(seen.begin(), seen.end());
  std::printf("\ngridid: %zu launches, %zu distinct\n", seen.size(), distinct.size());
  CHECK(cudaGraphExecDestroy(ge));
  CHECK(cudaGraphDestroy(g));
  CHECK(cudaFree(d));
}

double time_variant(Kernel k, bool memset, int grid, int bars, std::uint32_t* counters, std::uint64_t* slots) {
  cudaStream_t s;
  CHECK(cudaStreamCreate(&s));
  const int launches = 20, replays = 25;
  CHECK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
  for (int i = 0; i < launches; ++i) {
    if (memset) CHECK(cudaMemsetAsync(counters, 0, 4 * kLineWords * sizeof(std::uint32_t), s));
    void* args[] = {&counters, &slots, &bars};
    CHECK(cudaLaunchCooperativeKernel(reinterpret_cast<void*>(k), dim3(grid), dim3(kBlock), args, 0, s));
  }
  const double us = replay_median_us(s, replays, launches);
  CHECK(cudaStreamDestroy(s));
  return us;
}

}  // namespace

int main() {
  std::setvbuf(stdout, nullptr, _IONBF, 0);  // a line at a time, should a variant hang
  check_gridid();
  std::uint32_t* counters;
  std::uint64_t* slots;
  const std::size_t counter_bytes = std::size_t(8) * 64 * kLineWords * sizeof(std::uint32_t);  // 8 barriers of 64 lines
  CHECK(cudaMalloc(&counters, counter_bytes));
  CHECK(cudaMemset(counters, 0, counter_bytes));
  CHECK(cudaMalloc(&slots, 1 << 20));
  CHECK(cudaMemset(slots, 0, 1 << 20));
  int cus = 0;
  CHECK(cudaDeviceGetAttribute(&cus, cudaDevAttrMultiProcessorCount, 0));
  struct V {
    const char* name;
    Kernel k;
    bool memset;
    int bars;
  } variants[] = {{"coop", coop, false, 0},
                  {"coop+memset", coop, true, 0},
                  {"counter x2 +memset", counter, true, 2},
                  {"counter x2 kept", counter, false, 2},
                  {"slot_master x2", slot_master, false, 2},
                  {"slot_all x2", slot_all, false, 2},
                  {"slot_master x8", slot_master, false, 8},
                  {"slot_all x8", slot_all, false, 8},
                  {"checked x8 library", checked<512, false, 1>, false, 8},
                  {"checked x8 cap 128", checked<128, false, 1>, false, 8},
                  {"checked x8 cap 64", checked<64, false, 1>, false, 8},
                  {"checked x8 relaxed", checked<512, true, 1>, false, 8},
                  {"checked x8 relaxed 128", checked<128, true, 1>, false, 8},
                  {"checked x8 tree 8", checked<512, false, 8>, false, 8},
                  {"checked x8 tree 16", checked<512, false, 16>, false, 8},
                  {"checked x8 tree 16 128", checked<128, true, 16>, false, 8}};
  std::uint32_t* errors = reinterpret_cast<std::uint32_t*>(slots + (1 << 16)) + 4096;
  for (int per_cu : {1, 2}) {
    const int grid = per_cu * cus;
    for (const V& v : variants) {
      // each variant from zeroed counters: the tree's counters lie on lines that other variants
      // use as generations (left non-zero), and an arrival counter that starts there never
      // sees its last arrival
      CHECK(cudaMemset(counters, 0, counter_bytes));
      CHECK(cudaMemset(errors, 0, sizeof(std::uint32_t)));
      const double us = time_variant(v.k, v.memset, grid, v.bars, counters, slots);
      std::uint32_t bad = 0;
      CHECK(cudaMemcpy(&bad, errors, sizeof(bad), cudaMemcpyDeviceToHost));
      std::printf("grid %4d  %-24s %7.2f us a launch%s\n", grid, v.name, us,
                  std::string(bad ? " (" + std::to_string(bad) + " errors)" : "").c_str());
    }
  }
  CHECK(cudaFree(counters));
  CHECK(cudaFree(slots));
  return 0;
}
