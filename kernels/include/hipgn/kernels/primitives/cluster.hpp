// Thread-block clusters (sm_90): the slices of one unit exchange their partial statistics
// through distributed shared memory (each pushes its pair into its peers' shared memory, and
// an mbarrier says when they have landed) instead of the workspace, an arrival counter and a
// cooperative launch. What that removes per launch was measured apart (bench/NOTES.md, "Fixed
// costs"): the counters' memset node (~1.9 us) and a device-scope arrival and wait per item;
// the hardware keeps a cluster's at most 16 workgroups co-resident in one GPC.
//
// The target trait: HIPGN_CLUSTERS says whether the device pass has clusters (NVIDIA sm_90 and
// later); cluster_launch_max() whether the host may launch one, and how large (hipgn/clusters.hpp:
// the NVIDIA build on a device of compute capability 9 or more). Elsewhere (AMD, older NVIDIA)
// the slices keep the portable path, the exchange through the workspace (exchange.hpp:
// arrive_and_wait); the kernels take the cluster path only when the launcher says so
// (Params::cluster). The onchip forward's parts of a group have no portable path: the runtime
// asks for them only where clusters launch (Instance::onchip_parts).
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <mutex>
#include <tuple>

#include "hipgn/clusters.hpp"
#include "hipgn/kernels/primitives/bulk.hpp"
#include "hipgn/kernels/primitives/exchange.hpp"
#include "hipgn/kernels/primitives/persistent.hpp"
#include "hipgn/kernels/primitives/reduce.hpp"
#include "hipgn/kernels/primitives/target.hpp"
#include "hipgn/params.hpp"
#include "hipgn/platform.hpp"

#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
#define HIPGN_CLUSTERS 1
#endif

namespace hipgn::kernels {

#if defined(HIPGN_CLUSTERS)

// Every thread of every workgroup of the cluster arrives and waits, with release and acquire:
// shared-memory writes before it are visible to every workgroup after it. Its release is a
// GPU-scope fence (MEMBAR.ALL.GPU in the SASS), which waits for every global store in flight;
// the exchange below avoids it item by item. (cooperative_groups' cluster sync is the same
// two instructions, but its header took ~2.4 s of every translation unit's ~9.6 s to compile.)
__device__ __forceinline__ void cluster_sync() {
  asm volatile("barrier.cluster.arrive.release;\n\tbarrier.cluster.wait.acquire;" ::: "memory");
}

// A cluster barrier without memory ordering: no workgroup passes until all arrived.
__device__ __forceinline__ void cluster_barrier_relaxed() {
  asm volatile("barrier.cluster.arrive.relaxed.aligned;\n\tbarrier.cluster.wait.aligned;" ::: "memory");
}
// The same barrier in its two halves, so that work goes on between them: after dsmem::init, the
// arrival (the init's fence orders it) early and the wait just before the first push.
__device__ __forceinline__ void cluster_arrive_relaxed() {
  asm volatile("barrier.cluster.arrive.relaxed.aligned;" ::: "memory");
}
__device__ __forceinline__ void cluster_wait() { asm volatile("barrier.cluster.wait.aligned;" ::: "memory"); }

// This workgroup's cluster in the grid, and its rank in it (a one-dimensional grid of clusters).
__device__ __forceinline__ unsigned cluster_index() {
  unsigned v;
  asm("mov.u32 %0, %%clusterid.x;" : "=r"(v));
  return v;
}
__device__ __forceinline__ unsigned cluster_rank() {
  unsigned v;
  asm("mov.u32 %0, %%cluster_ctarank;" : "=r"(v));
  return v;
}

// The pieces of a pushed exchange. A workgroup's pair lands in a peer's shared memory by
// st.async, which completes on that peer's mbarrier (counted in bytes), so a workgroup waits
// only until the pairs it needs have landed in its own shared memory, and no fence has to drain
// its global stores first. Nsight Compute's stall sampling of the version with a cluster barrier
// an item put ~16% of the samples on the barrier and its GPU-scope fence (bench/NOTES.md,
// "Clusters").
namespace dsmem {
// Thread 0 of every workgroup, then cluster_sync() before any push: a peer may signal only a
// barrier that is initialized.
__device__ __forceinline__ void init(std::uint64_t (&bar)[2]) {
  for (int i = 0; i < 2; ++i)
    asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" ::"r"(bulk::smem_address(&bar[i])) : "memory");
  asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
}
// One thread: this workgroup's barrier completes once `bytes` have landed (and this arrival).
__device__ __forceinline__ void expect(std::uint64_t* bar, std::uint32_t bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(bulk::smem_address(bar)), "r"(bytes)
               : "memory");
}
// Stores v at `slot` of workgroup `peer` (the same offset in its shared memory as `slot` in
// ours), completing 8 bytes on its `bar`.
__device__ __forceinline__ void pair(float2* slot, int peer, std::uint64_t* bar, float2 v) {
  std::uint32_t dst, dst_bar;
  asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(dst) : "r"(bulk::smem_address(slot)), "r"(peer));
  asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(dst_bar) : "r"(bulk::smem_address(bar)), "r"(peer));
  asm volatile("st.async.shared::cluster.mbarrier::complete_tx::bytes.v2.f32 [%0], {%1, %2}, [%3];" ::"r"(dst),
               "f"(v.x), "f"(v.y), "r"(dst_bar)
               : "memory");
}
// Reads the pair at `slot` of workgroup `peer` (the same offset in its shared memory), after a
// cluster barrier with release and acquire (cluster_sync) ordered its store before.
__device__ __forceinline__ float2 load_pair(const float2* slot, int peer) {
  std::uint32_t at;
  asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(at) : "r"(bulk::smem_address(slot)), "r"(peer));
  float2 v;
  asm volatile("ld.shared::cluster.v2.f32 {%0, %1}, [%2];" : "=f"(v.x), "=f"(v.y) : "r"(at) : "memory");
  return v;
}
}  // namespace dsmem

