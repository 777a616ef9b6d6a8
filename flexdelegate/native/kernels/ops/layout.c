/* Element-size generic layout ops: PAD, CONCATENATION, TRANSPOSE,
 * DEPTH_TO_SPACE, SPACE_TO_DEPTH, GATHER. */
#include "ops.h"

#include <string.h>

/* memcpy of n bytes, and nothing at all for n = 0: an empty tensor's buffer may be NULL, which
 * memcpy must not get even for 0 bytes (UBSan; the graph fuzzer found GATHER, then
 * SPACE_TO_DEPTH, over zero-channel tensors). */
static inline void copy_n(void *dst, const void *src, size_t n) {
  if (n) memcpy(dst, src, n);
}

/* Fill `count` elements of `es` bytes at dst with *value (zeros if NULL). */
static void fill_elems(char *dst, size_t count, const void *value, size_t es) {
  if (count == 0) return;
  const size_t bytes = count * es;
  int zero = 1;
  if (value) {
    const unsigned char *v = (const unsigned char *)value;
    for (size_t i = 0; i < es; ++i) zero &= v[i] == 0;
  }
  if (zero) { memset(dst, 0, bytes); return; }
  memcpy(dst, value, es);
  size_t done = es;
  while (done < bytes) {
    const size_t n = done < bytes - done ? done : bytes - done;
    memcpy(dst + done, dst, n);
    done += n;
  }
}

void fx_copy_strided(char *y, const char *x, size_t n, ptrdiff_t sx, size_t es) {
  size_t j;
  switch (es) {
    case 1: for (j = 0; j < n; ++j) y[j] = x[(ptrdiff_t)j * sx]; break;
    case 2: for (j = 0; j < n; ++j) memcpy(y + j * 2, x + (ptrdiff_t)j * sx * 2, 2); break;
    case 4: for (j = 0; j < n; ++j) memcpy(y + j * 4, x + (ptrdiff_t)j * sx * 4, 4); break;
    case 8: for (j = 0; j < n; ++j) memcpy(y + j * 8, x + (ptrdiff_t)j * sx * 8, 8); break;
    default:
      for (j = 0; j < n; ++j) memcpy(y + j * es, x + (ptrdiff_t)j * sx * (ptrdiff_t)es, es);
      break;
  }
}

/* y[i*n1 + j] = x[i*s0 + j*s1] for i < n0, j < n1 (element strides), in
 * FX_TILE x FX_TILE tiles. */
#define FX_TILE 16
#define FX_TILE_LOOP(T)                                                              \
  for (size_t i0 = 0; i0 < n0; i0 += FX_TILE) {                                      \
    const size_t i1 = i0 + FX_TILE < n0 ? i0 + FX_TILE : n0;                         \
    for (size_t j0 = 0; j0 < n1; j0 += FX_TILE) {                                    \
      const size_t j1 = j0 + FX_TILE < n1 ? j0 + FX_TILE : n1;                       \
      for (size_t i = i0; i < i1; ++i) {                                             \
        char *yr = y + i * n1 * sizeof(T);                                           \
        const char *xr = x + (ptrdiff_t)i * s0 * (ptrdiff_t)sizeof(T);               \
        for (size_t j = j0; j < j1; ++j) {                                           \
          T v;                                                                       \
          memcpy(&v, xr + (ptrdiff_t)j * s1 * (ptrdiff_t)sizeof(T), sizeof(T));      \
          memcpy(yr + j * sizeof(T), &v, sizeof(T));                                 \
        }                                                                            \
      }                                                                              \
    }                                                                                \
  }

static void tile2d(char *y, const char *x, size_t n0, ptrdiff_t s0, size_t n1, ptrdiff_t s1,
                   size_t es) {
  switch (es) {
    case 1: FX_TILE_LOOP(uint8_t) break;
    case 2: FX_TILE_LOOP(uint16_t) break;
    case 4: FX_TILE_LOOP(uint32_t) break;
    case 8: FX_TILE_LOOP(uint64_t) break;
    default:
      for (size_t i = 0; i < n0; ++i)
        fx_copy_strided(y + i * n1 * es, x + (ptrdiff_t)i * s0 * (ptrdiff_t)es, n1, s1, es);
      break;
  }
}

/* ------------------------------------------------------------------ PAD */
typedef struct {
  int nd;
  size_t n[FX_MAX_RANK], pb[FX_MAX_RANK], pa[FX_MAX_RANK];
  size_t is[FX_MAX_RANK], os[FX_MAX_RANK]; /* element strides */
  const void *value;
  size_t es;
} pad_plan;

