// A probe, not a kernel of the library: what reading a large tensor once in waves would cost, against
// a copy and against today's structure (read all, grid barrier, read again and write), before a
// family is built on it (bench/NOTES.md, "Where the fourth session of 2026-11-25 ended", item 1).
//
// The tensor is a flat run of fp16 "groups" of L elements (channels-first groups are contiguous).
// Every variant is one cooperative launch of one 512-thread workgroup a compute unit, after a
// memset of its counters, as the stream family launches:
//   copy      y = x, the ceiling.
//   reread    every workgroup sums its share, grid barrier, then reads its share again (in
//             reverse) and writes y = x * s: x crosses memory twice (today's stream forward past
//             what it holds, without its L2 ordering).
//   waves1    waves of whole groups, at most the grid's held bytes: each workgroup bulk-copies its
//             share of the wave into shared memory, sums it, publishes the sum, arrives on the
//             wave's counter, waits for its group's workgroups, merges their sums, writes y from
//             shared memory. x crosses memory once.
//   waves2    waves1 with two buffers of half the size: wave w + 1's bulk copy is in flight while
//             wave w waits for its group and writes.
//   waves1g, waves2g  the same, each workgroup arriving on the counter of every group its share
//             meets and waiting for those groups' workgroups only, not the whole wave's: a fast
//             workgroup goes on to its next wave while slower ones of other groups still read
//             (the stream forward's per-wave grid barrier waits for the slowest workgroup of
//             all: bench/NOTES.md, "What streams at the copy's rate").
// Timing: CUDA events around each launch, sets of buffers rotated so that every launch reads from
// HBM (sets larger than 3x the L2 in all), median of 15.
//
// Build and run on the GPU machine (sm_90): bash bench/waves_probe.sh
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "probe_check.hpp"

#include "hipgn/kernels/primitives/bulk.hpp"

