/* Test and benchmark entry points of the integer kernels (declared in testing/flex_testing.h):
 * whole single-threaded layers on any variant this CPU runs, from TFLite's layouts and
 * quantization parameters, the way the delegate calls them. */
#include <stdlib.h>
#include <string.h>
#include "conv/conv.h"
#include "kernels/qs8-dwconv/qs8-dwconv.h"
#include "testing/flex_testing.h"
#include "testing/tester.h"

void flex_quantize_multiplier(double real, int single_rounding, int32_t *m, int32_t *shift) {
  fx_quantize_multiplier(real, single_rounding, m, shift);
}

int flex_qs8_act_range(int act, float scale, int zp, int qmin, int qmax, int32_t *lo, int32_t *hi) {
  return fx_qs8_act_range(act, scale, zp, qmin, qmax, lo, hi);
}

/* The output stage in the int8 domain: uint8 zero point and clamp move by -128. */
static fx_qs8_out out_of(int u8, int zy, int lo, int hi, int rounding, int tail_rounding, int tail_from) {
  const int d = u8 ? 128 : 0;
  fx_qs8_out o = {zy - d, lo - d, hi - d, rounding, tail_rounding, tail_from};
  return o;
}

/* x (int8, or uint8 flipped) into a fresh int8 buffer; NULL on OOM. */
static int8_t *input_of(int u8, const void *x, size_t n) {
  int8_t *x8 = malloc(n ? n : 1);
  if (!x8) return NULL;
  if (u8) fx_qu8_flip((const uint8_t *)x, x8, n); else memcpy(x8, x, n);
  return x8;
}

static void output_back(int u8, int8_t *y, size_t n) {
  if (u8) fx_qu8_flip((const uint8_t *)y, y, n); /* int8 domain -> uint8 bytes, in place */
}

/* A packed int8 layer and its buffers, for one timed run: a conv in its form (the pointwise GEMM
 * or the conv driver) or a depthwise conv. */
typedef struct {
  const fx_qs8_gemm_config *g;    /* conv */
  const fx_qs8_dwconv_config *dw; /* depthwise */
  const fx_qs8_conv_geom *cg;
  int form, mult;                 /* conv: FX_QS8_CONV_*; depthwise: the depth multiplier */
  const int8_t *x, *zero;
  const void *packed;
  int8_t *y;
  int32_t row_factor;
  const fx_qs8_out *o;
  int failed;
} qlayer_case;

static void run_qconv(void *arg) {
  qlayer_case *c = arg;
  const fx_qs8_conv_geom *cg = c->cg;
  const size_t m = (size_t)cg->batch * cg->oh * cg->ow, panels = ((size_t)cg->cout + c->g->nr - 1) / c->g->nr;
  if (c->form == FX_QS8_CONV_GEMM)
    fx_qs8_gemm_run(c->g, m, (size_t)cg->cout, (size_t)cg->cin, c->x, (size_t)cg->cin, c->packed, c->y,
                    (size_t)cg->cout, c->row_factor, c->o, 0, panels);
  else if (fx_qs8_conv_run(c->g, cg, c->form, c->x, c->zero, c->packed, c->y, c->row_factor, c->o, 0, m, 0, panels))
    c->failed = 1;
}

