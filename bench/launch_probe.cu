// A probe, not a kernel of the library: the floor of the onchip forward's shape of work, by
// launch shape (bench/NOTES.md, "The held pattern's floor by launch shape"). The channels-last
// onchip forward holds a group's part in registers from its load to its store: every workgroup
// loads at once, reduces, exchanges across its cluster, then stores. At vae_64x512 (4 MB) it
// takes 7.4 us against a copy's 3.9, and a probe configuration (512 x 8 x 4, clusters of 4)
// took 11.9 although its printing workgroups spanned 5.7. This asks, with nothing but that
// shape of work (no channels, gamma or beta), what each step costs at each launch shape, and
// how many of each shape's clusters the device runs at once.
//
// x fp16, a multiple of B x E 16-byte vectors; workgroup b holds vectors [b B E, (b + 1) B E),
// thread t vectors t + e B (e < E), all loaded before any is used. Modes (each adds to the one
// before, unless it says otherwise):
//   0 an empty launch of the shape (no loads, no stores): the launch alone;
//   1 the held copy: load all E, store all E (y = x);
//   2 the workgroup's two sums (mean, then shifted squares: two block reductions), y = silu of
//     the normalized x;
//   3 where the launch has clusters: the workgroups' (mean, M2) exchanged across the cluster as
//     the library's onchip parts kernels do (each pushes its pair into every peer's shared
//     memory by st.async, completing on the peer's mbarrier; a relaxed cluster barrier before
//     exit);
//   4 mode 2 with y = the normalized x, no SiLU: what SiLU's two MUFU operations an element cost;
//   5 mode 2 with one block reduction: sums and squares shifted by the workgroup's first element;
//   6 mode 3 through cooperative_groups' cluster.sync() (arrive.release, wait.acquire) and
//     loads of the peers' pairs, a barrier to publish and one before exit.
//   7 mode 3 in K launches of a K-th of the workgroups each (stages), each after the first
//     launched with programmatic stream serialization; a stage lets the next launch once all its
//     workgroups have their loads (griddepcontrol.launch_dependents after the loads), and waits
//     for the one before (griddepcontrol.wait) only before it exits. So a later stage's loads
//     stream in while an earlier one reduces, exchanges and stores: whether the device, given
//     the loads of a few groups first, overlaps their tail with the next groups' loads.
// Timed as bench.py times: a graph of one launch a rotating set (sets > 3x the L2), replayed,
// event-timed, median per launch; cudaMemcpy of the same bytes beside it.
//
// Two more questions, each its own run (bench/NOTES.md, "Two items a workgroup, and fewer
// threads a workgroup, probed"):
//   `two`: two items a workgroup (held2), the second's loads in flight while the first reduces,
//     exchanges and stores, against one item a workgroup (mode 3) of the same group and of the
//     same bytes a workgroup;
//   `threads`: mode 3 for one group size at fewer threads a workgroup, each holding more.
//
// Build and run on the GPU machine (sm_90): bash bench/launch_probe.sh [two | threads]
#include <cooperative_groups.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "probe_check.hpp"

namespace cg = cooperative_groups;

