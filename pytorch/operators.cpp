// hipgn's PyTorch operators in C++ (libhipgn_torch.so): hipgn::group_norm_fwd and
// hipgn::group_norm_bwd, their CUDA kernels and group_norm_fwd's autograd formula, registered
// with PyTorch's dispatcher when the library is loaded (hipgn.torch loads it and adds the fake
// implementations torch.compile traces with).
//
// Why C++: the same operators written in Python (python/hipgn/torch/_ops.py, used where this
// library is not built) cost 40-56 us of host time a call, and torch.compile calls them as an
// extern kernel through that Python, which made a compiled ResNet-50 with GroupNorm host-bound
// and slower patched than not (bench/NOTES.md, "The PyTorch operators in C++").
//
// Schemas, formula and errors are the Python operators' (one behaviour, two routes; the tests run
// against both): y comes back in x's layout, mean and rstd are [N, G] fp32, and the backward of
// the backward is not implemented.
#include <torch/library.h>
#include <torch/version.h>
#include <torch/csrc/autograd/autograd_not_implemented_fallback.h>
#include <torch/csrc/autograd/custom_function.h>
#include <ATen/ATen.h>
#include <ATen/core/dispatch/Dispatcher.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>

#include <cmath>
#include <cstring>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "hipgn/hipgn.h"

