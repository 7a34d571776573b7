// A probe, not a kernel of the library: the channels-first forward as one pipelined sweep (bench/
// NOTES.md, "The pipelined sweep, probed"). lag_probe.cu asked whether the second read of x can
// come from the L2 and found the queue slow (27-42% of copy); this asks why, with the two passes
// fused into one step and more independent workgroups a compute unit.
//
// x fp16 [N, C, HW], G groups, y = swish(gamma * xhat + beta). Each group is cut into K tiles of
// TE = B x U x 8 elements (whole 16-byte vectors; the tile is a thread's U vectors). A persistent
// grid of P workgroups (cooperative launch) sweeps the tiles in order, P at a time: at step s
// workgroup b reads tile s P + b (its statistics: count, mean, M2 to a slot; the last tile of a
// group to arrive merges the group's slots in a fixed order and publishes mean and rstd) and
// normalizes tile (s - D) P + b, which it read D steps before and which the L2 still holds.
// D = 2 + ceil((K - 1) / P): every tile a normalized tile's group needs was read at least one step
// before, so a workgroup only waits for steps other workgroups have finished (no deadlock); the
// L2 holds D P tiles of x between the reads.
//
// The hypothesis it was written to test: the lag probe's items were serial chains (loads, block
// reductions, an acq_rel atomic whose release waits for the thread's outstanding memory, its
// prefetch included) that two workgroups a compute unit could not cover. Here a step fuses a
// read and a normalize, the normalize's count is a relaxed atomic whose return is used a step
// later, and 1-8 workgroups a compute unit run side by side (the template's MINB). It failed
// (NOTES: 24-45% of copy; with every arrival and wait left out, kMode 1, 44-68%): the sweep's
// own data path, not only its synchronization, stays below the stream family.
//
// Build and run on the GPU machine (sm_90): bash bench/pipe_probe.sh
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <vector>

#include "probe_check.hpp"

