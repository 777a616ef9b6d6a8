/* Shape inference for the IR: output shapes from input shapes and constant inputs, one
 * function per operation (the infer column of ops.inc). Runs at every partition prepare (so
 * resize_tensor_input works) and at load-time folding. */
#include <math.h>
#include <stdint.h>
#include <string.h>
#include "graph.h"

static fx_tensor *T(fx_graph *g, int id) { return id >= 0 ? &g->tensors[id] : NULL; }

const char *fx_const_ints(const fx_graph *g, int id, int *vals, int cap, int *n) {
  const fx_tensor *t = id >= 0 && id < g->n_tensors ? &g->tensors[id] : NULL;
  if (!t || t->storage != FX_ST_CONST || !t->cdata) return "needs a constant tensor";
  size_t count = fx_shape_numel(&t->shape);
  if (count > (size_t)cap) return "constant has too many elements";
  for (size_t i = 0; i < count; i++) {
    int64_t v;
    if (t->dtype == FX_I32) v = ((const int32_t *)t->cdata)[i];
    else if (t->dtype == FX_I64) v = ((const int64_t *)t->cdata)[i];
    else return "constant must be int32 or int64";
    if (v < INT32_MIN || v > INT32_MAX) return "constant out of int32 range";
    vals[i] = (int)v;
  }
  *n = (int)count;
  return NULL;
}

/* fx_const_ints for a parameter stock requires to be a 1-D tensor (a permutation, a shape, slice
 * bounds): another rank is refused there, so it is here too. */
static const char *const_vector(fx_graph *g, int id, int *vals, int cap, int *n) {
  const fx_tensor *t = T(g, id);
  if (t && t->shape.rank != 1) return "parameter tensor must be 1-D";
  return fx_const_ints(g, id, vals, cap, n);
}

/* Whether TFLite's window arithmetic (ComputeOutSize, ComputePaddingWithOffset, all int)
 * stays within int for this extent: beyond it stock computes with wrapped values, which
 * nothing here can match, so such a node stays with stock. */
static int window_fits_int(int in, int k, int stride, int dil) {
  const int64_t eff = ((int64_t)k - 1) * dil + 1, o = ((int64_t)in + stride - 1) / stride;
  return eff <= INT32_MAX && (int64_t)in + stride <= INT32_MAX && (o - 1) * stride + eff <= INT32_MAX;
}

/* The output extent (*oh, *ow) of node n's window (kh x kw, its strides, dilation dh, dw) over
 * an h x w input, as TFLite computes it; or why stock's arithmetic cannot be matched there. */
static const char *window_out(const fx_node *n, int h, int w, int kh, int kw, int dh, int dw, int *oh, int *ow) {
  if (!window_fits_int(h, kh, n->p.conv.stride_h, dh) || !window_fits_int(w, kw, n->p.conv.stride_w, dw))
    return "window arithmetic overflows int (as stock's does)";
  /* Stock's conv params keep dilations in int16 too: tflite-runtime 2.14 wraps one past it
   * (its taps land elsewhere), LiteRT refuses it. */
  if (dh > INT16_MAX || dw > INT16_MAX) return "dilation above 32767 (stock keeps it in int16)";
  int pt, pl;
  fx_node_window(n, 0, h, kh, oh, &pt); /* a transpose conv's dilation is 1, as dh and dw */
  fx_node_window(n, 1, w, kw, ow, &pl);
  /* Stock keeps padding in int16 (PaddingValues): beyond, its windows land elsewhere. */
  return pt > INT16_MAX || pl > INT16_MAX ? "padding above 32767 (stock keeps it in int16)" : NULL;
}

static const char *infer_window(fx_graph *g, fx_node *n, const fx_shape *x, int kh, int kw, int cout) {
  if (x->rank != 4) return "input must be 4-D NHWC";
  fx_shape *y = &T(g, n->out[0])->shape;
  int oh, ow;
  const char *e = window_out(n, x->d[1], x->d[2], kh, kw, n->p.conv.dil_h, n->p.conv.dil_w, &oh, &ow);
  if (e) return e;
  /* An empty input (a producer left to stock may make one at prepare) gives an empty
   * output, as stock's; otherwise a window that fits nowhere is refused. */
  const int empty = x->d[1] == 0 || x->d[2] == 0;
  if (oh < 0 || ow < 0 || (!empty && (oh == 0 || ow == 0))) return "window larger than the input";
  n->p.conv.kh = kh;
  n->p.conv.kw = kw;
  *y = (fx_shape){4, {x->d[0], oh, ow, cout}};
  return NULL;
}

int fx_reshape_shape_input(const fx_graph *g, const fx_node *n) {
  const fx_tensor *t = n->n_in == 2 && n->in[1] >= 0 && n->in[1] < g->n_tensors ? &g->tensors[n->in[1]] : NULL;
  return t && t->dtype == FX_I32 && t->shape.rank == 1;
}