namespace {

struct Args {
  const __half* x;
  __half* y;
  int cluster;  // workgroups a cluster (1: launched without clusters)
  int pad;      // bytes of dynamic shared memory, unused: fewer workgroups a compute unit
  int offset;   // mode 7: this stage's first workgroup
  int stage;    // mode 7: 0 the first stage (no wait), else a later one
};

__device__ __forceinline__ std::uint32_t smem_u32(const void* p) {
  return static_cast<std::uint32_t>(__cvta_generic_to_shared(p));
}

// Pushes this workgroup's (mean, M2) of n elements to every workgroup of its cluster (st.async
// into `pushed[rank]`, completing on each peer's mbarrier `bar`, used once: parity 0), waits for
// all of the cluster's, and leaves their merge in rank order in mean and m2 (the library's
// onchip parts kernels' exchange). Every peer's `bar` must be initialized (a cluster barrier
// after init_push_barriers) before the first push.
__device__ __forceinline__ void push_exchange(float& mean, float& m2, float n, int cluster, float2* pushed,
                                              std::uint64_t* bar) {
  const int lane = threadIdx.x % 32;
  if (threadIdx.x == 0)
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(smem_u32(bar)), "r"(unsigned(cluster * 8))
                 : "memory");
  unsigned rank;
  asm("mov.u32 %0, %%cluster_ctarank;" : "=r"(rank));
  if (int(threadIdx.x) < cluster) {
    std::uint32_t dst, dst_bar;
    asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(dst) : "r"(smem_u32(&pushed[rank])), "r"(int(threadIdx.x)));
    asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(dst_bar) : "r"(smem_u32(bar)), "r"(int(threadIdx.x)));
    asm volatile("st.async.shared::cluster.mbarrier::complete_tx::bytes.v2.f32 [%0], {%1, %2}, [%3];" ::"r"(dst),
                 "f"(mean), "f"(m2), "r"(dst_bar)
                 : "memory");
  }
  unsigned done = 0;
  while (!done)
    asm volatile("{ .reg .pred p; mbarrier.try_wait.parity.shared::cta.b64 p, [%1], 0; selp.u32 %0, 1, 0, p; }"
                 : "=r"(done)
                 : "r"(smem_u32(bar))
                 : "memory");
  St m{0.f, 0.f, 0.f};
  if (lane < cluster) m = St{n, pushed[lane].x, pushed[lane].y};
  m = warp_merge_ordered(m, lane);
  mean = m.mean, m2 = m.m2 / m.n * n;
}

// Thread 0 initializes `count` mbarriers of one arrival each for push_exchange; then the
// workgroup arrives at the cluster barrier whose wait must come before the first push.
__device__ __forceinline__ void init_push_barriers(std::uint64_t* bar, int count) {
  if (threadIdx.x == 0) {
    for (int i = 0; i < count; ++i)
      asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" ::"r"(smem_u32(&bar[i])) : "memory");
    asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
  }
  asm volatile("barrier.cluster.arrive.relaxed.aligned;" ::: "memory");
}

// A chunk's (mean, M2) of its E vectors a thread by two block sums (mean, then shifted squares).
template <int B, int E>
__device__ __forceinline__ void chunk_moments(const uint4 (&v)[E], float2* red, float& mean, float& m2) {
  constexpr float n = float(B * E * 8);
  float s = 0.f;
#pragma unroll
  for (int e = 0; e < E; ++e) s += sum8(v[e]);
  mean = block_sum2<B, false>(s, 0.f, red).x / n;
  float s1 = 0.f, s2 = 0.f;
#pragma unroll
  for (int e = 0; e < E; ++e) shifted_sums8(v[e], mean, s1, s2);
  m2 = block_sum2<B, true>(s1, s2, red).y;
}

