/* flex_conv2d_run (flex_testing.h): one CONV_2D through conv/ with a chosen GEMM kernel, as
 * im2col GEMM, direct conv or stem conv over the same packed weights. */
#include <stdlib.h>
#include "conv/conv.h"
#include "kernels/gemm/gemm.h"
#include "runtime/pool.h"
#include "store/store.h"
#include "testing/flex_testing.h"
#include "testing/tester.h"

typedef struct {
  fx_pool *pool;
  const fx_conv_pack *p;
  const fx_conv_geom *g;
  int form, act;
  const float *x;
  float *y, *scratch;
} conv_case;

static void run_conv(void *arg) {
  const conv_case *c = arg;
  const float *w = fx_conv_weights(c->p)->data;
  if (c->form != FLEX_CONV_IM2COL) /* the direct and stem forms share the direct driver */
    fx_conv_run_direct_part(c->pool, c->p, c->g, c->x, c->y, c->act, w, 0, fx_conv_panels(c->p), 0, c->g->m);
  else
    fx_conv_run_part(c->pool, c->p, c->g, c->x, c->y, c->scratch, c->act, w, 0, fx_conv_panels(c->p), 0, c->g->m, 0);
}

int flex_conv2d_run(int variant, int form, int threads, int n, int h, int w, int cin, int cout, int kh,
                    int kw, int stride_h, int stride_w, int dil_h, int dil_w, int pad_top, int pad_left,
                    int oh, int ow, const float *x, const float *filter, const float *bias, int act,
                    float *y, int iters, double *seconds) {
  const fx_gemm_config *uk = fx_gemm_config_at(variant);
  if (!uk || form < FLEX_CONV_IM2COL || form > FLEX_CONV_STEM || threads < 1 || n < 0 || h < 1 || w < 1 || cin < 1 || cout < 1 ||
      kh < 1 || kw < 1 || stride_h < 1 || stride_w < 1 || dil_h < 1 || dil_w < 1 || pad_top < 0 || pad_left < 0 ||
      oh < 0 || ow < 0 || !x || !filter || !y || act < FLEX_ACT_NONE || act > FLEX_ACT_SWISH)
    return -1;
  fx_conv_geom g = {(size_t)n * (size_t)oh * (size_t)ow, 0, h, w, cin, oh, ow, kh, kw, stride_h, stride_w,
                    dil_h, dil_w, pad_top, pad_left};
  g.direct = kh == 1 && kw == 1 && stride_h == 1 && stride_w == 1 && pad_top == 0 && pad_left == 0 &&
             oh == h && ow == w; /* as the delegate lowers it: the input is the A matrix */
  fx_store *store = fx_store_new();
  fx_conv_pack *p = store ? fx_conv_pack_new_with(store, uk, cout, kh * kw * cin, filter, bias) : NULL;
  if (p) fx_store_commit(store, 1); /* no path: packs into memory now */
  fx_pool *pool = fx_pool_new(threads);
  int rc = -1;
  if (p && form == FLEX_CONV_STEM) fx_conv_set_stem(p, fx_conv_stem_supported(p, &g));
  if (p && pool && fx_conv_weights(p)->data &&
      (form == FLEX_CONV_IM2COL ||
       (form == FLEX_CONV_DIRECT ? fx_conv_direct_supported(p, &g) : fx_conv_pack_stem(p)))) {
    const int im2col = form == FLEX_CONV_IM2COL;
    float *scratch = im2col ? malloc(fx_conv_scratch_bytes(p, &g, threads) + 1) : NULL;
    if (!im2col || scratch) {
      conv_case c = {pool, p, &g, form, act, x, y, scratch};
      fx_tester_time(iters, seconds, run_conv, &c);
      rc = 0;
    }
    free(scratch);
  }
  fx_pool_free(pool);
  fx_conv_pack_free(p);
  if (store) fx_store_free(store);
  return rc;
}