const char *fx_infer_reshape(fx_graph *g, fx_node *n) {
  const fx_shape *x = &T(g, n->in[0])->shape;
  fx_shape *y = &T(g, n->out[0])->shape;
  size_t total = fx_shape_numel(x);
  if (n->p.reshape.squeeze == FX_RESHAPE_EXPAND_DIMS) { /* stock: axis in [-rank - 1, rank] */
    int axis, na;
    const char *e = fx_const_ints(g, n->in[1], &axis, 1, &na);
    if (e || na != 1) return e ? e : "axis must be one value";
    if (axis < 0) axis += x->rank + 1;
    if (axis < 0 || axis > x->rank) return "axis out of range";
    if (x->rank >= FX_MAX_RANK) return "result rank above 8";
    y->rank = x->rank + 1;
    for (int i = 0, j = 0; i < y->rank; i++) y->d[i] = i == axis ? 1 : x->d[j++];
    return NULL;
  }
  if (n->p.reshape.squeeze == FX_RESHAPE_SQUEEZE) {
    y->rank = 0;
    for (int i = 0; i < x->rank; i++) {
      int drop = n->p.reshape.squeeze_mask ? (n->p.reshape.squeeze_mask >> i) & 1 : x->d[i] == 1;
      if (drop && x->d[i] != 1) return "squeezed dimension is not 1";
      if (!drop) y->d[y->rank++] = x->d[i];
    }
    return NULL;
  }
  int dims[FX_MAX_RANK], nd;
  if (fx_reshape_shape_input(g, n)) {
    const char *e = fx_const_ints(g, n->in[1], dims, FX_MAX_RANK, &nd);
    if (e) return e;
  } else {
    nd = n->p.reshape.n_dims;
    memcpy(dims, n->p.reshape.dims, sizeof dims);
  }
  int unknown = -1;
  size_t known = 1;
  for (int i = 0; i < nd; i++) {
    if (dims[i] == -1) {
      if (unknown >= 0) return "more than one -1 in the new shape";
      unknown = i;
    } else if (dims[i] < 0) {
      return "negative dimension in the new shape";
    } else {
      known *= (size_t)dims[i];
    }
  }
  if (unknown >= 0) {
    if (known == 0 || total % known) return "new shape does not divide the element count";
    dims[unknown] = (int)(total / known);
  } else if (known != total) {
    return "new shape changes the element count";
  }
  y->rank = nd;
  memcpy(y->d, dims, sizeof dims);
  return NULL;
}

const char *fx_infer_concat(fx_graph *g, fx_node *n) {
  const fx_shape *s0 = &T(g, n->in[0])->shape;
  int pack = n->p.concat.pack;
  int rank = s0->rank + pack;
  int axis = n->p.concat.axis < 0 ? n->p.concat.axis + rank : n->p.concat.axis;
  if (axis < 0 || axis >= rank) return "axis out of range";
  n->p.concat.axis = axis;
  fx_shape y = {rank, {0}};
  for (int i = 0, j = 0; i < rank; i++) y.d[i] = (pack && i == axis) ? 1 : s0->d[j++];
  int along = 0;
  for (int k = 0; k < n->n_in; k++) {
    const fx_shape *s = &T(g, n->in[k])->shape;
    if (s->rank != s0->rank) return "inputs differ in rank";
    for (int i = 0, j = 0; i < rank; i++) {
      if (pack && i == axis) continue;
      int dk = s->d[j++];
      if (i != axis && dk != y.d[i]) return "inputs differ outside the axis";
    }
    along += pack ? 1 : s->d[axis];
  }
  y.d[axis] = along;
  T(g, n->out[0])->shape = y;
  return NULL;
}

const char *fx_infer_mean(fx_graph *g, fx_node *n) {
  const fx_shape *x = &T(g, n->in[0])->shape;
  int axes[FX_MAX_RANK * 2], na;
  const char *e = fx_const_ints(g, n->in[1], axes, FX_MAX_RANK * 2, &na);
  if (e) return e;
  unsigned mask = 0;
  for (int i = 0; i < na; i++) {
    int a = axes[i] < 0 ? axes[i] + x->rank : axes[i];
    if (a < 0 || a >= x->rank) return "axis out of range";
    mask |= 1u << a;
  }
  n->pads[0] = (int)mask; /* the kernel reads the mask from here */
  fx_shape *y = &T(g, n->out[0])->shape;
  y->rank = 0;
  for (int i = 0; i < x->rank; i++) {
    if (!((mask >> i) & 1)) y->d[y->rank++] = x->d[i];
    else if (n->p.mean.keep_dims) y->d[y->rank++] = 1;
  }
  return NULL;
}