namespace {

using at::Tensor;
using OptionalTensor = c10::optional<Tensor>;

bool given(const OptionalTensor& t) { return t.has_value() && t->defined(); }

// --- the handles: one per device, shared with Python (hipgn_torch_handle) --------------------

struct Handles {
  std::mutex lock;
  std::unordered_map<c10::DeviceIndex, hipgn_handle_t> by_device;
  std::vector<std::string> databases;  // hipgn_torch_add_tuning_db's files: every handle reads them
  // workspace bytes by (device, problem): hipgn_workspace_size runs the choice's candidates
  std::unordered_map<std::string, size_t> workspace;
};

Handles& handles() {
  // never destroyed: a handle freed by static destructors, after the CUDA runtime's own may have
  // run, would fail at exit; the process's end frees it
  static Handles* h = new Handles();
  return *h;
}

// The device's handle, made on first use (the caller holds the lock).
hipgn_handle_t handle_locked(Handles& h, c10::DeviceIndex device) {
  auto it = h.by_device.find(device);
  if (it != h.by_device.end()) return it->second;
  c10::cuda::CUDAGuard on(device);  // hipgn_create takes the current device
  hipgn_handle_t made = nullptr;
  TORCH_CHECK(hipgn_create(&made) == HIPGN_STATUS_SUCCESS, "hipgn: ", hipgn_last_error());
  for (const std::string& path : h.databases) {
    TORCH_CHECK(hipgn_tuning_db_load(made, path.c_str()) == HIPGN_STATUS_SUCCESS, "hipgn: ", hipgn_last_error());
  }
  h.by_device.emplace(device, made);
  return made;
}

struct Plan {
  hipgn_handle_t handle;
  size_t workspace_bytes;  // enough for whatever the choice picks, tuned later or not
};

Plan plan_for(c10::DeviceIndex device, const hipgn_problem_t& p) {
  std::string key(reinterpret_cast<const char*>(&p), sizeof p);  // p is zeroed first: no stray padding
  key.append(reinterpret_cast<const char*>(&device), sizeof device);
  Handles& h = handles();
  std::lock_guard<std::mutex> guard(h.lock);
  const hipgn_handle_t handle = handle_locked(h, device);
  auto it = h.workspace.find(key);
  if (it != h.workspace.end()) return {handle, it->second};
  size_t bytes = 0;
  TORCH_CHECK(hipgn_workspace_size(handle, &p, nullptr, &bytes) == HIPGN_STATUS_SUCCESS, "hipgn: ",
              hipgn_last_error());
  if (h.workspace.size() >= 65536) h.workspace.clear();  // endless dynamic shapes: start over
  h.workspace.emplace(std::move(key), bytes);
  return {handle, bytes};
}

// --- what a call's tensors say ---------------------------------------------------------------

enum class Layout { none, cf, cl };

// Python's layout_of: contiguous is cf; channels-last has C fastest, then the spatial
// dimensions, then N; size-1 dimensions may have any stride.
Layout layout_of(const Tensor& t) {
  if (t.is_contiguous()) return Layout::cf;
  const auto sizes = t.sizes();
  const auto strides = t.strides();
  std::vector<int64_t> order{1};
  for (int64_t d = t.dim() - 1; d > 1; --d) order.push_back(d);
  order.push_back(0);
  int64_t expected = 1;
  for (int64_t d : order) {
    if (sizes[d] != 1 && strides[d] != expected) return Layout::none;
    expected *= sizes[d];
  }
  return Layout::cl;
}

Tensor to_layout(const Tensor& t, Layout layout) {
  if (layout_of(t) == layout) return t;
  if (layout == Layout::cf) return t.contiguous();
  return t.movedim(1, -1).contiguous().movedim(-1, 1);
}

hipgn_dtype_t dtype_code(at::ScalarType t) {
  switch (t) {
    case at::kFloat: return HIPGN_F32;
    case at::kHalf: return HIPGN_F16;
    case at::kBFloat16: return HIPGN_BF16;
    default: break;
  }
  TORCH_CHECK_VALUE(false, "hipgn computes float32, float16 and bfloat16, not ", t);
  return HIPGN_F32;  // not reached
}

hipgn_problem_t problem_of(hipgn_op_t op, const Tensor& x, const OptionalTensor& weight, const OptionalTensor& bias,
                           int64_t groups, double eps, int64_t act, double swish_beta, Layout layout) {
  hipgn_problem_t p;
  std::memset(&p, 0, sizeof p);  // the workspace cache keys on these bytes
  p.op = op;
  p.n = x.size(0);
  p.c = x.size(1);
  p.groups = groups;
  p.spatial_rank = static_cast<int32_t>(x.dim() - 2);
  for (int64_t d = 2; d < x.dim(); ++d) p.spatial[d - 2] = x.size(d);
  p.x_dtype = dtype_code(x.scalar_type());
  // gamma's dtype: the weight's, else the bias's, else x's (Python's _gamma_dtype)
  const at::ScalarType gamma = given(weight) ? weight->scalar_type()
                               : given(bias) ? bias->scalar_type()
                                             : x.scalar_type();
  p.gamma_dtype = dtype_code(gamma);
  p.layout = layout == Layout::cf ? HIPGN_CHANNELS_FIRST : HIPGN_CHANNELS_LAST;
  p.act = act ? HIPGN_ACT_SWISH : HIPGN_ACT_NONE;
  p.eps = static_cast<float>(eps);
  p.swish_beta = static_cast<float>(swish_beta);
  return p;
}

// x, weight and bias as group_norm() checks them before it calls (Python's why_unsupported),
// checked again for callers of the operators themselves: a weight of the wrong length or on
// another device would be read out of bounds or through a pointer the kernel cannot use. x's
// layout comes back.
Layout checked_inputs(const Tensor& x, const OptionalTensor& weight, const OptionalTensor& bias, int64_t groups) {
  TORCH_CHECK_VALUE(x.is_cuda(), "x is on ", x.device(), ": hipgn runs on GPUs (PyTorch's 'cuda' devices)");
  TORCH_CHECK_VALUE(x.dim() >= 2 && x.dim() - 2 <= HIPGN_MAX_SPATIAL_RANK, "x has shape ", x.sizes(),
                    ": hipgn takes (N, C, *spatial) with at most ", HIPGN_MAX_SPATIAL_RANK, " spatial dimensions");
  const Layout layout = layout_of(x);
  TORCH_CHECK_VALUE(layout != Layout::none, "x (shape ", x.sizes(), ", strides ", x.strides(),
                    ") is neither contiguous nor channels-last: hipgn reads those two layouts (call .contiguous() "
                    "or .contiguous(memory_format=torch.channels_last))");
  const int64_t c = x.size(1);
  TORCH_CHECK_VALUE(groups >= 1 && c % groups == 0, "the ", c, " channels of x are not divisible by num_groups = ",
                    groups);
  for (const auto& [name, t] : {std::pair{"weight", &weight}, std::pair{"bias", &bias}}) {
    if (!given(*t)) continue;
    const Tensor& v = **t;
    TORCH_CHECK_VALUE(v.dim() == 1 && v.size(0) == c, name, " has shape ", v.sizes(), "; x has ", c, " channels");
    TORCH_CHECK_VALUE(v.device() == x.device(), name, " is on ", v.device(), ", x on ", x.device());
    TORCH_CHECK_VALUE(v.scalar_type() == x.scalar_type() || v.scalar_type() == at::kFloat, name, " is ",
                      v.scalar_type(), ": hipgn takes weight and bias of x's dtype (", x.scalar_type(), ") or float32");
  }
  TORCH_CHECK_VALUE(!given(weight) || !given(bias) || weight->scalar_type() == bias->scalar_type(), "weight is ",
                    weight->scalar_type(), " but bias ", bias->scalar_type(), ": hipgn takes one dtype for both");
  return layout;
}

// The backward's dy, mean and rstd as the forward and autograd make them, checked for the same
// reason: the kernels read [N, G] statistics and dy in x's dtype, shape and layout.
void check_backward_inputs(const Tensor& dy, const Tensor& x, Layout layout, const Tensor& mean, const Tensor& rstd,
                           int64_t groups) {
  TORCH_CHECK_VALUE(dy.sizes() == x.sizes() && (dy.strides() == x.strides() || layout_of(dy) == layout), "dy (shape ",
                    dy.sizes(), ", strides ", dy.strides(), ") must have x's shape and layout (", x.sizes(), ", ",
                    layout == Layout::cf ? "cf" : "cl", ")");
  TORCH_CHECK_VALUE(dy.scalar_type() == x.scalar_type() && dy.device() == x.device(), "dy is ", dy.scalar_type(),
                    " on ", dy.device(), ": it must be x's dtype on x's device (", x.scalar_type(), ", ", x.device(),
                    ")");
  for (const auto& [name, t] : {std::pair{"mean", &mean}, std::pair{"rstd", &rstd}}) {
    TORCH_CHECK_VALUE(t->scalar_type() == at::kFloat && t->dim() == 2 && t->size(0) == x.size(0) &&
                          t->size(1) == groups && t->is_contiguous() && t->device() == x.device(),
                      name, " (", t->scalar_type(), ", shape ", t->sizes(), ", on ", t->device(),
                      ") must be the forward's: float32, contiguous, shape [", x.size(0), ", ", groups, "], on ",
                      x.device());
  }
}

const void* ptr(const OptionalTensor& t) { return given(t) ? t->data_ptr() : nullptr; }

OptionalTensor contiguous(const OptionalTensor& t) { return given(t) ? OptionalTensor(t->contiguous()) : OptionalTensor(); }

// Runs launch(handle, workspace, bytes, stream) on x's device and its current stream, with a
// workspace from PyTorch's caching allocator; a failure raises hipgn's message.
template <class Launch>
void launch_on(const Tensor& x, const hipgn_problem_t& p, Launch&& launch) {
  const c10::DeviceIndex device = x.get_device();
  c10::cuda::CUDAGuard on(device);
  const Plan plan = plan_for(device, p);
  const size_t bytes = plan.workspace_bytes;
  Tensor ws;
  if (bytes) ws = at::empty({static_cast<int64_t>(bytes)}, x.options().dtype(at::kByte));
  void* stream = c10::cuda::getCurrentCUDAStream(device).stream();
  const hipgn_status_t status = launch(plan.handle, bytes ? ws.data_ptr() : nullptr, bytes, stream);
  TORCH_CHECK(status == HIPGN_STATUS_SUCCESS, "hipgn: ", hipgn_last_error());
}

// --- the CUDA kernels ------------------------------------------------------------------------

std::tuple<Tensor, Tensor, Tensor> forward_cuda(const Tensor& x, const OptionalTensor& weight,
                                                const OptionalTensor& bias, int64_t num_groups, double eps,
                                                int64_t act, double swish_beta) {
  const Layout layout = checked_inputs(x, weight, bias, num_groups);
  Tensor y = at::empty_like(x);  // x's strides: y comes back in x's layout
  Tensor mean = at::empty({x.size(0), num_groups}, x.options().dtype(at::kFloat));
  Tensor rstd = at::empty({x.size(0), num_groups}, x.options().dtype(at::kFloat));
  if (x.numel() == 0) {  // an empty batch or spatial extent: PyTorch's statistics of nothing
    return {y, mean.fill_(NAN), rstd.fill_(NAN)};
  }
  const hipgn_problem_t p = problem_of(HIPGN_OP_FWD, x, weight, bias, num_groups, eps, act, swish_beta, layout);
  const OptionalTensor w = contiguous(weight), b = contiguous(bias);
  launch_on(x, p, [&](hipgn_handle_t handle, void* ws, size_t bytes, void* stream) {
    return hipgn_groupnorm_fwd_with_workspace(handle, &p, x.data_ptr(), y.data_ptr(), ptr(w),
                                              ptr(b), mean.data_ptr<float>(), rstd.data_ptr<float>(), ws, bytes,
                                              nullptr, stream);
  });
  return {y, mean, rstd};
}

std::tuple<Tensor, Tensor, Tensor> backward_cuda(const Tensor& dy, const Tensor& x, const Tensor& mean,
                                                 const Tensor& rstd, const OptionalTensor& weight,
                                                 const OptionalTensor& bias, int64_t num_groups, double eps,
                                                 int64_t act, double swish_beta, bool need_dx, bool need_dgb) {
  const Layout layout = checked_inputs(x, weight, bias, num_groups);
  check_backward_inputs(dy, x, layout, mean, rstd, num_groups);
  need_dgb = need_dgb && given(weight);
  // Python's backward_outputs: what is not computed is an empty tensor
  Tensor dx = need_dx ? at::empty_like(x) : x.new_empty({0});
  Tensor dgamma = need_dgb ? at::empty_like(*weight, at::MemoryFormat::Contiguous) : x.new_empty({0});
  Tensor dbeta = need_dgb ? at::empty_like(*weight, at::MemoryFormat::Contiguous) : x.new_empty({0});
  if (!need_dx && !need_dgb) return {dx, dgamma, dbeta};
  if (x.numel() == 0) return {dx, dgamma.zero_(), dbeta.zero_()};
  const hipgn_op_t op = need_dx && need_dgb ? HIPGN_OP_BWD : need_dx ? HIPGN_OP_DX : HIPGN_OP_DGB;
  const hipgn_problem_t p = problem_of(op, x, weight, bias, num_groups, eps, act, swish_beta, layout);
  const OptionalTensor w = contiguous(weight), b = contiguous(bias);
  launch_on(x, p, [&](hipgn_handle_t handle, void* ws, size_t bytes, void* stream) {
    return hipgn_groupnorm_bwd_with_workspace(
        handle, &p, dy.data_ptr(), x.data_ptr(), mean.data_ptr<float>(),
        rstd.data_ptr<float>(), ptr(w), ptr(b), need_dx ? dx.data_ptr() : nullptr,
        need_dgb ? dgamma.data_ptr() : nullptr, need_dgb ? dbeta.data_ptr() : nullptr, ws, bytes, nullptr, stream);
  });
  return {dx, dgamma, dbeta};
}

// --- the autograd formula --------------------------------------------------------------------

std::tuple<Tensor, Tensor, Tensor> call_forward(const Tensor& x, const OptionalTensor& weight,
                                                const OptionalTensor& bias, int64_t num_groups, double eps,
                                                int64_t act, double swish_beta) {
  static auto op = c10::Dispatcher::singleton()
                       .findSchemaOrThrow("hipgn::group_norm_fwd", "")
                       .typed<decltype(forward_cuda)>();
  return op.call(x, weight, bias, num_groups, eps, act, swish_beta);
}

std::tuple<Tensor, Tensor, Tensor> call_backward(const Tensor& dy, const Tensor& x, const Tensor& mean,
                                                 const Tensor& rstd, const OptionalTensor& weight,
                                                 const OptionalTensor& bias, int64_t num_groups, double eps,
                                                 int64_t act, double swish_beta, bool need_dx, bool need_dgb) {
  static auto op = c10::Dispatcher::singleton()
                       .findSchemaOrThrow("hipgn::group_norm_bwd", "")
                       .typed<decltype(backward_cuda)>();
  return op.call(dy, x, mean, rstd, weight, bias, num_groups, eps, act, swish_beta, need_dx, need_dgb);
}

// group_norm_fwd's gradient: hipgn's backward from the saved mean and rstd (Python's
// _save_for_formula and _gradients). The backward operator goes through the dispatcher, so
// torch.compile traces it into the backward graph.
struct GroupNormFunction : public torch::autograd::Function<GroupNormFunction> {
  static torch::autograd::variable_list forward(torch::autograd::AutogradContext* ctx, const Tensor& x,
                                                const OptionalTensor& weight, const OptionalTensor& bias,
                                                int64_t num_groups, double eps, int64_t act, double swish_beta) {
    at::AutoDispatchBelowADInplaceOrView below;
    auto [y, mean, rstd] = call_forward(x, weight, bias, num_groups, eps, act, swish_beta);
    ctx->save_for_backward({x, weight.value_or(Tensor()), bias.value_or(Tensor()), mean, rstd});
    ctx->saved_data["num_groups"] = num_groups;
    ctx->saved_data["eps"] = eps;
    ctx->saved_data["act"] = act;
    ctx->saved_data["swish_beta"] = swish_beta;
    ctx->mark_non_differentiable({mean, rstd});
    return {y, mean, rstd};
  }

  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grads) {
    const auto saved = ctx->get_saved_variables();
    const Tensor& x = saved[0];
    const OptionalTensor weight = saved[1].defined() ? OptionalTensor(saved[1]) : OptionalTensor();
    const OptionalTensor bias = saved[2].defined() ? OptionalTensor(saved[2]) : OptionalTensor();
    // needs_input_grad counts the tensors given (its edges), not the arguments: x, then weight
    // and bias where given
    const bool need_dx = ctx->needs_input_grad(0);
    const bool need_dw = weight.has_value() && ctx->needs_input_grad(1);
    const bool need_db = bias.has_value() && ctx->needs_input_grad(weight.has_value() ? 2 : 1);
    torch::autograd::variable_list out(7);  // x, weight, bias, num_groups, eps, act, swish_beta
    Tensor dy = grads[0];
    if (!dy.defined() || !(need_dx || need_dw || need_db)) return out;
    if (dy.strides() != x.strides()) dy = to_layout(dy, layout_of(x) == Layout::cl ? Layout::cl : Layout::cf);
    auto [dx, dw, db] = call_backward(dy, x, saved[3], saved[4], weight, bias, ctx->saved_data["num_groups"].toInt(),
                                      ctx->saved_data["eps"].toDouble(), ctx->saved_data["act"].toInt(),
                                      ctx->saved_data["swish_beta"].toDouble(), need_dx, need_dw || need_db);
    if (need_dx) out[0] = dx;
    if (need_dw) out[1] = dw;
    if (need_db) out[2] = db;
    return out;
  }
};