template <int B, int E, int kMode>
__global__ void __launch_bounds__(B) held(Args a) {
  __shared__ float2 red[B / 32];
  __shared__ float2 part;       // this workgroup's (mean, M2), read by its cluster (mode 6)
  __shared__ float2 pushed[16];  // the cluster's pairs, pushed by rank (mode 3; clusters of up to 16)
  __shared__ std::uint64_t bar;
  const long long first = (long long)(blockIdx.x + a.offset) * B * E + threadIdx.x;
  const uint4* x = reinterpret_cast<const uint4*>(a.x) + first;
  uint4* y = reinterpret_cast<uint4*>(a.y) + first;
  if constexpr (kMode == 0) {
    if (a.cluster < 0) y[0] = x[0];  // never taken: keeps the arguments live
    return;
  } else {
    const bool push = (kMode == 3 || kMode == 7) && a.cluster > 1;
    if (push) init_push_barriers(&bar, 1);  // waited for before the push
    uint4 v[E];
#pragma unroll
    for (int e = 0; e < E; ++e) v[e] = x[e * B];
    if constexpr (kMode == 7) {
      // the loads are in registers once any use waits for them: a use here makes them land first
      float any = 0.f;
#pragma unroll
      for (int e = 0; e < E; ++e) any += __uint_as_float(v[e].x & 0x80000000u);
      if (any > 0.f) y[0] = v[0];  // never: v's sign bits as floats are -0 or 0
      asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
    }
    if constexpr (kMode == 1) {
#pragma unroll
      for (int e = 0; e < E; ++e) y[e * B] = v[e];
      return;
    } else {
      constexpr float n = float(B * E * 8);
      float mean, m2;
      if constexpr (kMode == 5) {
        const float k = __half2float(a.x[(long long)(blockIdx.x + a.offset) * B * E * 8]);
        float s1 = 0.f, s2 = 0.f;
#pragma unroll
        for (int e = 0; e < E; ++e) shifted_sums8(v[e], k, s1, s2);
        const float2 t = block_sum2<B, false>(s1, s2, red);
        const float d = t.x / n;
        mean = k + d, m2 = t.y - t.x * d;
      } else {
        chunk_moments<B, E>(v, red, mean, m2);
      }
      const int lane = threadIdx.x % 32;
      if (push) {
        asm volatile("barrier.cluster.wait.aligned;" ::: "memory");  // every peer's barrier is initialized
        push_exchange(mean, m2, n, a.cluster, pushed, &bar);
      }
      if (kMode == 6 && a.cluster > 1) {
        cg::cluster_group cluster = cg::this_cluster();
        if (threadIdx.x == 0) part = make_float2(mean, m2);
        cluster.sync();
        St m{0.f, 0.f, 0.f};
        if (lane < a.cluster) {
          const float2 q = *cluster.map_shared_rank(&part, lane);
          m = St{n, q.x, q.y};
        }
        m = warp_merge_ordered(m, lane);  // every warp alike: no broadcast through shared memory
        mean = m.mean, m2 = m.m2 / m.n * n;
        cluster.sync();  // no workgroup leaves while another may read its part
      }
      const float rstd = rsqrtf(m2 / n + 1e-5f);
      const float2 ss = make_float2(rstd, -mean * rstd);
#pragma unroll
      for (int e = 0; e < E; ++e) {
        if constexpr (kMode == 4) {
          const __half2* h = reinterpret_cast<const __half2*>(&v[e]);
          uint4 o;
          __half2* oh = reinterpret_cast<__half2*>(&o);
#pragma unroll
          for (int i = 0; i < 4; ++i) {
            const float2 f = __half22float2(h[i]);
            oh[i] = __floats2half2_rn(fmaf(f.x, ss.x, ss.y), fmaf(f.y, ss.x, ss.y));
          }
          y[e * B] = o;
        } else {
          y[e * B] = silu_affine8(v[e], ss);
        }
      }
      if (push) asm volatile("barrier.cluster.arrive.relaxed.aligned;\n\tbarrier.cluster.wait.aligned;" ::: "memory");
      if (kMode == 7 && a.stage > 0) asm volatile("griddepcontrol.wait;" ::: "memory");
    }
  }
}

