/* Test / benchmark entry point: one CONV_2D through conv.c with a chosen GEMM kernel, as im2col
 * GEMM or as direct conv over the same packed weights (declared in include/flex_api.h). */
#include <stdlib.h>
#include "runtime/clock.h"
#include "conv/conv.h"
#include "flex_api.h"
#include "kernels/gemm/gemm.h"
#include "kernels/igemm/igemm.h"
#include "runtime/pool.h"
#include "store/store.h"

const char *flex_igemm_kernel_at(int i) {
  const fx_gemm_config *g = fx_gemm_config_at(i);
  const fx_igemm_config *k = g ? fx_igemm_config_for(g) : NULL;
  return k ? k->name : NULL;
}

/* Runs the conv `iters` times, each run's seconds into secs (if not NULL). */
static void run_timed(fx_pool *pool, const fx_conv_pack *p, const fx_conv_geom *g, int algo, const float *x,
                      float *y, float *scratch, int act, int iters, double *secs) {
  const float *w = fx_conv_weights(p)->data;
  for (int it = 0; it < iters; it++) {
    const uint64_t t0 = fx_now_ns();
    if (algo) fx_conv_run_direct_part(pool, p, g, x, y, act, w, 0, fx_conv_panels(p), 0, g->m);
    else fx_conv_run_part(pool, p, g, x, y, scratch, act, w, 0, fx_conv_panels(p), 0, g->m, 0);
    if (secs) secs[it] = (double)(fx_now_ns() - t0) * 1e-9;
  }
}

int flex_conv2d_run(int variant, int algo, int threads, int n, int h, int w, int cin, int cout, int kh, int kw,
                    int stride_h, int stride_w, int dil_h, int dil_w, int pad_top, int pad_left, int oh, int ow,
                    const float *x, const float *filter, const float *bias, int act, float *y, int iters,
                    double *seconds) {
  const fx_gemm_config *uk = fx_gemm_config_at(variant);
  if (!uk || (algo != 0 && algo != 1) || threads < 1 || n < 0 || h < 1 || w < 1 || cin < 1 || cout < 1 ||
      kh < 1 || kw < 1 || stride_h < 1 || stride_w < 1 || dil_h < 1 || dil_w < 1 || pad_top < 0 || pad_left < 0 ||
      oh < 0 || ow < 0 || !x || !filter || !y || act < FX_ACT_NONE || act > FX_ACT_SWISH)
    return -1;
  fx_conv_geom g = {(size_t)n * (size_t)oh * (size_t)ow, 0, h, w, cin, oh, ow, kh, kw, stride_h, stride_w,
                    dil_h, dil_w, pad_top, pad_left};
  g.direct = kh == 1 && kw == 1 && stride_h == 1 && stride_w == 1 && pad_top == 0 && pad_left == 0 &&
             oh == h && ow == w; /* as the delegate lowers it: the input is the A matrix */
  fx_store *store = fx_store_new();
  fx_conv_pack *p = store ? fx_conv_pack_new_with(store, uk, cout, kh * kw * cin, filter, bias) : NULL;
  if (p) fx_store_commit(store, 0); /* memory only: packs now */
  fx_pool *pool = fx_pool_new(threads);
  int rc = -1;
  if (p && pool && fx_conv_weights(p)->data && (!algo || fx_conv_direct_supported(p, &g))) {
    float *scratch = algo ? NULL : malloc(fx_conv_scratch_bytes(p, &g, threads) + 1);
    if (algo || scratch) {
      run_timed(pool, p, &g, algo, x, y, scratch, act, iters < 1 ? 1 : iters, seconds);
      rc = 0;
    }
    free(scratch);
  }
  fx_pool_free(pool);
  fx_conv_pack_free(p);
  if (store) fx_store_free(store);
  return rc;
}