namespace {

struct Args {
  const __half* x;
  __half* y;
  const float* gamma;
  const float* beta;
  float4* slot;      // [T]: n, mean, M2 of a tile
  float2* stats;     // [groups]: mean, rstd
  unsigned* count;   // [groups]: K stats arrivals, +1 published, +K normalized; zero between launches
  long long hw;      // spatial size
  long long L;       // elements a group
  int C, G, cpg;
  int K;             // tiles a group
  long long T;       // tiles
  int D;             // lag, in steps
};

__device__ __forceinline__ unsigned atom_acq_rel(unsigned* p, unsigned v) {
  unsigned old;
  asm volatile("atom.acq_rel.gpu.global.add.u32 %0, [%1], %2;" : "=r"(old) : "l"(p), "r"(v) : "memory");
  return old;
}
__device__ __forceinline__ unsigned atom_relaxed(unsigned* p, unsigned v) {
  unsigned old;
  asm volatile("atom.relaxed.gpu.global.add.u32 %0, [%1], %2;" : "=r"(old) : "l"(p), "r"(v) : "memory");
  return old;
}
// kHint: 0 plain loads and stores; 1 the second read of x as last use (ld.global.lu) and y
// stores evict-first (st.global.cs). Indices in 32 bits (tiles, elements of a group), pointers
// formed once: 64-bit indices spilled every configuration.
// kMode (what it leaves out, to place the time): 0 nothing; 1 every arrival and wait (the
// statistics are computed and stored, the normalize takes whatever stats[] holds: timing only);
// 2 the release and acquire (relaxed atomics and loads: timing only)
template <int B, int U, int MINB, int kHint, int kMode = 0>
__global__ void __launch_bounds__(B, MINB) pipe(Args a) {
  constexpr int V = 8, TE = B * U * V;
  __shared__ float2 red[B / 32];
  __shared__ float2 table[64];  // scale, shift of the normalized tile's channels (cpg <= 64)
  __shared__ float2 st;
  const int b = blockIdx.x, P = gridDim.x, t = threadIdx.x, K = a.K, T = int(a.T), L = int(a.L);
  const int S = (T + P - 1) / P;
  unsigned pending = 0, pending_g = 0;  // thread 0: the last normalize arrival's ticket, its group
  for (int s = 0; s < S + a.D; ++s) {
    const int ts = s * P + b, tn = (s - a.D) * P + b;
    const bool hs = s < S && ts < T, hn = s >= a.D && tn < T;
    // 1. the read tile's loads
    uint4 rs[U];
    int gs = 0, len_s = 0;
    float shift = 0.f;
    if (hs) {
      gs = ts / K;
      const int off = (ts - gs * K) * TE;
      len_s = min(TE, L - off);
      const __half* xs = a.x + (long long)gs * L + off;
#pragma unroll
      for (int u = 0; u < U; ++u) {
        const int e = (u * B + t) * V;
        rs[u] = e < len_s ? *reinterpret_cast<const uint4*>(xs + e) : make_uint4(0, 0, 0, 0);
      }
      shift = __half2float(xs[0]);
    }
    // 2. the normalized tile
    if (hn) {
      const int gn = tn / K, off = (tn - gn * K) * TE, len = min(TE, L - off);
      if (t == 0) {
        if (pending == 2u * unsigned(K)) a.count[pending_g] = 0, pending = 0;  // the group's last: zero again
        unsigned ns = 32;
        while (kMode != 1 && (kMode == 2 ? *(volatile unsigned*)(a.count + gn) : ld_acquire(a.count + gn)) < unsigned(K) + 1) {
          __nanosleep(ns);
          ns = ns < 256 ? 2 * ns : 256;
        }
        st = __ldcg(a.stats + gn);
      }
      __syncthreads();
      if (t < a.cpg) {
        const int c = (gn % a.G) * a.cpg + t;
        const float sc = a.gamma[c] * st.y;
        table[t] = make_float2(sc, a.beta[c] - st.x * sc);
      }
      const long long base = (long long)gn * L + off;
      uint4 rn[U];
#pragma unroll
      for (int u = 0; u < U; ++u) {
        const int e = (u * B + t) * V;
        if (e < len) {
          const uint4* p = reinterpret_cast<const uint4*>(a.x + base + e);
          if constexpr (kHint == 1) rn[u] = __ldlu(p);
          else rn[u] = *p;
        }
      }
      __syncthreads();
#pragma unroll
      for (int u = 0; u < U; ++u) {
        const int e = (u * B + t) * V;
        if (e < len) {
          // the vector's channel row within the group; HW % 8 == 0 here, so one row a vector
          const float2 ss = table[unsigned(off + e) / unsigned(a.hw)];
          const uint4 o = silu_affine8(rn[u], ss);
          uint4* q = reinterpret_cast<uint4*>(a.y + base + e);
          if constexpr (kHint == 1) __stcs(q, o);
          else *q = o;
        }
      }
      if (t == 0 && kMode != 1) pending = atom_relaxed(a.count + gn, 1u), pending_g = unsigned(gn);
    }
    // 3. the read tile's statistics
    if (hs) {
      float s1 = 0.f, s2 = 0.f;
#pragma unroll
      for (int u = 0; u < U; ++u) {
        const int e = (u * B + t) * V;
        if (e < len_s) shifted_sums8(rs[u], shift, s1, s2);
      }
      const float2 tot = block_sum2<B, true>(s1, s2, red);
      if (t < 32) {
        unsigned ticket = 0;
        if (t == 0) {
          const float n = float(len_s), d = tot.x / n;
          a.slot[ts] = make_float4(n, shift + d, fmaxf(tot.y - tot.x * d, 0.f), 0.f);
          if (kMode == 0) ticket = atom_acq_rel(a.count + gs, 1u);
          if (kMode == 2) ticket = atom_relaxed(a.count + gs, 1u);
          if (kMode == 1) ticket = 1u << 30;
        }
        ticket = __shfl_sync(~0u, ticket, 0);
        if (ticket + 1 == unsigned(K)) {  // the group's last tile: merge its slots, publish
          St m{0.f, 0.f, 0.f};
          for (int j = t; j < K; j += 32) {
            const float4 w = __ldcg(a.slot + (long long)gs * K + j);
            m = merge(m, St{w.x, w.y, w.z});
          }
          m = warp_merge_ordered(m, t);  // (t < 32: its lane)
          if (t == 0) {
            a.stats[gs] = make_float2(m.mean, rsqrtf(m.m2 / m.n + 1e-5f));
            if (kMode == 0) atom_acq_rel(a.count + gs, 1u);  // published: K + 1
            else atom_relaxed(a.count + gs, 1u);
          }
        }
      }
    }
    __syncthreads();  // st, table, red are reused next step
  }
  if (t == 0 && pending == 2u * unsigned(K)) a.count[pending_g] = 0;
}

template <int B, int U, int MINB, int kHint, int kMode = 0>
void run_config(std::vector<Args> sets, const GnCase& c, int cus, double copy, bool check_it, int extra_lag,
                const Affine& af, cudaStream_t s) {
  auto kernel = pipe<B, U, MINB, kHint, kMode>;
  int per_sm = 0;
  CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, B, 0));
  cudaFuncAttributes fa;
  CHECK(cudaFuncGetAttributes(&fa, kernel));
  const int grid = cus * per_sm;
  constexpr long long TE = (long long)B * U * 8;
  const long long groups = c.groups();
  for (Args& a : sets) {
    a.K = int((a.L + TE - 1) / TE);
    a.T = groups * a.K;
    a.D = 2 + int((a.K - 1 + grid - 1) / grid) + extra_lag;
  }
  const double us = cooperative_us(reinterpret_cast<const void*>(kernel), sets, grid, B, 0, s);
  std::printf("  mode %d B %3d U %d minb %d hint %d: %3d regs, grid %4d (%d/SM), K %4d, D %2d, L2 window %5.1f MB: %8.1f us %5.1f%% of copy\n",
              kMode, B, U, MINB, kHint, fa.numRegs, grid, per_sm, sets[0].K, sets[0].D,
              double(sets[0].D) * grid * TE * 2 / 1e6, us, 100.0 * copy / us);
  std::fflush(stdout);
  if (check_it) check_silu_forward(sets[0], c.groups(), c.g, af);
  CHECK(cudaGetLastError());
}

}  // namespace