// Two items a workgroup (held2): workgroup b holds its chunk of each half of x (so a cluster
// holds one group of each half) and takes item 0, then item 1, each as mode 3 does (two block
// sums, the cluster's exchange, SiLU stores). kAhead: item 1's loads issued with item 0's, in
// flight while item 0 reduces, exchanges and stores, so that one part of the work streams while
// another waits; else after item 0's stores (the control: the same work, nothing overlapped).
template <int B, int E, bool kAhead>
__global__ void __launch_bounds__(B) held2(Args a) {
  __shared__ float2 red[B / 32];
  __shared__ float2 pushed[2][8];  // each item's pairs, pushed by rank
  __shared__ std::uint64_t bar[2];
  constexpr float n = float(B * E * 8);
  const long long half = (long long)gridDim.x * B * E;
  const long long first = (long long)blockIdx.x * B * E + threadIdx.x;
  const uint4* x = reinterpret_cast<const uint4*>(a.x) + first;
  uint4* y = reinterpret_cast<uint4*>(a.y) + first;
  const bool push = a.cluster > 1;
  if (push) init_push_barriers(bar, 2);
  uint4 v[2][E];
#pragma unroll
  for (int k = 0; k < 2; ++k) {
    if (k == 0 || !kAhead)
#pragma unroll
      for (int j = k; j < (kAhead ? 2 : k + 1); ++j)
#pragma unroll
        for (int e = 0; e < E; ++e) v[j][e] = x[j * half + e * B];
    if (k == 1) __syncthreads();  // red: item 0's last block sum read by every thread
    float mean, m2;
    chunk_moments<B, E>(v[k], red, mean, m2);
    if (push) {
      if (k == 0) asm volatile("barrier.cluster.wait.aligned;" ::: "memory");
      push_exchange(mean, m2, n, a.cluster, pushed[k], &bar[k]);
    }
    const float rstd = rsqrtf(m2 / n + 1e-5f);
    const float2 ss = make_float2(rstd, -mean * rstd);
#pragma unroll
    for (int e = 0; e < E; ++e) y[k * half + e * B] = silu_affine8(v[k][e], ss);
  }
  if (push) asm volatile("barrier.cluster.arrive.relaxed.aligned;\n\tbarrier.cluster.wait.aligned;" ::: "memory");
}

using Kernel = void (*)(Args);

// One launch of `kernel` (B threads a workgroup) over a's set, in clusters of a.cluster.
void launch_kernel(Kernel kernel, int B, const Args& a, int grid, cudaStream_t s) {
  cudaLaunchConfig_t cfg = {};
  cfg.gridDim = dim3(grid);
  cfg.blockDim = dim3(B);
  cfg.dynamicSmemBytes = std::size_t(a.pad);
  cfg.stream = s;
  cudaLaunchAttribute attr[2];
  int n = 0;
  if (a.cluster > 1) {
    attr[n].id = cudaLaunchAttributeClusterDimension;
    attr[n].val.clusterDim.x = unsigned(a.cluster), attr[n].val.clusterDim.y = 1, attr[n].val.clusterDim.z = 1;
    ++n;
  }
  if (a.stage > 0) {
    attr[n].id = cudaLaunchAttributeProgrammaticStreamSerialization;
    attr[n].val.programmaticStreamSerializationAllowed = 1;
    ++n;
  }
  cfg.attrs = attr;
  cfg.numAttrs = unsigned(n);
  CHECK(cudaLaunchKernelEx(&cfg, kernel, a));
}

template <int B, int E, int kMode>
void launch(const Args& a, int grid, cudaStream_t s) {
  launch_kernel(held<B, E, kMode>, B, a, grid, s);
}

// Clusters of the shape the device runs at once (cudaOccupancyMaxActiveClusters), or workgroups
// at once (occupancy x compute units) without clusters.
int kernel_at_once(Kernel kernel, int B, int cluster, int pad, int grid, int cus) {
  if (cluster <= 1) {
    int per_cu = 0;
    CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_cu, kernel, B, std::size_t(pad)));
    return per_cu * cus;
  }
  if (cluster > 8) CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeNonPortableClusterSizeAllowed, 1));
  cudaLaunchConfig_t cfg = {};
  cfg.gridDim = dim3(grid);
  cfg.blockDim = dim3(B);
  cfg.dynamicSmemBytes = std::size_t(pad);
  cudaLaunchAttribute attr[1];
  attr[0].id = cudaLaunchAttributeClusterDimension;
  attr[0].val.clusterDim.x = unsigned(cluster), attr[0].val.clusterDim.y = 1, attr[0].val.clusterDim.z = 1;
  cfg.attrs = attr;
  cfg.numAttrs = 1;
  int n = 0;
  CHECK(cudaOccupancyMaxActiveClusters(&n, kernel, &cfg));
  return n;
}

