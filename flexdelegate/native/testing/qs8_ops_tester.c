/* Test and benchmark entries of the integer element-wise ops (kernels/qs8-ops; declared in
 * testing/flex_testing.h): prepare from TFLite's quantization parameters as the delegate will,
 * then run the output in chunks on one variant. */
#define _POSIX_C_SOURCE 200809L
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "testing/flex_testing.h"
#include "kernels/qs8-ops/qs8-ops.h"

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

const char *flex_qs8_ops_variant_at(int i) {
  const fx_qs8_ops_config *v = fx_qs8_ops_config_at(i);
  return v ? v->name : NULL;
}

/* Runs body(lo, hi) over [0, total) in chunks `iters` times; *seconds: the fastest. */
#define TIMED_CHUNKS(total, chunk, iters, seconds, body)                            \
  do {                                                                              \
    const size_t step_ = (chunk) > 0 ? (size_t)(chunk) : ((total) ? (total) : 1);   \
    double best_ = 1e30;                                                            \
    for (int it_ = 0; it_ < ((iters) > 0 ? (iters) : 1); it_++) {                   \
      const double t0_ = now();                                                     \
      for (size_t lo = 0; lo < (total); lo += step_) {                              \
        const size_t hi = lo + step_ < (total) ? lo + step_ : (total);              \
        body;                                                                       \
      }                                                                             \
      const double dt_ = now() - t0_;                                               \
      best_ = dt_ < best_ ? dt_ : best_;                                            \
    }                                                                               \
    if (seconds) *(seconds) = best_;                                                \
  } while (0)

static int shape_of(int r, const int *d, fx_qs8_shape *s) {
  if (r < 0 || r > FX_QS8_MAX_RANK) return -1;
  s->rank = r;
  for (int i = 0; i < r; i++) s->d[i] = d[i];
  return 0;
}

int flex_qs8_binary_run(int variant, int op, int u8, float s1, int z1, float s2, int z2, float so,
                        int zo, int act, int ra, const int *da, int rb, const int *db,
                        const void *a, const void *b, void *y, int stock, int chunk, int iters,
                        double *seconds) {
  const fx_qs8_ops_config *v = fx_qs8_ops_config_at(variant);
  fx_qs8_shape sa, sb;
  fx_qs8_binary_op bop;
  if (!v || shape_of(ra, da, &sa) || shape_of(rb, db, &sb) ||
      fx_qs8_binary_prepare(op, u8, s1, z1, s2, z2, so, zo, act, &sa, &sb, stock, &bop)) return -1;
  const size_t n = fx_qs8_numel(&bop.bc.out);
  TIMED_CHUNKS(n, chunk, iters, seconds, fx_qs8_binary_run(v, &bop, a, b, y, lo, hi));
  return 0;
}

int flex_qs8_lut_op_run(int variant, int kind, int sub, int in_u8, int out_u8, float s_in,
                        int z_in, float s_out, int z_out, float alpha, size_t n, const void *x,
                        void *y, int stock, int chunk, int iters, double *seconds) {
  const fx_qs8_ops_config *v = fx_qs8_ops_config_at(variant);
  fx_qs8_lut_op op;
  int rc = -1;
  if (!v) return -1;
  if (kind != 0 && in_u8 != out_u8) return -1;
  switch (kind) {
    case 0: rc = fx_qs8_requantize_prepare(in_u8, s_in, z_in, out_u8, s_out, z_out, stock, &op); break;
    case 1: rc = fx_qs8_relu_prepare(sub, in_u8, s_in, z_in, s_out, z_out, &op); break;
    case 2: rc = fx_qs8_leaky_relu_prepare(in_u8, alpha, s_in, z_in, s_out, z_out, &op); break;
    case 3: rc = fx_qs8_hard_swish_prepare(in_u8, s_in, z_in, s_out, z_out, &op); break;
    case 4: rc = fx_qs8_curve_prepare(sub, in_u8, s_in, z_in, s_out, z_out, &op); break;
    case 5: rc = in_u8 ? fx_qs8_concat_requant_prepare(s_in, z_in, s_out, z_out, &op) : -1; break;
  }
  if (rc) return -1;
  TIMED_CHUNKS(n, chunk, iters, seconds, fx_qs8_lut_run(v, &op, n, x, y, lo, hi));
  return 0;
}