/* The node's input x and output y shapes. */
#define X_SHAPE (&T(g, n->in[0])->shape)
#define Y_SHAPE (&T(g, n->out[0])->shape)

const char *fx_infer_same(fx_graph *g, fx_node *n) {
  *Y_SHAPE = *X_SHAPE;
  return NULL;
}

/* A layer's optional bias (input `at`) must be 1-D with one value per output channel, as
 * stock checks at prepare; the kernels read exactly cout values. */
static const char *check_bias(fx_graph *g, const fx_node *n, int at, int cout) {
  if (n->n_in <= at || n->in[at] < 0) return NULL;
  const fx_shape *b = &T(g, n->in[at])->shape;
  return b->rank == 1 && b->d[0] == cout ? NULL : "bias size != output channels";
}

const char *fx_infer_conv(fx_graph *g, fx_node *n) {
  const fx_shape *x = X_SHAPE, *f = &T(g, n->in[1])->shape;
  const char *e;
  if (f->rank != 4) return "filter must be 4-D";
  if (f->d[3] != x->d[3]) return "grouped convolution (filter depth != input depth)";
  if ((e = check_bias(g, n, 2, f->d[0])) || (e = infer_window(g, n, x, f->d[1], f->d[2], f->d[0]))) return e;
  if (n->n_in > 3 && n->in[3] >= 0 && !fx_shape_equal(&T(g, n->in[3])->shape, Y_SHAPE))
    return "resized inputs give the residual ADD fused into this conv operands of different shapes";
  return NULL;
}

const char *fx_infer_depthwise(fx_graph *g, fx_node *n) {
  const fx_shape *x = X_SHAPE, *f = &T(g, n->in[1])->shape;
  if (f->rank != 4 || f->d[0] != 1) return "filter must be [1, kh, kw, C]";
  if (x->rank == 4 && f->d[3] != x->d[3] * n->p.conv.mult) return "filter depth != input depth x multiplier";
  const char *e = check_bias(g, n, 2, f->d[3]);
  return e ? e : infer_window(g, n, x, f->d[1], f->d[2], f->d[3]);
}

const char *fx_infer_pool(fx_graph *g, fx_node *n) {
  const fx_shape *x = X_SHAPE;
  return infer_window(g, n, x, n->p.conv.kh, n->p.conv.kw, x->rank == 4 ? x->d[3] : 0);
}

/* inputs: output_shape, weights [cout, kh, kw, cin], x, bias */
const char *fx_infer_transpose_conv(fx_graph *g, fx_node *n) {
  const fx_shape *xs = &T(g, n->in[2])->shape, *f = &T(g, n->in[1])->shape;
  int v[4], nv;
  const char *e = const_vector(g, n->in[0], v, 4, &nv);
  if (e) return e;
  if (nv != 4 || xs->rank != 4 || f->rank != 4) return "transpose conv needs 4-D tensors";
  /* The forward conv of the output must give the input back. LiteRT's stock kernel refuses
   * other output shapes; tflite-runtime 2.14's runs them, and its optimized and reference
   * kernels then disagree (and wrap in int for huge strides): stock decides. */
  int ih, iw;
  if ((e = window_out(n, v[1], v[2], f->d[1], f->d[2], 1, 1, &ih, &iw))) return e;
  if (ih != xs->d[1] || iw != xs->d[2]) return "output_shape is not what the stride and padding give";
  if (f->d[3] != xs->d[3] || v[3] != f->d[0] || v[0] != xs->d[0]) return "shape mismatch";
  if ((e = check_bias(g, n, 3, f->d[0]))) return e;
  *Y_SHAPE = (fx_shape){4, {v[0], v[1], v[2], v[3]}};
  n->p.conv.kh = f->d[1];
  n->p.conv.kw = f->d[2];
  return NULL;
}

const char *fx_infer_fc(fx_graph *g, fx_node *n) {
  const fx_shape *x = X_SHAPE, *w = &T(g, n->in[1])->shape;
  fx_shape *y = Y_SHAPE;
  if (w->rank != 2) return "weights must be 2-D";
  const char *e = check_bias(g, n, 2, w->d[0]);
  if (e) return e;
  int k = w->d[1];
  size_t total = fx_shape_numel(x);
  if (k == 0 || total % (size_t)k) return "input size is not a multiple of the weights' depth";
  if (n->p.fc.keep_num_dims) {
    if (x->d[x->rank - 1] != k) return "keep_num_dims needs the last input dim == depth";
    *y = *x;
    y->d[y->rank - 1] = w->d[0];
  } else {
    *y = (fx_shape){2, {(int)(total / (size_t)k), w->d[0]}};
  }
  return NULL;
}

