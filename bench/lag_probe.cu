// A probe, not a kernel of the library: can a channels-first forward larger than the L2 read x
// from DRAM once, the second read (normalize) hitting the L2? (bench/NOTES.md, "Two passes a
// lag apart".)
//
// x fp16 [groups, M] (whole groups contiguous, as channels-first), y = (x - mean) * rstd. A
// persistent grid (cooperative launch, all workgroups resident) walks one queue of items, item q
// going to workgroup q % grid: pass-1 items (a slice of S elements of a group: its count, mean
// and M2 to `part`) and pass-2 items (a slice: y from x and the group's statistics). Pass 2 of
// slice j runs `lag` items after pass 1 of slice j + lag, so x is read the second time while
// it is still in the L2 (lag x S x 2 bytes back). The last pass-1 slice of a group to arrive
// merges the group's slices (fixed order) and publishes mean and rstd; pass-2 slices wait for
// that (they issue their loads of x first). Pass-2 items only wait for pass-1 items earlier in
// the queue, which wait for nothing: no deadlock, given lag >= slices a group.
//
// Per launch (CUDA graph over rotating buffer sets, > 3x the L2 in all, event-timed, median),
// against a device copy of x's bytes (cudaMemcpyAsync) in the same graph kind:
//   lag = T (every pass-1 item first, then pass 2 in order: the two-pass walk, no reuse)
//   lag = 1x, 2x, 4x max(slices a group, grid)
//
// Build and run on the GPU machine (sm_90): bash bench/lag_probe.sh
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <vector>

#include "probe_check.hpp"