// Channels-first: one (mean, M2) pair a workgroup an item (its slice of a group).
//
// Slots and barriers go by item parity: a workgroup pushes item k + 2 into a peer's slot k % 2
// only after its own wait for item k + 1, which needs that peer's push of k + 1, which the peer
// makes after it read its slots of item k; and a peer's push of k + 1 lands on barrier (k + 1) % 2,
// never on the one whose phase k is still open.
struct ClusterExchange {
  float2 slot[2][kClusterSlicesMax];  // [item parity][sender rank]
  std::uint64_t bar[2];

  __device__ __forceinline__ void init() { dsmem::init(bar); }
  // Every thread calls it: thread 0 expects `slices` pairs on this workgroup's barrier of item
  // k, and thread r < slices pushes this workgroup's pair (rank `rank`) to workgroup r, itself
  // included. One store a thread, no loop: a loop in thread 0, unrolled, held 16 more registers
  // a thread across the whole item and cost the 256 x 4 instance a workgroup a compute unit
  // (96 registers; sd15_64x320 14.9 us against 12.0).
  __device__ __forceinline__ void push(int k, int rank, int slices, float2 v) {
    const int r = int(threadIdx.x);
    if (r == 0) dsmem::expect(&bar[k & 1], std::uint32_t(slices * sizeof(float2)));
    if (r < slices) dsmem::pair(&slot[k & 1][rank], r, &bar[k & 1], v);
  }
  // Every thread: waits for item k's pairs, then merges them in rank order: lane i of a
  // wavefront takes rank i's pair, the shuffle tree merges over the fewest lanes that cover the
  // slices (8 or 16: lanes past the slices hold empty sets, whose merges are exact, so the bits
  // are those of a wavefront-wide tree), lane 0's result is broadcast. Every wavefront of every
  // workgroup does the same arithmetic in the same order, so all agree to the bit, run after
  // run, without a workgroup barrier.
  template <typename Count>
  __device__ __forceinline__ Stats merge_item(int k, int slices, Count count) {
    bulk::wait(&bar[k & 1], std::uint32_t((k >> 1) & 1));
    const int lane = threadIdx.x % kWarpSize;
    Stats s{0.f, 0.f, 0.f};
    for (int i = lane; i < slices; i += kWarpSize) {
      const float2 w = slot[k & 1][i];
      s = merge(s, Stats{count(i), w.x, w.y});
    }
    static_assert(kClusterSlicesMax == 2 * kClusterPortable, "the two widths below");
    return lane0(slices <= kClusterPortable ? warp_merge<kClusterPortable>(s) : warp_merge<kClusterSlicesMax>(s));
  }
};