const char *fx_infer_binary(fx_graph *g, fx_node *n) {
  const fx_shape *x = X_SHAPE;
  fx_shape *y = Y_SHAPE;
  if (fx_broadcast_shape(x, &T(g, n->in[1])->shape, y)) return "shapes do not broadcast";
  if (n->p.bin.op == FX_B_PRELU && fx_shape_numel(y) != fx_shape_numel(x)) return "alpha broadcasts beyond the input";
  return NULL;
}

const char *fx_infer_pad(fx_graph *g, fx_node *n) {
  const fx_shape *x = X_SHAPE;
  fx_shape *y = Y_SHAPE;
  int v[2 * FX_MAX_RANK], nv;
  const fx_tensor *pt = T(g, n->in[1]);
  if (pt && (pt->shape.rank != 2 || pt->shape.d[0] != x->rank || pt->shape.d[1] != 2)) return "paddings must be [rank, 2]";
  const char *e = fx_const_ints(g, n->in[1], v, 2 * FX_MAX_RANK, &nv);
  if (e) return e;
  if (nv != 2 * x->rank) return "paddings must be [rank, 2]";
  *y = *x;
  for (int i = 0; i < x->rank; i++) {
    if (v[2 * i] < 0 || v[2 * i + 1] < 0) return "negative padding";
    y->d[i] += v[2 * i] + v[2 * i + 1];
    n->pads[2 * i] = v[2 * i];
    n->pads[2 * i + 1] = v[2 * i + 1];
  }
  return NULL;
}

const char *fx_infer_transpose(fx_graph *g, fx_node *n) {
  const fx_shape *x = X_SHAPE;
  fx_shape *y = Y_SHAPE;
  int v[FX_MAX_RANK], nv;
  const char *e = const_vector(g, n->in[1], v, FX_MAX_RANK, &nv);
  if (e) return e;
  if (nv != x->rank) return "permutation length != rank";
  unsigned seen = 0;
  y->rank = x->rank;
  for (int i = 0; i < nv; i++) {
    int p = v[i] < 0 ? v[i] + nv : v[i];
    if (p < 0 || p >= nv || (seen >> p) & 1) return "invalid permutation";
    seen |= 1u << p;
    n->perm[i] = p;
    y->d[i] = x->d[p];
  }
  return NULL;
}

/* SLICE as a strided slice: begin and size (-1: to the end) per dim, as stock checks them. */
static const char *infer_slice(fx_graph *g, fx_node *n) {
  const fx_shape *x = X_SHAPE;
  int b[FX_MAX_RANK], sz[FX_MAX_RANK], en[FX_MAX_RANK], st[FX_MAX_RANK], nb, ns;
  const char *e;
  if (x->rank > 5) return "SLICE above rank 5 (stock refuses it)";
  if ((e = const_vector(g, n->in[1], b, FX_MAX_RANK, &nb)) || (e = const_vector(g, n->in[2], sz, FX_MAX_RANK, &ns))) return e;
  if (nb != x->rank || ns != x->rank) return "begin and size must have one value per dim";
  for (int i = 0; i < x->rank; i++) {
    if (b[i] < 0 || b[i] > x->d[i]) return "slice begins outside the input";
    if (sz[i] == -1) sz[i] = x->d[i] - b[i];
    if (sz[i] < 0 || (int64_t)b[i] + sz[i] > x->d[i]) return "invalid begin and size";
    en[i] = b[i] + sz[i];
    st[i] = 1;
  }
  if (fx_strided_slice_plan(x, x->rank, b, en, st, 0, 0, 0, 0, 0, 0, &n->slice)) return "invalid slice";
  *Y_SHAPE = n->slice.out;
  return NULL;
}

const char *fx_infer_strided_slice(fx_graph *g, fx_node *n) {
  int b[FX_MAX_RANK], en[FX_MAX_RANK], s[FX_MAX_RANK], nb, ne, ns;
  const char *e;
  if (n->p.ss.slice) return infer_slice(g, n);
  if ((e = const_vector(g, n->in[1], b, FX_MAX_RANK, &nb)) || (e = const_vector(g, n->in[2], en, FX_MAX_RANK, &ne)) ||
      (e = const_vector(g, n->in[3], s, FX_MAX_RANK, &ns)))
    return e;
  if (nb != ne || nb != ns) return "begin/end/strides differ in length";
  for (int i = 0; i < ns; i++)
    if (s[i] == 0) return "zero stride";
  int r = fx_strided_slice_plan(X_SHAPE, nb, b, en, s, n->p.ss.begin_mask, n->p.ss.end_mask, n->p.ss.ellipsis_mask,
                                n->p.ss.new_axis_mask, n->p.ss.shrink_mask, n->p.ss.offset, &n->slice);
  if (r) return r == -1 ? "unsupported ellipsis/new-axis mask combination" : "invalid slice";
  *Y_SHAPE = n->slice.out;
  return NULL;
}