int main() {
  int cus = 0;
  const cudaStream_t s = probe_stream(&cus);
  const GnCase cases[] = {{"sd15_64x640 (10 MB)", 2, 640, 32, 64LL * 64},
                        {"sdxl_128x640 (40 MB)", 2, 640, 32, 128LL * 128},
                        {"vae_256x512 (64 MB)", 1, 512, 32, 256LL * 256},
                        {"vae_512x256 (128 MB)", 1, 256, 32, 512LL * 512},
                        {"video_5d_20x256x256 (320 MB)", 1, 128, 32, 20LL * 256 * 256}};
  for (const GnCase& c : cases) {
    const long long groups = c.groups(), L = c.group_elements();
    const std::size_t bytes = c.bytes();
    const int nsets = rotating_sets(bytes, 200u << 20);
    const Affine af(c.c);
    const long long max_t = groups * (L / 2048 + 1);  // the smallest tile (128 x 2 x 8)
    std::vector<Args> sets;
    for (int i = 0; i < nsets; ++i) {
      Args a{};
      alloc_xy(a, groups * L, i, 12, 0.1f, s);
      CHECK(cudaMalloc(&a.slot, std::size_t(max_t) * sizeof(float4)));
      CHECK(cudaMalloc(&a.stats, std::size_t(groups) * sizeof(float2)));
      CHECK(cudaMalloc(&a.count, std::size_t(groups) * sizeof(unsigned)));
      CHECK(cudaMemset(a.count, 0, std::size_t(groups) * sizeof(unsigned)));
      a.gamma = af.d_gamma, a.beta = af.d_beta, a.hw = c.hw, a.L = L, a.C = c.c, a.G = c.g, a.cpg = c.c / c.g;
      sets.push_back(a);
    }
    CHECK(cudaStreamSynchronize(s));
    const double copy = copy_us(sets, bytes, s);
    std::printf("%-30s %d sets: copy %.1f us\n", c.name, nsets, copy);
    std::fflush(stdout);
    run_config<256, 4, 4, 0>(sets, c, cus, copy, true, 0, af, s);
    run_config<256, 4, 4, 1>(sets, c, cus, copy, false, 0, af, s);
    run_config<256, 4, 4, 0>(sets, c, cus, copy, false, 2, af, s);
    run_config<128, 4, 8, 0>(sets, c, cus, copy, false, 0, af, s);
    run_config<512, 2, 2, 0>(sets, c, cus, copy, false, 0, af, s);
    run_config<256, 4, 4, 1, 1>(sets, c, cus, copy, false, 0, af, s);
    run_config<256, 4, 4, 1, 2>(sets, c, cus, copy, false, 0, af, s);
    run_config<512, 2, 2, 1, 1>(sets, c, cus, copy, false, 0, af, s);
    for (Args& a : sets) {
      free_xy(a);
      CHECK(cudaFree(a.slot));
      CHECK(cudaFree(a.stats));
      CHECK(cudaFree(a.count));
    }
  }
  return 0;
}
