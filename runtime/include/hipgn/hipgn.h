/* hipgn's C API, for FFI from Python and other languages. Every call returns a status; the
 * message of the calling thread's last failure is hipgn_last_error(). Streams are passed as
 * void* (a hipStream_t / cudaStream_t, or NULL for the default stream). */
#ifndef HIPGN_H
#define HIPGN_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum {
  HIPGN_STATUS_SUCCESS = 0,
  HIPGN_STATUS_INVALID_ARGUMENT = 1,
  HIPGN_STATUS_NOT_BUILT = 2,
  HIPGN_STATUS_NOT_SUPPORTED = 3, /* the named instance, or every built one, cannot run it */
  HIPGN_STATUS_UNKNOWN_INSTANCE = 4,
  HIPGN_STATUS_RUNTIME_ERROR = 5,
  HIPGN_STATUS_NO_DEVICE = 6
} hipgn_status_t;

typedef enum { HIPGN_OP_FWD = 0, HIPGN_OP_DX = 1, HIPGN_OP_DGB = 2, HIPGN_OP_BWD = 3 } hipgn_op_t;
typedef enum { HIPGN_F32 = 0, HIPGN_F16 = 1, HIPGN_BF16 = 2 } hipgn_dtype_t;
typedef enum { HIPGN_CHANNELS_FIRST = 0, HIPGN_CHANNELS_LAST = 1 } hipgn_layout_t;
typedef enum { HIPGN_ACT_NONE = 0, HIPGN_ACT_SWISH = 1 } hipgn_activation_t;

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

int64_t hipgn_instance_count(void);
const char* hipgn_instance_name(int64_t index); /* NULL when out of range */

#ifdef __cplusplus
}
#endif

#endif /* HIPGN_H */