const char *fx_infer_resize(fx_graph *g, fx_node *n) {
  const fx_shape *x = X_SHAPE;
  int v[2], nv;
  const char *e = const_vector(g, n->in[1], v, 2, &nv);
  if (e) return e;
  if (nv != 2 || x->rank != 4 || v[0] <= 0 || v[1] <= 0) return "size must be 2 positive ints on 4-D input";
  if (!x->d[1] || !x->d[2]) return "resizing an empty input";
  *Y_SHAPE = (fx_shape){4, {x->d[0], v[0], v[1], x->d[3]}};
  if (n->kind == FX_OP_RESIZE_BILINEAR && T(g, n->in[0])->dtype == FX_I8 && !fx_resize_bilinear_q8_fits(x, Y_SHAPE))
    return "integer RESIZE_BILINEAR beyond 2^20 pixels a side (stock's 10-bit positions overflow int32)";
  return NULL;
}

const char *fx_infer_depth_to_space(fx_graph *g, fx_node *n) {
  const fx_shape *x = X_SHAPE;
  const int bs = n->p.block.block;
  if (x->rank != 4 || bs < 1) return "needs 4-D input and block >= 1";
  /* block^2 and the grown dims must fit an int */
  if ((int64_t)bs * bs > x->d[3] || (int64_t)(x->d[1] > x->d[2] ? x->d[1] : x->d[2]) * bs > INT32_MAX)
    return "block too large for the input";
  if (x->d[3] % (bs * bs)) return "depth not divisible by block^2";
  *Y_SHAPE = (fx_shape){4, {x->d[0], x->d[1] * bs, x->d[2] * bs, x->d[3] / (bs * bs)}};
  return NULL;
}

const char *fx_infer_space_to_depth(fx_graph *g, fx_node *n) {
  const fx_shape *x = X_SHAPE;
  const int bs = n->p.block.block;
  if (x->rank != 4 || bs < 1) return "needs 4-D input and block >= 1";
  if ((int64_t)bs * bs > INT32_MAX / (x->d[3] ? x->d[3] : 1)) return "block too large for the input";
  if (x->d[1] % bs || x->d[2] % bs) return "spatial dims not divisible by block";
  *Y_SHAPE = (fx_shape){4, {x->d[0], x->d[1] / bs, x->d[2] / bs, x->d[3] * bs * bs}};
  return NULL;
}

const char *fx_infer_gather(fx_graph *g, fx_node *n) {
  const fx_shape *x = X_SHAPE, *is = &T(g, n->in[1])->shape;
  fx_shape *y = Y_SHAPE;
  int axis = n->p.gather.axis < 0 ? n->p.gather.axis + x->rank : n->p.gather.axis;
  int bd = n->p.gather.batch_dims < 0 ? n->p.gather.batch_dims + is->rank : n->p.gather.batch_dims;
  if (axis < 0 || axis >= x->rank || bd < 0 || bd > axis || bd > is->rank) return "axis out of range";
  if (x->rank + is->rank - bd - 1 > FX_MAX_RANK) return "result rank too large";
  n->p.gather.axis = axis;
  n->p.gather.batch_dims = bd;
  y->rank = 0;
  for (int i = 0; i < axis; i++) y->d[y->rank++] = x->d[i];
  for (int i = bd; i < is->rank; i++) y->d[y->rank++] = is->d[i];
  for (int i = axis + 1; i < x->rank; i++) y->d[y->rank++] = x->d[i];
  return NULL;
}

/* COMPARE / LOGICAL: the broadcast of the two operands (LOGICAL_NOT: the one). */
const char *fx_infer_broadcast(fx_graph *g, fx_node *n) {
  const fx_shape *b = n->n_in > 1 ? &T(g, n->in[1])->shape : X_SHAPE;
  return fx_broadcast_shape(X_SHAPE, b, Y_SHAPE) ? "shapes do not broadcast" : NULL;
}

/* SELECT's condition as it broadcasts: version 1 takes a rank-1 condition over x's first dim. */
void fx_select_cond_shape(const fx_graph *g, const fx_node *n, fx_shape *c) {
  const fx_shape *x = &g->tensors[n->in[1]].shape;
  *c = g->tensors[n->in[0]].shape;
  if (!n->p.select.v2 && c->rank == 1 && x->rank > 1) {
    *c = (fx_shape){x->rank, {c->d[0]}};
    for (int i = 1; i < x->rank; i++) c->d[i] = 1;
  }
}

const char *fx_infer_select(fx_graph *g, fx_node *n) {
  const fx_shape *x = &T(g, n->in[1])->shape, *yv = &T(g, n->in[2])->shape;
  fx_shape c, cx;
  fx_select_cond_shape(g, n, &c);
  if (!n->p.select.v2) { /* stock's version 1: x and y alike, the condition alike or over dim 0 */
    if (!fx_shape_equal(x, yv)) return "SELECT needs x and y of one shape";
    if (!fx_shape_equal(&c, x) && !(c.rank == x->rank && c.d[0] == x->d[0] && T(g, n->in[0])->shape.rank == 1))
      return "SELECT condition neither x's shape nor its first dim";
  }
  if (fx_broadcast_shape(&c, x, &cx) || fx_broadcast_shape(&cx, yv, Y_SHAPE)) return "shapes do not broadcast";
  return NULL;
}

