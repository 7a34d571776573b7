// The CPU reference: GroupNorm forward in float64 over host values, and host-side encoding of
// values into the storage dtypes. Tests and the profiler check every instance against it.
#pragma once

#include <cstdint>
#include <vector>

#include "hipgn/problem.hpp"

namespace hipgn {

// Element offset of (n, c, s) (s the flattened spatial index) in the problem's layout.
std::int64_t element_offset(const Problem&, std::int64_t n, std::int64_t c, std::int64_t s);

// y, mean, rstd from x, gamma, beta (gamma/beta may be null); all in float64. mean and rstd
// hold N*G values; rstd = 1/sqrt(var + eps) with the biased variance.
void reference_fwd(const Problem&, const double* x, const double* gamma, const double* beta,
                   double* y, double* mean, double* rstd);

// The backward in float64, mean and rstd recomputed from x: dx (may be null), dgamma and dbeta
// (may be null) from dy, with Swish's derivative when p.act is swish. dgamma_abs/dbeta_abs,
// if given, receive the sums of the terms' magnitudes (for tolerances).
void reference_bwd(const Problem&, const double* x, const double* dy, const double* gamma, const double* beta,
                   double* dx, double* dgamma, double* dbeta, double* dgamma_abs = nullptr,
                   double* dbeta_abs = nullptr);

// Storage: dtype bytes <-> doubles. encode rounds to nearest even; decode is exact.
std::vector<std::uint8_t> encode(DataType, const std::vector<double>&);
std::vector<double> decode(DataType, const void* bytes, std::size_t count);

}  // namespace hipgn