template <int B, int E, int kMode>
int at_once(int cluster, int pad, int grid, int cus) {
  return kernel_at_once(held<B, E, kMode>, B, cluster, pad, grid, cus);
}

struct Set {
  const __half* x;
  __half* y;
};

// y of set 0 against silu of x normalized over each cluster's elements (float64), sampled: the
// exchanges (modes 3 and 7) must give every part its group's statistics.
void check_clusters(const Set& z, long long elements, long long group, const char* what) {
  const std::vector<__half> x = to_host(z.x, std::size_t(elements)), y = to_host(z.y, std::size_t(elements));
  double worst = 0;
  for (long long g = 0; g * group < elements; ++g) {
    double mean, rstd;
    group_moments(x, g * group, group, mean, rstd);
    for (long long i = g * group + (g * 7) % 101; i < (g + 1) * group; i += 101) {
      const double v = (__half2float(x[std::size_t(i)]) - mean) * rstd, ref = v / (1.0 + std::exp(-v));
      worst = std::max(worst, std::fabs(ref - __half2float(y[std::size_t(i)])) / (1.0 + std::fabs(ref)));
    }
  }
  if (worst > 0.01) std::printf("\n    %s: max rel |y - ref| %.4f  MISMATCH\n", what, worst);
}

// pad_kb: KB of unused dynamic shared memory a workgroup (0, or enough for one a compute unit,
// as the library's 512 x 8 x 4 ran).
template <int B, int E>
void run_shape(const std::vector<Set>& sets, long long vectors, int cluster, int pad_kb, int cus, cudaStream_t s) {
  const int grid = int(vectors / (B * E)), pad = pad_kb << 10;
  if (grid % cluster != 0) return;
  if (pad > 0) {
    CHECK(cudaFuncSetAttribute(held<B, E, 0>, cudaFuncAttributeMaxDynamicSharedMemorySize, pad));
    CHECK(cudaFuncSetAttribute(held<B, E, 1>, cudaFuncAttributeMaxDynamicSharedMemorySize, pad));
    CHECK(cudaFuncSetAttribute(held<B, E, 2>, cudaFuncAttributeMaxDynamicSharedMemorySize, pad));
    CHECK(cudaFuncSetAttribute(held<B, E, 3>, cudaFuncAttributeMaxDynamicSharedMemorySize, pad));
    CHECK(cudaFuncSetAttribute(held<B, E, 4>, cudaFuncAttributeMaxDynamicSharedMemorySize, pad));
    CHECK(cudaFuncSetAttribute(held<B, E, 5>, cudaFuncAttributeMaxDynamicSharedMemorySize, pad));
    CHECK(cudaFuncSetAttribute(held<B, E, 6>, cudaFuncAttributeMaxDynamicSharedMemorySize, pad));
    CHECK(cudaFuncSetAttribute(held<B, E, 7>, cudaFuncAttributeMaxDynamicSharedMemorySize, pad));
  }
  const int units = cluster > 1 ? grid / cluster : grid;
  const int fit = at_once<B, E, 3>(cluster, pad, grid, cus);
  std::printf("  %4d x %d, clusters of %d, %3d KB pad: %5d workgroups, %4d %s at once (%d round%s):", B, E, cluster,
              pad_kb, grid, fit, cluster > 1 ? "clusters" : "workgroups", (units + fit - 1) / fit,
              (units + fit - 1) / fit > 1 ? "s" : "");
  auto time = [&](auto mode) {
    constexpr int M = decltype(mode)::value;
    CHECK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
    for (const Set& z : sets) launch<B, E, M>(Args{z.x, z.y, cluster, pad, 0, 0}, grid, s);
    return replay_median_us(s, 10, int(sets.size()));
  };
  const long long group = (long long)B * E * 8 * cluster;
  auto staged = [&](int stages) {
    const int each = grid / stages;
    if (each * stages != grid || each % cluster != 0) return -1.0;
    CHECK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
    for (const Set& z : sets)
      for (int k = 0; k < stages; ++k) launch<B, E, 7>(Args{z.x, z.y, cluster, pad, k * each, k}, each, s);
    const double us = replay_median_us(s, 10, int(sets.size()));
    CHECK(cudaStreamSynchronize(s));
    check_clusters(sets[0], vectors * 8, group, "staged");
    return us;
  };
  auto exchanged = [&]() {
    const double us = time(std::integral_constant<int, 3>{});
    CHECK(cudaStreamSynchronize(s));
    check_clusters(sets[0], vectors * 8, group, "exchange");
    return us;
  };
  const double t0 = time(std::integral_constant<int, 0>{}), t1 = time(std::integral_constant<int, 1>{}),
               t2 = time(std::integral_constant<int, 2>{});
  std::printf(" empty %5.2f  held copy %5.2f  + sums %5.2f  (no SiLU %5.2f, one reduction %5.2f)", t0, t1, t2,
              time(std::integral_constant<int, 4>{}), time(std::integral_constant<int, 5>{}));
  if (cluster > 1)
    std::printf("  + exchange %5.2f (by cluster.sync %5.2f; in 2 / 4 stages %5.2f / %5.2f)",
                exchanged(), time(std::integral_constant<int, 6>{}), staged(2), staged(4));
  std::printf("\n");
}