static void pad_rec(const pad_plan *p, int d, const char *x, char *y) {
  const size_t es = p->es;
  if (d == p->nd - 1) {
    fill_elems(y, p->pb[d], p->value, es);
    copy_n(y + p->pb[d] * es, x, p->n[d] * es);
    fill_elems(y + (p->pb[d] + p->n[d]) * es, p->pa[d], p->value, es);
    return;
  }
  const size_t os = p->os[d], is = p->is[d];
  fill_elems(y, p->pb[d] * os, p->value, es);
  for (size_t i = 0; i < p->n[d]; ++i)
    pad_rec(p, d + 1, x + i * is * es, y + (p->pb[d] + i) * os * es);
  fill_elems(y + (p->pb[d] + p->n[d]) * os * es, p->pa[d] * os, p->value, es);
}

void fx_pad(const void *x, const fx_shape *xs, const int *pads, const void *value,
            size_t esize, void *y) {
  const int R = xs->rank;
  pad_plan p;
  p.nd = 0; p.value = value; p.es = esize;
  for (int i = 0; i < R; ++i) {
    const size_t n = (size_t)(xs->d[i] > 0 ? xs->d[i] : 0);
    const size_t b = (size_t)(pads[2 * i] > 0 ? pads[2 * i] : 0);
    const size_t a = (size_t)(pads[2 * i + 1] > 0 ? pads[2 * i + 1] : 0);
    if (p.nd > 0 && b == 0 && a == 0) { /* unpadded dim folds into its outer neighbour */
      p.n[p.nd - 1] *= n; p.pb[p.nd - 1] *= n; p.pa[p.nd - 1] *= n;
      continue;
    }
    p.n[p.nd] = n; p.pb[p.nd] = b; p.pa[p.nd] = a;
    p.nd++;
  }
  if (p.nd == 0) { memcpy(y, x, esize); return; } /* rank 0 */
  size_t is = 1, os = 1;
  for (int d = p.nd - 1; d >= 0; --d) {
    p.is[d] = is; p.os[d] = os;
    is *= p.n[d];
    os *= p.n[d] + p.pb[d] + p.pa[d];
  }
  if (is == 0) { fill_elems((char *)y, os, value, esize); return; }
  pad_rec(&p, 0, (const char *)x, (char *)y);
}

/* --------------------------------------------------------- CONCATENATION */
void fx_concat(int n, const void *const *xs, const fx_shape *const *shapes, int axis,
               size_t esize, void *y) {
  if (n <= 0) return;
  const int R = shapes[0]->rank;
  if (axis < 0) axis += R;
  if (axis < 0) axis = 0;
  size_t outer = 1;
  for (int i = 0; i < axis && i < R; ++i) outer *= (size_t)shapes[0]->d[i];
  char *out = (char *)y;
  for (size_t o = 0; o < outer; ++o) {
    for (int j = 0; j < n; ++j) {
      size_t c = esize; /* bytes of input j per outer index */
      for (int i = axis; i < R; ++i) c *= (size_t)shapes[j]->d[i];
      copy_n(out, (const char *)xs[j] + o * c, c);
      out += c;
    }
  }
}

/* ------------------------------------------------------------ TRANSPOSE */
void fx_transpose(const void *x, const fx_shape *xs, const int *perm, size_t esize, void *y) {
  const int R = xs->rank;
  size_t istr[FX_MAX_RANK];
  size_t total = 1;
  for (int i = R - 1; i >= 0; --i) { istr[i] = total; total *= (size_t)xs->d[i]; }
  if (total == 0) return;
  /* output dims with their input strides; drop size-1 dims, merge runs that
   * stay adjacent and in order in the input */
  size_t n[FX_MAX_RANK];
  ptrdiff_t s[FX_MAX_RANK];
  int k = 0;
  for (int i = 0; i < R; ++i) {
    const size_t d = (size_t)xs->d[perm[i]];
    const ptrdiff_t st = (ptrdiff_t)istr[perm[i]];
    if (d == 1) continue;
    if (k > 0 && s[k - 1] == st * (ptrdiff_t)d) {
      n[k - 1] *= d;
      s[k - 1] = st;
      continue;
    }
    n[k] = d; s[k] = st; ++k;
  }
  if (k == 0) { memcpy(y, x, esize); return; }
  const char *xb = (const char *)x;
  char *yb = (char *)y;
  const size_t inner = n[k - 1];
  const ptrdiff_t sin = s[k - 1];
  /* rows of `inner` contiguous output elements (sin == 1), or, when the
   * innermost output dim is strided in the input, 2-D tiles over the last two
   * output dims so both sides stay cache friendly */
  const int tiled = sin != 1 && k >= 2;
  const int nouter = tiled ? k - 2 : k - 1;
  const size_t per = tiled ? n[k - 2] * inner : inner;
  const size_t blocks = total / per;
  size_t idx[FX_MAX_RANK] = {0};
  ptrdiff_t off = 0; /* input element offset of the current block */
  for (size_t r = 0; r < blocks; ++r) {
    const char *src = xb + off * (ptrdiff_t)esize;
    if (!tiled) copy_n(yb, src, inner * esize);
    else tile2d(yb, src, n[k - 2], s[k - 2], inner, sin, esize);
    yb += per * esize;
    fx_index_next(idx, n, s, nouter, &off);
  }
}

