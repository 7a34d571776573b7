// A probe, not a kernel of the library: the channels-first forward as a sweep of tiles held in
// shared memory, a step apart, with no grid-wide wait (bench/NOTES.md, "Held tiles a step apart,
// probed"). The pipelined sweep (pipe_probe.cu) re-read each tile through the L2 and waited on
// one warp's merge of a group's many small tiles: 24-45% of copy. The stream family holds x on
// chip but waits at a grid barrier each wave for the slowest workgroup (vae_512x256: 18.5 us of
// 114). This asks what the data path and the synchronization cost when both are taken away:
// tiles held in shared memory between their two uses, one step apart, each workgroup waiting
// only on the groups of its own tiles.
//
// x fp16 [N, C, HW] (HW a multiple of 8, x 16-byte aligned: the probe does not peel), G groups,
// y = silu(gamma * xhat + beta). Each group is cut into K tiles of TE = B x TV x 8 elements (a
// thread's TV 16-byte vectors); tile k of group g is global tile g K + k. A persistent grid of P
// workgroups (cooperative launch) takes tile s P + b at step s. Each step a workgroup
//   a. waits for tile s's loads (cp.async, issued a step before into buffer s % 3), sums it
//      (shifted by its first element), stores (n, mean, M2) to the tile's slot and arrives on
//      the group's counter (release);
//   b. issues tile s + 1's loads into buffer (s + 1) % 3 (each thread its own vectors, so no
//      barrier guards a buffer: a thread only ever reads the slots it loaded);
//   c. waits for tile s - 1's group (all K arrivals, acquire), merges its K slots in a fixed
//      order (every workgroup of the group the same bits), and writes y of tile s - 1 from
//      buffer (s - 1) % 3.
// No deadlock while K <= P: the tiles a step-s wait needs were all published at steps <= s,
// and a workgroup publishes step s before it waits at step s (the probe skips shapes past that).
// It failed (NOTES: 30-56% of copy with statistics, below the stream family on every shape; the
// data path alone, kMode 1, 46-73%): each step's barriers, block reduction and merge wait are a
// serial chain that a tile's loads in flight do not cover, and deeper rings, with smaller tiles
// to fit, only lengthen it.
// kMode 0 publishes through a counter a group (an acq_rel pair: the release waits for the
// publishing thread's earlier y stores); kMode 2 without any fence or counter, as NCCL's LL
// protocol does: each of a tile's two statistics is stored as one 64-bit word with the launch's
// epoch beside it, and a reader spins on the words themselves (the tile's count it knows); kMode
// 1 leaves out every publish, wait and merge (timing only, results wrong): the data path alone.
//
// Build and run on the GPU machine (sm_90): bash bench/held_probe.sh
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
  float4* slot;     // [T]: n, mean, M2 of a tile
  unsigned* count;  // [groups]: tiles published; zeroed by the group's last normalizer
  unsigned* done;   // [groups]: tiles normalized; likewise
  unsigned long long* flagged;  // kMode 2, [T][2]: a tile's mean and M2, each beside the launch's epoch
  unsigned* epoch;     // kMode 2: launches finished
  unsigned* finished;  // kMode 2: workgroups of this launch finished; zeroed by the last
  int hw;           // spatial size (a multiple of 8)
  int L;            // elements a group
  int G, cpg;
  int K;            // tiles a group
  long long T;      // tiles
};

__device__ __forceinline__ void cp_async16(void* smem, const void* g) {
  const unsigned s = unsigned(__cvta_generic_to_shared(smem));
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" ::"r"(s), "l"(g) : "memory");
}
__device__ __forceinline__ unsigned atom_release(unsigned* p, unsigned v) {
  unsigned old;
  asm volatile("atom.release.gpu.global.add.u32 %0, [%1], %2;" : "=r"(old) : "l"(p), "r"(v) : "memory");
  return old;
}
__device__ __forceinline__ void st_volatile64(unsigned long long* p, unsigned long long v) {
  asm volatile("st.volatile.global.u64 [%0], %1;" ::"l"(p), "l"(v) : "memory");
}
__device__ __forceinline__ unsigned long long ld_volatile64(const unsigned long long* p) {
  unsigned long long v;
  asm volatile("ld.volatile.global.u64 %0, [%1];" : "=l"(v) : "l"(p) : "memory");
  return v;
}
__device__ __forceinline__ unsigned long long flag(float v, unsigned ep) {
  return (static_cast<unsigned long long>(ep) << 32) | __float_as_uint(v);
}
// the value of the word at p, loaded as w, once it carries epoch ep
__device__ __forceinline__ float settle(unsigned long long w, const unsigned long long* p, unsigned ep) {
  for (unsigned ns = 32; unsigned(w >> 32) != ep; ns = ns < 256 ? 2 * ns : 256) {
    __nanosleep(ns);
    w = ld_volatile64(p);
  }
  return __uint_as_float(unsigned(w));
}
// r = e / hw for e < 2^24 (the probe's groups), by a float reciprocal and one correction each way
__device__ __forceinline__ int row_of(int e, int hw, float inv) {
  int r = __float2int_rz(float(e) * inv);
  if ((r + 1) * hw <= e) ++r;
  if (r * hw > e) --r;
  return r;
}