const char *fx_infer_layernorm(fx_graph *g, fx_node *n) {
  const fx_shape *x = X_SHAPE;
  if (x->rank != n->p.ln.rank) return "LayerNorm input rank changed"; /* its axis was the last */
  for (int k = 1; k < 3 && k < n->n_in; k++)
    if (n->in[k] >= 0 && fx_shape_numel(&T(g, n->in[k])->shape) != (size_t)x->d[x->rank - 1])
      return "LayerNorm gamma / beta length differs from the normalised axis";
  *Y_SHAPE = *x;
  return NULL;
}

/* [B,S,H,D] (seq_first) or [B,H,S,D]: the sizes and the (batch, head, seq) strides. */
static const char *attn_view(const fx_shape *s, int seq_first, int *b, int *h, int *len, int *d, ptrdiff_t st[3]) {
  if (s->rank != 4) return "attention operands must be 4-D";
  *b = s->d[0];
  *h = seq_first ? s->d[2] : s->d[1];
  *len = seq_first ? s->d[1] : s->d[2];
  *d = s->d[3];
  st[0] = (ptrdiff_t)s->d[1] * s->d[2] * s->d[3];
  st[1] = seq_first ? s->d[3] : (ptrdiff_t)s->d[2] * s->d[3];
  st[2] = seq_first ? (ptrdiff_t)s->d[2] * s->d[3] : s->d[3];
  return NULL;
}

const char *fx_node_attention(const fx_graph *g, const fx_node *n, fx_attn_params *p, fx_attn_in *q, fx_attn_in *k,
                              fx_attn_in *v, fx_attn_out *o, fx_shape *out_shape) {
  const fx_tensor *tq = &g->tensors[n->in[0]], *tk = &g->tensors[n->in[1]], *tv = &g->tensors[n->in[2]];
  int b[3], h[3], len[3], d[3];
  ptrdiff_t st[4][3];
  const char *e;
  if ((e = attn_view(&tq->shape, n->p.attn.q_seq_first, &b[0], &h[0], &len[0], &d[0], st[0])) ||
      (e = attn_view(&tk->shape, n->p.attn.k_seq_first, &b[1], &h[1], &len[1], &d[1], st[1])) ||
      (e = attn_view(&tv->shape, n->p.attn.v_seq_first, &b[2], &h[2], &len[2], &d[2], st[2])))
    return e;
  if (b[0] != b[1] || b[0] != b[2] || h[0] != h[1] || h[0] != h[2] || len[1] != len[2] || d[0] != d[1])
    return "attention operands disagree";
  memset(p, 0, sizeof *p);
  *p = (fx_attn_params){.batch = b[0], .heads = h[0], .q_len = len[0], .kv_len = len[1], .head_dim = d[0],
                        .value_dim = d[2], .scale = n->p.attn.scale, .causal = n->p.attn.causal,
                        .causal_offset = n->p.attn.causal_offset, .fill = n->p.attn.fill};
  const int of = n->p.attn.o_seq_first;
  *out_shape = (fx_shape){4, {b[0], of ? len[0] : h[0], of ? h[0] : len[0], d[2]}};
  attn_view(out_shape, of, &b[0], &h[0], &len[0], &d[0], st[3]);
  *q = (fx_attn_in){tq->ptr, st[0][0], st[0][1], st[0][2]};
  *k = (fx_attn_in){tk->ptr, st[1][0], st[1][1], st[1][2]};
  *v = (fx_attn_in){tv->ptr, st[2][0], st[2][1], st[2][2]};
  *o = (fx_attn_out){g->tensors[n->out[0]].ptr, st[3][0], st[3][1], st[3][2]};
  if (n->n_in > 3 && n->in[3] >= 0) { /* a SELECT mask broadcast to [B,H,Sq,Sk], keys contiguous */
    const fx_shape *m = &g->tensors[n->in[3]].shape;
    if (m->rank < 1 || m->rank > 4 || m->d[m->rank - 1] != p->kv_len) return "mask does not cover the keys";
    int md[4] = {1, 1, 1, 1};
    for (int i = 0; i < m->rank; i++) md[4 - m->rank + i] = m->d[i];
    if ((md[0] != 1 && md[0] != p->batch) || (md[1] != 1 && md[1] != p->heads) || (md[2] != 1 && md[2] != p->q_len))
      return "mask does not broadcast to the scores";
    p->mask_kind = FX_ATTN_MASK_SELECT;
    p->mask = g->tensors[n->in[3]].ptr;
    p->mask_row = md[2] == 1 ? 0 : p->kv_len;
    p->mask_head = md[1] == 1 ? 0 : (ptrdiff_t)md[2] * p->kv_len;
    p->mask_batch = md[0] == 1 ? 0 : (ptrdiff_t)md[1] * md[2] * p->kv_len;
  }
  return NULL;
}

