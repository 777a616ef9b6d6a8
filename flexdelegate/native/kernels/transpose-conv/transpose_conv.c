/* TRANSPOSE_CONV driver (transpose_conv.h) as GEMM + col2im without the column buffer: each
 * filter tap (fy, fx) is a [cin x cout] matrix, and input row iy times it lands on output row
 * iy*sh - pad_top + fy at every sw-th pixel, so the microkernel stores there directly with a C
 * stride of sw*cout. Tasks are blocks of output rows (no two tasks write the same row), each tap's
 * panels run over the whole block:
 *   - taps that never overlap (kh <= sh, kw <= sw: U-Net's 2x2 stride 2) write each output
 *     pixel once, bias and clamp fused in the microkernel; rows a tap misses get act(bias);
 *   - overlapping taps start from the bias and accumulate through the microkernel's residual
 *     input (r = C, unclamped), the activation in one pass over the block afterwards. */
#include <math.h>
#include "kernels/ops/ops.h"
#include "runtime/pool.h"
#include "transpose_conv.h"

/* GEMM rows (input pixels) a weight panel serves per pass, about: 128 x cin floats of input stay
 * in L2 while each panel of the tap streams past them once. */
#define FX_TCONV_BLOCK_PIXELS 128

typedef struct {
  const fx_tconv_geom *g;
  const fx_gemm_config *uk;
  const float *x, *filter, *bias;
  float *y, *packed;
  size_t panels, panel_floats; /* per tap */
  size_t block;                /* output rows per output_block */
  int act, overlap, covered;
} tc_task;

static size_t panels_of(const fx_tconv_geom *g, const fx_gemm_config *uk) {
  return ((size_t)g->cout + (size_t)uk->nr - 1) / (size_t)uk->nr;
}

size_t fx_tconv_packed_floats(const fx_tconv_geom *g, const fx_gemm_config *uk) {
  if (!uk) uk = fx_gemm_config_get();
  return (size_t)g->kh * (size_t)g->kw * panels_of(g, uk) * (size_t)uk->nr * ((size_t)g->cin + 1);
}

/* Panel i = (tap, p): its bias row (the real bias where each pixel gets one tap, else 0: the
 * row starts from the bias), then cin rows of nr output channels (zero past cout). */
static void pack_panels(void *vctx, size_t begin, size_t end) {
  const tc_task *t = vctx;
  const fx_tconv_geom *g = t->g;
  const size_t nr = (size_t)t->uk->nr, ci_n = (size_t)g->cin, taps = (size_t)g->kh * (size_t)g->kw;
  for (size_t i = begin; i < end; i++) {
    const size_t tap = i / t->panels, oc0 = (i % t->panels) * nr;
    float *dst = t->packed + i * t->panel_floats;
    for (size_t j = 0; j < nr; j++) {
      const size_t oc = oc0 + j;
      const int real = oc < (size_t)g->cout;
      dst[j] = real && t->bias && !t->overlap ? t->bias[oc] : 0.0f;
      const float *src = real ? t->filter + (oc * taps + tap) * ci_n : NULL;
      for (size_t ci = 0; ci < ci_n; ci++) dst[nr + ci * nr + j] = real ? src[ci] : 0.0f;
    }
  }
}

static int ceil_div(int a, int s) { return a >= 0 ? (a + s - 1) / s : -((-a) / s); }
static int floor_div(int a, int s) { return a >= 0 ? a / s : -((-a + s - 1) / s); }

/* The input row a filter row fy reads for output row r (batch folded in), or NULL. */
static const float *input_row(const tc_task *t, size_t r, int fy) {
  const fx_tconv_geom *g = t->g;
  const int b = (int)(r / (size_t)g->oh), ty = (int)(r % (size_t)g->oh) + g->pad_top - fy;
  if (ty < 0 || ty % g->stride_h || ty / g->stride_h >= g->ih) return NULL;
  return t->x + ((size_t)b * (size_t)g->ih + (size_t)(ty / g->stride_h)) * (size_t)g->iw * (size_t)g->cin;
}

/* Output rows [r0, r1): each weight panel once over all of them (a row alone is too few GEMM
 * rows to reuse a panel: 16 pixels on U-Net's deepest level). */