namespace {

namespace bulk = hipgn::kernels::bulk;

constexpr int kBlock = 512;

__host__ __device__ inline long long lmin(long long a, long long b) { return a < b ? a : b; }

struct Args {
  const uint4* x;
  uint4* y;
  float* partials;       // [waves][grid]
  unsigned* counters;    // [waves] ([groups] for the per-group waits, [1] for reread), each in its own 128-byte line
  long long vectors;     // 16-byte vectors of the tensor
  long long group_vectors;
  int groups_per_wave;   // waves1/2: whole groups a wave
  int buffer_vectors;    // waves: a workgroup's buffer, in vectors
};

__device__ __forceinline__ unsigned load_acquire(const unsigned* p) {
  unsigned v;
  asm volatile("ld.acquire.gpu.global.u32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
  return v;
}
__device__ __forceinline__ void arrive(unsigned* p) {
  asm volatile("red.release.gpu.global.add.u32 [%0], 1;" ::"l"(p) : "memory");
}
__device__ __forceinline__ void wait_count(const unsigned* p, unsigned n) {
  while (load_acquire(p) < n) __nanosleep(32);
}

__device__ __forceinline__ uint4 scale8(uint4 v, float a) {
  __half2* h = reinterpret_cast<__half2*>(&v);
  const __half2 s = __float2half2_rn(a);
#pragma unroll
  for (int i = 0; i < 4; ++i) h[i] = __hmul2(h[i], s);
  return v;
}

__device__ float block_sum(float v) {
  __shared__ float part[kBlock / 32];
  __shared__ float total;
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  __syncthreads();
  if (threadIdx.x % 32 == 0) part[threadIdx.x / 32] = v;
  __syncthreads();
  if (threadIdx.x < 32) {
    float t = threadIdx.x < kBlock / 32 ? part[threadIdx.x] : 0.f;
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) t += __shfl_xor_sync(0xffffffffu, t, o);
    if (threadIdx.x == 0) total = t;
  }
  __syncthreads();
  return total;
}

__global__ void __launch_bounds__(kBlock) copy_kernel(Args a) {
  for (long long q = blockIdx.x * (long long)kBlock + threadIdx.x; q < a.vectors; q += (long long)gridDim.x * kBlock)
    a.y[q] = a.x[q];
}

__global__ void __launch_bounds__(kBlock) reread_kernel(Args a) {
  const long long share = (a.vectors + gridDim.x - 1) / gridDim.x;
  const long long lo = blockIdx.x * share, hi = lmin(a.vectors, lo + share);
  float s = 0.f;
  for (long long q = lo + threadIdx.x; q < hi; q += 2 * kBlock) {
    const uint4 v0 = a.x[q];
    const uint4 v1 = q + kBlock < hi ? a.x[q + kBlock] : make_uint4(0, 0, 0, 0);
    s += sum8(v0) + sum8(v1);
  }
  s = block_sum(s);
  if (threadIdx.x == 0) {
    a.partials[blockIdx.x] = s;
    arrive(a.counters);
    wait_count(a.counters, gridDim.x);
  }
  __syncthreads();
  const float f = 1.f + 1e-9f * a.partials[(blockIdx.x + 1) % gridDim.x];
  for (long long q = hi - 1 - threadIdx.x; q >= lo; q -= kBlock) a.y[q] = scale8(a.x[q], f);
}

// Waves of `groups_per_wave` whole groups, each cut into equal shares, one a workgroup; kBuffers
// buffers of buffer_vectors each in shared memory. kPerGroup: the waits of its groups only.
template <int kBuffers, bool kPerGroup>
__global__ void __launch_bounds__(kBlock) waves_kernel(Args a) {
#if defined(HIPGN_BULK_COPY)  // the device pass for sm_90: bulk.hpp's wrappers exist there only
  extern __shared__ __align__(128) uint4 smem[];
  __shared__ alignas(8) std::uint64_t bars[kBuffers];
  const int grid = gridDim.x, b = blockIdx.x;
  const long long wave_vectors = a.group_vectors * a.groups_per_wave;
  const int waves = int((a.vectors + wave_vectors - 1) / wave_vectors);
  const long long share = (wave_vectors + grid - 1) / grid;  // <= buffer_vectors (the host checks)
  auto range = [&](int w, long long& lo, long long& hi) {
    const long long w0 = w * wave_vectors, w1 = lmin(a.vectors, w0 + wave_vectors);
    lo = lmin(w1, w0 + b * share);
    hi = lmin(w1, lo + share);
  };
  auto issue = [&](int w) {
    long long lo, hi;
    range(w, lo, hi);
    // pieces of at most 32 KB, one barrier for the lot
    const int k = w % kBuffers;
    const unsigned bytes = unsigned((hi - lo) * 16);
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(bulk::smem_address(&bars[k])),
                 "r"(bytes)
                 : "memory");
    for (unsigned off = 0; off < bytes; off += 32768) {
      const unsigned n = bytes - off < 32768u ? bytes - off : 32768u;
      asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];" ::"r"(
                       bulk::smem_address(reinterpret_cast<char*>(smem + std::size_t(k) * a.buffer_vectors) + off)),
                   "l"(reinterpret_cast<const char*>(a.x + lo) + off), "r"(n), "r"(bulk::smem_address(&bars[k]))
                   : "memory");
    }
  };
  if (threadIdx.x == 0)
    for (int k = 0; k < kBuffers; ++k) bulk::init(&bars[k]);
  __syncthreads();
  if (threadIdx.x == 0)
    for (int w = 0; w < kBuffers && w < waves; ++w) issue(w);
  for (int w = 0; w < waves; ++w) {
    const int k = w % kBuffers;
    long long lo, hi;
    range(w, lo, hi);
    const uint4* buf = smem + std::size_t(k) * a.buffer_vectors;
    bulk::wait(&bars[k], unsigned((w / kBuffers) & 1));
    float s = 0.f;
    for (long long q = threadIdx.x; q < hi - lo; q += kBlock) s += sum8(buf[q]);
    s = block_sum(s);
    // the workgroups of this workgroup's group (the first group its share meets)
    const long long w0 = w * wave_vectors, w_len = lmin(a.vectors, w0 + wave_vectors) - w0;
    const long long g = lo < hi ? (lo - w0) / a.group_vectors : 0;
    // the shares group gg of the wave meets: [first_of(gg), last_of(gg)], each non-empty
    auto first_of = [&](long long gg) { return int(gg * a.group_vectors / share); };
    auto last_of = [&](long long gg) { return int(lmin(grid - 1, (lmin(w_len, (gg + 1) * a.group_vectors) - 1) / share)); };
    const int first = first_of(g), last = last_of(g);
    if (threadIdx.x == 0) {
      a.partials[std::size_t(w) * grid + b] = s;
      if constexpr (kPerGroup) {
        if (lo < hi) {
          const long long g_last = (hi - 1 - w0) / a.group_vectors;
          unsigned* const c = a.counters + 32 * (std::size_t(w) * a.groups_per_wave);
          for (long long gg = g; gg <= g_last; ++gg) arrive(c + 32 * gg);
          for (long long gg = g; gg <= g_last; ++gg) wait_count(c + 32 * gg, unsigned(last_of(gg) - first_of(gg) + 1));
        }
      } else {
        arrive(a.counters + 32 * w);
        wait_count(a.counters + 32 * w, grid);  // every workgroup of the wave (its groups' ones at least)
      }
    }
    __syncthreads();
    float t = 0.f;
    for (int i = first + threadIdx.x; i <= last; i += kBlock) t += __ldcg(a.partials + std::size_t(w) * grid + i);
    t = block_sum(t);
    const float f = 1.f + 1e-12f * t;
    for (long long q = threadIdx.x; q < hi - lo; q += kBlock) a.y[lo + q] = scale8(buf[q], f);
    __syncthreads();  // the buffer was read: refill it
    if (threadIdx.x == 0 && w + kBuffers < waves) issue(w + kBuffers);
  }