// NB buffers in a ring: tile s + NB - 2's loads issued at step s (NB = 3: a step ahead)
template <int B, int TV, int MINB, int NB, int kMode>
__global__ void __launch_bounds__(B, MINB) held(Args a) {
  constexpr int V = 8, TE = B * TV * V, AHEAD = NB - 2;
  static_assert(AHEAD >= 1 && AHEAD <= 8, "cp.async.wait_group takes an immediate");
  extern __shared__ uint4 buf[];  // [NB][TV][B]
  __shared__ float2 red[B / 32];
  __shared__ float2 table[64];  // the normalized tile's group: scale, shift a channel (cpg <= 64)
  const int b = blockIdx.x, P = gridDim.x, t = threadIdx.x, K = a.K, L = a.L;
  const long long T = a.T;
  const int S = int((T + P - 1) / P);
  const float inv_hw = 1.f / float(a.hw);
  // kMode 2: this launch's epoch (the previous launch's last workgroup raised it after every
  // workgroup had read it)
  const unsigned ep = kMode == 2 ? *reinterpret_cast<volatile unsigned*>(a.epoch) + 1 : 0;
  // tile s's group, offset in it and elements; false past the last tile
  auto tile_of = [&](int s, int& g, int& off, int& len) {
    const long long ts = (long long)s * P + b;
    if (s < 0 || s >= S || ts >= T) return false;
    g = int(ts / K);
    off = int(ts - (long long)g * K) * TE;
    len = min(TE, L - off);
    return true;
  };
  // tile s's loads into buffer s % NB, one commit group a step even when empty (wait_group counts
  // groups)
  auto issue = [&](int s) {
    int g, off, len;
    if (tile_of(s, g, off, len)) {
      const __half* src = a.x + (long long)g * L + off;
      uint4* dst = buf + (s % NB) * TV * B;
#pragma unroll
      for (int u = 0; u < TV; ++u) {
        const int e = (u * B + t) * V;
        if (e < len) cp_async16(dst + u * B + t, src + e);
      }
    }
    asm volatile("cp.async.commit_group;" ::: "memory");
  };
  for (int s = 0; s < AHEAD; ++s) issue(s);
  for (int s = 0; s <= S; ++s) {
    int g, off, len;
    // a. tile s: its statistics, published (the AHEAD - 1 groups after its own may be in flight)
    asm volatile("cp.async.wait_group %0;" ::"n"(AHEAD - 1) : "memory");
    __syncthreads();  // thread 0's first vector (the shift) is in; red is free
    if (tile_of(s, g, off, len)) {
      const uint4* src = buf + (s % NB) * TV * B;
      const float shift = __half2float(reinterpret_cast<const __half*>(src)[0]);
      float s1 = 0.f, s2 = 0.f;
#pragma unroll
      for (int u = 0; u < TV; ++u) {
        if ((u * B + t) * V < len) shifted_sums8(src[u * B + t], shift, s1, s2);
      }
      const float2 tot = block_sum2<B, false>(s1, s2, red);
      if (t == 0 && kMode != 1) {
        const float n = float(len), d = tot.x / n, mean = shift + d, m2 = fmaxf(tot.y - tot.x * d, 0.f);
        const long long ts = (long long)s * P + b;
        if (kMode == 0) {
          a.slot[ts] = make_float4(n, mean, m2, 0.f);
          atom_release(a.count + g, 1u);
        } else {
          st_volatile64(a.flagged + 2 * ts, flag(mean, ep));
          st_volatile64(a.flagged + 2 * ts + 1, flag(m2, ep));
        }
      }
    }
    // b. tile s + AHEAD's loads, into the buffer normalized at step s - 1
    issue(s + AHEAD);
    // c. tile s - 1: its group's statistics, then y
    if (tile_of(s - 1, g, off, len)) {
      if (t < 32) {
        if (kMode == 0 && t == 0) {
          unsigned ns = 32;
          while (ld_acquire(a.count + g) < unsigned(K)) {
            __nanosleep(ns);
            ns = ns < 256 ? 2 * ns : 256;
          }
        }
        __syncwarp();
        St m{1.f, 0.f, 1.f};  // kMode 1: no statistics at all (timing only)
        if (kMode != 1) m = St{0.f, 0.f, 0.f};
        // a lane's slots j = t, t + 32, ... in that order, their loads SB slots at a time in
        // flight together (one at a time, a lane's K / 32 slots were as many L2 round trips; two
        // at kMode 2, whose four spilled)
        constexpr int SB = kMode == 2 ? 2 : 4;
        for (int j0 = t; kMode != 1 && j0 < K; j0 += 32 * SB) {
          float4 w[SB];
          unsigned long long f[SB][2];
#pragma unroll
          for (int u = 0; u < SB; ++u) {
            const int j = j0 + 32 * u;
            const long long tj = (long long)g * K + j;
            if (j < K && kMode == 0) w[u] = __ldcg(a.slot + tj);
            if (j < K && kMode == 2) f[u][0] = ld_volatile64(a.flagged + 2 * tj), f[u][1] = ld_volatile64(a.flagged + 2 * tj + 1);
          }
#pragma unroll
          for (int u = 0; u < SB; ++u) {
            const int j = j0 + 32 * u;
            const long long tj = (long long)g * K + j;
            if (j < K && kMode == 0) m = merge(m, St{w[u].x, w[u].y, w[u].z});
            if (j < K && kMode == 2)
              m = merge(m, St{float(min(TE, L - j * TE)), settle(f[u][0], a.flagged + 2 * tj, ep),
                              settle(f[u][1], a.flagged + 2 * tj + 1, ep)});
          }
        }
        m = warp_merge_ordered(m, t);  // (t < 32: its lane)
        const float rstd = rsqrtf(m.m2 / m.n + 1e-5f);
        for (int c = t; c < a.cpg; c += 32) {
          const int ch = (g % a.G) * a.cpg + c;
          const float sc = a.gamma[ch] * rstd;
          table[c] = make_float2(sc, a.beta[ch] - m.mean * sc);
        }
      }
      __syncthreads();
      const uint4* src = buf + ((s - 1) % NB) * TV * B;
      __half* dst = a.y + (long long)g * L + off;
#pragma unroll
      for (int u = 0; u < TV; ++u) {
        const int e = (u * B + t) * V;
        if (e < len) {
          const float2 ss = table[row_of(off + e, a.hw, inv_hw)];  // HW % 8 == 0: one row a vector
          *reinterpret_cast<uint4*>(dst + e) = silu_affine8(src[u * B + t], ss);
        }
      }
      if (t == 0 && kMode == 0 && atomicAdd(a.done + g, 1u) == unsigned(K) - 1) {
        // the group's last tile normalized: every wait on its count has passed
        a.count[g] = 0;
        a.done[g] = 0;
      }
    }
  }
  if (kMode == 2) {
    __syncthreads();
    if (t == 0 && atomicAdd(a.finished, 1u) == unsigned(P) - 1) {
      *a.finished = 0;
      atomicAdd(a.epoch, 1u);
    }
  }
}