// Channels-last: `width` pairs a workgroup an item (the groups of its unit's chunk), in slots
// [2][slices][width] that the caller places in dynamic shared memory at the same offset in
// every workgroup of the cluster; item parity as ClusterExchange's.
struct ClusterPairs {
  float2* slot;
  std::uint64_t (&bar)[2];
  int slices, width;

  __device__ __forceinline__ void init() const { dsmem::init(bar); }
  // Every thread calls it, after a workgroup barrier that made `mine` ([2 g] mean, [2 g + 1]
  // M2 of group g of the chunk) complete; the caller's next workgroup barrier is what lets
  // `mine` be overwritten.
  __device__ __forceinline__ void push(int k, int rank, const float* mine) const {
    if (threadIdx.x == 0) expect(k);
    for (int i = int(threadIdx.x); i < slices * width; i += int(blockDim.x)) {
      const int r = i / width, g = i - r * width;
      send(k, rank, r, g, make_float2(mine[2 * g], mine[2 * g + 1]));
    }
  }
  // push's two halves, for a caller that holds the pairs in registers: one thread's expect (this
  // workgroup's barrier of item k completes once every rank's `width` pairs have landed), and
  // each pair's send (this rank's pair of group g, to workgroup `peer`).
  __device__ __forceinline__ void expect(int k) const {
    dsmem::expect(&bar[k & 1], std::uint32_t(slices * width * sizeof(float2)));
  }
  __device__ __forceinline__ void send(int k, int rank, int peer, int g, float2 v) const {
    dsmem::pair(slot + ((k & 1) * slices + rank) * width + g, peer, &bar[k & 1], v);
  }
  // Waits for item k's pairs; then pairs(k)[rank * width + g] is rank's pair of group g.
  __device__ __forceinline__ const float2* wait(int k) const {
    bulk::wait(&bar[k & 1], std::uint32_t((k >> 1) & 1));
    return slot + (k & 1) * slices * width;
  }
  // Every thread (width a power of two, at most the wavefront's): waits for item k's pairs and
  // merges each group's over the ranks, rank r's pair counting count(r) values. Lane l takes
  // group l % width and, in turn, ranks l / width, l / width + L, ... (L = kWarpSize / width
  // lanes a group); a shuffle tree over the group's L lanes follows (lanes without a rank hold
  // empty sets, whose merges are exact). Lane g then holds group g's merge, the same bits in
  // every wavefront of every workgroup; other lanes hold other orders (read lane g's).
  template <typename Count>
  __device__ __forceinline__ Stats merge_groups(int k, Count count) const {
    const float2* pairs = wait(k);
    const int log2_width = __ffs(width) - 1;  // shifts, not divisions by the run-time width
    const int lane = threadIdx.x % kWarpSize, g = lane & (width - 1);
    Stats s{0.f, 0.f, 0.f};
#pragma unroll 1
    for (int r = lane >> log2_width; r < slices; r += kWarpSize >> log2_width) {
      const float2 w = pairs[r * width + g];
      s = merge(s, Stats{count(r), w.x, w.y});
    }
    for (int o = kWarpSize / 2; o >= width; o >>= 1) s = merge(s, shfl_xor(s, o));
    return s;
  }
};
#endif

