/* Dynamic quantization of float activations to int8, as stock TFLite's dynamic-range ("hybrid")
 * CONV_2D and FULLY_CONNECTED do it per image / per batch row (tensor_utils'
 * SymmetricQuantizeFloats and AsymmetricQuantizeFloats), bit for bit: the same float and double
 * operations in the same order, so a hybrid layer on the int8 GEMM gives stock's int8 values.
 * Stock builds differ as for the integer element-wise ops (FLEX_STOCK_*, qs8-ops.h): the portable
 * loops (tflite-runtime 2.14) or the NEON ones (ai-edge-litert 2.3 on x86, through NEON_2_SSE).
 *
 *   symmetric   range = max(|min x|, |max x|); scale = range / 127, inv = 127 / range (float);
 *               zero point 0, values in [-127, 127]
 *   asymmetric  rmin = min(min x, 0), rmax = max(max x, 0); scale = (rmax - rmin) / 255 in
 *               double, the difference itself taken in double (portable) or float (NEON); the
 *               zero point TFLite's nudged one (from min or max, whichever errs less);
 *               inv = 1 / (float)scale; values in [-128, 127]
 *   a value, v = x * inv in float:
 *     portable  round(v + zp), the sum in float (zp 0: round(v))
 *     NEON      trunc(v + (v < 0 ? -0.5 : 0.5)) + zp, the sum in float, on every row's values but
 *               its last n % 8 (the vector loop's); round(v) + zp on those (its scalar tail)
 * round() is half away from zero; an all-zero range gives scale 1, zero point 0 and q = 0.
 *
 * A NaN or an infinity among the values "poisons" the row: its scale is NaN, so every output the
 * layer computes from it is NaN before the activation (which treats a NaN as stock's does:
 * qs8-gemm.h's fx_qs8_f32_out). Stock's answer there is not arithmetic (its float-to-int casts
 * of NaN are undefined; an infinite range makes a NaN zero point): finite numbers that depend on
 * the build. Float math would make NaN or infinite only the outputs the value reaches: for a
 * fully connected row all of them, for a conv image those whose window holds it. */
#ifndef FLEX_QUANT_DYNAMIC_H
#define FLEX_QUANT_DYNAMIC_H
#include <stddef.h>
#include <stdint.h>

typedef struct {
  float scale, inv;
  int32_t zp;
  int asymmetric, stock; /* stock: FLEX_STOCK_* */
} fx_dynq;

/* lo = min(lo, x[i]), hi = max(hi, x[i]) over n values (start them at +inf / -inf). */
void fx_dynq_minmax(const float *x, size_t n, float *lo, float *hi);
/* The parameters for values whose least and greatest are lo and hi, as stock build `stock`
 * (FLEX_STOCK_*) computes them; poisoned (scale NaN) when lo or hi is not finite. */
fx_dynq fx_dynq_params(float lo, float hi, int asymmetric, int stock);
static inline int fx_dynq_poisoned(const fx_dynq *p) { return p->scale != p->scale; }
/* Values [first, first + n) of a row of `len` (the NEON form treats its last len % 8 apart):
 * q[i] = x[i] quantized with p. Nonzero when the row is poisoned: p is, or some x[i] is NaN
 * (the caller then makes the row's scale NaN). */
int fx_dynq_quantize(const float *x, size_t n, int8_t *q, const fx_dynq *p, size_t first, size_t len);
#endif