// One launch shape's time (a graph over the sets, median), its output checked against float64
// (groups of `group` elements), printed with its clusters at once and rounds.
void time_item(const std::vector<Set>& sets, long long vectors, Kernel kernel, int B, int grid, int cluster,
               long long group, int cus, const char* what, cudaStream_t s) {
  const int fit = kernel_at_once(kernel, B, cluster, 0, grid, cus), units = grid / cluster;
  CHECK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
  for (const Set& z : sets) launch_kernel(kernel, B, Args{z.x, z.y, cluster, 0, 0, 0}, grid, s);
  const double us = replay_median_us(s, 10, int(sets.size()));
  CHECK(cudaStreamSynchronize(s));
  check_clusters(sets[0], vectors * 8, group, what);
  std::printf("  %s %5.2f (%d at once, %d round%s)", what, us, fit, (units + fit - 1) / fit,
              (units + fit - 1) / fit > 1 ? "s" : "");
}

// The two-item question at one launch shape (B x E vectors an item, clusters of `cluster`):
// mode 3 with one item a workgroup (twice the workgroups), mode 3 with one item of 2E vectors
// (the two-item kernels' workgroups and bytes a workgroup, groups twice as large), and held2
// in turn and with the second item's loads ahead. Each with its clusters at once and rounds.
template <int B, int E>
void run_two(const std::vector<Set>& sets, long long vectors, int cluster, int cus, cudaStream_t s) {
  const int grid1 = int(vectors / (B * E)), grid2 = grid1 / 2;
  if (grid1 % (2 * cluster) != 0) return;
  const long long group = (long long)B * E * 8 * cluster;
  std::printf("  %4d x %d, clusters of %d:", B, E, cluster);
  time_item(sets, vectors, held<B, E, 3>, B, grid1, cluster, group, cus, "one item", s);
  time_item(sets, vectors, held<B, 2 * E, 3>, B, grid2, cluster, 2 * group, cus, "one of 2E", s);
  time_item(sets, vectors, held2<B, E, false>, B, grid2, cluster, group, cus, "two in turn", s);
  time_item(sets, vectors, held2<B, E, true>, B, grid2, cluster, group, cus, "two, loads ahead", s);
  std::printf("\n");
}

