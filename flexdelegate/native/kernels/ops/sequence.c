/* The small generating and scanning ops of transformer graphs, on any element type they take:
 * REDUCE (SUM / MAX / MIN / PROD over any axes), BROADCAST_TO, GATHER_ND, FILL, RANGE and
 * CUMSUM. They run once per graph on positions, masks and shapes (most fold at load), so each
 * is one odometer walk in stock's order: float sums and products accumulate in the same
 * order as TFLite's kernels, integers wrap as they do there. */
#include <float.h>
#include <string.h>
#include "ops.h"

/* ---------------------------------------------------------------- REDUCE */
#define RED_LOOP(T, U, LOWEST, HIGHEST)                                               \
  do {                                                                               \
    T *yy = y;                                                                       \
    const T *xx = x;                                                                 \
    const T init = op == FX_RED_SUM ? (T)0 : op == FX_RED_PROD ? (T)1 : op == FX_RED_MAX ? LOWEST : HIGHEST; \
    for (size_t i = 0; i < out_n; i++) yy[i] = init;                                 \
    for (size_t i = 0; i < in_n; i++) {                                              \
      const T v = xx[i], a = yy[off];                                                \
      switch (op) {                                                                  \
        case FX_RED_SUM: yy[off] = (T)((U)a + (U)v); break;                          \
        case FX_RED_PROD: yy[off] = (T)((U)a * (U)v); break;                         \
        case FX_RED_MAX: yy[off] = v > a ? v : a; break;                             \
        default: yy[off] = v < a ? v : a; break;                                     \
      }                                                                              \
      fx_index_next(idx, n, s, R, &off);                                             \
    }                                                                                \
  } while (0)

void fx_reduce(int op, int elem, const void *x, const fx_shape *xs, unsigned axis_mask, void *y) {
  const int R = xs->rank;
  size_t n[FX_MAX_RANK], idx[FX_MAX_RANK] = {0}, in_n = 1, out_n = 1;
  ptrdiff_t s[FX_MAX_RANK], off = 0;
  for (int i = R - 1; i >= 0; --i) {
    n[i] = (size_t)(xs->d[i] > 0 ? xs->d[i] : 0);
    in_n *= n[i];
    s[i] = (axis_mask >> i) & 1u ? 0 : (ptrdiff_t)out_n;
    if (!((axis_mask >> i) & 1u)) out_n *= n[i];
  }
  if (elem == FX_ELEM_I32) RED_LOOP(int32_t, uint32_t, INT32_MIN, INT32_MAX);
  else if (elem == FX_ELEM_I64) RED_LOOP(int64_t, uint64_t, INT64_MIN, INT64_MAX);
  else RED_LOOP(float, float, -FLT_MAX, FLT_MAX); /* numeric_limits<float>::lowest(), as stock */
}

/* ---------------------------------------------------------- BROADCAST_TO */
void fx_broadcast_to(const void *x, const fx_shape *xs, const fx_shape *ys, size_t es, void *y) {
  const int R = ys->rank;
  size_t n[FX_MAX_RANK], idx[FX_MAX_RANK] = {0}, count = 1;
  ptrdiff_t s[FX_MAX_RANK], off = 0, acc = 1;
  for (int i = R - 1; i >= 0; --i) {
    const int xi = i - (R - xs->rank), dim = xi >= 0 ? xs->d[xi] : 1;
    n[i] = (size_t)ys->d[i];
    count *= n[i];
    s[i] = dim == 1 ? 0 : acc;
    acc *= dim;
  }
  char *out = y;
  for (size_t i = 0; i < count; i++, out += es) {
    memcpy(out, (const char *)x + (size_t)off * es, es);
    fx_index_next(idx, n, s, R, &off);
  }
}

/* ------------------------------------------------------------- GATHER_ND */
int fx_gather_nd(const void *x, const fx_shape *xs, const void *idx, int idx_is_64, const fx_shape *is, size_t es,
                 void *y) {
  const int nd = is->d[is->rank - 1];
  size_t slices = 1, slice = 1;
  for (int i = 0; i < is->rank - 1; i++) slices *= (size_t)is->d[i];
  for (int i = nd; i < xs->rank; i++) slice *= (size_t)xs->d[i];
  int64_t stride[FX_MAX_RANK];
  for (int j = nd - 1; j >= 0; j--) stride[j] = j == nd - 1 ? (int64_t)slice : stride[j + 1] * xs->d[j + 1];
  /* every index within its dim, as LiteRT checks (tflite-runtime 2.14 checks only that the
   * slice lies inside the tensor, and reads what a wrong index points at there) */
  for (size_t i = 0; i < slices; i++) {
    int64_t from = 0;
    for (int j = 0; j < nd; j++) {
      const int64_t v = idx_is_64 ? ((const int64_t *)idx)[i * (size_t)nd + (size_t)j]
                                  : ((const int32_t *)idx)[i * (size_t)nd + (size_t)j];
      if (v < 0 || v >= xs->d[j]) return -1;
      from += v * stride[j];
    }
    memcpy((char *)y + i * slice * es, (const char *)x + (size_t)from * es, slice * es);
  }
  return 0;
}

/* ------------------------------------------------------------ FILL, RANGE */
void fx_fill(void *y, size_t count, const void *value, size_t es) {
  char *out = y;
  for (size_t i = 0; i < count; i++, out += es) memcpy(out, value, es);
}

/* y[i] = start + delta + ... (i times), accumulated in the element type as stock does. */
void fx_range(int elem, const void *start, const void *delta, size_t count, void *y) {
  if (elem == FX_ELEM_I32) {
    uint32_t v = (uint32_t) * (const int32_t *)start;
    for (size_t i = 0; i < count; i++, v += (uint32_t) * (const int32_t *)delta) ((int32_t *)y)[i] = (int32_t)v;
  } else if (elem == FX_ELEM_I64) {
    uint64_t v = (uint64_t) * (const int64_t *)start;
    for (size_t i = 0; i < count; i++, v += (uint64_t) * (const int64_t *)delta) ((int64_t *)y)[i] = (int64_t)v;
  } else {
    float v = *(const float *)start;
    for (size_t i = 0; i < count; i++, v += *(const float *)delta) ((float *)y)[i] = v;
  }
}

/* ---------------------------------------------------------------- CUMSUM */
#define CUMSUM_LOOP(T, U)                                                        \
  for (size_t o = 0; o < outer; o++)                                             \
    for (size_t in = 0; in < inner; in++) {                                      \
      U acc = 0;                                                                 \
      for (size_t k = 0; k < len; k++) {                                         \
        const size_t pos = (o * len + (reverse ? len - 1 - k : k)) * inner + in; \
        const U v = (U)((const T *)x)[pos];                                      \
        if (exclusive) { ((T *)y)[pos] = (T)acc; acc += v; }                     \
        else { acc += v; ((T *)y)[pos] = (T)acc; }                               \
      }                                                                          \
    }

void fx_cumsum(int elem, const void *x, const fx_shape *xs, int axis, int exclusive, int reverse, void *y) {
  size_t outer = 1, inner = 1;
  const size_t len = (size_t)xs->d[axis];
  for (int i = 0; i < axis; i++) outer *= (size_t)xs->d[i];
  for (int i = axis + 1; i < xs->rank; i++) inner *= (size_t)xs->d[i];
  if (elem == FX_ELEM_I32) { CUMSUM_LOOP(int32_t, uint32_t) }
  else if (elem == FX_ELEM_I64) { CUMSUM_LOOP(int64_t, uint64_t) }
  else { CUMSUM_LOOP(float, float) }
}
