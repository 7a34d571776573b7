// A problem's derived sizes, its description and its validation.
#include <cmath>
#include <limits>
#include <sstream>
#include <vector>

#include "hipgn/problem.hpp"

#include "hipgn/op.hpp"  // the op table (internal): what each op reads and writes

namespace hipgn {

std::int64_t Problem::spatial_size() const {
  std::int64_t s = 1;
  for (auto d : spatial) s *= d;
  return s;
}

Problem in_layout(const Problem& p, Layout layout) {
  Problem q = p;
  if (p.spatial_size() == 1) q.layout = layout;
  return q;
}

std::vector<Problem> layout_views(const Problem& p) {
  const Layout other = p.layout == Layout::channels_first ? Layout::channels_last : Layout::channels_first;
  if (p.spatial_size() != 1) return {p};
  return {p, in_layout(p, other)};
}

std::string Problem::to_string() const {
  std::ostringstream o;
  o << hipgn::to_string(op) << " n" << n << " c" << c << " s";
  for (std::size_t i = 0; i < spatial.size(); ++i) o << (i ? "x" : "") << spatial[i];
  if (spatial.empty()) o << "1";
  o << " g" << groups << (uneven() ? " (uneven)" : "") << " " << hipgn::to_string(x_dtype) << "/" << hipgn::to_string(gamma_dtype) << " "
    << hipgn::to_string(layout) << " " << hipgn::to_string(act);
  if (act == Activation::swish) o << "(" << swish_beta << ")";
  o << " eps" << eps;
  return o.str();
}

namespace {
Status bad(std::string m) { return Status::error(StatusCode::invalid_argument, std::move(m)); }
}  // namespace

Status validate(const Problem& p) {
  if (p.n < 1) return bad("N = " + std::to_string(p.n) + ": the batch must hold at least one sample");
  if (p.c < 1) return bad("C = " + std::to_string(p.c) + ": there must be at least one channel");
  for (std::size_t i = 0; i < p.spatial.size(); ++i)
    if (p.spatial[i] < 1)
      return bad("spatial dimension " + std::to_string(i) + " = " + std::to_string(p.spatial[i]) + ": empty dimension");
  if (p.groups < 1) return bad("G = " + std::to_string(p.groups) + ": the number of groups must be at least 1");
  if (p.c % p.groups != 0 && !p.uneven_groups)
    return bad("C = " + std::to_string(p.c) + " is not divisible by G = " + std::to_string(p.groups) +
               " (uneven groups are opt-in: the problem's uneven_groups)");
  if (p.uneven_groups && p.groups > p.c)
    return bad("G = " + std::to_string(p.groups) + " exceeds C = " + std::to_string(p.c) +
               ": with uneven groups each group still needs a channel");
  // the element count must fit in 64 bits (every dimension is >= 1 here)
  std::int64_t total = p.n;
  std::vector<std::int64_t> dims{p.c};
  dims.insert(dims.end(), p.spatial.begin(), p.spatial.end());
  for (std::int64_t d : dims) {
    if (total > std::numeric_limits<std::int64_t>::max() / d) return bad("the tensor has more than 2^63 elements");
    total *= d;
  }
  if (!(std::isfinite(p.eps) && p.eps > 0.f)) return bad("eps = " + std::to_string(p.eps) + ": must be finite and > 0");
  if (p.act == Activation::swish && !std::isfinite(p.swish_beta))
    return bad("swish_beta must be finite");
  if (p.gamma_dtype != p.x_dtype && p.gamma_dtype != DataType::f32)
    return bad("gamma/beta dtype " + std::string(hipgn::to_string(p.gamma_dtype)) + " must be x's (" +
               std::string(hipgn::to_string(p.x_dtype)) + ") or f32");
  return Status::success();
}

Status validate(const Problem& p, const Tensors& t) {
  if (Status s = validate(p); !s.ok()) return s;
  const OpDescriptor& d = describe(p.op);
  const std::string op = std::string(hipgn::to_string(p.op)) + ": ";
  auto given = [&t](unsigned mask, bool all) {
    for (unsigned i = 0; i < kTensorCount; ++i)
      if ((mask >> i) & 1u) {
        const bool present = tensor_pointer(t, TensorBit(1u << i)) != nullptr;
        if (all && !present) return false;
        if (!all && present) return true;
      }
    return all;
  };
  for (const Required& r : d.required)
    if (r.tensors && !given(r.tensors, true)) return bad(op + r.missing);
  if (d.activation_needs_gamma && p.act != Activation::none && !t.gamma)
    return bad(op + "gamma is null but " + std::string(to_string(p.act)) + " was fused: the backward recomputes its input "
                    "gamma * xhat + beta and needs the forward's gamma");
  if (d.writes_with_gamma && t.gamma && !given(d.writes_with_gamma, true)) return bad(op + d.with_gamma_missing);
  if (d.writes_with_gamma && !t.gamma && given(d.writes_with_gamma, false)) return bad(op + d.without_gamma_given);
  return Status::success();
}

}  // namespace hipgn
