/* STRIDED_SLICE, following TFLite's kernel (strided_slice.cc BuildStridedSliceParams
 * for ellipsis / new-axis expansion, strided_slice_logic.h StridedSliceStartForAxis /
 * StridedSliceEndForAxis for begin/end resolution incl. the `offset` flag). */
#include "ops.h"

#include <string.h>

static int clampi(int v, int lo, int hi) { return v < lo ? lo : (v > hi ? hi : v); }

/* TFLite StridedSliceStartForAxis */
static int ss_start(int start, int stride, int size, int masked) {
  if (start < 0) start += size;
  start = stride > 0 ? clampi(start, 0, size) : clampi(start, -1, size - 1);
  if (masked) start = stride > 0 ? 0 : size - 1;
  return start;
}

/* TFLite StridedSliceEndForAxis (non-shrink part) */
static int ss_end(int end, int start, int stride, int size, int masked, int offset) {
  if (offset) end += start;
  if (end < 0) end += size;
  end = stride > 0 ? clampi(end, 0, size) : clampi(end, -1, size - 1);
  if (masked) end = stride > 0 ? size : -1;
  return end;
}

/* The spec's ellipsis and new-axis bits over the E effective dims, the ellipsis expanded to the
 * input dims it stands for (ell_start: its first effective dim; expanded: the dims it adds). */
typedef struct {
  unsigned ell, added;
  int ell_start, expanded;
} ss_axes;

static ss_axes expand_ellipsis(int n, int R, int E, int num_add, unsigned elm, unsigned nam) {
  ss_axes a = {0, 0, E, 0};
  for (int i = 0; i < E;) {
    if (i < n && ((elm >> i) & 1u) && a.ell_start == E) {
      a.ell_start = i;
      int ell_end = i + 1 + num_add + R - n;
      if (ell_end > E) ell_end = E;
      if (ell_end < i + 1) ell_end = i + 1;
      a.expanded = ell_end - a.ell_start - 1;
      for (; i < ell_end; ++i) a.ell |= 1u << i;
      continue;
    }
    const int si = i - a.expanded;
    if (si >= 0 && si < n && ((nam >> si) & 1u)) a.added |= 1u << i;
    ++i;
  }
  return a;
}

/* One input dim of `size` sliced into p (begin, stride, count): the count, or -2 if invalid. */
static int slice_dim(fx_slice_plan *p, int in_dim, int size, int start_v, int stop_v, int stride, int bmask,
                     int emask, int shrink, int offset) {
  if (stride == 0) return -2;
  const int s = ss_start(start_v, stride, size, bmask);
  if (shrink) {
    /* one element at s; TFLite's loop yields nothing for a negative stride here,
     * we take the element (TensorFlow semantics). Out-of-range index: invalid. */
    if (s < 0 || s >= size) return -2;
    p->begin[in_dim] = s;
    p->stride[in_dim] = 1;
    p->size[in_dim] = 1;
    return 1;
  }
  const int e = ss_end(stop_v, s, stride, size, emask, offset);
  int cnt;
  if (stride > 0) cnt = e > s ? (int)(((long long)e - s + stride - 1) / stride) : 0;
  else cnt = s > e ? (int)(((long long)s - e + (-(long long)stride) - 1) / -(long long)stride) : 0;
  if (offset) {
    /* TFLite sizes the output from the raw `end` in offset mode: must agree */
    long long want = stride > 0 ? ((long long)stop_v + stride - 1) / stride
                                : ((long long)-stop_v + (-(long long)stride) - 1) / -(long long)stride;
    if (want < 0) want = 0;
    if (want != cnt) return -2;
  }
  p->begin[in_dim] = s;
  p->stride[in_dim] = stride;
  p->size[in_dim] = cnt;
  return cnt;
}