int flex_qs8_quantize_run(int variant, int form, int out_u8, float scale, int zp, int qlo, int qhi,
                          size_t n, const float *x, void *y, int chunk, int iters, double *seconds) {
  const fx_qs8_ops_config *v = fx_qs8_ops_config_at(variant);
  if (!v || !(scale > 0) || (form != FLEX_QUANT_AWAY && form != FLEX_QUANT_RECIP_EVEN)) return -1;
  const fx_qs8_quant_params p = {.scale = (double)scale, .inv_scale = (float)(1.0 / (double)scale),
                                 .zp = zp, .lo = qlo, .hi = qhi, .u8 = out_u8};
  TIMED_CHUNKS(n, chunk, iters, seconds, v->quantize(hi - lo, x + lo, (uint8_t *)y + lo, &p, form));
  return 0;
}

int flex_qs8_mean_hw_run(int variant, int batch, int h, int w, int c, const int32_t *axes,
                         int naxes, float si, int zi, float so, int zo, const void *x, void *y,
                         int stock, int stock_threads, int chunk, int iters, double *seconds) {
  const fx_qs8_ops_config *v = fx_qs8_ops_config_at(variant);
  fx_qs8_mean_op op;
  if (!v || fx_qs8_mean_hw_prepare(batch, h, w, c, axes, naxes, si, zi, so, zo, stock, stock_threads, &op)) return -1;
  int32_t *scratch = malloc(sizeof(int32_t) * (size_t)(c > 0 ? c : 1));
  if (!scratch) return -1;
  TIMED_CHUNKS((size_t)batch, chunk, iters, seconds,
               fx_qs8_mean_hw_run(v, &op, x, y, lo, hi, scratch));
  free(scratch);
  return 0;
}

int flex_qs8_mean_run(int variant, int u8, int r, const int *d, unsigned axis_mask, float si,
                      int zi, float so, int zo, const void *x, void *y, int chunk, int iters,
                      double *seconds) {
  const fx_qs8_ops_config *v = fx_qs8_ops_config_at(variant);
  fx_qs8_shape s;
  fx_qs8_mean_any_op op;
  if (!v || shape_of(r, d, &s) || fx_qs8_mean_prepare(u8, &s, axis_mask, si, zi, so, zo, &op)) return -1;
  const size_t n = fx_qs8_mean_outputs(&op);
  int32_t *scratch = malloc(sizeof(int32_t) * ((size_t)op.inner + 1));
  if (!scratch) return -1;
  TIMED_CHUNKS(n, chunk, iters, seconds, fx_qs8_mean_run(v, &op, x, y, lo, hi, scratch));
  free(scratch);
  return 0;
}

int flex_qs8_avgpool_run(int variant, int u8, int n, int h, int w, int c, int kh, int kw, int sh,
                         int sw, int pt, int pl, int oh, int ow, int lo, int hi, const void *x,
                         void *y, int chunk, int iters, double *seconds) {
  const fx_qs8_ops_config *v = fx_qs8_ops_config_at(variant);
  const fx_qs8_pool_geom p = {u8, n, h, w, c, oh, ow, kh, kw, sh, sw, pt, pl, lo, hi};
  if (!v || n < 0 || h < 1 || w < 1 || c < 0 || kh < 1 || kw < 1 || sh < 1 || sw < 1 || oh < 0 || ow < 0)
    return -1;
  const size_t rows = (size_t)n * (size_t)oh;
  TIMED_CHUNKS(rows, chunk, iters, seconds, fx_qs8_avgpool_rows(v, &p, x, y, lo, hi));
  return 0;
}

int flex_qs8_softmax_run(int u8, float si, float beta, float so, int zo, size_t rows,
                         size_t cols, const void *x, void *y, int chunk, int iters,
                         double *seconds) {
  fx_qs8_softmax_op op;
  if (fx_qs8_softmax_prepare(u8, si, beta, so, zo, &op)) return -1;
  TIMED_CHUNKS(rows, chunk, iters, seconds, fx_qs8_softmax_run(&op, x, y, cols, lo, hi));
  return 0;
}