std::tuple<Tensor, Tensor, Tensor> forward_autograd(const Tensor& x, const OptionalTensor& weight,
                                                    const OptionalTensor& bias, int64_t num_groups, double eps,
                                                    int64_t act, double swish_beta) {
  const auto needs = [](const OptionalTensor& t) { return given(t) && t->requires_grad(); };
  if (!torch::autograd::GradMode::is_enabled() || !(x.requires_grad() || needs(weight) || needs(bias))) {
    // nothing to record: the CUDA kernel directly, without the Function's node and saved state
    at::AutoDispatchBelowADInplaceOrView below;
    return call_forward(x, weight, bias, num_groups, eps, act, swish_beta);
  }
  auto out = GroupNormFunction::apply(x, weight, bias, num_groups, eps, act, swish_beta);
  return {out[0], out[1], out[2]};
}

}  // namespace

TORCH_LIBRARY(hipgn, m) {
  m.def("group_norm_fwd(Tensor x, Tensor? weight, Tensor? bias, int num_groups, float eps, int act, "
        "float swish_beta) -> (Tensor, Tensor, Tensor)");
  m.def("group_norm_bwd(Tensor dy, Tensor x, Tensor mean, Tensor rstd, Tensor? weight, Tensor? bias, "
        "int num_groups, float eps, int act, float swish_beta, bool need_dx, bool need_dgb) "
        "-> (Tensor, Tensor, Tensor)");
}

