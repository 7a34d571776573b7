// The device ABI's storage types for fp16/bf16 and their conversions (host and device). Arithmetic
// is always fp32: these only load, convert and store. The CPU reference and the tests share them.
#pragma once

#include <cstdint>
#include <cstring>

#include "hipgn/types.hpp"

#if defined(__HIPCC__) && !defined(__CUDACC__)
#include <hip/hip_runtime.h>  // __host__ and __device__: nvcc predefines them, clang's HIP mode does not
#endif
#if defined(__CUDACC__) || defined(__HIPCC__)
#define HIPGN_HD __host__ __device__ __forceinline__
#else
#define HIPGN_HD inline
#endif

#if defined(__CUDA_ARCH__) || defined(__HIP_DEVICE_COMPILE__)
#define HIPGN_DEVICE_PASS 1
#endif

#if defined(HIPGN_DEVICE_PASS) && defined(__CUDA_ARCH__)
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#endif

namespace hipgn {

// 16-bit storage types. Arithmetic is always fp32: these only load, convert and store.
struct f16_t { std::uint16_t bits; };
struct bf16_t { std::uint16_t bits; };

template <typename T> inline constexpr DataType dtype_of = DataType::f32;
template <> inline constexpr DataType dtype_of<f16_t> = DataType::f16;
template <> inline constexpr DataType dtype_of<bf16_t> = DataType::bf16;

namespace detail {
// Bit casts: the device passes use their intrinsics (clang's HIP mode has no device memcpy).
HIPGN_HD std::uint32_t as_uint(float f) {
#if defined(HIPGN_DEVICE_PASS) && defined(__CUDA_ARCH__)
  return __float_as_uint(f);
#elif defined(HIPGN_DEVICE_PASS)
  return __builtin_bit_cast(std::uint32_t, f);
#else
  std::uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
#endif
}
HIPGN_HD float as_float(std::uint32_t u) {
#if defined(HIPGN_DEVICE_PASS) && defined(__CUDA_ARCH__)
  return __uint_as_float(u);
#elif defined(HIPGN_DEVICE_PASS)
  return __builtin_bit_cast(float, u);
#else
  float f;
  std::memcpy(&f, &u, 4);
  return f;
#endif
}

// IEEE binary16 <-> binary32, round to nearest even; used on the host (the device pass uses
// the hardware's conversion instructions).
HIPGN_HD std::uint16_t f32_to_f16_bits(float f) {
  const std::uint32_t x = as_uint(f);
  const std::uint32_t sign = (x >> 16) & 0x8000u;
  const std::uint32_t mag = x & 0x7fffffffu;
  if (mag > 0x7f800000u) return static_cast<std::uint16_t>(sign | 0x7e00u);  // NaN stays NaN
  if (mag >= 0x477ff000u) return static_cast<std::uint16_t>(sign | 0x7c00u);  // >= 65520: inf
  if (mag < 0x38800000u) {  // below 2^-14: a binary16 subnormal; scaling by 2^24 is exact
    const float scaled = as_float(mag) * 16777216.0f;
    std::uint32_t m = static_cast<std::uint32_t>(scaled);
    const float rest = scaled - static_cast<float>(m);
    if (rest > 0.5f || (rest == 0.5f && (m & 1u))) ++m;
    return static_cast<std::uint16_t>(sign | m);
  }
  const std::uint32_t r = mag - 0x38000000u;  // rebias the exponent from 127 to 15
  return static_cast<std::uint16_t>(sign | ((r + 0xfffu + ((r >> 13) & 1u)) >> 13));
}
HIPGN_HD float f16_bits_to_f32(std::uint16_t h) {
  const std::uint32_t sign = static_cast<std::uint32_t>(h & 0x8000u) << 16;
  const std::uint32_t e = (h >> 10) & 0x1fu, m = h & 0x3ffu;
  if (e == 0) {
    const float v = static_cast<float>(m) * 5.9604644775390625e-8f;  // m * 2^-24
    return sign ? -v : v;
  }
  if (e == 31) return as_float(sign | 0x7f800000u | (m << 13));
  return as_float(sign | ((e + 112u) << 23) | (m << 13));
}
HIPGN_HD std::uint16_t f32_to_bf16_bits(float f) {
  const std::uint32_t u = as_uint(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) return static_cast<std::uint16_t>((u >> 16) | 0x40u);
  return static_cast<std::uint16_t>((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
}
HIPGN_HD float bf16_bits_to_f32(std::uint16_t b) { return as_float(static_cast<std::uint32_t>(b) << 16); }
}  // namespace detail

HIPGN_HD float to_float(float v) { return v; }
HIPGN_HD float to_float(bf16_t v) { return detail::bf16_bits_to_f32(v.bits); }
HIPGN_HD float to_float(f16_t v) {
#if defined(HIPGN_DEVICE_PASS) && defined(__CUDA_ARCH__)
  return __half2float(__ushort_as_half(v.bits));
#elif defined(HIPGN_DEVICE_PASS)
  return static_cast<float>(__builtin_bit_cast(_Float16, v.bits));
#else
  return detail::f16_bits_to_f32(v.bits);
#endif
}

template <typename T> HIPGN_HD T from_float(float v);
template <> HIPGN_HD float from_float<float>(float v) { return v; }
template <> HIPGN_HD bf16_t from_float<bf16_t>(float v) {
#if defined(HIPGN_DEVICE_PASS) && defined(__CUDA_ARCH__)
  return bf16_t{__bfloat16_as_ushort(__float2bfloat16_rn(v))};  // one instruction; NaN stays NaN
#else
  return bf16_t{detail::f32_to_bf16_bits(v)};
#endif
}
template <> HIPGN_HD f16_t from_float<f16_t>(float v) {
#if defined(HIPGN_DEVICE_PASS) && defined(__CUDA_ARCH__)
  return f16_t{__half_as_ushort(__float2half_rn(v))};
#elif defined(HIPGN_DEVICE_PASS)
  return f16_t{__builtin_bit_cast(std::uint16_t, static_cast<_Float16>(v))};
#else
  return f16_t{detail::f32_to_f16_bits(v)};
#endif
}

}  // namespace hipgn
