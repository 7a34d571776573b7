/* hipgn's C API, for FFI from Python and other languages. Every call returns a status; the
 * message of the calling thread's last failure is hipgn_last_error(). Streams are passed as
 * void* (a hipStream_t / cudaStream_t, or NULL for the default stream). */
#ifndef HIPGN_H
#define HIPGN_H

#include <stddef.h>
#include <stdint.h>

#include "hipgn/types.h" /* hipgn_op_t, hipgn_dtype_t, hipgn_layout_t, hipgn_activation_t */

#ifdef __cplusplus
extern "C" {
#endif

/* The version of this C API: hipgn_api_version() of the library loaded at run time must equal
 * the HIPGN_API_VERSION a caller was written against (FFI bindings check it). 2: caller
 * workspaces, the workspace query, tuning and the tuning database. 3: the device's target
 * (hipgn_device_arch, hipgn_device_compute_units), which tuning database entries are keyed by.
 * 4: hipgn_problem_t.uneven_groups. */
#define HIPGN_API_VERSION 4

typedef enum {
  HIPGN_STATUS_SUCCESS = 0,
  HIPGN_STATUS_INVALID_ARGUMENT = 1,
  HIPGN_STATUS_NOT_BUILT = 2,
  HIPGN_STATUS_NOT_SUPPORTED = 3, /* the named instance, or every built one, cannot run it */
  HIPGN_STATUS_UNKNOWN_INSTANCE = 4,
  HIPGN_STATUS_RUNTIME_ERROR = 5,
  HIPGN_STATUS_NO_DEVICE = 6
} hipgn_status_t;


#define HIPGN_MAX_SPATIAL_RANK 8

typedef struct {
  hipgn_op_t op; /* what hipgn_groupnorm_bwd computes; hipgn_groupnorm_fwd needs HIPGN_OP_FWD */
  int64_t n, c, groups;
  int32_t spatial_rank; /* 0..HIPGN_MAX_SPATIAL_RANK */
  int64_t spatial[HIPGN_MAX_SPATIAL_RANK];
  hipgn_dtype_t x_dtype, gamma_dtype;
  hipgn_layout_t layout;
  hipgn_activation_t act;
  float eps, swish_beta;
  /* nonzero: C need not divide by groups (Caffe2's uneven groups): groups 0..G-2 take C/G
   * channels (floored) and the last one the rest, so groups <= c; mean and rstd stay [N, G].
   * Only the generic instances run such problems. 0: C % groups != 0 is an error. */
  int32_t uneven_groups;
} hipgn_problem_t;

typedef struct hipgn_handle_s* hipgn_handle_t;

/* A handle on the current GPU; without one, *handle is still set (listing and heuristics
 * work) and the status is HIPGN_STATUS_NO_DEVICE. */
hipgn_status_t hipgn_create(hipgn_handle_t* handle);
void hipgn_destroy(hipgn_handle_t handle);
const char* hipgn_last_error(void);

/* instance: NULL or "" for the automatic choice, else an instance name. */
hipgn_status_t hipgn_groupnorm_fwd(hipgn_handle_t handle, const hipgn_problem_t* problem,
                                   const void* x, void* y, const void* gamma, const void* beta,
                                   float* mean, float* rstd, const char* instance, void* stream);

/* Backward, op HIPGN_OP_DX (dx), HIPGN_OP_DGB (dgamma, dbeta) or HIPGN_OP_BWD (all three).
 * mean and rstd are the forward's saved statistics; gamma and beta the forward's (NULL where it
 * had none; Swish needs gamma). Pointers an op does not write may be NULL. */
hipgn_status_t hipgn_groupnorm_bwd(hipgn_handle_t handle, const hipgn_problem_t* problem, const void* dy,
                                   const void* x, const float* mean, const float* rstd, const void* gamma,
                                   const void* beta, void* dx, void* dgamma, void* dbeta, const char* instance,
                                   void* stream);

/* The instance the automatic choice would use (a name valid for the process's life). */
hipgn_status_t hipgn_choose_instance(hipgn_handle_t handle, const hipgn_problem_t* problem,
                                     const char** name);

/* --- caller-supplied workspace (capturable in a graph) ------------------------------------ */

/* Workspace bytes for the problem. instance NULL or "": enough for any instance the automatic
 * choice can pick for it (tuned or heuristic, whatever the pointers' alignment); else that
 * instance's need. */
hipgn_status_t hipgn_workspace_size(hipgn_handle_t handle, const hipgn_problem_t* problem, const char* instance,
                                    size_t* bytes);

/* hipgn_groupnorm_fwd / _bwd with the caller's workspace: workspace_bytes bytes at workspace
 * (16-byte aligned; NULL with 0 where hipgn_workspace_size says 0). Its content need not be
 * initialized. The arrival counters of instances that count are the handle's, zero and left
 * zero (no memset before the launch): a stream's own, or while the stream captures a graph the
 * capture's own (made, and zeroed on a stream of the handle's, at the capture's first launch that
 * needs them, outside the graph), so graphs replayed side by side never share them. Nothing of
 * this enters the graph. */
hipgn_status_t hipgn_groupnorm_fwd_with_workspace(hipgn_handle_t handle, const hipgn_problem_t* problem,
                                                  const void* x, void* y, const void* gamma, const void* beta,
                                                  float* mean, float* rstd, void* workspace, size_t workspace_bytes,
                                                  const char* instance, void* stream);
hipgn_status_t hipgn_groupnorm_bwd_with_workspace(hipgn_handle_t handle, const hipgn_problem_t* problem,
                                                  const void* dy, const void* x, const float* mean,
                                                  const float* rstd, const void* gamma, const void* beta, void* dx,
                                                  void* dgamma, void* dbeta, void* workspace, size_t workspace_bytes,
                                                  const char* instance, void* stream);

/* --- tuning ------------------------------------------------------------------------------- */

/* Times every instance supporting the problem on the handle's GPU (on stream, with buffers of
 * its own: not capturable) and records the fastest as the problem's choice. *winner (a name
 * valid for the process's life) and *us (its median time in microseconds) may be NULL. */
hipgn_status_t hipgn_tune(hipgn_handle_t handle, const hipgn_problem_t* problem, void* stream, const char** winner,
                          double* us);
/* Records an instance as the problem's choice, as tuning would. */
hipgn_status_t hipgn_set_tuned(hipgn_handle_t handle, const hipgn_problem_t* problem, const char* instance);
/* Adds a tuning database file's entries (hipgn_create already read HIPGN_TUNING_DB's). Entries
 * this build cannot honour are ignored with a warning on stderr; a malformed file is reported
 * and skipped (an error status, dispatch unchanged). */
hipgn_status_t hipgn_tuning_db_load(hipgn_handle_t handle, const char* path);
/* Adds the winners recorded through this handle to the file (created if missing), keeping its
 * other entries. path NULL or "": HIPGN_TUNING_DB's. */
hipgn_status_t hipgn_tuning_db_save(hipgn_handle_t handle, const char* path);
/* The device's display name ("none" without a GPU): tuning database entries carry it for
 * readers, but are not keyed by it. */
const char* hipgn_device_name(hipgn_handle_t handle);
/* The device's target, which tuning database entries are keyed by: its architecture as the
 * runtime reports it ("sm_90", "gfx90a"; "none" without a GPU) and its compute units (0
 * without a GPU). */
const char* hipgn_device_arch(hipgn_handle_t handle);
int32_t hipgn_device_compute_units(hipgn_handle_t handle);

int32_t hipgn_api_version(void);

int64_t hipgn_instance_count(void);
const char* hipgn_instance_name(int64_t index); /* NULL when out of range */

#ifdef __cplusplus
}
#endif

#endif /* HIPGN_H */