const char *fx_infer_attention(fx_graph *g, fx_node *n) {
  fx_attn_params p;
  fx_attn_in q, k, v;
  fx_attn_out o;
  fx_shape ys;
  const char *e = fx_node_attention(g, n, &p, &q, &k, &v, &o, &ys);
  if (e) return e;
  *Y_SHAPE = ys;
  return NULL;
}

int fx_node_bmm_plan(const fx_graph *g, const fx_node *n, fx_bmm_plan *plan) {
  const fx_shape *a = &g->tensors[n->in[0]].shape, *b = &g->tensors[n->in[1]].shape;
  return fx_bmm_plan_init(plan, a->d, a->rank, b->d, b->rank, n->p.bmm.adj_x, n->p.bmm.adj_y);
}

const char *fx_infer_batch_matmul(fx_graph *g, fx_node *n) {
  fx_bmm_plan p;
  if (fx_node_bmm_plan(g, n, &p)) return "operands do not multiply (rank 2..6, equal depth, broadcastable batch)";
  fx_shape *y = Y_SHAPE;
  y->rank = p.rank;
  for (int i = 0; i < p.rank; i++) y->d[i] = p.dims[i];
  return NULL;
}

/* int8: stock's GEMM of an empty contraction is its own affair (the output would be the zero
 * point's requantization); such a node stays with it. */
const char *fx_infer_qbatch_matmul(fx_graph *g, fx_node *n) {
  const char *e = fx_infer_batch_matmul(g, n);
  fx_bmm_plan p;
  if (!e && !fx_node_bmm_plan(g, n, &p) && !p.k) return "int8 BATCH_MATMUL over an empty depth";
  return e;
}

const char *fx_infer_shape(fx_graph *g, fx_node *n) {
  *Y_SHAPE = (fx_shape){1, {X_SHAPE->rank}};
  return NULL;
}

/* One output of SPLIT (equal parts; stock needs the dim divisible) or SPLIT_V (sizes, at most
 * one -1 taking the rest). */
const char *fx_infer_split_part(fx_graph *g, fx_node *n) {
  const fx_shape *x = X_SHAPE;
  const int parts = n->p.split.parts;
  int axis, na;
  const char *e = fx_const_ints(g, n->in[n->n_in - 1], &axis, 1, &na);
  if (e || na != 1) return e ? e : "axis must be one value";
  if (axis < 0) axis += x->rank;
  if (axis < 0 || axis >= x->rank) return "axis out of range";
  const int dim = x->d[axis];
  int begin = 0, size;
  if (n->n_in == 2) {
    if (parts < 1 || dim % parts) return "dimension not divisible by the number of splits";
    size = dim / parts;
    begin = size * n->p.split.part;
  } else {
    int v[FX_MAX_SPLIT_PARTS], nv, rest = -1, known = 0;
    if ((e = const_vector(g, n->in[1], v, FX_MAX_SPLIT_PARTS, &nv))) return e;
    if (nv != parts) return "size_splits must have one size per output";
    for (int i = 0; i < nv; i++) {
      if (v[i] == -1 && rest < 0) rest = i;
      else if (v[i] < 0) return "invalid size_splits";
      else if ((known += v[i]) > dim) return "size_splits larger than the dimension";
    }
    if (rest >= 0) v[rest] = dim - known;
    else if (known != dim) return "size_splits do not add up to the dimension";
    for (int i = 0; i < n->p.split.part; i++) begin += v[i];
    size = v[n->p.split.part];
  }
  int b[FX_MAX_RANK] = {0}, en[FX_MAX_RANK], st[FX_MAX_RANK];
  for (int i = 0; i < x->rank; i++) {
    en[i] = i == axis ? begin + size : x->d[i];
    b[i] = i == axis ? begin : 0;
    st[i] = 1;
  }
  if (fx_strided_slice_plan(x, x->rank, b, en, st, 0, 0, 0, 0, 0, 0, &n->slice)) return "invalid split";
  *Y_SHAPE = n->slice.out;
  return NULL;
}

const char *fx_infer_broadcast_to(fx_graph *g, fx_node *n) {
  const fx_shape *x = X_SHAPE;
  fx_shape *y = Y_SHAPE;
  int v[FX_MAX_RANK], nv;
  const char *e = const_vector(g, n->in[1], v, FX_MAX_RANK, &nv);
  if (e) return e;
  if (nv < x->rank) return "shape shorter than the input's rank";
  y->rank = nv;
  for (int i = 0; i < nv; i++) {
    const int xi = i - (nv - x->rank);
    if (v[i] < 0) return "negative dimension";
    if (xi >= 0 && x->d[xi] != 1 && x->d[xi] != v[i]) return "input does not broadcast to the shape";
    y->d[i] = v[i];
  }
  return NULL;
}

