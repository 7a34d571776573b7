/* The C API, as an FFI binding sees it: describe a problem, ask which instance runs it. */
#include <stdio.h>

#include "hipgn/hipgn.h"

int main(void) {
  hipgn_handle_t handle;
  hipgn_status_t s = hipgn_create(&handle);
  if (s != HIPGN_STATUS_SUCCESS) printf("%s (listing still works)\n", hipgn_last_error());
  hipgn_problem_t p = {0};
  p.n = 1;
  p.c = 512;
  p.groups = 32;
  p.spatial_rank = 2;
  p.spatial[0] = p.spatial[1] = 128;
  p.x_dtype = p.gamma_dtype = HIPGN_BF16;
  p.layout = HIPGN_CHANNELS_FIRST;
  p.act = HIPGN_ACT_SWISH;
  p.eps = 1e-6f;
  p.swish_beta = 1.0f;
  const char* name = NULL;
  if (hipgn_choose_instance(handle, &p, &name) == HIPGN_STATUS_SUCCESS)
    printf("VAE 128x128x512 bf16 -> %s (%lld instances built)\n", name, (long long)hipgn_instance_count());
  else
    printf("error: %s\n", hipgn_last_error());
  hipgn_destroy(handle);
  return 0;
}
