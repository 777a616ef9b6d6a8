/* flex_vsigmoid_run (flex_testing.h): one sigmoid / swish variant over an array. */
#include "kernels/vsigmoid/vsigmoid.h"
#include "testing/flex_testing.h"
#include "testing/tester.h"

typedef struct {
  const fx_vsigmoid_config *c;
  const float *x;
  float *y;
  size_t n;
  int swish;
} vsigmoid_case;

static void run_vsigmoid(void *arg) {
  const vsigmoid_case *v = arg;
  v->c->fn(v->x, v->y, v->n, v->swish);
}

int flex_vsigmoid_run(int variant, const float *x, float *y, size_t n, int swish, int iters, double *seconds) {
  const fx_vsigmoid_config *c = fx_vsigmoid_config_at(variant);
  if (!c || (n && (!x || !y))) return -1;
  vsigmoid_case v = {c, x, y, n, swish};
  fx_tester_time(iters, seconds, run_vsigmoid, &v);
  return 0;
}