// Mode 3 (sums, the cluster's exchange, SiLU stores) at B x E in clusters of `cluster`: groups
// of B E 8 cluster elements, for launch shapes of the same group in fewer threads a workgroup.
template <int B, int E>
void run_exchange(const std::vector<Set>& sets, long long vectors, int cluster, int cus, cudaStream_t s) {
  const int grid = int(vectors / (B * E));
  if (grid % cluster != 0) return;
  char what[64];
  std::snprintf(what, sizeof what, "%d x %d, clusters of %d (group %lld KB):", B, E, cluster,
                (long long)B * E * 16 * cluster >> 10);
  time_item(sets, vectors, held<B, E, 3>, B, grid, cluster, (long long)B * E * 8 * cluster, cus, what, s);
  std::printf("\n");
}
}  // namespace

int main(int argc, char** argv) {
  // `two`: the two-item comparison only; `threads`: one group's exchange at fewer threads a workgroup
  const std::string only = argc > 1 ? argv[1] : "";
  const bool two = only == "two", threads = only == "threads";
  int cus = 0;
  cudaStream_t s = probe_stream(&cus);
  int l2 = 0;
  CHECK(cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, 0));
  cudaDeviceProp prop;
  CHECK(cudaGetDeviceProperties(&prop, 0));
  std::printf("%s, %d compute units, L2 %d MB\n", prop.name, cus, l2 >> 20);
  for (const long long mb : two || threads ? std::vector<long long>{4, 10, 20, 40} : std::vector<long long>{4, 5, 10}) {
    const std::size_t bytes = std::size_t(mb) << 20;
    const long long vectors = (long long)bytes / 16;
    std::vector<Set> sets(std::size_t(rotating_sets(bytes, 3 * std::size_t(l2))));
    for (std::size_t i = 0; i < sets.size(); ++i) alloc_xy(sets[i], (long long)bytes / 2, int(i), 12, 0.1f, s);
    CHECK(cudaStreamSynchronize(s));
    std::printf("%lld MB (%zu sets): cudaMemcpy %.2f us\n", mb, sets.size(), copy_us(sets, bytes, s));
    if (threads) {
      // groups of 128 KB (vae_64x512's), then 64 KB and 256 KB
      run_exchange<256, 4>(sets, vectors, 8, cus, s);
      run_exchange<128, 8>(sets, vectors, 8, cus, s);
      run_exchange<128, 4>(sets, vectors, 16, cus, s);
      run_exchange<64, 8>(sets, vectors, 16, cus, s);
      run_exchange<256, 8>(sets, vectors, 4, cus, s);
      run_exchange<128, 16>(sets, vectors, 4, cus, s);
      run_exchange<256, 2>(sets, vectors, 8, cus, s);
      run_exchange<128, 4>(sets, vectors, 8, cus, s);
      run_exchange<256, 4>(sets, vectors, 16, cus, s);
      run_exchange<128, 8>(sets, vectors, 16, cus, s);
    } else if (two) {
      for (const int c : {4, 8}) run_two<256, 4>(sets, vectors, c, cus, s);
      run_two<128, 4>(sets, vectors, 8, cus, s);
      run_two<256, 2>(sets, vectors, 8, cus, s);
      run_two<512, 4>(sets, vectors, 4, cus, s);
      run_two<512, 2>(sets, vectors, 4, cus, s);
    } else {
      for (const int c : {1, 4, 8}) run_shape<256, 4>(sets, vectors, c, 0, cus, s);
      run_shape<256, 4>(sets, vectors, 8, 100, cus, s);
      for (const int c : {1, 2, 4}) run_shape<512, 4>(sets, vectors, c, 0, cus, s);
      for (const int c : {1, 4}) run_shape<512, 4>(sets, vectors, c, 160, cus, s);
      for (const int c : {1, 8}) run_shape<256, 2>(sets, vectors, c, 0, cus, s);
      for (const int c : {1, 8}) run_shape<128, 4>(sets, vectors, c, 0, cus, s);
    }
    for (Set& z : sets) free_xy(z);
  }
  CHECK(cudaGetLastError());
  return 0;
}