static void output_block(const tc_task *t, size_t r0, size_t r1) {
  const fx_tconv_geom *g = t->g;
  const fx_gemm_config *uk = t->uk;
  const size_t co = (size_t)g->cout, ci = (size_t)g->cin, nr = (size_t)uk->nr, row_n = (size_t)g->ow * co;
  const size_t cs = (size_t)g->stride_w * co;
  fx_gemm_out out;
  if (t->overlap) {
    out = fx_gemm_out_clamp(-INFINITY, INFINITY);
  } else {
    fx_act_bounds(t->act, &out.lo, &out.hi);
    out.rlo = out.lo, out.rhi = out.hi;
  }
  if (t->overlap || !t->covered)
    for (size_t i = r0 * row_n; i < r1 * row_n; i++) t->y[i] = t->bias ? t->bias[i % co] : 0.0f;
  for (int fy = 0; fy < g->kh; fy++)
    for (int fx = 0; fx < g->kw; fx++) {
      int ix0 = ceil_div(g->pad_left - fx, g->stride_w), ix1 = floor_div(g->ow - 1 + g->pad_left - fx, g->stride_w);
      ix0 = ix0 < 0 ? 0 : ix0;
      ix1 = ix1 > g->iw - 1 ? g->iw - 1 : ix1;
      if (ix0 > ix1) continue;
      const size_t m = (size_t)(ix1 - ix0 + 1), ox0 = (size_t)(ix0 * g->stride_w - g->pad_left + fx);
      const float *w = t->packed + (size_t)(fy * g->kw + fx) * t->panels * t->panel_floats;
      for (size_t p = 0; p < t->panels; p++, w += t->panel_floats) {
        const size_t nc = co - p * nr < nr ? co - p * nr : nr;
        for (size_t r = r0; r < r1; r++) {
          const float *xrow = input_row(t, r, fy);
          if (!xrow) continue;
          const float *a = xrow + (size_t)ix0 * ci;
          float *c = t->y + r * row_n + ox0 * co + p * nr;
          for (size_t m0 = 0; m0 < m; m0 += (size_t)uk->mr) {
            const size_t mr = m - m0 < (size_t)uk->mr ? m - m0 : (size_t)uk->mr;
            float *cp = c + m0 * cs;
            uk->fn(mr, nc, ci, a + m0 * ci, ci, w, cp, cs, t->overlap ? cp : NULL, &out);
          }
        }
      }
    }
  for (size_t r = r0; r < r1; r++) {
    float *yrow = t->y + r * row_n;
    if (t->overlap || !t->covered) fx_clamp_act(t->act, yrow, row_n);
    if (t->act == FLEX_ACT_TANH || fx_act_is_curve(t->act)) fx_apply_act(t->act, yrow, row_n);
  }
}

static void output_rows(void *vctx, size_t begin, size_t end) {
  const tc_task *t = vctx;
  for (size_t r0 = begin; r0 < end; r0 += t->block) output_block(t, r0, r0 + t->block < end ? r0 + t->block : end);
}

void fx_tconv_f32(struct fx_pool *pool, const fx_tconv_geom *g, const fx_gemm_config *uk, const float *x,
                  const float *filter, const float *bias, float *y, float *scratch, int act) {
  if (!uk) uk = fx_gemm_config_get();
  const size_t rows = (size_t)g->batch * (size_t)g->oh;
  if (rows == 0 || g->ow <= 0 || g->cout <= 0) return;
  /* blocks of ~FX_TCONV_BLOCK_PIXELS GEMM rows, at least one per thread */
  const size_t threads = (size_t)fx_pool_threads(pool), per_thread = (rows + threads - 1) / threads;
  size_t block = (FX_TCONV_BLOCK_PIXELS * (size_t)g->stride_h + (size_t)g->iw - 1) / (size_t)(g->iw > 0 ? g->iw : 1);
  block = block > per_thread ? per_thread : block < 1 ? 1 : block;
  tc_task t = {g, uk, x, filter, bias, y, scratch, panels_of(g, uk), (size_t)uk->nr * ((size_t)g->cin + 1), block, act,
               g->kh > g->stride_h || g->kw > g->stride_w,
               /* every output pixel gets exactly one tap */
               g->kh == g->stride_h && g->kw == g->stride_w && g->pad_top == 0 && g->pad_left == 0 &&
                   g->oh == g->ih * g->stride_h && g->ow == g->iw * g->stride_w};
  const size_t taps = (size_t)g->kh * (size_t)g->kw;
  fx_parallel_for(pool, taps * t.panels, 1, pack_panels, &t);
  if (g->ih <= 0 || g->iw <= 0 || g->cin <= 0) t.covered = 0; /* nothing to multiply: bias only */
  fx_parallel_for(pool, rows, block, output_rows, &t);
}