template <int B, int TV, int MINB, int NB, int kMode = 0>
void run_config(std::vector<Args> sets, const GnCase& c, int cus, double copy, bool check_it,
                const Affine& af, cudaStream_t s) {
  auto kernel = held<B, TV, MINB, NB, kMode>;
  const int smem = NB * B * TV * 16;
  CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
  int per_sm = 0;
  CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, B, smem));
  cudaFuncAttributes fa;
  CHECK(cudaFuncGetAttributes(&fa, kernel));
  const int grid = cus * per_sm;
  constexpr int TE = B * TV * 8;
  const long long groups = c.groups();
  for (Args& a : sets) {
    a.K = (a.L + TE - 1) / TE;
    a.T = groups * a.K;
  }
  std::printf("  mode %d B %4d TV %d minb %d ring %2d: %3d regs, %3d KB smem, grid %4d (%d/SM), K %4d, tiles %lld: ", kMode, B,
              TV, MINB, NB, fa.numRegs, smem >> 10, grid, per_sm, sets[0].K, sets[0].T);
  if (sets[0].K > grid) {
    std::printf("skipped (K > P: the step-apart wait could deadlock)\n");
    return;
  }
  const double us = cooperative_us(reinterpret_cast<const void*>(kernel), sets, grid, B, std::size_t(smem), s);
  std::printf("%8.1f us %5.1f%% of copy\n", us, 100.0 * copy / us);
  std::fflush(stdout);
  if (check_it) check_silu_forward(sets[0], c.groups(), c.g, af);
  CHECK(cudaGetLastError());
}

}  // namespace

