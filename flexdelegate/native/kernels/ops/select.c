/* The bool-typed and integer element-wise ops of transformer graphs: comparisons (any numeric
 * type in, bool out), SELECT / SELECT_V2 (pick x or y by a bool condition, any 4- or 8-byte
 * type), and int32 / int64 ADD, SUB, MUL (token ids, positions, shape arithmetic). All with
 * numpy broadcasting. They run on small tensors or once per layer on a mask: one odometer
 * over the output, each operand read through its own strides (0 where it broadcasts). */
#include <string.h>
#include "ops.h"

/* Up to three operands walked in step with the output. */
typedef struct {
  int rank;
  int d[FX_MAX_RANK];
  ptrdiff_t s[3][FX_MAX_RANK];
  size_t idx[FX_MAX_RANK];
  ptrdiff_t off[3];
  int k;
} walk;

static void walk_init(walk *w, const fx_shape *ys, const fx_shape *const *in, int k) {
  memset(w, 0, sizeof *w);
  w->rank = ys->rank;
  w->k = k;
  for (int i = 0; i < ys->rank; i++) w->d[i] = ys->d[i];
  for (int j = 0; j < k; j++) {
    ptrdiff_t acc = 1;
    for (int i = ys->rank - 1; i >= 0; i--) {
      const int ii = i - (ys->rank - in[j]->rank);
      const int dim = ii >= 0 ? in[j]->d[ii] : 1;
      w->s[j][i] = dim == 1 ? 0 : acc;
      acc *= dim;
    }
  }
}

static void walk_next(walk *w) {
  for (int i = w->rank - 1; i >= 0; i--) {
    for (int j = 0; j < w->k; j++) w->off[j] += w->s[j][i];
    if (++w->idx[i] < (size_t)w->d[i]) return;
    for (int j = 0; j < w->k; j++) w->off[j] -= (ptrdiff_t)w->d[i] * w->s[j][i];
    w->idx[i] = 0;
  }
}

#define FX_CMP_CASES(T, a, b)                                      \
  switch (op) {                                                    \
    case FX_CMP_LESS: v = ((const T *)a)[pa] < ((const T *)b)[pb]; break;        \
    case FX_CMP_LESS_EQUAL: v = ((const T *)a)[pa] <= ((const T *)b)[pb]; break; \
    case FX_CMP_GREATER: v = ((const T *)a)[pa] > ((const T *)b)[pb]; break;     \
    case FX_CMP_GREATER_EQUAL: v = ((const T *)a)[pa] >= ((const T *)b)[pb]; break; \
    case FX_CMP_EQUAL: v = ((const T *)a)[pa] == ((const T *)b)[pb]; break;      \
    default: v = ((const T *)a)[pa] != ((const T *)b)[pb]; break;                \
  }

void fx_compare(int op, int elem, const void *a, const fx_shape *as, const void *b, const fx_shape *bs, uint8_t *y,
                const fx_shape *ys) {
  const fx_shape *in[2] = {as, bs};
  walk w;
  walk_init(&w, ys, in, 2);
  const size_t total = fx_shape_numel(ys);
  for (size_t i = 0; i < total; i++, walk_next(&w)) {
    const ptrdiff_t pa = w.off[0], pb = w.off[1];
    int v;
    if (elem == FX_ELEM_F32) { FX_CMP_CASES(float, a, b) }
    else if (elem == FX_ELEM_I32) { FX_CMP_CASES(int32_t, a, b) }
    else if (elem == FX_ELEM_I64) { FX_CMP_CASES(int64_t, a, b) }
    else { FX_CMP_CASES(uint8_t, a, b) } /* bool */
    y[i] = (uint8_t)v;
  }
}

void fx_logical(int op, const uint8_t *a, const fx_shape *as, const uint8_t *b, const fx_shape *bs, uint8_t *y,
                const fx_shape *ys) {
  const fx_shape *in[2] = {as, bs ? bs : as};
  walk w;
  walk_init(&w, ys, in, 2);
  const size_t total = fx_shape_numel(ys);
  for (size_t i = 0; i < total; i++, walk_next(&w)) {
    const int p = a[w.off[0]] != 0, q = b ? b[w.off[1]] != 0 : 0;
    y[i] = (uint8_t)(op == FX_LOGIC_AND ? p && q : op == FX_LOGIC_OR ? p || q : !p);
  }
}

void fx_select(size_t es, const uint8_t *c, const fx_shape *cs, const void *x, const fx_shape *xs, const void *yv,
               const fx_shape *yvs, void *out, const fx_shape *os) {
  const fx_shape *in[3] = {cs, xs, yvs};
  walk w;
  walk_init(&w, os, in, 3);
  const size_t total = fx_shape_numel(os);
  char *o = out;
  for (size_t i = 0; i < total; i++, walk_next(&w)) {
    const char *src = c[w.off[0]] ? (const char *)x + (size_t)w.off[1] * es : (const char *)yv + (size_t)w.off[2] * es;
    memcpy(o + i * es, src, es);
  }
}

/* Wrapping arithmetic as stock's int kernels (two's complement), without signed overflow UB. */
#define FX_INT_BINARY(T, U)                                                                \
  for (size_t i = 0; i < total; i++, walk_next(&w)) {                                     \
    const U p = (U)((const T *)a)[w.off[0]], q = (U)((const T *)b)[w.off[1]];              \
    ((T *)y)[i] = (T)(op == FX_B_ADD ? p + q : op == FX_B_SUB ? p - q : p * q);           \
  }

void fx_binary_int(int op, int elem, const void *a, const fx_shape *as, const void *b, const fx_shape *bs, void *y,
                   const fx_shape *ys) {
  const fx_shape *in[2] = {as, bs};
  walk w;
  walk_init(&w, ys, in, 2);
  const size_t total = fx_shape_numel(ys);
  if (elem == FX_ELEM_I64) { FX_INT_BINARY(int64_t, uint64_t) }
  else { FX_INT_BINARY(int32_t, uint32_t) }
}
