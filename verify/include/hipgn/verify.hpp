// Verification shared by the GPU tests and the profiler: host inputs rounded to their storage
// dtypes (so the float64 reference sees exactly what the GPU sees), the poison written over
// outputs before a launch, and the comparison with the reference under one table of
// tolerances by dtype and by what is compared. Host-only: the callers move the bytes.
#pragma once

#include <cstddef>
#include <cstdint>
#include <random>
#include <vector>

#include "hipgn/op.hpp"
#include "hipgn/problem.hpp"

namespace hipgn::verify {

// Values and their storage bytes; values are exactly what the bytes hold.
struct HostTensor {
  std::vector<double> values;
  std::vector<std::uint8_t> bytes;
};
// Rounds values to the dtype's storage.
HostTensor stored(DataType, std::vector<double> values);

// x = x_offset + x_scale * U(-1, 1) (an offset mean and a spread, as activations have);
// dy = U(-1, 1); gamma = 1 + 0.5 U(-1, 1); beta = 0.5 U(-1, 1). dy only for a backward op.
struct InputOptions {
  double x_offset = 0.5;
  double x_scale = 2.0;
};
struct Inputs {
  HostTensor x, dy, gamma, beta;
};
Inputs make_inputs(const Problem&, std::mt19937_64& rng, const InputOptions& = {});

// Outputs are filled with this byte before a launch: NaN in f32, f16 and bf16, so an element
// left unwritten fails any comparison, and a buffer that must stay unwritten can be checked.
inline constexpr std::uint8_t kPoisonByte = 0xFF;
bool all_poison(const std::vector<std::uint8_t>& bytes);

// |got - want| <= atol + rtol * |want| + per_term * (sum of the terms' magnitudes): one
// output rounding of the dtype plus fp32 arithmetic; reductions (dgamma, dbeta, summed over
// N * spatial terms in fp32) add a share of their terms' magnitudes.
struct Tolerance {
  double atol, rtol, per_term;
};
// The tolerance of an output: elementwise (y, dx; in x's dtype) or per channel (dgamma,
// dbeta; in gamma's dtype).
Tolerance tolerance(DataType, TensorBit output);

struct Comparison {
  std::size_t bad = 0;    // elements outside the tolerance (NaN included)
  std::size_t first = 0;  // the first of them
  double worst = 0;       // the largest error as a fraction of its bound (> 1 fails; NaN: inf)
  bool ok() const { return bad == 0; }
};
// terms: per element, the sum of the magnitudes the reduction added (or null).
Comparison compare(const std::vector<double>& got, const std::vector<double>& want, const Tolerance&,
                   const std::vector<double>* terms = nullptr);

}  // namespace hipgn::verify