int main() {
  int cus = 0;
  const cudaStream_t s = probe_stream(&cus);
  const GnCase cases[] = {{"sd15_64x640 (10 MB)", 2, 640, 32, 64 * 64},
                        {"sdxl_128x640 (42 MB)", 2, 640, 32, 128 * 128},
                        {"vae_256x512 (67 MB)", 1, 512, 32, 256 * 256},
                        {"r50_56x256_n32 (51 MB)", 32, 256, 32, 56 * 56},
                        {"vae_512x256 (134 MB)", 1, 256, 32, 512 * 512}};
  for (const GnCase& c : cases) {
    const long long groups = c.groups();
    const int L = int(c.group_elements());
    const std::size_t bytes = c.bytes();
    const int nsets = rotating_sets(bytes, 200u << 20);
    const Affine af(c.c);
    const long long max_t = groups * (L / (256 * 2 * 8) + 1);  // the smallest tile (256 x 2 x 8)
    std::vector<Args> sets;
    for (int i = 0; i < nsets; ++i) {
      Args a{};
      alloc_xy(a, groups * L, i, 12, 0.1f, s);
      CHECK(cudaMalloc(&a.slot, std::size_t(max_t) * sizeof(float4)));
      CHECK(cudaMalloc(&a.count, std::size_t(groups) * sizeof(unsigned)));
      CHECK(cudaMalloc(&a.done, std::size_t(groups) * sizeof(unsigned)));
      CHECK(cudaMemset(a.count, 0, std::size_t(groups) * sizeof(unsigned)));
      CHECK(cudaMemset(a.done, 0, std::size_t(groups) * sizeof(unsigned)));
      CHECK(cudaMalloc(&a.flagged, std::size_t(max_t) * 2 * sizeof(unsigned long long)));
      CHECK(cudaMemset(a.flagged, 0, std::size_t(max_t) * 2 * sizeof(unsigned long long)));
      CHECK(cudaMalloc(&a.epoch, 2 * sizeof(unsigned)));
      CHECK(cudaMemset(a.epoch, 0, 2 * sizeof(unsigned)));
      a.finished = a.epoch + 1;
      a.gamma = af.d_gamma, a.beta = af.d_beta, a.hw = int(c.hw), a.L = L, a.G = c.g, a.cpg = c.c / c.g;
      sets.push_back(a);
    }
    CHECK(cudaStreamSynchronize(s));
    const double copy = copy_us(sets, bytes, s);
    std::printf("%-26s %d sets: copy %.1f us\n", c.name, nsets, copy);
    std::fflush(stdout);
    // a step ahead, 32 KB tiles, 2 a compute unit (the best of the first run's five shapes)
    run_config<512, 4, 2, 3>(sets, c, cus, copy, false, af, s);
    run_config<512, 4, 2, 3, 2>(sets, c, cus, copy, true, af, s);
    run_config<512, 4, 2, 3, 1>(sets, c, cus, copy, false, af, s);
    // deeper rings: tiles 2-4 steps ahead, 96-128 KB of loads in flight a compute unit
    run_config<512, 2, 2, 6>(sets, c, cus, copy, true, af, s);
    run_config<512, 2, 2, 6, 2>(sets, c, cus, copy, true, af, s);
    run_config<512, 2, 2, 6, 1>(sets, c, cus, copy, false, af, s);
    run_config<256, 4, 3, 4, 2>(sets, c, cus, copy, false, af, s);
    run_config<1024, 2, 1, 6, 2>(sets, c, cus, copy, true, af, s);
    run_config<1024, 2, 1, 6, 1>(sets, c, cus, copy, false, af, s);
    for (Args& a : sets) {
      free_xy(a);
      CHECK(cudaFree(a.slot));
      CHECK(cudaFree(a.count));
      CHECK(cudaFree(a.done));
      CHECK(cudaFree(a.flagged));
      CHECK(cudaFree(a.epoch));
    }
  }
  return 0;
}
