/* SOFTMAX int8/uint8 -> int8/uint8 over the last dimension: stock's float-table path on x86
 * (optimized_ops::Softmax with PopulateSoftmaxLookupTable; NOTES.md "SOFTMAX"). Per row: the
 * maximum, a float sum of table entries in element order, one float reciprocal, then each
 * probability rounded (int8: std::round; uint8: + 0.5f truncated, as x86 builds do). */
#include <math.h>
#include <string.h>
#include "qs8-ops.h"
#include "kernels/simd/nofuse.h"

int fx_qs8_softmax_prepare(int u8, float si, float beta, float so, int32_t zo,
                           fx_qs8_softmax_op *op) {
  memset(op, 0, sizeof *op);
  if (!(si > 0) || !(so > 0) || !isfinite(beta)) return -1;
  /* stock checks the output: int8 zero point -128, uint8 0, scale 1/256 */
  if (so != 1.0f / 256 || zo != (u8 ? 0 : -128)) return -1;
  const float scale = -si * beta;
  for (int v = 0; v <= 255; v++) {
    float a = scale * (float)v;
    FX_NOFUSE(a);
    op->table[255 - v] = expf(a);
  }
  op->out_scale = so;
  op->zo = zo;
  op->u8 = u8;
  return 0;
}

void fx_qs8_softmax_run(const fx_qs8_softmax_op *op, const void *x, void *y, size_t cols,
                        size_t r0, size_t r1) {
  const int lo = op->u8 ? 0 : -128, hi = op->u8 ? 255 : 127;
  for (size_t r = r0; r < r1; r++) {
    const uint8_t *xb = (const uint8_t *)x + r * cols;
    uint8_t *yb = (uint8_t *)y + r * cols;
#define VAL(j) (op->u8 ? (int32_t)xb[j] : (int32_t)(int8_t)xb[j])
    int32_t mx = lo;
    for (size_t j = 0; j < cols; j++) mx = VAL(j) > mx ? VAL(j) : mx;
    const float *t = op->table + 255 - mx;
    float sum = 0.0f;
    for (size_t j = 0; j < cols; j++) {
      sum += t[VAL(j)];
      FX_NOFUSE(sum);
    }
    float den = sum * op->out_scale;
    FX_NOFUSE(den);
    const float inv = 1.0f / den;
    for (size_t j = 0; j < cols; j++) {
      float p = t[VAL(j)] * inv;
      FX_NOFUSE(p);
      int32_t q;
      if (op->u8) {
        p = p + 0.5f;
        FX_NOFUSE(p);
        q = (int32_t)p;
      } else {
        q = (int32_t)roundf(p);
      }
      q += op->zo;
      yb[j] = (uint8_t)fxq_sat(q, lo, hi);
    }
#undef VAL
  }
}
