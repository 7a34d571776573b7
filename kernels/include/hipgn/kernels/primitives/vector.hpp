// Vector memory access: N elements of x's storage type in one 16-byte access, widened to fp32
// and narrowed back, and the peeling of a run whose start and length the vector does not
// divide (a scalar head and tail around an aligned body).
#pragma once

#include <cstdint>
#include <type_traits>

#include "hipgn/platform.hpp"
#include "hipgn/storage.hpp"

namespace hipgn::kernels {

// N elements of T in one access: with sizeof(T) * N = 16 this is one 128-bit load or store.
template <typename T, int N>
struct alignas(sizeof(T) * N) Vec {
  T v[N];
};

// A vector of a tensor in global memory stored as one access of its size (16, 8 or 4 bytes).
// On NVIDIA through PTX's vector store: nvcc's own code for the element array, and for a uint4
// built from it, came out as 2- and 4-byte stores (seven for a 16-byte fp16 vector in the split
// backward's dx writer; bench/NOTES.md, "Stores in pieces").
template <typename T, int N>
__device__ __forceinline__ void store_global(T* p, const Vec<T, N>& r) {
  constexpr std::size_t kBytes = sizeof(Vec<T, N>);
#if defined(__CUDA_ARCH__)
  if constexpr (kBytes == 16) {
    uint4 w;
    __builtin_memcpy(&w, &r, 16);
    asm volatile("st.global.v4.b32 [%0], {%1, %2, %3, %4};" ::"l"(p), "r"(w.x), "r"(w.y), "r"(w.z), "r"(w.w)
                 : "memory");
    return;
  } else if constexpr (kBytes == 8) {
    uint2 w;
    __builtin_memcpy(&w, &r, 8);
    asm volatile("st.global.v2.b32 [%0], {%1, %2};" ::"l"(p), "r"(w.x), "r"(w.y) : "memory");
    return;
  } else if constexpr (kBytes == 4 && N > 1) {
    // (one element takes the plain store below, which is whole: through this asm and its
    // clobber a v1 fp32 looped backward spilled 20 bytes)
    unsigned w;
    __builtin_memcpy(&w, &r, 4);
    asm volatile("st.global.b32 [%0], %1;" ::"l"(p), "r"(w) : "memory");
    return;
  }
#endif
  *reinterpret_cast<Vec<T, N>*>(p) = r;
}

// An L2 eviction policy for the accesses below: evict_first marks a line the launch will not read
// again (y; x held on chip or read for the last time), so the L2 gives it up before lines still
// wanted. On NVIDIA a cache-policy operand (createpolicy, sm_80 and later: sm_90's direct
// .L2::evict_first qualifier takes only 32-byte accesses); elsewhere the accesses are plain and
// the policy unused. A value in a register, made once a kernel. (Evict-last for lines
// read again measured level in the stream forwards: bench/NOTES.md, "Eviction hints".)
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
#define HIPGN_L2_POLICY 1
#endif
struct L2Policy {
  std::uint64_t bits;
};
__device__ __forceinline__ L2Policy l2_evict_first() {
  std::uint64_t bits = 0;
#if defined(HIPGN_L2_POLICY)
  asm("createpolicy.fractional.L2::evict_first.b64 %0, 1.0;" : "=l"(bits));
#endif
  return L2Policy{bits};
}

// A value of 16, 8 or 4 bytes (a vector, or its Bits) loaded from or stored to global memory as
// one access under an L2 policy (one access, as store_global above: nvcc's own code for a
// vector's store could come out in pieces).
template <typename V>
__device__ __forceinline__ V load_global(const V* p, L2Policy pol) {
#if defined(HIPGN_L2_POLICY)
  V r;
  if constexpr (sizeof(V) == 16) {
    uint4 w;
    asm volatile("ld.global.L2::cache_hint.v4.b32 {%0, %1, %2, %3}, [%4], %5;"
                 : "=r"(w.x), "=r"(w.y), "=r"(w.z), "=r"(w.w)
                 : "l"(p), "l"(pol.bits));
    __builtin_memcpy(&r, &w, 16);
    return r;
  } else if constexpr (sizeof(V) == 8) {
    uint2 w;
    asm volatile("ld.global.L2::cache_hint.v2.b32 {%0, %1}, [%2], %3;" : "=r"(w.x), "=r"(w.y) : "l"(p), "l"(pol.bits));
    __builtin_memcpy(&r, &w, 8);
    return r;
  } else if constexpr (sizeof(V) == 4) {
    unsigned w;
    asm volatile("ld.global.L2::cache_hint.b32 %0, [%1], %2;" : "=r"(w) : "l"(p), "l"(pol.bits));
    __builtin_memcpy(&r, &w, 4);
    return r;
  }
#endif
  (void)pol;
  return *p;
}
template <typename V>
__device__ __forceinline__ void store_global(V* p, const V& r, L2Policy pol) {
#if defined(HIPGN_L2_POLICY)
  if constexpr (sizeof(V) == 16) {
    uint4 w;
    __builtin_memcpy(&w, &r, 16);
    asm volatile("st.global.L2::cache_hint.v4.b32 [%0], {%1, %2, %3, %4}, %5;" ::"l"(p), "r"(w.x), "r"(w.y), "r"(w.z),
                 "r"(w.w), "l"(pol.bits)
                 : "memory");
    return;
  } else if constexpr (sizeof(V) == 8) {
    uint2 w;
    __builtin_memcpy(&w, &r, 8);
    asm volatile("st.global.L2::cache_hint.v2.b32 [%0], {%1, %2}, %3;" ::"l"(p), "r"(w.x), "r"(w.y), "l"(pol.bits) : "memory");
    return;
  } else if constexpr (sizeof(V) == 4) {
    unsigned w;
    __builtin_memcpy(&w, &r, 4);
    asm volatile("st.global.L2::cache_hint.b32 [%0], %1, %2;" ::"l"(p), "r"(w), "l"(pol.bits) : "memory");
    return;
  }
#endif
  (void)pol;
  *p = r;
}

template <int N, typename T>
__device__ __forceinline__ void load_vec(const T* p, float (&out)[N]) {
  const Vec<T, N> r = *reinterpret_cast<const Vec<T, N>*>(p);
#pragma unroll
  for (int i = 0; i < N; ++i) out[i] = to_float(r.v[i]);
}

// base[i] where base is not null, else `absent`, as stored (widen it where it is used). On
// NVIDIA one predicated load, no branch: behind a branch, the compiler moved the value's
// conversion into the load's block (phi(0, widen(load)) for phi(0, load)), a use of the load
// before the loads after it, which then waited for it (bench/NOTES.md, "The split forward's chain").
template <typename T>
__device__ __forceinline__ T load_or(const T* base, std::int64_t i, T absent) {
#if defined(__CUDA_ARCH__)
  if constexpr (sizeof(T) == 2 || sizeof(T) == 4) {
    using Word = std::conditional_t<sizeof(T) == 2, unsigned short, unsigned>;
    Word w;
    __builtin_memcpy(&w, &absent, sizeof(T));
    if constexpr (sizeof(T) == 2)
      asm("{ .reg .pred q; setp.ne.u64 q, %1, 0; @q ld.global.u16 %0, [%2]; }" : "+h"(w) : "l"(base), "l"(base + i));
    else
      asm("{ .reg .pred q; setp.ne.u64 q, %1, 0; @q ld.global.u32 %0, [%2]; }" : "+r"(w) : "l"(base), "l"(base + i));
    T out;
    __builtin_memcpy(&out, &w, sizeof(T));
    return out;
  }
#endif
  return base ? base[i] : absent;
}

// base[i] = v where `writer` holds and base is not null. On NVIDIA one predicated store, no
// branch: behind `if (writer) if (base)` the writer's wavefront waited at the branch's end for
// the pointer's constant loads, their compare and the store's address, on the chain before its
// last stores (the onchip forward of 128 groups of 1024 elements, 0.05 us of 2.7; bench/NOTES.md,
// "The small forward's constant lines and saved statistics").
__device__ __forceinline__ void store_if(float* base, std::int64_t i, float v, bool writer) {
#if defined(__CUDA_ARCH__)
  // (the condition as one 32-bit operand: the pointer and the flag as two kept a 64-register
  // onchip forward one register short, and it spilled)
  const unsigned store = writer && base != nullptr;
  asm volatile("{ .reg .pred q; setp.ne.u32 q, %2, 0; @q st.global.f32 [%0], %1; }" :: "l"(base + i), "f"(v), "r"(store));
#else
  if (writer && base) base[i] = v;
#endif
}

// Vectors widened to fp32 and narrowed back, two elements a conversion instruction where the
// target has one. A bf16 pair's word widens by moving each half to a float's top bits, one
// instruction a half (a shift, an and): __bfloat1622float2 took three a pair (SASS: PRMT and a
// shift for the high half), where fp16's pair takes two (HADD2.F32 each).
template <typename T, int N>
__device__ __forceinline__ void widen(const Vec<T, N>& r, float (&out)[N]) {
#if defined(__CUDA_ARCH__)
  if constexpr (N % 2 == 0 && !std::is_same_v<T, float>) {  // two elements a conversion
#pragma unroll
    for (int i = 0; i < N / 2; ++i) {
      if constexpr (std::is_same_v<T, f16_t>) {
        const float2 f = __half22float2(reinterpret_cast<const __half2*>(r.v)[i]);
        out[2 * i] = f.x, out[2 * i + 1] = f.y;
      } else {
        unsigned w;
        __builtin_memcpy(&w, r.v + 2 * i, 4);
        out[2 * i] = __uint_as_float(w << 16), out[2 * i + 1] = __uint_as_float(w & 0xffff0000u);
      }
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

// N elements of a tensor in global memory, narrowed from fp32, in one store (store_global).
template <int N, typename T>
__device__ __forceinline__ void store_vec(T* p, const float (&in)[N]) {
  store_global(p, narrow<T, N>(in));
}

// A vector's bytes as 32-bit words, to hold in registers a word each: a Vec of 16-bit elements
// is split into 16-bit values, a register each, once the compiler takes its struct apart (the
// channels-last onchip backward's 512 x 2 x 32 in bf16 spilled 282 bytes holding Vecs, none
// holding words; bench/NOTES.md, "The channels-last onchip backward by rows"). A 2-byte vector
// (one 16-bit element: the full preset's vector-1 instances) is one 16-bit word.
template <typename VecT>
struct alignas(sizeof(VecT)) Bits {
  static_assert(sizeof(VecT) % 4 == 0 || sizeof(VecT) == 2, "whole words, or one 16-bit value");
  using Word = std::conditional_t<sizeof(VecT) % 4 == 0, unsigned, unsigned short>;
  Word w[sizeof(VecT) / sizeof(Word)];
};
template <typename VecT>
__device__ __forceinline__ VecT from_bits(const Bits<VecT>& b) {
  VecT r;
  __builtin_memcpy(&r, &b, sizeof(r));
  return r;
}

// A vector's bits made opaque to the compiler: values computed from it after this point are not
// merged with those computed before, so a kernel that keeps a vector as loaded (16-bit types:
// half the registers of its fp32 terms) and computes its terms twice holds the bits, not the
// terms. Without it the channels-last onchip backward kept its fp32 terms across its reductions
// (1024 x 2 x 16 in bf16 spilled 472 bytes, 12 with it; bench/NOTES.md, "The channels-last
// onchip backward by rows"). A 2-byte vector (one 16-bit element) as one 16-bit register. On
// AMD a no-op.
template <typename T, int N>
__device__ __forceinline__ Vec<T, N> opaque(Vec<T, N> r) {
#if defined(__CUDA_ARCH__)
  if constexpr (sizeof(Vec<T, N>) % 4 == 0) {
    unsigned w[sizeof(Vec<T, N>) / 4];
    __builtin_memcpy(w, &r, sizeof(r));
#pragma unroll
    for (unsigned& x : w) asm volatile("" : "+r"(x));
    __builtin_memcpy(&r, w, sizeof(r));
  } else if constexpr (sizeof(Vec<T, N>) == 2) {
    unsigned short w;
    __builtin_memcpy(&w, &r, 2);
    asm volatile("" : "+h"(w));
    __builtin_memcpy(&r, &w, 2);
  }
#endif
  return r;
}

// One stored element's bits made opaque (opaque() of a one-element vector): widened after this
// point, the conversion cannot be moved back to where the value was loaded.
template <typename T>
__device__ __forceinline__ T opaque_element(T r) {
  return opaque(Vec<T, 1>{{r}}).v[0];
}

// N floats to shared memory in one access where N * 4 is an access's size.
template <int N>
__device__ __forceinline__ void store_floats(float* p, const float (&in)[N]) {
  Vec<float, N> r;
#pragma unroll
  for (int i = 0; i < N; ++i) r.v[i] = in[i];
  *reinterpret_cast<Vec<float, N>*>(p) = r;
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

}  // namespace hipgn::kernels
