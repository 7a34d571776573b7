// What a kernel launch receives: pointers, sizes, and the index arithmetic the host
// prepared once per call (so kernels divide by multiplication). Shared by the runtime, which
// fills it, and the kernels in kernels/include/hipgn/kernels/.
#pragma once

#include <cstdint>

#include "hipgn/types.hpp"

namespace hipgn {

// Division by a divisor fixed for the whole launch. Dividends below 2^31 use the
// multiply-high method (Granlund and Montgomery); larger ones, only possible in groups past
// 2^31 vectors, fall back to a 64-bit division.
struct FastDivmod {
  std::uint64_t divisor = 1;
  std::uint32_t multiplier = 1;  // 0 when divisor = 1: quotient = dividend
  std::uint32_t shift = 0;

  static FastDivmod make(std::uint64_t d) {
    FastDivmod f;
    f.divisor = d;
    if (d <= 1u || d >= (1ull << 31)) { f.multiplier = 0; f.shift = 0; return f; }
    std::uint32_t l = 0;
    while ((1ull << l) < d) ++l;
    f.shift = l;
    f.multiplier = static_cast<std::uint32_t>(((1ull << 32) * ((1ull << l) - d)) / d + 1);
    return f;
  }

  HIPGN_HD std::uint64_t div(std::uint64_t n) const {
    if (multiplier == 0) return divisor == 1 ? n : n / divisor;
    if (n >= (1ull << 31)) return n / divisor;
    const std::uint32_t n32 = static_cast<std::uint32_t>(n);
#if defined(HIPGN_DEVICE_PASS)
    const std::uint32_t hi = __umulhi(n32, multiplier);
#else
    const std::uint32_t hi = static_cast<std::uint32_t>((std::uint64_t(n32) * multiplier) >> 32);
#endif
    return (std::uint64_t(hi) + n32) >> shift;
  }
};

struct Params {
  const void* x;
  void* y;
  const void* gamma;  // may be null: scale 1
  const void* beta;   // may be null: shift 0
  float* mean;        // [N, G]; forward: may be null (not written); backward: read
  float* rstd;        // [N, G]
  const void* dy;     // backward
  void* dx;           // backward data; may be null (dgb)
  void* dgamma;       // backward gamma/beta; may be null (dx, or affine off)
  void* dbeta;
  float* workspace;   // forward split: 3 floats per (group, slice); backward: [N, C, 2] sums

  std::int64_t channels;           // C

  std::int64_t groups_per_sample;  // G
  std::int64_t channels_per_group; // C / G
  std::int64_t sample_stride;      // elements between samples: C * spatial
  std::int64_t group_stride;       // elements between groups of a sample: C/G * spatial or C/G
  std::int64_t row_stride;         // a group is rows x cols; channels-first: spatial, last: C
  std::int64_t vectors;            // vectors in one group: rows * cols / vector
  FastDivmod vectors_per_row;      // cols / vector
  std::int32_t num_groups;         // N * G: the grid's x
  std::int32_t slices;             // split family: workgroups per group
  float eps;
  float swish_beta;
};

}  // namespace hipgn