int flex_qs8_conv_run(int variant, int u8, int n, int h, int w, int cin, int cout, int kh, int kw,
                      int sh, int sw, int dh, int dw, int pt, int pl, int oh, int ow, const void *x,
                      int zx, const void *filter, int zw, const int32_t *bias, const int32_t *mult,
                      const int32_t *shift, int zy, int lo, int hi, int rounding, void *y,
                      int iters, double *seconds) {
  const fx_qs8_gemm_config *g = fx_qs8_gemm_config_at(variant);
  const fx_qs8_conv_geom cg = {n, h, w, cin, kh, kw, sh, sw, dh, dw, pt, pl, oh, ow, cout};
  const fx_qs8_out o = out_of(u8, zy, lo, hi, rounding, FLEX_RQ_AWAY, INT32_MAX);
  if (!g || n < 1 || h < 1 || w < 1 || cin < 1 || cout < 1 || kh < 1 || kw < 1 || sh < 1 || sw < 1 ||
      dh < 1 || dw < 1 || oh < 1 || ow < 1 || !x || !filter || !mult || !shift || !y || fx_qs8_out_check(&o))
    return -1;
  const int form = fx_conv_choose_qs8_form(g, &cg, 0);
  const fx_qs8_gemm_geom geom = fx_qs8_conv_pack_geom(g, &cg, form);
  const size_t nx = (size_t)n * h * w * cin, ny = (size_t)n * oh * ow * cout;
  void *packed = malloc(fx_qs8_gemm_packed_bytes(&geom));
  int8_t *x8 = input_of(u8, x, nx), *zero = malloc((size_t)cin);
  int rc = packed && x8 && zero ? 0 : -1;
  if (rc == 0)
    rc = u8 ? fx_qu8_pack_gemm(&geom, (const uint8_t *)filter, zw, bias, zx, mult, shift, packed)
            : fx_qs8_pack_gemm(&geom, (const int8_t *)filter, bias, zx, mult, shift, packed);
  if (rc == 0) {
    memset(zero, u8 ? zx - 128 : zx, (size_t)cin);
    qlayer_case c = {.g = g, .cg = &cg, .form = form, .x = x8, .zero = zero, .packed = packed, .y = (int8_t *)y,
                     .row_factor = u8 ? fx_qu8_row_factor(zw) : 0, .o = &o};
    fx_tester_time(iters, seconds, run_qconv, &c);
    rc = c.failed ? -1 : 0;
  }
  if (rc == 0) output_back(u8, (int8_t *)y, ny);
  free(packed); free(x8); free(zero);
  return rc;
}

static void run_qdw(void *arg) {
  qlayer_case *c = arg;
  const size_t rows = (size_t)c->cg->batch * (size_t)c->cg->oh;
  if (fx_qs8_dwconv_run(c->dw, c->cg, c->mult, c->x, c->zero, c->packed, c->y, c->o, 0, rows)) c->failed = 1;
}

int flex_qs8_dwconv_run(int variant, int u8, int n, int h, int w, int cin, int mult, int kh,
                        int kw, int sh, int sw, int dh, int dw, int pt, int pl, int oh, int ow,
                        const void *x, int zx, const void *filter, int zw, const int32_t *bias,
                        const int32_t *qmult, const int32_t *shift, int zy, int lo, int hi,
                        int rounding, int tail_rounding, int tail_from, void *y, int iters,
                        double *seconds) {
  const fx_qs8_dwconv_config *v = fx_qs8_dwconv_config_at(variant);
  const fx_qs8_conv_geom cg = {n, h, w, cin, kh, kw, sh, sw, dh, dw, pt, pl, oh, ow, cin * mult};
  const fx_qs8_out o = out_of(u8, zy, lo, hi, rounding, tail_rounding, tail_from);
  if (!v || n < 1 || h < 1 || w < 1 || cin < 1 || mult < 1 || kh < 1 || kw < 1 || sh < 1 || sw < 1 ||
      dh < 1 || dw < 1 || oh < 1 || ow < 1 || !x || !filter || !qmult || !shift || !y || fx_qs8_out_check(&o))
    return -1;
  const int C = cin * mult, taps = kh * kw;
  const size_t nx = (size_t)n * h * w * cin, ny = (size_t)n * oh * ow * C;
  void *packed = malloc(fx_qs8_dw_packed_bytes(C, taps, v->ct));
  int8_t *x8 = input_of(u8, x, nx), *zero = malloc((size_t)cin);
  int rc = packed && x8 && zero ? 0 : -1;
  if (rc == 0)
    rc = u8 ? fx_qu8_pack_dw(C, taps, v->ct, (const uint8_t *)filter, zw, bias, zx, qmult, shift, packed)
            : fx_qs8_pack_dw(C, taps, v->ct, (const int8_t *)filter, bias, zx, qmult, shift, packed);
  if (rc == 0) {
    memset(zero, u8 ? zx - 128 : zx, (size_t)cin);
    qlayer_case c = {.dw = v, .cg = &cg, .mult = mult, .x = x8, .zero = zero, .packed = packed, .y = (int8_t *)y,
                     .o = &o};
    fx_tester_time(iters, seconds, run_qdw, &c);
    rc = c.failed ? -1 : 0;
  }
  if (rc == 0) output_back(u8, (int8_t *)y, ny);
  free(packed); free(x8); free(zero);
  return rc;
}
