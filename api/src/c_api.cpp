// The C API: a thin shell over the C++ API; the last failure's message is kept per thread.
#include "hipgn/hipgn.h"

#include <string>

#include "hipgn/dispatcher.hpp"
#include "hipgn/op.hpp"

static_assert(sizeof(hipgn_problem_t) == 136, "hipgn_problem_t's layout is part of the ABI (FFI bindings mirror it)");

struct hipgn_handle_s {
  std::unique_ptr<hipgn::Handle> handle;
};

namespace {
thread_local std::string g_last_error;

hipgn_status_t report(const hipgn::Status& s) {
  if (!s.ok()) g_last_error = std::string(hipgn::to_string(s.code)) + ": " + s.message;
  return static_cast<hipgn_status_t>(s.code);
}

// Whether a C enum's value names a term of E (types.h and types.hpp come from one declaration,
// codegen/vocabulary.py, so the values agree).
template <typename E>
bool in_range(int value) {
  return value >= 0 && value < int(std::size(hipgn::Names<E>::all));
}

bool to_problem(const hipgn_problem_t* in, hipgn::Problem* out) {
  if (!in || in->spatial_rank < 0 || in->spatial_rank > HIPGN_MAX_SPATIAL_RANK) return false;
  if (!in_range<hipgn::Op>(in->op) || !in_range<hipgn::DataType>(in->x_dtype) ||
      !in_range<hipgn::DataType>(in->gamma_dtype) || !in_range<hipgn::Layout>(in->layout) ||
      !in_range<hipgn::Activation>(in->act))
    return false;
  out->op = static_cast<hipgn::Op>(in->op);
  out->n = in->n;
  out->c = in->c;
  out->groups = in->groups;
  out->spatial.assign(in->spatial, in->spatial + in->spatial_rank);
  out->x_dtype = static_cast<hipgn::DataType>(in->x_dtype);
  out->gamma_dtype = static_cast<hipgn::DataType>(in->gamma_dtype);
  out->layout = static_cast<hipgn::Layout>(in->layout);
  out->act = static_cast<hipgn::Activation>(in->act);
  out->eps = in->eps;
  out->swish_beta = in->swish_beta;
  out->uneven_groups = in->uneven_groups != 0;
  return true;
}

const hipgn::Status kBadDescriptor = hipgn::Status::error(
    hipgn::StatusCode::invalid_argument, "the problem descriptor is null or has an out-of-range enum or spatial rank");
const hipgn::Status kNotForward = hipgn::Status::error(hipgn::StatusCode::invalid_argument,
                                                       "hipgn_groupnorm_fwd needs op HIPGN_OP_FWD");
const hipgn::Status kNotBackward = hipgn::Status::error(
    hipgn::StatusCode::invalid_argument, "hipgn_groupnorm_bwd needs op HIPGN_OP_DX, HIPGN_OP_DGB or HIPGN_OP_BWD");
const hipgn::Status kNoHandle = hipgn::Status::error(hipgn::StatusCode::invalid_argument, "the handle is null");
const hipgn::Status kNullOutput =
    hipgn::Status::error(hipgn::StatusCode::invalid_argument, "a required pointer argument (output or path) is null");
}  // namespace

