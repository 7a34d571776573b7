// Verification (hipgn/verify.hpp): inputs, poison, tolerances, comparison.
#include "hipgn/verify.hpp"

#include <cmath>
#include <limits>

#include "hipgn/reference.hpp"

namespace hipgn::verify {

HostTensor stored(DataType t, std::vector<double> values) {
  HostTensor out;
  out.bytes = encode(t, values);
  out.values = decode(t, out.bytes.data(), values.size());
  return out;
}

Inputs make_inputs(const Problem& p, std::mt19937_64& rng, const InputOptions& o) {
  const std::size_t count = std::size_t(p.elements()), c = std::size_t(p.c);
  std::uniform_real_distribution<double> u(-1.0, 1.0);
  auto draw = [&](std::size_t n, double offset, double scale) {
    std::vector<double> v(n);
    for (double& e : v) e = offset + scale * u(rng);
    return v;
  };
  // drawn in this order (x, dy, gamma, beta) so that a seed gives the same values as before
  Inputs in;
  std::vector<double> x = draw(count, o.x_offset, o.x_scale);
  std::vector<double> dy = describe(p.op).backward ? draw(count, 0.0, 1.0) : std::vector<double>();
  std::vector<double> gamma = draw(c, 1.0, 0.5), beta = draw(c, 0.0, 0.5);
  in.x = stored(p.x_dtype, std::move(x));
  in.dy = stored(p.x_dtype, std::move(dy));
  in.gamma = stored(p.gamma_dtype, std::move(gamma));
  in.beta = stored(p.gamma_dtype, std::move(beta));
  return in;
}

bool all_poison(const std::vector<std::uint8_t>& bytes) {
  for (std::uint8_t b : bytes)
    if (b != kPoisonByte) return false;
  return true;
}

Tolerance tolerance(DataType t, TensorBit output) {
  if (output == kDgamma || output == kDbeta) {
    // dgamma/dbeta sum N * spatial terms in fp32 and round to gamma's dtype
    switch (t) {
      case DataType::f32: return {1e-4, 1e-4, 2e-6};
      case DataType::f16: return {2e-3, 1e-3, 2e-6};
      case DataType::bf16: return {1e-2, 8e-3, 2e-6};
    }
  }
  switch (t) {
    case DataType::f32: return {1e-4, 1e-4, 0};
    case DataType::f16: return {4e-3, 4e-3, 0};    // 2^-11 relative rounding, outputs up to ~8
    case DataType::bf16: return {3e-2, 1.6e-2, 0};  // 2^-8 relative rounding
  }
  return {0, 0, 0};
}

Comparison compare(const std::vector<double>& got, const std::vector<double>& want, const Tolerance& tol,
                   const std::vector<double>* terms) {
  Comparison c;
  for (std::size_t i = 0; i < want.size(); ++i) {
    const double bound = tol.atol + tol.rtol * std::fabs(want[i]) + (terms ? tol.per_term * (*terms)[i] : 0.0);
    const double err = std::fabs(got[i] - want[i]);
    // NaN (an unwritten, poisoned element) fails this comparison too
    if (!(err <= bound) && !c.bad++) c.first = i;
    const double fraction = std::isnan(err) ? std::numeric_limits<double>::infinity() : err / bound;
    if (fraction > c.worst) c.worst = fraction;
  }
  return c;
}

}  // namespace hipgn::verify
