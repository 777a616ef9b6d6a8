/* MEAN (kept-dims layout), SOFTMAX and LOG_SOFTMAX over the last dim. */
#include "fastmath.h"
#include "ops.h"

#include <float.h>
#include <math.h>
#include <string.h>

/* 8 independent partial sums: vectorisable without -ffast-math. */
static float vsum(const float *x, size_t n) {
  float acc[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  size_t i = 0;
  for (; i + 8 <= n; i += 8)
    for (int k = 0; k < 8; ++k) acc[k] += x[i + k];
  float s = ((acc[0] + acc[4]) + (acc[1] + acc[5])) + ((acc[2] + acc[6]) + (acc[3] + acc[7]));
  for (; i < n; ++i) s += x[i];
  return s;
}

static float vmax(const float *x, size_t n) {
  float acc[8];
  for (int k = 0; k < 8; ++k) acc[k] = -INFINITY;
  size_t i = 0;
  for (; i + 8 <= n; i += 8)
    for (int k = 0; k < 8; ++k) {
      const float v = x[i + k];
      acc[k] = fx_sel(acc[k] < v, v, acc[k]);
    }
  float m = -INFINITY;
  for (int k = 0; k < 8; ++k) m = m < acc[k] ? acc[k] : m;
  for (; i < n; ++i) m = m < x[i] ? x[i] : m;
  return m;
}

/* ---------------------------------------------------------------- MEAN */
typedef struct {
  int ng;
  size_t n[FX_MAX_RANK];
  size_t xs[FX_MAX_RANK], ys[FX_MAX_RANK]; /* strides; ys = 0 for reduced groups */
  int red[FX_MAX_RANK];
} mean_plan;

static void mean_rec(const mean_plan *p, int g, const float *x, float *y) {
  const size_t n = p->n[g];
  if (g == p->ng - 1) {
    if (p->red[g]) {
      y[0] += vsum(x, n);
    } else {
      float *restrict yy = y;
      const float *restrict xx = x;
      for (size_t i = 0; i < n; ++i) yy[i] += xx[i];
    }
    return;
  }
  for (size_t i = 0; i < n; ++i) mean_rec(p, g + 1, x + i * p->xs[g], y + i * p->ys[g]);
}

void fx_mean_f32(const float *x, const fx_shape *xs, unsigned axis_mask, float *y) {
  const int R = xs->rank;
  mean_plan p;
  size_t count = 1, out_n = 1, in_n = 1;
  p.ng = 0;
  for (int i = 0; i < R; ++i) {
    const size_t d = (size_t)(xs->d[i] > 0 ? xs->d[i] : 0);
    const int red = (axis_mask >> i) & 1u;
    in_n *= d;
    if (red) count *= d; else out_n *= d;
    if (d == 1) continue;
    if (p.ng > 0 && p.red[p.ng - 1] == red) {
      p.n[p.ng - 1] *= d;
    } else {
      p.n[p.ng] = d;
      p.red[p.ng] = red;
      p.ng++;
    }
  }
  for (size_t i = 0; i < out_n; ++i) y[i] = 0.0f;
  if (in_n > 0) {
    if (p.ng == 0) {
      y[0] = x[0];
    } else {
      size_t sx = 1, sy = 1;
      for (int g = p.ng - 1; g >= 0; --g) {
        p.xs[g] = sx;
        p.ys[g] = p.red[g] ? 0 : sy;
        sx *= p.n[g];
        if (!p.red[g]) sy *= p.n[g];
      }
      mean_rec(&p, 0, x, y);
    }
  }
  const float fc = (float)count;
  for (size_t i = 0; i < out_n; ++i) y[i] = y[i] / fc;
}

/* Spatial mean ([N,] H*W reduced, C kept: global average pooling, squeeze-excite) split
 * across threads by blocks of channels: each task sums its channels over every pixel in the
 * serial order (bit-identical to fx_mean_f32) and reads whole cache lines of its own. */
typedef struct { const float *x; float *y; size_t batch, pixels, c, block; } spatial_mean_job;

static void spatial_mean_task(void *ctx, size_t begin, size_t end) {
  const spatial_mean_job *j = ctx;
  for (size_t t = begin; t < end; t++) {
    const size_t b = t / ((j->c + j->block - 1) / j->block), c0 = t % ((j->c + j->block - 1) / j->block) * j->block;
    const size_t w = j->c - c0 < j->block ? j->c - c0 : j->block;
    float acc[64];
    for (size_t k = 0; k < w; k++) acc[k] = 0.0f;
    const float *x = j->x + b * j->pixels * j->c + c0;
    for (size_t i = 0; i < j->pixels; i++, x += j->c)
      for (size_t k = 0; k < w; k++) acc[k] += x[k];
    float *y = j->y + b * j->c + c0;
    for (size_t k = 0; k < w; k++) y[k] = acc[k] / (float)j->pixels;
  }
}

void fx_mean_f32_pool(fx_pool *pool, const float *x, const fx_shape *xs, unsigned axis_mask, float *y) {
  /* [N, H, W, C] over axes 1 and 2 only (keep_dims or not: y is [N, C] either way) */
  if (xs->rank == 4 && (axis_mask & 0xFu) == 6u && fx_shape_numel(xs) >= 32768 && fx_pool_threads(pool) > 1) {
    spatial_mean_job j = {x, y, (size_t)xs->d[0], (size_t)xs->d[1] * (size_t)xs->d[2], (size_t)xs->d[3], 16};
    if (j.c >= 64 * (size_t)fx_pool_threads(pool)) j.block = 64;
    const size_t tasks = j.batch * ((j.c + j.block - 1) / j.block);
    if (tasks > 1) {
      fx_parallel_for(pool, tasks, 1, spatial_mean_task, &j);
      return;
    }
  }
  fx_mean_f32(x, xs, axis_mask, y);
}

/* ------------------------------------------------- SOFTMAX, LOG_SOFTMAX */
/* Each row of cols values: softmax with beta, or log-softmax (log_form; beta unused). */
static void softmax_rows(const float *x, size_t rows, int cols, float beta, int log_form, float *y) {
  if (cols <= 0) return;
  const size_t n = (size_t)cols;
  for (size_t r = 0; r < rows; ++r) {
    const float *xr = x + r * n;
    float *yr = y + r * n;
    const float m = vmax(xr, n);
    if (log_form) {
      float s = 0.0f;
      for (size_t i = 0; i < n; ++i) s += expf(xr[i] - m);
      const float ls = logf(s);
      for (size_t i = 0; i < n; ++i) yr[i] = xr[i] - m - ls;
    } else {
      for (size_t i = 0; i < n; ++i) yr[i] = fx_expf((xr[i] - m) * beta);
      const float s = vsum(yr, n);
      for (size_t i = 0; i < n; ++i) yr[i] = yr[i] / s;
    }
  }
}

void fx_softmax_f32(const float *x, size_t rows, int cols, float beta, float *y) {
  softmax_rows(x, rows, cols, beta, 0, y);
}

void fx_log_softmax_f32(const float *x, size_t rows, int cols, float *y) { softmax_rows(x, rows, cols, 1.0f, 1, y); }
