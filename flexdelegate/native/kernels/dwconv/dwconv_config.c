/* Picks the depthwise-convolution variant for this CPU, once (same rules as gemm_config.c:
 * the best the CPU supports, FLEXDELEGATE_ISA=scalar|avx2|avx512 narrows the choice), and
 * the test entry that runs any one variant (flex_dwconv_run, declared in flex_api.h). */
#define _POSIX_C_SOURCE 200809L
#include <stdlib.h>
#include <time.h>
#include "runtime/cpu.h"
#include "dwconv.h"

static const fx_dwconv_config k_scalar = {"f32-dwconv-scalar", fx_depthwise_f32_ref};
#if defined(__x86_64__)
static const fx_dwconv_config k_avx2 = {"f32-dwconv-avx2", fx_depthwise_f32_avx2};
static const fx_dwconv_config k_avx512 = {"f32-dwconv-avx512f", fx_depthwise_f32_avx512f};
#endif
#if defined(__aarch64__)
static const fx_dwconv_config k_neon = {"f32-dwconv-neon", fx_depthwise_f32_neon};
#endif

static fx_isa_menu g_menu = {.by_isa = {[FX_ISA_SCALAR] = &k_scalar,
#if defined(__x86_64__)
                                       [FX_ISA_AVX2] = &k_avx2, [FX_ISA_AVX512F] = &k_avx512,
#endif
#if defined(__aarch64__)
                                       [FX_ISA_NEON] = &k_neon,
#endif
}};

const fx_dwconv_config *fx_dwconv_config_get(void) { return fx_isa_chosen(&g_menu); }
const fx_dwconv_config *fx_dwconv_config_at(int i) { return fx_isa_at(&g_menu, i); }

/* ---- test / benchmark entry points (declared in include/flex_api.h) ---- */

const char *flex_dwconv_variant_at(int i) {
  const fx_dwconv_config *c = fx_dwconv_config_at(i);
  return c ? c->name : NULL;
}

int flex_dwconv_run(int variant, int n, int h, int w, int cin, int mult, int kh, int kw,
                    int stride_h, int stride_w, int dil_h, int dil_w, int same, const float *x,
                    const float *filter, const float *bias, int act, float *y, int oh, int ow,
                    int iters, double *seconds);

int flex_dwconv_run(int variant, int n, int h, int w, int cin, int mult, int kh, int kw,
                    int stride_h, int stride_w, int dil_h, int dil_w, int same, const float *x,
                    const float *filter, const float *bias, int act, float *y, int oh, int ow,
                    int iters, double *seconds) {
  const fx_dwconv_config *c = fx_dwconv_config_at(variant);
  if (!c || n < 0 || h < 1 || w < 1 || cin < 1 || mult < 1 || kh < 1 || kw < 1 || stride_h < 1 ||
      stride_w < 1 || dil_h < 1 || dil_w < 1 || !x || !filter || !y || act < 0 || act > FX_ACT_SWISH)
    return -1;
  fx_window win = {stride_h, stride_w, dil_h, dil_w, kh, kw, 0, 0};
  int eh, ew;
  fx_same_valid(same, h, kh, stride_h, dil_h, &eh, &win.pad_top);
  fx_same_valid(same, w, kw, stride_w, dil_w, &ew, &win.pad_left);
  if (eh != oh || ew != ow) return -1;
  fx_shape xs = {4, {n, h, w, cin}}, ys = {4, {n, oh, ow, cin * mult}};
  double best = 0.0;
  if (iters < 1) iters = 1;
  for (int it = 0; it < iters; it++) {
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    c->fn(NULL, x, &xs, filter, bias, mult, &win, y, &ys, act);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    double s = (double)(t1.tv_sec - t0.tv_sec) + 1e-9 * (double)(t1.tv_nsec - t0.tv_nsec);
    if (it == 0 || s < best) best = s;
  }
  if (seconds) *seconds = best;
  return 0;
}