TORCH_LIBRARY_IMPL(hipgn, CUDA, m) {
  m.impl("group_norm_fwd", &forward_cuda);
  m.impl("group_norm_bwd", &backward_cuda);
}

TORCH_LIBRARY_IMPL(hipgn, Autograd, m) {
  m.impl("group_norm_fwd", &forward_autograd);
  // differentiating the backward raises (the formula has no derivative of its own)
  m.impl("group_norm_bwd", torch::autograd::autogradNotImplementedFallback());
}

// --- for hipgn.torch (ctypes) ----------------------------------------------------------------

extern "C" {

// The PyTorch version this library was compiled against: hipgn.torch refuses another.
__attribute__((visibility("default"))) const char* hipgn_torch_built_with(void) { return TORCH_VERSION; }

// The device's handle the operators use (made on first use): hipgn.torch tunes through it.
// NULL on failure (hipgn_last_error() says why).
__attribute__((visibility("default"))) void* hipgn_torch_handle(int device) {
  try {
    Handles& h = handles();
    std::lock_guard<std::mutex> guard(h.lock);
    return handle_locked(h, static_cast<c10::DeviceIndex>(device));
  } catch (const std::exception&) {
    return nullptr;
  }
}

// Adds a tuning database file to every handle, present and future; a status as hipgn's calls.
__attribute__((visibility("default"))) int hipgn_torch_add_tuning_db(const char* path) {
  Handles& h = handles();
  std::lock_guard<std::mutex> guard(h.lock);
  for (auto& [device, handle] : h.by_device) {
    const hipgn_status_t status = hipgn_tuning_db_load(handle, path);
    if (status != HIPGN_STATUS_SUCCESS) return status;
  }
  h.databases.emplace_back(path);
  return HIPGN_STATUS_SUCCESS;
}

}  // extern "C"