int fx_strided_slice_plan(const fx_shape *xs, int n, const int *begin, const int *end,
                          const int *strides, int begin_mask, int end_mask, int ellipsis_mask,
                          int new_axis_mask, int shrink_axis_mask, int offset, fx_slice_plan *p) {
  const int R = xs->rank;
  if (R < 0 || R > FX_MAX_RANK || n < 0 || n > 30) return -2;
  const unsigned nm = (1u << n) - 1u;
  const unsigned bm = (unsigned)begin_mask & nm, em = (unsigned)end_mask & nm;
  const unsigned elm = (unsigned)ellipsis_mask & nm, nam = (unsigned)new_axis_mask & nm;
  const unsigned sam = (unsigned)shrink_axis_mask & nm;
  if (elm & (elm - 1u)) return -1; /* more than one ellipsis */
  if (offset && (elm || nam)) return -1;

  int num_add = 0;
  for (int i = 0; i < n; ++i)
    if (!((elm >> i) & 1u) && ((nam >> i) & 1u)) ++num_add;
  const int E = R + num_add; /* effective rank */
  if (E > FX_MAX_RANK) return -1;
  /* spec entries that consume an input dim */
  const int consumed = n - (elm ? 1 : 0) - num_add;
  if (consumed > R) return -2;
  /* An ellipsis standing for zero dims: TFLite still expands it to one dim
   * (diverging from TensorFlow), so leave that case to the stock kernel. */
  if (elm && consumed == R) return -1;

  const ss_axes ax = expand_ellipsis(n, R, E, num_add, elm, nam);
  const unsigned eff_ell = ax.ell, eff_new = ax.added;
  const int ell_start = ax.ell_start, expanded = ax.expanded;

  memset(p, 0, sizeof *p);
  p->rank = R;
  int added_axes = 0, out_rank = 0;
  for (int i = 0; i < E; ++i) {
    const int past_ell = ell_start < E && i > ell_start;
    int in_dim = -1, start_v = 0, stop_v = 0, stride = 1, bmask = 0, emask = 0, shrink = 0;
    if ((eff_ell >> i) & 1u) {
      in_dim = i - added_axes;
      bmask = emask = 1;
    } else if ((eff_new >> i) & 1u) {
      ++added_axes;
      if (out_rank >= FX_MAX_RANK) return -1;
      p->out.d[out_rank++] = 1;
      continue;
    } else if (i >= n + expanded) {
      in_dim = i - added_axes;
      bmask = emask = 1;
    } else {
      const int orig = i - (past_ell ? expanded : 0);
      if (orig < 0 || orig >= n) return -2;
      in_dim = i - added_axes;
      start_v = begin[orig];
      stop_v = end[orig];
      stride = strides[orig];
      bmask = (bm >> orig) & 1u;
      emask = (em >> orig) & 1u;
      shrink = (sam >> orig) & 1u;
    }
    if (in_dim < 0 || in_dim >= R) return -2;
    const int cnt = slice_dim(p, in_dim, xs->d[in_dim], start_v, stop_v, stride, bmask, emask, shrink, offset);
    if (cnt < 0) return -2;
    if (shrink) continue;
    if (out_rank >= FX_MAX_RANK) return -1;
    p->out.d[out_rank++] = cnt;
  }
  p->out.rank = out_rank;
  return 0;
}

void fx_strided_slice(const void *x, const fx_shape *xs, const fx_slice_plan *p, size_t esize,
                      void *y) {
  const int R = p->rank;
  ptrdiff_t istr[FX_MAX_RANK];
  ptrdiff_t acc = 1, off = 0;
  size_t total = 1;
  for (int i = R - 1; i >= 0; --i) { istr[i] = acc; acc *= xs->d[i]; }
  for (int i = 0; i < R; ++i) {
    total *= (size_t)(p->size[i] > 0 ? p->size[i] : 0);
    off += (ptrdiff_t)p->begin[i] * istr[i];
  }
  if (total == 0) return;
  const char *xb = (const char *)x;
  char *yb = (char *)y;
  if (R == 0) { memcpy(yb, xb, esize); return; }
  /* (count, step) per dim, dropping size-1 dims and merging contiguous runs */
  size_t n[FX_MAX_RANK];
  ptrdiff_t st[FX_MAX_RANK];
  int k = 0;
  for (int i = 0; i < R; ++i) {
    const size_t c = (size_t)p->size[i];
    const ptrdiff_t s = (ptrdiff_t)p->stride[i] * istr[i];
    if (c == 1) continue;
    if (k > 0 && st[k - 1] == s * (ptrdiff_t)c) { n[k - 1] *= c; st[k - 1] = s; continue; }
    n[k] = c; st[k] = s; ++k;
  }
  if (k == 0) { memcpy(yb, xb + off * (ptrdiff_t)esize, esize); return; }
  const size_t inner = n[k - 1];
  const ptrdiff_t sin = st[k - 1];
  const size_t rows = total / inner;
  size_t idx[FX_MAX_RANK] = {0};
  for (size_t r = 0; r < rows; ++r) {
    if (sin == 1) memcpy(yb, xb + off * (ptrdiff_t)esize, inner * esize);
    else fx_copy_strided(yb, xb + off * (ptrdiff_t)esize, inner, sin, esize);
    yb += inner * esize;
    fx_index_next(idx, n, st, k - 1, &off);
  }
}
