// Device building blocks shared by the GroupNorm kernels: the target's wavefront size, vector
// memory access, fp32 reductions across a workgroup, and the fused activations.
#pragma once

#include <cstdint>
#include <type_traits>

#include "hipgn/params.hpp"
#include "hipgn/platform.hpp"
#include "hipgn/storage.hpp"

namespace hipgn::kernels {

// The wavefront size of the target being compiled: 64 on AMD gfx9 (CDNA), 32 on RDNA (wave32)
// and NVIDIA. Never assume 32: reductions below take it from here. The host pass sees 32, and
// no host code depends on it.
#if defined(__HIP_DEVICE_COMPILE__) && defined(__AMDGCN_WAVEFRONT_SIZE)
inline constexpr int kWarpSize = __AMDGCN_WAVEFRONT_SIZE;
#else
inline constexpr int kWarpSize = 32;
#endif
#if defined(__HIP_DEVICE_COMPILE__) && defined(__GFX9__)
static_assert(kWarpSize == 64, "gfx9 (CDNA) wavefronts are 64 wide");
#endif

// N elements of T in one access: with sizeof(T) * N = 16 this is one 128-bit load or store.
template <typename T, int N>
struct alignas(sizeof(T) * N) Vec {
  T v[N];
};

template <int N, typename T>
__device__ __forceinline__ void load_vec(const T* p, float (&out)[N]) {
  const Vec<T, N> r = *reinterpret_cast<const Vec<T, N>*>(p);
#pragma unroll
  for (int i = 0; i < N; ++i) out[i] = to_float(r.v[i]);
}

template <int N, typename T>
__device__ __forceinline__ void store_vec(T* p, const float (&in)[N]) {
  Vec<T, N> r;
#pragma unroll
  for (int i = 0; i < N; ++i) r.v[i] = from_float<T>(in[i]);
  *reinterpret_cast<Vec<T, N>*>(p) = r;
}

__device__ __forceinline__ float warp_sum(float v) {
#pragma unroll
  for (int o = kWarpSize / 2; o > 0; o >>= 1) v += __shfl_xor(v, o, kWarpSize);
  return v;
}

// The sum over the workgroup, returned to every thread. kBlock is the largest workgroup the
// kernel is launched with; the launch may use fewer whole wavefronts (blockDim.x). Safe to
// call repeatedly: the first barrier keeps a new call's writes behind the previous call's reads.
template <int kBlock>
__device__ __forceinline__ float block_sum(float v) {
  constexpr int kWarps = kBlock / kWarpSize;
  static_assert(kBlock % kWarpSize == 0 && kWarps <= kWarpSize, "block must be whole wavefronts");
  __shared__ float partial[kWarps];
  __shared__ float total;
  v = warp_sum(v);
  const int lane = threadIdx.x % kWarpSize, warp = threadIdx.x / kWarpSize;
  const int warps = int(blockDim.x) / kWarpSize;
  __syncthreads();
  if (lane == 0) partial[warp] = v;
  __syncthreads();
  if (warp == 0) {
    float t = lane < warps ? partial[lane] : 0.f;
    t = warp_sum(t);
    if (lane == 0) total = t;
  }
  __syncthreads();
  return total;
}

// Several sums over the workgroup at once, returned to every thread; the same fixed order on
// every run, so results are bitwise reproducible.
template <int kBlock, int K>
__device__ __forceinline__ void block_sum_array(float (&v)[K]) {
  constexpr int kWarps = kBlock / kWarpSize;
  __shared__ float partial[K][kWarps];
  __shared__ float total[K];
#pragma unroll
  for (int k = 0; k < K; ++k) v[k] = warp_sum(v[k]);
  const int lane = threadIdx.x % kWarpSize, warp = threadIdx.x / kWarpSize;
  const int warps = int(blockDim.x) / kWarpSize;
  __syncthreads();
  if (lane == 0)
#pragma unroll
    for (int k = 0; k < K; ++k) partial[k][warp] = v[k];
  __syncthreads();
  if (warp == 0) {
#pragma unroll
    for (int k = 0; k < K; ++k) {
      float t = lane < warps ? partial[k][lane] : 0.f;
      t = warp_sum(t);
      if (lane == 0) total[k] = t;
    }
  }
  __syncthreads();
#pragma unroll
  for (int k = 0; k < K; ++k) v[k] = total[k];
}

// Count, mean and sum of squared deviations of a set of values. Merging two sets (Chan et
// al.) never subtracts large raw sums, so it stays accurate where E[x^2] - E[x]^2 would not.
struct Stats {
  float n, mean, m2;
};

__device__ __forceinline__ Stats merge(Stats a, Stats b) {
  const float n = a.n + b.n;
  if (n == 0.f) return a;
  // counts are integers held exactly: the fast reciprocal's 2^-23 error is all the division
  // adds, against ten instructions for an IEEE one in every merge of every reduction
  const float d = b.mean - a.mean, wb = __fdividef(b.n, n);
  return {n, a.mean + d * wb, a.m2 + b.m2 + d * d * a.n * wb};
}

// Statistics of one vector held in registers: two passes over registers, exact.
template <int N>
__device__ __forceinline__ Stats vector_stats(const float (&v)[N]) {
  float s = 0.f;
#pragma unroll
  for (int i = 0; i < N; ++i) s += v[i];
  const float m = s * (1.f / N);
  float q = 0.f;
#pragma unroll
  for (int i = 0; i < N; ++i) q += (v[i] - m) * (v[i] - m);
  return {float(N), m, q};
}

__device__ __forceinline__ Stats warp_merge(Stats s) {
#pragma unroll
  for (int o = kWarpSize / 2; o > 0; o >>= 1) {
    const Stats other{__shfl_xor(s.n, o, kWarpSize), __shfl_xor(s.mean, o, kWarpSize),
                      __shfl_xor(s.m2, o, kWarpSize)};
    s = merge(s, other);
  }
  return s;
}

// The merged statistics of the workgroup, returned to every thread (lane 0's merge order, so
// every thread and every run sees the same bits).
template <int kBlock>
__device__ __forceinline__ Stats block_merge(Stats s) {
  constexpr int kWarps = kBlock / kWarpSize;
  __shared__ Stats partial[kWarps];
  __shared__ Stats total;
  s = warp_merge(s);
  const int lane = threadIdx.x % kWarpSize, warp = threadIdx.x / kWarpSize;
  const int warps = int(blockDim.x) / kWarpSize;
  __syncthreads();
  if (lane == 0) partial[warp] = s;
  __syncthreads();
  if (warp == 0) {
    Stats t = lane < warps ? partial[lane] : Stats{0.f, 0.f, 0.f};
    t = warp_merge(t);
    if (lane == 0) total = t;
  }
  __syncthreads();
  return total;
}

// Swish's exponential and reciprocal as the hardware's approximations (relative error near
// 2^-22): the library versions add denormal scaling around each, which doubles the
// instructions per element of a kernel that has about ten to spend at fp16 bandwidth.
__device__ __forceinline__ float exp2_fast(float x) {
#if defined(__CUDA_ARCH__)
  float y;
  asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
  return y;
#else
  return exp2f(x);
#endif
}
__device__ __forceinline__ float rcp_fast(float x) {
#if defined(__CUDA_ARCH__)
  float y;
  asm("rcp.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
  return y;
#else
  return __frcp_rn(x);
#endif
}

// The activation of z = gamma * xhat + beta. swish_k is -swish_beta * log2(e): Swish is
// z * sigmoid(s z) = z / (1 + 2^(k z)); as z -> -inf the power overflows to inf and the
// reciprocal to 0, the right limit, and as z -> +inf it tends to z.
template <Activation A>
__device__ __forceinline__ float activate(float z, float swish_beta) {
  if constexpr (A == Activation::swish) {
    return z * rcp_fast(1.f + exp2_fast(z * (-1.4426950408889634f * swish_beta)));
  } else {
    return z;
  }
}

// d act(z) / dz, for the backward: Swish's sigmoid with the same hardware exp2 and reciprocal as
// the forward (an IEEE division is a called subroutine, around which ptxas spilled registers).
template <Activation A>
__device__ __forceinline__ float activation_grad(float z, float swish_beta) {
  if constexpr (A == Activation::swish) {
    const float sig = rcp_fast(1.f + exp2_fast(z * (-1.4426950408889634f * swish_beta)));
    return sig * (1.f + swish_beta * z * (1.f - sig));
  } else {
    return 1.f;
  }
}

// The forward's optional saved statistics, [N, G] fp32.
__device__ __forceinline__ void save_stats(const Params& p, std::int64_t group, float mean, float rstd) {
  if (p.mean) p.mean[group] = mean;
  if (p.rstd) p.rstd[group] = rstd;
}

// Vectors widened to fp32 and narrowed back, two elements a conversion instruction where the
// target has one.
template <typename T, int N>
__device__ __forceinline__ void widen(const Vec<T, N>& r, float (&out)[N]) {
#if defined(__CUDA_ARCH__)
  if constexpr (N % 2 == 0 && !std::is_same_v<T, float>) {  // two elements a conversion
#pragma unroll
    for (int i = 0; i < N / 2; ++i) {
      float2 f;
      if constexpr (std::is_same_v<T, f16_t>) f = __half22float2(reinterpret_cast<const __half2*>(r.v)[i]);
      else f = __bfloat1622float2(reinterpret_cast<const __nv_bfloat162*>(r.v)[i]);
      out[2 * i] = f.x, out[2 * i + 1] = f.y;
    }
  } else  // (an else, not a return: a loop after the return is unreachable, and nvcc says so)
#endif
  {
#pragma unroll
    for (int i = 0; i < N; ++i) out[i] = to_float(r.v[i]);
  }
}
template <typename T, int N>
__device__ __forceinline__ Vec<T, N> narrow(const float (&in)[N]) {
  Vec<T, N> r;
#if defined(__CUDA_ARCH__)
  if constexpr (N % 2 == 0 && !std::is_same_v<T, float>) {  // one packing conversion per pair
#pragma unroll
    for (int i = 0; i < N / 2; ++i) {
      if constexpr (std::is_same_v<T, f16_t>)
        reinterpret_cast<__half2*>(r.v)[i] = __floats2half2_rn(in[2 * i], in[2 * i + 1]);
      else
        reinterpret_cast<__nv_bfloat162*>(r.v)[i] = __floats2bfloat162_rn(in[2 * i], in[2 * i + 1]);
    }
  } else
#endif
  {
#pragma unroll
    for (int i = 0; i < N; ++i) r.v[i] = from_float<T>(in[i]);
  }
  return r;
}

// A device-scope acquire load of an arrival word: what both exchanges below wait on.
__device__ __forceinline__ std::uint32_t load_acquire(std::uint32_t* word) {
#if defined(HIPGN_PLATFORM_AMD)
  return __hip_atomic_load(word, __ATOMIC_ACQUIRE, __HIP_MEMORY_SCOPE_AGENT);
#else
  std::uint32_t v;
  asm volatile("ld.acquire.gpu.global.u32 %0, [%1];" : "=r"(v) : "l"(word) : "memory");
  return v;
#endif
}

// Cross-workgroup exchange. Workgroups that share a unit of work each store their partial
// result, then one thread of each, after a workgroup barrier that follows every store of the
// partials, arrives at the unit's counter (a release at device scope, which the barrier makes
// cover the whole workgroup's stores) and waits (acquire loads) until `expected` workgroups
// have arrived; a workgroup barrier after the call lets the other threads read the partials.
// No thread needs a fence of its own: a __threadfence() is a sequentially consistent fence
// (MEMBAR.SC.GPU on sm_90), and one in every thread of a 512-workgroup grid cost the stream
// family ~50 us a barrier (bench/NOTES.md). The caller guarantees all `expected` workgroups
// are resident together (a cooperative launch), else this waits forever.
__device__ __forceinline__ void arrive_and_wait(std::uint32_t* counter, std::uint32_t expected) {
#if defined(HIPGN_PLATFORM_AMD)
  __hip_atomic_fetch_add(counter, 1u, __ATOMIC_RELEASE, __HIP_MEMORY_SCOPE_AGENT);
#else
  asm volatile("red.release.gpu.global.add.u32 [%0], %1;" ::"l"(counter), "r"(1u) : "memory");
#endif
  while (load_acquire(counter) < expected) {
#if defined(__CUDA_ARCH__)
    __nanosleep(64);
#elif defined(__HIP_DEVICE_COMPILE__)
    __builtin_amdgcn_s_sleep(1);
#endif
  }
}
// One thread of each of `expected` workgroups arrives; the last to arrive raises `flag`, on
// which the others wait. Every waiter polls the flag, not the counter the arrivals add to, and
// backs off, so that polls do not queue in front of arrivals at the one L2 slice that holds
// the counter (512 workgroups polling the counter itself spent ~45 us a barrier, bench/NOTES.md).
// The counter and the flag sit in different 128-byte lines, zeroed by the launcher. Same
// contract as arrive_and_wait otherwise.
__device__ __forceinline__ void arrive_and_wait_flag(std::uint32_t* counter, std::uint32_t* flag, std::uint32_t expected) {
#if defined(HIPGN_PLATFORM_AMD)
  const std::uint32_t before = __hip_atomic_fetch_add(counter, 1u, __ATOMIC_ACQ_REL, __HIP_MEMORY_SCOPE_AGENT);
  if (before + 1 == expected) {
    __hip_atomic_store(flag, 1u, __ATOMIC_RELEASE, __HIP_MEMORY_SCOPE_AGENT);
    return;
  }
  while (load_acquire(flag) == 0u) __builtin_amdgcn_s_sleep(2);
#else
  std::uint32_t before;
  asm volatile("atom.acq_rel.gpu.global.add.u32 %0, [%1], %2;" : "=r"(before) : "l"(counter), "r"(1u) : "memory");
  if (before + 1 == expected) {
    asm volatile("st.release.gpu.global.u32 [%0], %1;" ::"l"(flag), "r"(1u) : "memory");
    return;
  }
  unsigned ns = 32;
  while (load_acquire(flag) == 0u) {
    __nanosleep(ns);
    ns = ns < 512 ? 2 * ns : 512;
  }
#endif
}
// A read of another workgroup's partial, past this unit's (incoherent) L1, after the
// exchange's fence. On NVIDIA an L2 load (ld.global.cg), which the hardware pipelines: a
// volatile load is a relaxed system-scope access, and a loop of them waited on each in turn
// (the stream family's merge of 264 partials a group: ~30 us, bench/NOTES.md).
__device__ __forceinline__ float load_shared_partial(const float* p) {
#if defined(__CUDA_ARCH__)
  return __ldcg(p);
#else
  return *static_cast<const volatile float*>(p);
#endif
}
__device__ __forceinline__ float2 load_shared_partial(const float2* p) {
#if defined(__CUDA_ARCH__)
  return __ldcg(p);
#else
  const volatile float* v = reinterpret_cast<const volatile float*>(p);
  return make_float2(v[0], v[1]);
#endif
}
__device__ __forceinline__ float4 load_shared_partial(const float4* p) {
#if defined(__CUDA_ARCH__)
  return __ldcg(p);
#else
  const volatile float* v = reinterpret_cast<const volatile float*>(p);
  return make_float4(v[0], v[1], v[2], v[3]);
#endif
}

// The sample of group (n, g) = n * G + g for the families with a grid of groups, whose group is
// a grid index below 2^31: a 32-bit division, inline, where a 64-bit one is a called helper
// around which ptxas spills registers.
__device__ __forceinline__ std::int64_t group_sample(const Params& p, std::int64_t group) {
  return std::int64_t(std::uint32_t(group) / std::uint32_t(p.groups_per_sample));
}

// A contiguous run of `length` elements starting at element `first` of a tensor whose element 0
// lies `phase` elements past a 16-byte boundary (phase < V, V a power of two): the up to V-1
// elements before the first aligned vector (head), the aligned vectors (body), and the up to V-1
// elements after them (tail). Runs whose start and length are not multiples of V (a spatial size
// the vector does not divide, a pointer off the boundary) still move their body 16 bytes an access.
template <int V>
struct Peel {
  std::int64_t head, body, tail;
  __device__ __forceinline__ Peel(int phase, std::int64_t first, std::int64_t length) {
    const std::int64_t h = (V - ((phase + first) & (V - 1))) & (V - 1);
    head = h < length ? h : length;
    body = (length - head) / V;
    tail = length - head - body * V;
  }
};

// The channel (of its group) and spatial position of consecutive elements of a channels-first
// group, from one division at the first and a step per element after it: a vector of a span
// crosses a row end when the spatial size is not a multiple of the vector.
struct SpatialCursor {
  std::int64_t channel, position;
  __device__ __forceinline__ SpatialCursor(const Params& p, std::int64_t element)
      : channel(std::int64_t(p.spatial.div(std::uint64_t(element)))),
        position(element - channel * p.spatial_size) {}
  // steps to the next element; true when it starts a new channel
  __device__ __forceinline__ bool next(const Params& p) {
    if (++position < p.spatial_size) return false;
    position = 0;
    ++channel;
    return true;
  }
};

// Opt-in uneven groups (Problem::uneven_groups: C % G != 0; groups 0..G-2 of a sample take
// C/G channels, floored, and the last one the rest). A family that runs them instantiates its
// kernels with UnevenGroups<Traits>, whose GroupView takes each group's own size from Params'
// last_* fields; every other family's view reads the launch's one size, with no per-group
// choice in its code.
template <typename Traits>
struct UnevenGroups : Traits {
  static constexpr bool kUnevenGroups = true;
};
template <typename Traits, typename = void>
inline constexpr bool kUneven = false;
template <typename Traits>
inline constexpr bool kUneven<Traits, std::void_t<decltype(Traits::kUnevenGroups)>> = Traits::kUnevenGroups;

// A group (n, g) is viewed as rows x cols with cols contiguous in memory:
//   channels-first (N, C, S...): rows = C/G channels,  cols = S (spatial), row stride S
//   channels-last  (N, S..., C): rows = S positions,   cols = C/G,         row stride C
// Threads access whole vectors of Traits::kVectorSize elements along cols (the runtime checks
// cols and the pointers allow it), so one vector lies in one channel (channels-first) or in
// consecutive channels (channels-last). With uneven groups the last group of a sample has more
// channels: more rows (channels-first) or wider rows (channels-last).
template <typename Traits>
struct GroupView {
  static constexpr int V = Traits::kVectorSize;
  static constexpr bool kChannelsFirst = Traits::kLayout == Layout::channels_first;
  std::int64_t base;      // offset of the group's first element
  std::int64_t channel0;  // the group's first channel
  // The last group of its sample, wider where the groups are uneven (only families that run
  // uneven groups ask). Its sizes are read from Params where used, not held: a held copy of
  // each kept the looped backward's registers past its budget (ptxas spilled).
  bool last;

  __device__ __forceinline__ GroupView(const Params& p, std::int64_t group) {
    const std::int64_t n = group_sample(p, group), g = group - n * p.groups_per_sample;
    base = n * p.sample_stride + g * p.group_stride;
    channel0 = g * p.channels_per_group;
    last = kUneven<Traits> && g == p.groups_per_sample - 1;
  }
  // the group's channels, vectors (Params::vectors), elements and vectors a row
  __device__ __forceinline__ std::int64_t channels(const Params& p) const {
    return last ? p.last_channels : p.channels_per_group;
  }
  __device__ __forceinline__ std::int64_t vectors(const Params& p) const { return last ? p.last_vectors : p.vectors; }
  __device__ __forceinline__ std::int64_t elements(const Params& p) const {
    return last ? p.last_group_elements : p.group_elements;
  }
  __device__ __forceinline__ const FastDivmod& per_row(const Params& p) const {
    return last ? p.last_vectors_per_row : p.vectors_per_row;
  }
  // Vector q of the group: its element offset and the channel of its first element.
  __device__ __forceinline__ void locate(const Params& p, std::int64_t q, std::int64_t& offset,
                                         std::int64_t& channel) const {
    const FastDivmod& cols = per_row(p);
    const std::int64_t row = cols.div(q), col = (q - row * cols.divisor) * V;
    offset = base + row * p.row_stride + col;
    channel = channel0 + (kChannelsFirst ? row : col);
  }
};

}  // namespace hipgn::kernels