namespace {
// Both entry points: the descriptor, the op's kind (the op table's), then the run.
hipgn_status_t call(hipgn_handle_t handle, const hipgn_problem_t* problem, bool backward, const hipgn::Tensors& t,
                    bool own_workspace, void* workspace, std::size_t workspace_bytes, const char* instance,
                    void* stream) {
  if (!handle) return report(kNoHandle);
  hipgn::Problem p;
  if (!to_problem(problem, &p)) return report(kBadDescriptor);
  if (hipgn::describe(p.op).backward != backward) return report(backward ? kNotBackward : kNotForward);
  const std::string name = instance ? instance : "";
  return report(own_workspace ? handle->handle->run(p, t, stream, name)
                              : handle->handle->run_with_workspace(p, t, workspace, workspace_bytes, stream, name));
}

hipgn_status_t fwd(hipgn_handle_t handle, const hipgn_problem_t* problem, const void* x, void* y, const void* gamma,
                   const void* beta, float* mean, float* rstd, bool own_workspace, void* workspace,
                   std::size_t workspace_bytes, const char* instance, void* stream) {
  hipgn::Tensors t;
  t.x = x;
  t.y = y;
  t.gamma = gamma;
  t.beta = beta;
  t.mean = mean;
  t.rstd = rstd;
  return call(handle, problem, false, t, own_workspace, workspace, workspace_bytes, instance, stream);
}

hipgn_status_t bwd(hipgn_handle_t handle, const hipgn_problem_t* problem, const void* dy, const void* x,
                   const float* mean, const float* rstd, const void* gamma, const void* beta, void* dx, void* dgamma,
                   void* dbeta, bool own_workspace, void* workspace, std::size_t workspace_bytes,
                   const char* instance, void* stream) {
  hipgn::Tensors t;
  t.dy = dy;
  t.x = x;
  t.mean = const_cast<float*>(mean);  // read only: the backward never writes them
  t.rstd = const_cast<float*>(rstd);
  t.gamma = gamma;
  t.beta = beta;
  t.dx = dx;
  t.dgamma = dgamma;
  t.dbeta = dbeta;
  return call(handle, problem, true, t, own_workspace, workspace, workspace_bytes, instance, stream);
}

// The problem of a call that takes a handle and a descriptor; null (reported) when either is bad.
bool problem_of(hipgn_handle_t handle, const hipgn_problem_t* problem, hipgn::Problem* p) {
  if (!handle) {
    report(kNoHandle);
    return false;
  }
  if (!to_problem(problem, p)) {
    report(kBadDescriptor);
    return false;
  }
  return true;
}
}  // namespace