#if defined(__NVCC__)
// The cluster launch's configuration for `kernel` (the grid is the caller's).
inline cudaLaunchConfig_t cluster_config(int block, std::size_t smem, int cluster, hipStream_t stream,
                                         cudaLaunchAttribute& attr) {
  attr = cudaLaunchAttribute{};
  attr.id = cudaLaunchAttributeClusterDimension;
  attr.val.clusterDim.x = unsigned(cluster);
  attr.val.clusterDim.y = 1;
  attr.val.clusterDim.z = 1;
  cudaLaunchConfig_t config{};
  config.blockDim = dim3(unsigned(block));
  config.dynamicSmemBytes = smem;
  config.stream = stream;
  config.attrs = &attr;
  config.numAttrs = 1;
  return config;
}
#endif

// How many clusters of `cluster` workgroups of `kernel` (`block` threads, `smem` bytes of dynamic
// shared memory) the current device runs at once: the occupancy query, asked once per kernel and
// shape (it sets the kernel's attributes for a launch too). 0 where the device cannot run one
// (no clusters, code without the cluster path, a size it refuses) or there is no device.
inline int active_clusters(void (*kernel)(Params), int block, std::size_t smem, int cluster) {
#if defined(__NVCC__)
  if (cluster < 2 || cluster > cluster_launch_max()) return 0;
  static std::mutex mutex;
  static std::map<std::tuple<void (*)(Params), int, std::size_t, int>, int> cache;
  const auto key = std::make_tuple(kernel, block, smem, cluster);
  {
    std::lock_guard<std::mutex> lock(mutex);
    const auto it = cache.find(key);
    if (it != cache.end()) return it->second;
  }
  int active = 0;
  const void* f = reinterpret_cast<const void*>(kernel);
  // the kernel's device code must have the cluster path: compiled for a virtual architecture of
  // 9.0 or later (code built for older targets, which the driver may still run here, has none)
  cudaFuncAttributes fa{};
  if (cudaFuncGetAttributes(&fa, f) != cudaSuccess || fa.ptxVersion < 90) active = -1;
  if (active == 0 && allow_dynamic_smem(f, smem) != hipSuccess) active = -1;
  if (active == 0 && cluster > kClusterPortable &&
      cudaFuncSetAttribute(f, cudaFuncAttributeNonPortableClusterSizeAllowed, 1) != cudaSuccess)
    active = -1;
  cudaLaunchAttribute attr;
  cudaLaunchConfig_t config = cluster_config(block, smem, cluster, nullptr, attr);
  config.gridDim = dim3(unsigned(cluster));
  if (active == 0 && cudaOccupancyMaxActiveClusters(&active, kernel, &config) != cudaSuccess) active = 0;
  (void)cudaGetLastError();  // a refused attribute or query leaves no error behind
  if (active < 0) active = 0;
  std::lock_guard<std::mutex> lock(mutex);
  cache[key] = active;
  return active;
#else
  (void)kernel, (void)block, (void)smem, (void)cluster;
  return 0;
#endif
}

// Launches `kernel` as a grid of clusters of `cluster` workgroups (the slices of a unit,
// Params::cluster = 1). Persistent: as many clusters as the device holds at once
// (active_clusters), never more than `units`, each walking units; otherwise one cluster a unit,
// which the hardware schedules as others finish. Returns false, launching nothing, when the
// device cannot hold one such cluster (then the caller takes the portable path).
inline bool launch_clusters(void (*kernel)(Params), const Params& p, int block, std::size_t smem, int cluster,
                            std::int64_t units, hipStream_t stream, hipError_t* result, bool persistent = true) {
#if defined(__NVCC__)
  const int active = active_clusters(kernel, block, smem, cluster);
  if (active == 0) return false;
  cudaLaunchAttribute attr;
  cudaLaunchConfig_t config = cluster_config(block, smem, cluster, stream, attr);
  config.gridDim = dim3(unsigned((persistent && active < units ? active : units) * cluster));
  Params copy = p;
  copy.cluster = 1;
  *result = cudaLaunchKernelEx(&config, kernel, copy);
  return true;
#else
  (void)kernel, (void)p, (void)block, (void)smem, (void)cluster, (void)units, (void)stream, (void)result,
      (void)persistent;
  return false;
#endif
}

}  // namespace hipgn::kernels
