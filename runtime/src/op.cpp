// The op table (hipgn/op.hpp): one row per op, in the order of Op's values.
#include "hipgn/op.hpp"

#include <iterator>

namespace hipgn {
namespace {

constexpr const char* kNoStatistics = "the forward's saved mean and rstd are required (mean or rstd is null)";

constexpr OpDescriptor kOps[] = {
    {Op::fwd, false, {{kX, "x is null"}, {kY, "y is null"}}, kX | kGamma | kBeta, kY, kMean | kRstd, 0, nullptr,
     nullptr, false, kX | kY, 2, kY},
    {Op::dx, true, {{kX, "x is null"}, {kDy, "dy is null"}, {kMean | kRstd, kNoStatistics}, {kDx, "dx is null"}},
     kX | kDy | kMean | kRstd | kGamma | kBeta, kDx, 0, 0, nullptr, nullptr, true, kX | kDy | kDx, 3, kDx},
    {Op::dgb, true,
     {{kX, "x is null"}, {kDy, "dy is null"}, {kMean | kRstd, kNoStatistics},
      {kGamma, "gamma is null (affine off): there are no gamma/beta gradients; use op dx"},
      {kDgamma | kDbeta, "dgamma or dbeta is null"}},
     kX | kDy | kMean | kRstd | kGamma | kBeta, kDgamma | kDbeta, 0, 0, nullptr, nullptr, true, kX | kDy, 2, kDgamma},
    {Op::bwd, true, {{kX, "x is null"}, {kDy, "dy is null"}, {kMean | kRstd, kNoStatistics}, {kDx, "dx is null"}},
     kX | kDy | kMean | kRstd | kGamma | kBeta, kDx, 0, kDgamma | kDbeta,
     "dgamma or dbeta is null (with gamma given, the fused backward writes both)",
     "dgamma/dbeta given but gamma is null (affine off: dx only)", true, kX | kDy | kDx, 3, kDx},
};
static_assert(std::size(kOps) == std::size(Names<Op>::all), "one row per op of the vocabulary");

constexpr const char* kTensorNames[kTensorCount] = {"x", "y", "gamma", "beta", "mean", "rstd",
                                                    "dy", "dx", "dgamma", "dbeta"};
}  // namespace

const OpDescriptor& describe(Op op) { return kOps[int(op)]; }

const char* tensor_name(unsigned bit_index) { return kTensorNames[bit_index]; }

const void* tensor_pointer(const Tensors& t, TensorBit bit) {
  switch (bit) {
    case kX: return t.x;
    case kY: return t.y;
    case kGamma: return t.gamma;
    case kBeta: return t.beta;
    case kMean: return t.mean;
    case kRstd: return t.rstd;
    case kDy: return t.dy;
    case kDx: return t.dx;
    case kDgamma: return t.dgamma;
    case kDbeta: return t.dbeta;
  }
  return nullptr;
}

Tensors only(const Tensors& t, unsigned keep) {
  auto k = [keep](TensorBit bit, auto* p) { return (keep & bit) ? p : nullptr; };
  return {k(kX, t.x), k(kY, t.y), k(kGamma, t.gamma), k(kBeta, t.beta), k(kMean, t.mean), k(kRstd, t.rstd),
          k(kDy, t.dy), k(kDx, t.dx), k(kDgamma, t.dgamma), k(kDbeta, t.dbeta)};
}

std::string tensor_list(unsigned mask) {
  std::string s;
  unsigned left = 0;
  for (unsigned i = 0; i < kTensorCount; ++i) left += (mask >> i) & 1u;
  for (unsigned i = 0; i < kTensorCount; ++i) {
    if (!((mask >> i) & 1u)) continue;
    --left;
    s += kTensorNames[i];
    if (left > 1) s += ", ";
    else if (left == 1) s += " or ";
  }
  return s;
}

}  // namespace hipgn