namespace {

constexpr int kBlock = 512, kVec = 8, kPer = 4, kSlice = kBlock * kVec * kPer;  // 16384 elements, 32 KB
#ifndef MIN_BLOCKS
#define MIN_BLOCKS 2
#endif
constexpr int kMinBlocks = MIN_BLOCKS;

struct Args {
  const __half* x;
  __half* y;
  float* part;      // [groups * spg][3]: n, mean, M2
  float2* stats;    // [groups]: mean, rstd
  unsigned* count;  // [groups]: arrivals (pass 1, publish, pass 2), zero between launches
  long long m;      // elements a group
  int spg;          // slices a group
  long long t;      // items a pass (groups * spg)
  long long lag;
};

__device__ __forceinline__ unsigned atom_add(unsigned* p, unsigned v) {
  unsigned old;
  asm volatile("atom.acq_rel.gpu.global.add.u32 %0, [%1], %2;" : "=r"(old) : "l"(p), "r"(v) : "memory");
  return old;
}

// queue position q -> (pass, index within the pass)
__device__ __forceinline__ void decode(const Args& a, long long q, int& pass, long long& j) {
  if (a.t <= a.lag) {
    pass = q < a.t ? 1 : 2;
    j = q < a.t ? q : q - a.t;
    return;
  }
  if (q < a.lag) {
    pass = 1;
    j = q;
    return;
  }
  const long long r = q - a.lag, inter = 2 * (a.t - a.lag);
  if (r < inter) {
    pass = (r & 1) ? 1 : 2;
    j = (r & 1) ? a.lag + r / 2 : r / 2;
    return;
  }
  pass = 2;
  j = (a.t - a.lag) + (r - inter);
}

__device__ __forceinline__ float block_sum(float v, float* red) {
  for (int o = 16; o > 0; o /= 2) v += __shfl_xor_sync(0xffffffffu, v, o);
  __syncthreads();
  if (threadIdx.x % 32 == 0) red[threadIdx.x / 32] = v;
  __syncthreads();
  float t = 0.f;
#pragma unroll
  for (int w = 0; w < kBlock / 32; ++w) t += red[w];
  return t;
}

// Chan's merge of (n, mean, M2) b into a
__device__ __forceinline__ void merge(float& n, float& mean, float& m2, float nb, float meanb, float m2b) {
  const float t = n + nb;
  if (t == 0.f) return;
  const float d = meanb - mean, f = nb / t;
  mean += d * f;
  m2 += m2b + d * d * n * f;
  n = t;
}

// The item at queue position q: its pass, group and slice, and its elements [first, end).
struct Item {
  int pass;
  long long g, first, end;
  __device__ __forceinline__ Item(const Args& a, long long q) {
    long long j;
    decode(a, q, pass, j);
    g = j / a.spg;
    first = (j - g * a.spg) * kSlice;
    end = min(first + kSlice, a.m);
  }
};

// Loads of an item, 16 bytes a vector, issued one item ahead (the loads of item q + grid fly
// while item q reduces, waits and stores).
__device__ __forceinline__ void issue(const Args& a, const Item& it, uint4 (&raw)[kPer]) {
  const __half* xs = a.x + it.g * a.m;
#pragma unroll
  for (int k = 0; k < kPer; ++k) {
    const long long e = it.first + (static_cast<long long>(k) * kBlock + threadIdx.x) * kVec;
    raw[k] = e < it.end ? *reinterpret_cast<const uint4*>(xs + e) : make_uint4(0, 0, 0, 0);
  }
}

__global__ void __launch_bounds__(kBlock, kMinBlocks) lagged(Args a) {
  __shared__ float red[kBlock / 32];
  __shared__ float2 st;
  const long long total = 2 * a.t;
  uint4 next[kPer];
  if (blockIdx.x < total) issue(a, Item(a, blockIdx.x), next);
  for (long long q = blockIdx.x; q < total; q += gridDim.x) {
    const Item it(a, q);
    const long long g = it.g, first = it.first, end = it.end;
    float v[kPer][kVec];
    int have = 0;
#pragma unroll
    for (int k = 0; k < kPer; ++k) {
      const __half2* h = reinterpret_cast<const __half2*>(&next[k]);
#pragma unroll
      for (int i = 0; i < kVec / 2; ++i) {
        const float2 f = __half22float2(h[i]);
        v[k][2 * i] = f.x;
        v[k][2 * i + 1] = f.y;
      }
      if (first + (static_cast<long long>(k) * kBlock + threadIdx.x) * kVec < end) have |= 1 << k;
    }
    if (q + gridDim.x < total) issue(a, Item(a, q + gridDim.x), next);
    if (it.pass == 1) {
      float sum = 0.f;
#pragma unroll
      for (int k = 0; k < kPer; ++k)
        if (have >> k & 1)
#pragma unroll
          for (int i = 0; i < kVec; ++i) sum += v[k][i];
      const float n = float(end - first);
      const float mean = block_sum(sum, red) / n;
      float m2 = 0.f;
#pragma unroll
      for (int k = 0; k < kPer; ++k)
        if (have >> k & 1)
#pragma unroll
          for (int i = 0; i < kVec; ++i) m2 += (v[k][i] - mean) * (v[k][i] - mean);
      m2 = block_sum(m2, red);
      if (threadIdx.x < 32) {
        unsigned ticket = 0;
        if (threadIdx.x == 0) {
          float* p = a.part + (g * a.spg + first / kSlice) * 3;
          p[0] = n, p[1] = mean, p[2] = m2;
          ticket = atom_add(a.count + g, 1u);
        }
        ticket = __shfl_sync(0xffffffffu, ticket, 0);
        if (ticket + 1 == unsigned(a.spg)) {  // the group's last slice: merge and publish
          float mn = 0.f, mm = 0.f, mq = 0.f;
          for (long long k = threadIdx.x; k < a.spg; k += 32) {
            const float* p = a.part + (g * a.spg + k) * 3;
            merge(mn, mm, mq, __ldcg(p), __ldcg(p + 1), __ldcg(p + 2));
          }
          for (int o = 1; o < 32; o *= 2) {
            const float on = __shfl_xor_sync(0xffffffffu, mn, o), om = __shfl_xor_sync(0xffffffffu, mm, o),
                        oq = __shfl_xor_sync(0xffffffffu, mq, o);
            // the lower lane's partial first: the same order in both lanes of a pair
            if ((threadIdx.x & o) == 0) merge(mn, mm, mq, on, om, oq);
            else {
              float n2 = on, m2b = om, q2 = oq;
              merge(n2, m2b, q2, mn, mm, mq);
              mn = n2, mm = m2b, mq = q2;
            }
          }
          if (threadIdx.x == 0) {
            a.stats[g] = make_float2(mm, rsqrtf(mq / mn + 1e-5f));
            atom_add(a.count + g, 1u);  // publish: spg + 1
          }
        }
      }
    } else {
      if (threadIdx.x == 0) {
        unsigned ns = 32;
        while (ld_acquire(a.count + g) < unsigned(a.spg) + 1) {
          __nanosleep(ns);
          ns = ns < 256 ? 2 * ns : 256;
        }
        st = __ldcg(a.stats + g);
      }
      __syncthreads();
      const float mean = st.x, rstd = st.y;
      __half* ys = a.y + g * a.m;
#pragma unroll
      for (int k = 0; k < kPer; ++k) {
        const long long e = first + (static_cast<long long>(k) * kBlock + threadIdx.x) * kVec;
        if (have >> k & 1) {
          uint4 raw;
          __half2* h = reinterpret_cast<__half2*>(&raw);
#pragma unroll
          for (int i = 0; i < kVec / 2; ++i)
            h[i] = __floats2half2_rn((v[k][2 * i] - mean) * rstd, (v[k][2 * i + 1] - mean) * rstd);
          *reinterpret_cast<uint4*>(ys + e) = raw;
        }
      }
      if (threadIdx.x == 0) {
        const unsigned ticket = atom_add(a.count + g, 1u);
        if (ticket == 2u * unsigned(a.spg)) a.count[g] = 0;  // the group's last: zero for the next launch
      }
    }
    __syncthreads();  // red and st are reused by the next item
  }
}

struct Case {
  const char* name;
  long long groups, m;
};

// y of the first set against a float64 normalization of x, every group
void check(const Args& a, long long groups) {
  const std::size_t n = std::size_t(groups * a.m);
  const std::vector<__half> x = to_host(a.x, n), y = to_host(a.y, n);
  double worst = 0;
  for (long long g = 0; g < groups; ++g) {
    double mean, rstd;
    group_moments(x, g * a.m, a.m, mean, rstd);
    for (long long i = 0; i < a.m; i += 61)
      worst = std::max(worst, std::fabs((__half2float(x[std::size_t(g * a.m + i)]) - mean) * rstd -
                                        __half2float(y[std::size_t(g * a.m + i)])));
  }
  std::printf("  check: max |y - ref| %.4f%s\n", worst, worst < 0.02 ? "" : "  MISMATCH");
}

}  // namespace