#endif
}

float median(std::vector<float> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  int dev = 0, cus = 0, smem_optin = 0;
  CHECK(cudaGetDevice(&dev));
  CHECK(cudaDeviceGetAttribute(&cus, cudaDevAttrMultiProcessorCount, dev));
  CHECK(cudaDeviceGetAttribute(&smem_optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, dev));
  const int smem_bytes = std::min(smem_optin - 4096, 200 * 1024) / 32768 * 32768;  // whole 32 KB pieces
  const void* waves_fns[2][2] = {{(const void*)waves_kernel<1, false>, (const void*)waves_kernel<1, true>},
                                 {(const void*)waves_kernel<2, false>, (const void*)waves_kernel<2, true>}};
  for (const auto& by_buffers : waves_fns)
    for (const void* fn : by_buffers)
      CHECK(cudaFuncSetAttribute(fn, cudaFuncAttributeMaxDynamicSharedMemorySize, smem_bytes));
  std::printf("compute units %d, shared memory a workgroup %d KB\n", cus, smem_bytes / 1024);
  // (MB of x, MB a group): vae_512x128-like, vae_1024x128, video_5d, sdxl_128x640-like, vae_256x512;
  // then one wave each, whose per-group waits can only shorten a group's wait for its slowest
  // workgroup: sd15_64x640-like, sdxl_128x320-like
  const double shapes[][2] = {{67.1, 2.1}, {268.4, 8.4}, {335.5, 10.5}, {41.9, 0.65}, {134.2, 4.2}, {10.5, 0.16}, {21.0, 0.33}};
  for (const auto& sh : shapes) {
    const long long vectors = (long long)(sh[0] * 1e6 / 16) / 1024 * 1024;
    const long long group_vectors = std::max<long long>(1, (long long)(sh[1] * 1e6 / 16));
    const int sets = std::max(2, int(3 * 50e6 / (sh[0] * 1e6)) + 1);
    std::vector<uint4*> xs(sets), ys(sets);
    for (int i = 0; i < sets; ++i) {
      CHECK(cudaMalloc(&xs[i], vectors * 16));
      CHECK(cudaMalloc(&ys[i], vectors * 16));
      CHECK(cudaMemset(xs[i], 0x3c, vectors * 16));  // 1.0 in fp16, byte-wise close enough
    }
    float* partials;
    unsigned* counters;
    const int max_waves = 4096;
    CHECK(cudaMalloc(&partials, std::size_t(max_waves) * cus * sizeof(float)));
    CHECK(cudaMalloc(&counters, std::size_t(max_waves) * 128));
    cudaEvent_t e0, e1;
    CHECK(cudaEventCreate(&e0));
    CHECK(cudaEventCreate(&e1));
    auto time = [&](auto launch) {
      std::vector<float> ms;
      for (int r = 0; r < 15 + 2; ++r) {
        Args a{xs[r % sets], ys[r % sets], partials, counters, vectors, group_vectors, 0, 0};
        CHECK(cudaEventRecord(e0));
        launch(a);
        CHECK(cudaEventRecord(e1));
        CHECK(cudaEventSynchronize(e1));
        float t;
        CHECK(cudaEventElapsedTime(&t, e0, e1));
        if (r >= 2) ms.push_back(t * 1000.f);
      }
      return median(ms);
    };
    // `lines`: the counters the launch arrives on (the waves', or every wave's groups')
    auto cooperative = [&](const void* fn, Args& a, int smem, long long lines) {
      CHECK(cudaMemsetAsync(counters, 0, std::size_t(std::max(1LL, lines)) * 128));
      void* args[] = {&a};
      CHECK(cudaLaunchCooperativeKernel(fn, dim3(cus), dim3(kBlock), args, smem));
    };
    const float copy = time([&](Args& a) { copy_kernel<<<cus * 4, kBlock>>>(a); });
    const float reread = time([&](Args& a) { cooperative((const void*)reread_kernel, a, 0, 1); });
    std::printf("x %.1f MB, groups of %.2f MB: copy %.1f us, reread %.1f us (%.0f%% of copy)\n", sh[0], sh[1], copy,
                reread, 100 * copy / reread);
    for (int buffers = 1; buffers <= 2; ++buffers)
      for (int per_group = 0; per_group <= 1; ++per_group) {
        const int buffer_vectors = smem_bytes / 16 / buffers;
        const long long per_wave = (long long)buffer_vectors * cus / group_vectors;  // whole groups a wave
        if (per_wave < 1) {
          std::printf("  waves%d: a group exceeds a wave\n", buffers);
          break;
        }
        // (no more groups a wave than the tensor has: the shares are cut from a wave's size)
        const int gpw = int(std::min(per_wave, (vectors + group_vectors - 1) / group_vectors));
        const long long wave_vectors = group_vectors * gpw;
        const int waves = int((vectors + wave_vectors - 1) / wave_vectors);
        if ((long long)waves * (per_group ? gpw : 1) > max_waves) {
          std::printf("  waves%d%s: more counters than allocated\n", buffers, per_group ? "g" : "");
          continue;
        }
        const float t = time([&](Args& a) {
          a.groups_per_wave = gpw;
          a.buffer_vectors = buffer_vectors;
          cooperative(waves_fns[buffers - 1][per_group], a, smem_bytes, (long long)waves * (per_group ? gpw : 1));
        });
        std::printf("  waves%d%s: %d waves of %d groups (%.1f MB), %.1f us (%.0f%% of copy)\n", buffers,
                    per_group ? "g" : "", waves, gpw, wave_vectors * 16 / 1e6, t, 100 * copy / t);
      }
    CHECK(cudaDeviceSynchronize());
    for (int i = 0; i < sets; ++i) {
      CHECK(cudaFree(xs[i]));
      CHECK(cudaFree(ys[i]));
    }
    CHECK(cudaFree(partials));
    CHECK(cudaFree(counters));
  }
  return 0;
}