const char *fx_infer_gather_nd(fx_graph *g, fx_node *n) {
  const fx_shape *x = X_SHAPE, *is = &T(g, n->in[1])->shape;
  fx_shape *y = Y_SHAPE;
  if (x->rank < 1 || is->rank < 1) return "params and indices need rank >= 1";
  const int nd = is->d[is->rank - 1];
  if (nd < 1 || nd > x->rank) return "index depth outside 1..params rank";
  if (is->rank - 1 + x->rank - nd > FX_MAX_RANK) return "result rank too large";
  y->rank = 0;
  for (int i = 0; i < is->rank - 1; i++) y->d[y->rank++] = is->d[i];
  for (int i = nd; i < x->rank; i++) y->d[y->rank++] = x->d[i];
  return NULL;
}

const char *fx_infer_fill(fx_graph *g, fx_node *n) {
  fx_shape *y = Y_SHAPE;
  int v[FX_MAX_RANK], nv;
  const char *e = const_vector(g, n->in[0], v, FX_MAX_RANK, &nv);
  if (e) return e;
  if (T(g, n->in[1])->shape.rank != 0) return "value must be a scalar";
  y->rank = nv;
  for (int i = 0; i < nv; i++) {
    if (v[i] < 0) return "negative dimension";
    y->d[i] = v[i];
  }
  return NULL;
}

/* One scalar of a constant int32 / int64 / float32 tensor, as a double. */
static const char *const_scalar(fx_graph *g, int id, double *v) {
  const fx_tensor *t = T(g, id);
  if (t->storage != FX_ST_CONST || !t->cdata) return "its size depends on run-time values";
  if (fx_shape_numel(&t->shape) != 1) return "start, limit and delta must be scalars";
  *v = t->dtype == FX_I32 ? ((const int32_t *)t->cdata)[0] : t->dtype == FX_I64 ? (double)((const int64_t *)t->cdata)[0]
                                                                                : ((const float *)t->cdata)[0];
  return NULL;
}

/* RANGE: the element count as stock computes it (range.cc GetSize), in the element type. */
const char *fx_infer_range(fx_graph *g, fx_node *n) {
  double start, limit, delta;
  const char *e;
  if ((e = const_scalar(g, n->in[0], &start)) || (e = const_scalar(g, n->in[1], &limit)) ||
      (e = const_scalar(g, n->in[2], &delta)))
    return e;
  if (delta == 0 || (start > limit && delta > 0) || (start < limit && delta < 0)) return "delta does not lead to limit";
  double count;
  if (T(g, n->in[0])->dtype == FX_F32) {
    const float d = (float)(((float)limit - (float)start) / (float)delta);
    count = ceil(fabs((double)d));
  } else {
    if (fabs(limit - start) > 9.0e15 || fabs(delta) > 9.0e15) return "range arithmetic beyond int64";
    if (T(g, n->in[0])->dtype == FX_I32 && fabs(limit - start) > INT32_MAX) return "limit - start overflows int32";
    count = floor((fabs(limit - start) + fabs(delta) - 1) / fabs(delta));
  }
  if (!(count >= 0 && count <= (double)(1 << 28))) return "range too long";
  *Y_SHAPE = (fx_shape){1, {(int)count}};
  return NULL;
}

const char *fx_infer_cumsum(fx_graph *g, fx_node *n) {
  const fx_shape *x = X_SHAPE;
  int axis, na;
  if (T(g, n->in[1])->shape.rank != 0) return "axis must be a scalar";
  const char *e = fx_const_ints(g, n->in[1], &axis, 1, &na);
  if (e || na != 1) return e ? e : "axis must be one value";
  if (axis < 0) axis += x->rank;
  if (axis < 0 || axis >= x->rank) return "axis out of range";
  n->p.cumsum.axis = axis;
  *Y_SHAPE = *x;
  return NULL;
}

const char *fx_infer_node(fx_graph *g, fx_node *n) {
  if (n->fused == FX_FUSED_COPY) { /* its producer computed the value (fuse.c) */
    /* an integer swish taken by its producer still prepares the table the producer applies */
    const char *e = n->kind == FX_OP_QELEM ? fx_op_defs[n->kind].infer(g, n) : NULL;
    if (!e) *Y_SHAPE = T(g, n->fuse_from)->shape;
    return e;
  }
  return n->kind >= 0 && n->kind < FX_OP_COUNT ? fx_op_defs[n->kind].infer(g, n) : "unknown op";
}
