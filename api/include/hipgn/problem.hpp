// A GroupNorm problem (op, sizes, types, layout, activation) and its tensors.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "hipgn/status.hpp"
#include "hipgn/types.hpp"

namespace hipgn {

struct Problem {
  Op op = Op::fwd;
  std::int64_t n = 0;                 // batch
  std::int64_t c = 0;                 // channels
  std::vector<std::int64_t> spatial;  // any rank; empty means one position
  std::int64_t groups = 0;            // G, divides c unless uneven_groups
  DataType x_dtype = DataType::f32;   // x and y
  DataType gamma_dtype = DataType::f32;  // gamma and beta: x_dtype or f32
  Layout layout = Layout::channels_first;
  Activation act = Activation::none;
  float eps = 1e-5f;
  float swish_beta = 1.f;  // Swish: z * sigmoid(swish_beta * z); 1 is SiLU
  // Opt-in uneven groups (Caffe2's definition): C need not divide by G; groups 0..G-2 of a
  // sample take floor(C/G) channels and the last one the rest (so G <= C). Off, C % G != 0 is
  // an error. Only the generic families run uneven problems (FamilyDescriptor::uneven_groups).
  bool uneven_groups = false;

  std::int64_t spatial_size() const;
  std::int64_t elements() const { return n * c * spatial_size(); }
  std::int64_t channels_per_group() const { return c / groups; }  // floored: groups 0..G-2 (uneven)
  std::int64_t last_group_channels() const { return c - (groups - 1) * channels_per_group(); }
  // whether the groups differ in size (only valid with uneven_groups)
  bool uneven() const { return groups > 0 && c % groups != 0; }
  std::int64_t group_elements() const { return channels_per_group() * spatial_size(); }
  std::int64_t num_groups() const { return n * groups; }
  std::string to_string() const;  // e.g. "fwd n2 c320 s64x64 g32 f16/f32 cl swish(1) eps1e-05"
};

// p seen in `layout` where that is the same memory: with a spatial size of 1, channels-first
// [N, C, 1, ...] and channels-last [N, 1, ..., C] are both [N, C], and an instance of either
// layout runs the problem. Otherwise p itself.
Problem in_layout(const Problem& p, Layout layout);
// p, then p in the other layout where that is the same memory: the problems whose instances
// can run p.
std::vector<Problem> layout_views(const Problem& p);

// Device pointers; which ones an op reads and writes:
//   fwd: x -> y; gamma, beta optional (null: scale 1, shift 0); mean, rstd [N, G] fp32
//        optional outputs.
//   dx, dgb, bwd: dy, x and the forward's mean and rstd are inputs; gamma and beta are the
//        forward's (null where the forward had none; Swish needs gamma, to recompute its
//        input). dx writes dx; dgb writes dgamma and dbeta (gamma's dtype); bwd writes all
//        three, or dx alone when gamma is null (affine off).
struct Tensors {
  const void* x = nullptr;
  void* y = nullptr;
  const void* gamma = nullptr;
  const void* beta = nullptr;
  float* mean = nullptr;  // fwd: written; backward: read
  float* rstd = nullptr;
  const void* dy = nullptr;
  void* dx = nullptr;
  void* dgamma = nullptr;
  void* dbeta = nullptr;
};

// Whether the problem and tensors are valid, independent of what was built: C % G, G >= 1,
// sizes > 0, eps finite and > 0, gamma dtype x's or f32, and the op's tensors present.
Status validate(const Problem&, const Tensors&);
// The problem alone (sizes, types, eps), for callers that have no tensors yet: listing,
// choosing an instance.
Status validate(const Problem&);

}  // namespace hipgn