int main() {
  int cus = 0, per_sm = 0;
  const cudaStream_t s = probe_stream(&cus);
  CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, lagged, kBlock, 0));
  const int grid = cus * per_sm;
  std::printf("grid %d (%d a compute unit), slice %d elements\n", grid, per_sm, kSlice);
  std::fflush(stdout);
  const Case cases[] = {{"vae_128x512 (16 MB)", 32, 16LL * 128 * 128},
                        {"sdxl_128x960 (63 MB)", 64, 30LL * 128 * 128},
                        {"vae_256x512 (67 MB)", 32, 16LL * 256 * 256},
                        {"vae_512x256 (134 MB)", 32, 8LL * 512 * 512},
                        {"vae_1024x128 (268 MB)", 32, 4LL * 1024 * 1024}};
  for (const Case& c : cases) {
    const std::size_t bytes = std::size_t(c.groups * c.m) * 2;
    const int nsets = rotating_sets(bytes, 160u << 20);
    const int spg = int((c.m + kSlice - 1) / kSlice);
    const long long t = c.groups * spg;
    std::vector<Args> sets;
    for (int i = 0; i < nsets; ++i) {
      Args a{};
      alloc_xy(a, c.groups * c.m, i, 0, 0.01f, s);
      CHECK(cudaMalloc(&a.part, std::size_t(t) * 3 * sizeof(float)));
      CHECK(cudaMalloc(&a.stats, std::size_t(c.groups) * sizeof(float2)));
      CHECK(cudaMalloc(&a.count, std::size_t(c.groups) * sizeof(unsigned)));
      CHECK(cudaMemset(a.count, 0, std::size_t(c.groups) * sizeof(unsigned)));
      a.m = c.m;
      a.spg = spg;
      a.t = t;
      sets.push_back(a);
    }
    CHECK(cudaStreamSynchronize(s));
    const double copy = copy_us(sets, bytes, s);
    std::printf("%-24s %d sets, %d slices a group: copy %.1f us\n", c.name, nsets, spg, copy);
    const long long base = std::max<long long>(spg, grid);
    for (long long lag : {t, base, 2 * base, 4 * base}) {
      for (Args& a : sets) a.lag = lag;
      const double us = cooperative_us(reinterpret_cast<const void*>(lagged), sets, grid, kBlock, 0, s);
      std::printf("  lag %7lld items%s: %8.1f us  %5.1f%% of copy\n", lag, lag == t ? " (= T)" : "", us,
                  100.0 * copy / us);
      check(sets[0], c.groups);
    }
    for (Args& a : sets) {
      free_xy(a);
      CHECK(cudaFree(a.part));
      CHECK(cudaFree(a.stats));
      CHECK(cudaFree(a.count));
    }
  }
  return 0;
}