extern "C" {

hipgn_status_t hipgn_create(hipgn_handle_t* handle) {
  if (!handle) return report(kNoHandle);
  *handle = new hipgn_handle_s;
  return report(hipgn::Handle::create(&(*handle)->handle));
}

void hipgn_destroy(hipgn_handle_t handle) { delete handle; }

const char* hipgn_last_error(void) { return g_last_error.c_str(); }


hipgn_status_t hipgn_groupnorm_fwd(hipgn_handle_t handle, const hipgn_problem_t* problem, const void* x, void* y,
                                   const void* gamma, const void* beta, float* mean, float* rstd, const char* instance,
                                   void* stream) {
  return fwd(handle, problem, x, y, gamma, beta, mean, rstd, true, nullptr, 0, instance, stream);
}

hipgn_status_t hipgn_groupnorm_bwd(hipgn_handle_t handle, const hipgn_problem_t* problem, const void* dy,
                                   const void* x, const float* mean, const float* rstd, const void* gamma,
                                   const void* beta, void* dx, void* dgamma, void* dbeta, const char* instance,
                                   void* stream) {
  return bwd(handle, problem, dy, x, mean, rstd, gamma, beta, dx, dgamma, dbeta, true, nullptr, 0, instance, stream);
}

hipgn_status_t hipgn_groupnorm_fwd_with_workspace(hipgn_handle_t handle, const hipgn_problem_t* problem,
                                                  const void* x, void* y, const void* gamma, const void* beta,
                                                  float* mean, float* rstd, void* workspace, size_t workspace_bytes,
                                                  const char* instance, void* stream) {
  return fwd(handle, problem, x, y, gamma, beta, mean, rstd, false, workspace, workspace_bytes, instance, stream);
}

hipgn_status_t hipgn_groupnorm_bwd_with_workspace(hipgn_handle_t handle, const hipgn_problem_t* problem,
                                                  const void* dy, const void* x, const float* mean,
                                                  const float* rstd, const void* gamma, const void* beta, void* dx,
                                                  void* dgamma, void* dbeta, void* workspace, size_t workspace_bytes,
                                                  const char* instance, void* stream) {
  return bwd(handle, problem, dy, x, mean, rstd, gamma, beta, dx, dgamma, dbeta, false, workspace, workspace_bytes,
             instance, stream);
}

hipgn_status_t hipgn_workspace_size(hipgn_handle_t handle, const hipgn_problem_t* problem, const char* instance,
                                    size_t* bytes) {
  hipgn::Problem p;
  if (!problem_of(handle, problem, &p)) return static_cast<hipgn_status_t>(hipgn::StatusCode::invalid_argument);
  if (!bytes) return report(kNullOutput);
  std::size_t n = 0;
  const hipgn::Status s = handle->handle->workspace_size(p, instance ? instance : "", &n);
  *bytes = n;
  return report(s);
}

hipgn_status_t hipgn_tune(hipgn_handle_t handle, const hipgn_problem_t* problem, void* stream, const char** winner,
                          double* us) {
  hipgn::Problem p;
  if (!problem_of(handle, problem, &p)) return static_cast<hipgn_status_t>(hipgn::StatusCode::invalid_argument);
  hipgn::TuneResult result;
  const hipgn::Status s = handle->handle->tune(p, stream, &result);
  if (!s.ok()) return report(s);
  // a name that lives as long as the process: the registry's copy
  if (winner) *winner = handle->handle->dispatcher().registry().find(result.instance)->name().c_str();
  if (us) *us = result.us;
  return HIPGN_STATUS_SUCCESS;
}

hipgn_status_t hipgn_set_tuned(hipgn_handle_t handle, const hipgn_problem_t* problem, const char* instance) {
  hipgn::Problem p;
  if (!problem_of(handle, problem, &p)) return static_cast<hipgn_status_t>(hipgn::StatusCode::invalid_argument);
  return report(handle->handle->set_tuned(p, instance ? instance : ""));
}

hipgn_status_t hipgn_tuning_db_load(hipgn_handle_t handle, const char* path) {
  if (!handle) return report(kNoHandle);
  if (!path || !*path) return report(kNullOutput);
  return report(handle->handle->load_tuning_db(path));
}

hipgn_status_t hipgn_tuning_db_save(hipgn_handle_t handle, const char* path) {
  if (!handle) return report(kNoHandle);
  return report(handle->handle->save_tuning_db(path ? path : ""));
}

const char* hipgn_device_name(hipgn_handle_t handle) {
  return handle ? handle->handle->device_name().c_str() : "";
}

const char* hipgn_device_arch(hipgn_handle_t handle) { return handle ? handle->handle->device_arch().c_str() : ""; }

int32_t hipgn_device_compute_units(hipgn_handle_t handle) {
  return handle ? handle->handle->device_compute_units() : 0;
}

int32_t hipgn_api_version(void) { return HIPGN_API_VERSION; }

hipgn_status_t hipgn_choose_instance(hipgn_handle_t handle, const hipgn_problem_t* problem, const char** name) {
  if (!handle || !name) return report(kNoHandle);
  hipgn::Problem p;
  if (!to_problem(problem, &p)) return report(kBadDescriptor);
  hipgn::Status s = hipgn::validate(p);
  if (!s.ok()) return report(s);
  const hipgn::Instance* inst = handle->handle->dispatcher().choose(p, nullptr, &s);
  if (!inst) return report(s);
  *name = inst->name().c_str();
  return HIPGN_STATUS_SUCCESS;
}

int64_t hipgn_instance_count(void) { return static_cast<int64_t>(hipgn::Registry::global().all().size()); }

const char* hipgn_instance_name(int64_t index) {
  const auto& all = hipgn::Registry::global().all();
  return index >= 0 && index < static_cast<int64_t>(all.size()) ? all[std::size_t(index)].name().c_str() : nullptr;
}

}  // extern "C"