/* ---------------------------------------------- DEPTH_TO_SPACE / SPACE_TO_DEPTH */
void fx_depth_to_space(const void *x, const fx_shape *xs, int block, size_t esize, void *y) {
  const int N = xs->d[0], H = xs->d[1], W = xs->d[2], C = xs->d[3];
  if (block <= 0) return;
  const int OC = C / (block * block);
  const size_t run = (size_t)OC * esize;
  const char *xb = (const char *)x;
  char *out = (char *)y;
  /* out[b, h*bs+by, w*bs+bx, c] = in[b, h, w, (by*bs+bx)*OC + c]; written in output order */
  for (int b = 0; b < N; ++b)
    for (int h = 0; h < H; ++h)
      for (int by = 0; by < block; ++by)
        for (int w = 0; w < W; ++w) {
          const char *src = xb + ((((size_t)b * H + h) * W + w) * C + (size_t)by * block * OC) * esize;
          for (int bx = 0; bx < block; ++bx) {
            copy_n(out, src + (size_t)bx * run, run);
            out += run;
          }
        }
}

void fx_space_to_depth(const void *x, const fx_shape *xs, int block, size_t esize, void *y) {
  const int N = xs->d[0], H = xs->d[1], W = xs->d[2], C = xs->d[3];
  if (block <= 0) return;
  const int OH = H / block, OW = W / block;
  const size_t run = (size_t)C * esize;
  const char *xb = (const char *)x;
  char *out = (char *)y;
  /* out[b, oh, ow, (by*bs+bx)*C + c] = in[b, oh*bs+by, ow*bs+bx, c] */
  for (int b = 0; b < N; ++b)
    for (int oh = 0; oh < OH; ++oh)
      for (int ow = 0; ow < OW; ++ow)
        for (int by = 0; by < block; ++by) {
          const char *src =
              xb + ((((size_t)b * H + (size_t)oh * block + by) * W + (size_t)ow * block) * C) * esize;
          copy_n(out, src, run * (size_t)block); /* bx = 0..bs-1 are contiguous in input */
          out += run * (size_t)block;
        }
}

/* --------------------------------------------------------------- GATHER */
int fx_gather(const void *x, const fx_shape *xs, const void *idx, int idx_is_64, const fx_shape *is,
              int axis, int batch_dims, size_t esize, void *y) {
  const int R = xs->rank, IR = is->rank;
  if (axis < 0) axis += R;
  if (batch_dims < 0) batch_dims += IR;
  if (axis < 0 || axis >= R || batch_dims < 0 || batch_dims > IR || batch_dims > axis) return -1;
  size_t batch = 1, outer = 1, inner = 1, coords = 1;
  for (int i = 0; i < batch_dims; ++i) {
    if (xs->d[i] != is->d[i]) return -1;
    batch *= (size_t)xs->d[i];
  }
  for (int i = batch_dims; i < axis; ++i) outer *= (size_t)xs->d[i];
  for (int i = axis + 1; i < R; ++i) inner *= (size_t)xs->d[i];
  for (int i = batch_dims; i < IR; ++i) coords *= (size_t)is->d[i];
  const int64_t axis_size = xs->d[axis];
  const int32_t *i32 = (const int32_t *)idx;
  const int64_t *i64 = (const int64_t *)idx;
  const size_t nidx = batch * coords;
  for (size_t i = 0; i < nidx; ++i) {
    const int64_t v = idx_is_64 ? i64[i] : (int64_t)i32[i];
    if (v < 0 || v >= axis_size) return -1;
  }
  const size_t row = inner * esize;
  if (!row) return 0; /* an empty output (its buffer may be NULL): the indices checked, nothing to copy */
  const char *xb = (const char *)x;
  char *out = (char *)y;
  for (size_t b = 0; b < batch; ++b)
    for (size_t o = 0; o < outer; ++o) {
      const char *src = xb + ((b * outer + o) * (size_t)axis_size) * row;
      for (size_t c = 0; c < coords; ++c) {
        const size_t k = b * coords + c;
        const int64_t v = idx_is_64 ? i64[k] : (int64_t)i32[k];
        memcpy(out, src + (size_t)v * row, row);
        out += row;
      }
    }
  return 0;
}
