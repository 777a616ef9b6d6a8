/* flex_dwconv_run (flex_testing.h): one depthwise-convolution variant, one thread. */
#include "kernels/dwconv/dwconv.h"
#include "testing/flex_testing.h"
#include "testing/tester.h"

typedef struct {
  const fx_dwconv_config *c;
  const float *x, *filter, *bias;
  float *y;
  fx_shape xs, ys;
  fx_window win;
  int mult, act;
} dwconv_case;

static void run_dwconv(void *arg) {
  const dwconv_case *d = arg;
  d->c->fn(NULL, d->x, &d->xs, d->filter, d->bias, d->mult, &d->win, d->y, &d->ys, d->act);
}

int flex_dwconv_run(int variant, int n, int h, int w, int cin, int mult, int kh, int kw,
                    int stride_h, int stride_w, int dil_h, int dil_w, int same, const float *x,
                    const float *filter, const float *bias, int act, float *y, int oh, int ow,
                    int iters, double *seconds) {
  const fx_dwconv_config *c = fx_dwconv_config_at(variant);
  if (!c || n < 0 || h < 1 || w < 1 || cin < 1 || mult < 1 || kh < 1 || kw < 1 || stride_h < 1 ||
      stride_w < 1 || dil_h < 1 || dil_w < 1 || !x || !filter || !y || act < 0 || act > FLEX_ACT_SWISH)
    return -1;
  dwconv_case d = {c, x, filter, bias, y, {4, {n, h, w, cin}}, {4, {n, oh, ow, cin * mult}},
                   {stride_h, stride_w, dil_h, dil_w, kh, kw, 0, 0}, mult, act};
  int eh, ew;
  fx_same_valid(same, h, kh, stride_h, dil_h, &eh, &d.win.pad_top);
  fx_same_valid(same, w, kw, stride_w, dil_w, &ew, &d.win.pad_left);
  if (eh != oh || ew != ow) return -1;
  fx_tester_time(iters, seconds, run_dwconv, &d);
  return 0;
}
