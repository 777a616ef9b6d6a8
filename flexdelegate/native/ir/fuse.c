/* Activation fusion at init: EfficientNet-style graphs spell swish as LOGISTIC(y) then
 * MUL(y, that), and squeeze-excite gates as a conv then LOGISTIC. Run as separate ops, each
 * streams the whole tensor through memory again (swish: 5 passes over a tensor that no longer
 * fits in L2); fused, the producer applies the curve to each output tile it just wrote.
 *
 * Only the producer's activation and the tail nodes' `fused` mark change: the nodes, tensors
 * and lifetimes stay as they were, so memory plans (greedy or budgeted) are untouched.
 *
 * Residual ADDs (ResNet blocks, MobileNetV2's inverted residuals): the last conv of a block
 * adds the shortcut to each output tile while it is in cache, instead of the ADD streaming
 * three tensors through memory once more. The conv gains the shortcut as an input (so every
 * lifetime and budget plan sees it read there); the ADD keeps only the conv's output as its
 * input and copies it, which the arena's in-place rule turns into no copy at all. */
#include <stdlib.h>
#include <string.h>
#include "graph.h"
#include "kernels/layernorm/layernorm.h"
#include "kernels/ops/ops.h"
#include "qop.h"

static int is_f32_arena(const fx_graph *g, int id) {
  return id >= 0 && g->tensors[id].storage == FX_ST_ARENA && g->tensors[id].dtype == FX_F32;
}

/* Nodes reading tensor t (each read counted); the first two readers in who[]. */
static int readers(const fx_graph *g, int t, fx_node **who) {
  int count = 0;
  for (int i = 0; i < g->n_nodes; i++) {
    fx_node *m = &g->nodes[i];
    for (int k = 0; k < m->n_in; k++)
      if (m->in[k] == t) {
        if (count < 2) who[count] = m;
        count++;
      }
  }
  return count;
}

static int is_logistic_of(const fx_node *m, int t) {
  return m->kind == FX_OP_UNARY && m->p.un.kind == FX_U_LOGISTIC && m->n_in >= 1 && m->in[0] == t &&
         !m->at_prepare && !m->fused;
}

static int is_mul_of(const fx_node *m, int a, int b) {
  return m->kind == FX_OP_BINARY && m->p.bin.op == FX_B_MUL && m->n_in == 2 && m->act == FLEX_ACT_NONE &&
         ((m->in[0] == a && m->in[1] == b) || (m->in[0] == b && m->in[1] == a)) && !m->at_prepare && !m->fused;
}

static int fuse_residual(fx_graph *g, fx_node *n, fx_node *add) {
  const int y = n->out[0];
  if (add->kind != FX_OP_BINARY || add->p.bin.op != FX_B_ADD || add->n_in != 2 || add->at_prepare || add->fused)
    return 0;
  const int r = add->in[0] == y ? add->in[1] : add->in[0];
  if (r == y || r < 0 || g->tensors[r].dtype != FX_F32 || g->tensors[r].storage == FX_ST_CONST) return 0;
  const fx_shape *ys = &g->tensors[y].shape;
  if (!fx_shape_equal(&g->tensors[r].shape, ys) || !fx_shape_equal(&g->tensors[add->out[0]].shape, ys)) return 0;
  if (fx_graph_producer(g, r) > (int)(n - g->nodes)) return 0; /* the shortcut must exist when n runs */
  int *in = realloc(n->in, 4 * sizeof *in);
  if (!in) return -1;
  for (int k = n->n_in; k < 3; k++) in[k] = -1; /* no bias */
  in[3] = r;
  n->in = in;
  n->n_in = 4;
  n->res_act = add->act;
  add->in[0] = y;
  add->n_in = 1;
  add->fused = FX_FUSED_COPY;
  add->fuse_from = y;
  return 0;
}

/* ---- LayerNorm: the converter's op-by-op spellings (kernels/attention/NOTES.md) become one
 * LAYERNORM node (kernels/layernorm). Starting at MEAN(x) over the last axis:
 *   mean = MEAN(x); var = MEAN(SQUARED_DIFFERENCE(x, mean)); r = RSQRT(ADD(var, eps))
 *   affine:  [-mean = NEG(mean)]; g = MUL(r, gamma) or r; y = ADD(MUL(x, g), [ADD](MUL(-mean, g), [beta]))
 *   rms:     y = MUL(MUL(x, r), gamma)  (Keras rms_scaling: centred variance, no shift)
 * Every intermediate tensor must be an arena float32 read only inside the pattern (a shared
 * MEAN or RSQRT, a partition output, another reader: no fusion). The last node becomes the
 * LAYERNORM (its inputs x, gamma, beta: x's lifetime reaches it), the others are skipped. ---- */
#define LN_MAX_NODES 12

typedef struct {
  fx_node *nodes[LN_MAX_NODES];
  int n;
} ln_match;

static int plain(const fx_node *m) { return !m->at_prepare && !m->fused && m->act == FLEX_ACT_NONE; }

static int is_binary(const fx_node *m, int op) {
  return m->kind == FX_OP_BINARY && m->p.bin.op == op && m->n_in == 2 && plain(m);
}

/* The other operand of binary m, one of whose inputs is t; -1 if t is not an input. */
static int other_of(const fx_node *m, int t) {
  return m->in[0] == t ? m->in[1] : m->in[1] == t ? m->in[0] : -1;
}

/* The one reader of intermediate tensor t (an arena float32 read exactly once), or NULL. */
static fx_node *sole_reader(const fx_graph *g, int t) {
  fx_node *who[2];
  return is_f32_arena(g, t) && readers(g, t, who) == 1 ? who[0] : NULL;
}

static int is_mean_last(const fx_graph *g, const fx_node *m, int x) {
  const fx_shape *xs = &g->tensors[x].shape;
  return m->kind == FX_OP_MEAN && m->in[0] == x && plain(m) && m->p.mean.keep_dims && xs->rank >= 1 &&
         (unsigned)m->pads[0] == 1u << (xs->rank - 1);
}

/* A float32 constant of numel n that broadcasts along the last axis only. */
static int is_row_const(const fx_graph *g, int t, int c) {
  if (t < 0 || g->tensors[t].storage != FX_ST_CONST || g->tensors[t].dtype != FX_F32) return 0;
  const fx_shape *s = &g->tensors[t].shape;
  if (s->rank < 1 || s->d[s->rank - 1] != c) return 0;
  for (int i = 0; i + 1 < s->rank; i++)
    if (s->d[i] != 1) return 0;
  return 1;
}

static void take(ln_match *m, fx_node *n) {
  if (m->n < LN_MAX_NODES) m->nodes[m->n++] = n;
}

/* MEAN(x), SQUARED_DIFFERENCE(x, mean), MEAN, ADD(eps), RSQRT: the tensor r = rsqrt(var + eps), or
 * -1; *neg is the NEG(mean) the affine form also reads mean with (NULL: the rms form). */
static int match_inv_std(fx_graph *g, fx_node *m1, ln_match *lm, fx_node **neg, float *eps) {
  const int x = m1->in[0], mean = m1->out[0];
  if (g->tensors[x].dtype != FX_F32 || !is_mean_last(g, m1, x) || !is_f32_arena(g, mean)) return -1;
  fx_node *who[2], *sd = NULL;
  const int uses = readers(g, mean, who);
  if (uses < 1 || uses > 2) return -1;
  for (int k = 0; k < uses; k++) {
    fx_node *w = who[k];
    if (w->kind == FX_OP_UNARY && w->p.un.kind == FX_U_NEG && plain(w) && !*neg) *neg = w;
    else if (is_binary(w, FX_B_SQDIFF) && other_of(w, mean) == x && !sd) sd = w;
  }
  if (!sd || (uses == 2 && !*neg)) return -1;
  take(lm, m1);
  take(lm, sd);
  fx_node *m2 = sole_reader(g, sd->out[0]);
  if (!m2 || !is_mean_last(g, m2, sd->out[0])) return -1;
  take(lm, m2);
  fx_node *add_eps = sole_reader(g, m2->out[0]);
  if (!add_eps || !is_binary(add_eps, FX_B_ADD)) return -1;
  const int e = other_of(add_eps, m2->out[0]);
  if (e < 0 || g->tensors[e].storage != FX_ST_CONST || g->tensors[e].dtype != FX_F32 ||
      fx_shape_numel(&g->tensors[e].shape) != 1 || !g->tensors[e].cdata)
    return -1;
  *eps = *(const float *)g->tensors[e].cdata;
  take(lm, add_eps);
  fx_node *rs = sole_reader(g, add_eps->out[0]);
  if (!rs || rs->kind != FX_OP_UNARY || rs->p.un.kind != FX_U_RSQRT || !plain(rs)) return -1;
  take(lm, rs);
  return is_f32_arena(g, rs->out[0]) ? rs->out[0] : -1;
}

/* Keras' rms_scaling form after r: MUL(MUL(x, r), gamma) or MUL(x, r); its last node or NULL. */
static fx_node *match_rms(fx_graph *g, ln_match *lm, int x, int r, int c, int *gamma) {
  fx_node *xr = sole_reader(g, r);
  if (!xr || !is_binary(xr, FX_B_MUL) || other_of(xr, r) != x) return NULL;
  take(lm, xr);
  fx_node *gm = is_f32_arena(g, xr->out[0]) ? sole_reader(g, xr->out[0]) : NULL;
  if (gm && is_binary(gm, FX_B_MUL) && is_row_const(g, other_of(gm, xr->out[0]), c)) {
    *gamma = other_of(gm, xr->out[0]);
    take(lm, gm);
    return gm;
  }
  return xr;
}

/* The affine form after r: g = MUL(r, gamma) (or r), x*g + (-mean)*g [+ beta]; its last ADD or NULL. */
static fx_node *match_affine(fx_graph *g, ln_match *lm, int x, int r, fx_node *neg, int c, int *gamma, int *beta) {
  fx_node *who[2];
  take(lm, neg);
  const int nm = neg->out[0];
  if (!sole_reader(g, nm)) return NULL;
  int gt = r;
  if (readers(g, r, who) == 1) { /* g = MUL(r, gamma) */
    fx_node *gm = who[0];
    if (!is_binary(gm, FX_B_MUL) || !is_row_const(g, other_of(gm, r), c)) return NULL;
    *gamma = other_of(gm, r);
    gt = gm->out[0];
    take(lm, gm);
    if (!is_f32_arena(g, gt)) return NULL;
  }
  if (readers(g, gt, who) != 2) return NULL;
  fx_node *a = NULL, *b = NULL;
  for (int k = 0; k < 2; k++) {
    if (is_binary(who[k], FX_B_MUL) && other_of(who[k], gt) == nm && !a) a = who[k];
    else if (is_binary(who[k], FX_B_MUL) && other_of(who[k], gt) == x && !b) b = who[k];
  }
  if (!a || !b) return NULL;
  take(lm, a);
  take(lm, b);
  int shift = a->out[0];
  fx_node *last = sole_reader(g, shift);
  if (!last || !is_binary(last, FX_B_ADD)) return NULL;
  if (other_of(last, shift) != b->out[0]) { /* ADD(-mean*g, beta) first */
    if (!is_row_const(g, other_of(last, shift), c)) return NULL;
    *beta = other_of(last, shift);
    take(lm, last);
    shift = last->out[0];
    last = sole_reader(g, shift);
    if (!last || !is_binary(last, FX_B_ADD) || other_of(last, shift) != b->out[0]) return NULL;
  }
  return sole_reader(g, b->out[0]) ? last : NULL;
}

/* MEAN(x) -> ... -> y; the last node of the pattern, or NULL (and *ln set) when it holds. */
static fx_node *match_layernorm(fx_graph *g, fx_node *m1, ln_match *lm, int *gamma, int *beta, float *eps, int *mode) {
  fx_node *neg = NULL;
  const int r = match_inv_std(g, m1, lm, &neg, eps);
  if (r < 0) return NULL;
  const int x = m1->in[0];
  const fx_shape *xs = &g->tensors[x].shape;
  const int c = xs->d[xs->rank - 1];
  *gamma = *beta = -1;
  if (!neg) {
    fx_node *last = match_rms(g, lm, x, r, c, gamma);
    if (last) *mode = FX_LN_KERAS_RMS;
    return last;
  }
  *mode = FX_LN_AFFINE;
  fx_node *last = match_affine(g, lm, x, r, neg, c, gamma, beta);
  return last && fx_shape_equal(&g->tensors[last->out[0]].shape, xs) ? last : NULL;
}

static int fuse_layernorm(fx_graph *g, fx_node *m1) {
  ln_match lm = {.n = 0};
  int gamma, beta, mode = 0;
  float eps = 0;
  const int x = m1->in[0];
  fx_node *last = match_layernorm(g, m1, &lm, &gamma, &beta, &eps, &mode);
  if (!last || lm.n >= LN_MAX_NODES) return 0;
  int *in = realloc(last->in, 3 * sizeof *in);
  if (!in) return -1;
  in[0] = x;
  in[1] = gamma;
  in[2] = beta;
  last->in = in;
  last->n_in = 3;
  last->kind = FX_OP_LAYERNORM;
  last->p.ln.eps = eps;
  last->p.ln.mode = mode;
  last->p.ln.rank = g->tensors[x].shape.rank;
  for (int i = 0; i < lm.n; i++)
    if (lm.nodes[i] != last) lm.nodes[i]->fused = FX_FUSED_SKIP;
  return 0;
}

/* ---- Attention: BATCH_MATMUL(Q, Kᵀ) -> [MUL scale] -> [SELECT_V2(mask, ·, fill)] -> SOFTMAX ->
 * BATCH_MATMUL(·, V) -> [TRANSPOSE back to [B,S,H,D]] becomes one ATTENTION node
 * (kernels/attention) that reads Q, K, V before the converter's TRANSPOSEs (through strides) and
 * writes the output after its last one: the score matrix is never stored. A constant causal
 * mask becomes the kernel's causal flag (its upper key tiles are never computed). Refused when
 * an intermediate is read elsewhere or is a partition output, or the shapes do not line up. ---- */
static int is_transpose(const fx_node *m, int p0, int p1, int p2, int p3) {
  return m && m->kind == FX_OP_TRANSPOSE && plain(m) && m->n_in >= 1 && m->perm[0] == p0 && m->perm[1] == p1 &&
         m->perm[2] == p2 && m->perm[3] == p3;
}

/* t's producer if it is a 4-D TRANSPOSE by perm (p0..p3) read only by `by`, else NULL. */
static fx_node *transpose_into(fx_graph *g, int t, const fx_node *by, int p0, int p1, int p2, int p3) {
  const int i = fx_graph_producer(g, t);
  if (i < 0 || g->tensors[t].shape.rank != 4 || sole_reader(g, t) != by) return NULL;
  fx_node *m = &g->nodes[i];
  return is_transpose(m, p0, p1, p2, p3) ? m : NULL;
}

static int scalar_const(const fx_graph *g, int t, float *v) {
  if (t < 0 || g->tensors[t].storage != FX_ST_CONST || g->tensors[t].dtype != FX_F32 || !g->tensors[t].cdata ||
      fx_shape_numel(&g->tensors[t].shape) != 1)
    return 0;
  *v = *(const float *)g->tensors[t].cdata;
  return 1;
}

/* A constant bool mask whose every [Sq, Sk] slice is the same causal triangle. */
static int causal_mask(const fx_graph *g, int t, int q_len, int kv_len, int *offset) {
  const fx_tensor *m = &g->tensors[t];
  if (m->storage != FX_ST_CONST || !m->cdata || m->shape.rank < 2) return 0;
  if (m->shape.d[m->shape.rank - 1] != kv_len || m->shape.d[m->shape.rank - 2] != q_len) return 0;
  const size_t slice = (size_t)q_len * (size_t)kv_len, slices = fx_shape_numel(&m->shape) / slice;
  for (size_t i = 0; i < slices; i++) {
    int off;
    if (!fx_attn_mask_is_causal((const uint8_t *)m->cdata + i * slice, q_len, kv_len, kv_len, &off)) return 0;
    if (i && off != *offset) return 0;
    *offset = off;
  }
  return 1;
}

static int fuse_attention(fx_graph *g, fx_node *b1) {
  fx_node *skip[8];
  int ns = 0;
  if (!plain(b1) || b1->p.bmm.adj_x || g->tensors[b1->in[0]].shape.rank != 4) return 0;
  fx_node attn = {0};
  int in[4] = {b1->in[0], b1->in[1], -1, -1};
  fx_node *t;
  if ((t = transpose_into(g, b1->in[0], b1, 0, 2, 1, 3))) { in[0] = t->in[0]; attn.p.attn.q_seq_first = 1; skip[ns++] = t; }
  if (!b1->p.bmm.adj_y) { /* Kᵀ: the converter's TRANSPOSE [0,2,3,1] of K in [B,Sk,H,D] */
    if (!(t = transpose_into(g, b1->in[1], b1, 0, 2, 3, 1))) return 0;
    in[1] = t->in[0];
    attn.p.attn.k_seq_first = 1;
    skip[ns++] = t;
  } else if ((t = transpose_into(g, b1->in[1], b1, 0, 2, 1, 3))) {
    in[1] = t->in[0];
    attn.p.attn.k_seq_first = 1;
    skip[ns++] = t;
  }
  skip[ns++] = b1;
  int s = b1->out[0];
  fx_node *cur = sole_reader(g, s);
  float scale = 1.0f, fill = 0.0f;
  if (cur && is_binary(cur, FX_B_MUL) && scalar_const(g, other_of(cur, s), &scale)) {
    skip[ns++] = cur;
    s = cur->out[0];
    cur = sole_reader(g, s);
  }
  if (cur && cur->kind == FX_OP_SELECT && cur->p.select.v2 && plain(cur) && cur->in[1] == s &&
      scalar_const(g, cur->in[2], &fill) && g->tensors[cur->in[0]].dtype == FX_BOOL) {
    in[3] = cur->in[0];
    skip[ns++] = cur;
    s = cur->out[0];
    cur = sole_reader(g, s);
  }
  if (!cur || cur->kind != FX_OP_SOFTMAX || !plain(cur) || cur->p.softmax.beta != 1.0f) return 0;
  skip[ns++] = cur;
  const int pt = cur->out[0];
  fx_node *b2 = sole_reader(g, pt);
  if (!b2 || b2->kind != FX_OP_BATCH_MATMUL || !plain(b2) || b2->p.bmm.adj_x || b2->p.bmm.adj_y || b2->in[0] != pt)
    return 0;
  in[2] = b2->in[1];
  if ((t = transpose_into(g, b2->in[1], b2, 0, 2, 1, 3))) { in[2] = t->in[0]; attn.p.attn.v_seq_first = 1; skip[ns++] = t; }
  fx_node *last = b2;
  fx_node *ot = is_f32_arena(g, b2->out[0]) ? sole_reader(g, b2->out[0]) : NULL;
  if (ot && is_transpose(ot, 0, 2, 1, 3)) {
    skip[ns++] = b2;
    last = ot;
    attn.p.attn.o_seq_first = 1;
  }
  attn.p.attn.scale = scale;
  attn.p.attn.fill = fill;
  /* Check the shapes line up before changing anything. */
  attn.kind = FX_OP_ATTENTION;
  attn.in = in;
  attn.n_in = 4;
  attn.out = last->out;
  attn.n_out = 1;
  fx_attn_params p;
  fx_attn_in q, k, v;
  fx_attn_out o;
  fx_shape ys;
  if (fx_node_attention(g, &attn, &p, &q, &k, &v, &o, &ys) || !fx_shape_equal(&ys, &g->tensors[last->out[0]].shape))
    return 0;
  if (in[3] >= 0 && causal_mask(g, in[3], p.q_len, p.kv_len, &attn.p.attn.causal_offset)) {
    attn.p.attn.causal = 1;
    in[3] = -1;
  }
  int *nin = realloc(last->in, 4 * sizeof *nin);
  if (!nin) return -1;
  memcpy(nin, in, sizeof in);
  last->in = nin;
  last->n_in = 4;
  last->kind = FX_OP_ATTENTION;
  last->p.attn = attn.p.attn;
  for (int i = 0; i < ns; i++) skip[i]->fused = FX_FUSED_SKIP;
  return 0;
}

/* Integer swish, MUL(x, LOGISTIC(x)) with the sigmoid read by that MUL alone (EfficientNet-B0
 * INT8: 49 of them): the MUL becomes one 256-entry table of x (qop.h), the LOGISTIC is skipped.
 * Two passes, one of them MUL's requantization, become one byte lookup. */
static int fuse_qswish(fx_graph *g, fx_node *lg) {
  if (fx_qop_kind(lg) != FX_QOP_LOGISTIC || lg->at_prepare || lg->fused || lg->n_in != 1 || lg->n_out != 1) return 0;
  const int x = lg->in[0], s = lg->out[0];
  fx_node *who[2];
  if (g->tensors[s].storage != FX_ST_ARENA || readers(g, s, who) != 1) return 0;
  fx_node *mul = who[0];
  if (fx_qop_kind(mul) != FX_QOP_MUL || mul->at_prepare || mul->fused || mul->n_in != 2 ||
      !((mul->in[0] == x && mul->in[1] == s) || (mul->in[0] == s && mul->in[1] == x)))
    return 0;
  fx_qop_fuse_swish(mul, mul->in[0] == x ? 0 : 1);
  lg->fused = FX_FUSED_SKIP;
  /* An int8 conv / FC / depthwise producing x for these two alone takes the table too: it
   * looks up each output tile while it is in L1 instead of a pass over the map (EfficientNet-B0
   * INT8: 0.9 of its 7 ms). */
  const int pi = fx_graph_producer(g, x);
  fx_node *p = pi >= 0 ? &g->nodes[pi] : NULL, *xr[2];
  if (p && (p->kind == FX_OP_QCONV || p->kind == FX_OP_QFC || p->kind == FX_OP_QDEPTHWISE) && !p->at_prepare &&
      !p->fused && !p->post_table && p->n_out == 1 && g->tensors[x].storage == FX_ST_ARENA && readers(g, x, xr) == 2) {
    p->post_table = 1 + (int)(mul - g->nodes);
    mul->fused = FX_FUSED_COPY;
    mul->fuse_from = x;
  }
  return 0;
}

/* A hybrid conv / FC (float activations on the int8 GEMM: qlayer.c) fuses as its FP32 form. */
static int hybrid_layer(const fx_graph *g, const fx_node *n) {
  return (n->kind == FX_OP_QCONV || n->kind == FX_OP_QFC) && g->tensors[n->in[0]].dtype == FX_F32;
}

/* ---- PAD folded into the window that reads it: Keras' ZeroPadding2D before a VALID conv or max
 * pool (ResNet's stem and its pool), else a pass writing the whole padded tensor (3.2 MB before
 * ResNet-50's float max pool) that the next node reads back. The reader takes the PAD's input and
 * pads its window by as much (graph.h pad_*); the PAD is skipped and its output gets no buffer
 * (plan/greedy.c). Exact where stock's result cannot tell the difference:
 *   conv, depthwise: the fill adds nothing to the sums (float zeros over finite weights; the
 *     input zero point of an int8 / uint8 layer, which is how it pads anyway);
 *   max pool: stock's padding cells do not count, the PAD's do: the same when no value is below
 *     the fill (the producer clamps at it: a fused RELU / RELU6, an int8 range from the fill up).
 * Height and width only, at most what a SAME window pads (the kernels' geometry is SAME's). ---- */
static int pad_amounts(const fx_graph *g, const fx_node *pad, int v[8]) {
  int n = 0;
  if (pad->n_in < 2 || fx_const_ints(g, pad->in[1], v, 8, &n) || n != 8) return 0;
  for (int i = 0; i < 8; i++)
    if (v[i] < 0 || v[i] > 64) return 0;
  return v[0] == 0 && v[1] == 0 && v[6] == 0 && v[7] == 0;
}

/* The fill as the data's value: float 0 (or the scalar value input), an int8 / uint8 zero point. */
static int pad_fill(const fx_graph *g, const fx_node *pad, double *fill) {
  const fx_tensor *x = &g->tensors[pad->in[0]];
  const int value = pad->n_in > 2 && pad->in[2] >= 0;
  if (x->dtype == FX_F32) {
    const fx_tensor *v = value ? &g->tensors[pad->in[2]] : NULL;
    if (v && (v->storage != FX_ST_CONST || !v->cdata || v->dtype != FX_F32)) return 0;
    *fill = v ? *(const float *)v->cdata : 0.0;
    return *fill == 0.0;
  }
  if ((x->dtype != FX_I8 && x->dtype != FX_U8) || x->quant.n == 0) return 0;
  if (!fx_quant_equal(&x->quant, &g->tensors[pad->out[0]].quant)) return 0;
  if (value) {
    const fx_tensor *v = &g->tensors[pad->in[2]];
    if (v->storage != FX_ST_CONST || !v->cdata) return 0;
    *fill = x->dtype == FX_I8 ? *(const int8_t *)v->cdata : *(const uint8_t *)v->cdata;
  } else {
    *fill = pad->p.pad.fill;
  }
  return *fill == x->quant.zero_point;
}

static int finite_weights(const fx_graph *g, const fx_node *n) {
  const fx_tensor *w = &g->tensors[n->in[1]];
  if (w->dtype != FX_F32 || w->storage != FX_ST_CONST || !w->cdata) return 0;
  const float *f = w->cdata;
  for (size_t i = 0, e = fx_shape_numel(&w->shape); i < e; i++)
    if (!(f[i] - f[i] == 0.0f)) return 0;
  return 1;
}

/* Whether every value of tensor x (read by the PAD alone) is at least the fill. */
static int at_least_fill(const fx_graph *g, int x, double fill) {
  fx_node *who[2];
  const int i = fx_graph_producer(g, x);
  if (i < 0 || readers(g, x, who) != 1) return 0;
  const fx_node *p = &g->nodes[i];
  if (p->fused || p->at_prepare || p->post_table || (p->n_in > 3 && p->in[3] >= 0)) return 0;
  if (g->tensors[x].dtype == FX_F32) {
    const int layer = p->kind == FX_OP_CONV || p->kind == FX_OP_DEPTHWISE || p->kind == FX_OP_FC || hybrid_layer(g, p);
    return layer && (p->act == FLEX_ACT_RELU || p->act == FLEX_ACT_RELU6) && fill == 0.0;
  }
  return (p->kind == FX_OP_QCONV || p->kind == FX_OP_QDEPTHWISE || p->kind == FX_OP_QFC) && p->qout.lo >= fill;
}

static int fuse_pad(fx_graph *g, fx_node *pad) {
  int v[8];
  double fill;
  const int x = pad->in[0], y = pad->out[0];
  if (pad->at_prepare || pad->fused || g->tensors[y].storage != FX_ST_ARENA) return 0;
  if (!pad_amounts(g, pad, v) || !pad_fill(g, pad, &fill)) return 0;
  fx_node *who[2];
  if (readers(g, y, who) != 1) return 0;
  fx_node *n = who[0];
  if (n->at_prepare || n->fused || n->in[0] != y || n->p.conv.same) return 0;
  for (int k = 1; k < n->n_in; k++)
    if (n->in[k] == y) return 0;
  const int f32 = g->tensors[x].dtype == FX_F32;
  switch (n->kind) {
    case FX_OP_CONV: case FX_OP_DEPTHWISE: if (!f32 || !finite_weights(g, n)) return 0; break;
    case FX_OP_QCONV: case FX_OP_QDEPTHWISE: if (f32) return 0; break;
    case FX_OP_POOL: if (!n->p.conv.is_max || !at_least_fill(g, x, fill)) return 0; break;
    default: return 0;
  }
  if (n->p.conv.pad_t || n->p.conv.pad_b || n->p.conv.pad_l || n->p.conv.pad_r) return 0;
  /* a conv's or depthwise conv's kh / kw come from its weights (a pool has no in[1]: its own) */
  const int pool = n->kind == FX_OP_POOL;
  const fx_shape *ws = pool || n->n_in < 2 || n->in[1] < 0 ? NULL : &g->tensors[n->in[1]].shape;
  if (!pool && (!ws || ws->rank != 4)) return 0;
  const int kh = pool ? n->p.conv.kh : ws->d[1], kw = pool ? n->p.conv.kw : ws->d[2];
  const int eh = (kh - 1) * n->p.conv.dil_h + 1, ew = (kw - 1) * n->p.conv.dil_w + 1;
  if (kh < 1 || kw < 1 || v[2] > (eh - 1) / 2 || v[2] + v[3] > eh - 1 || v[4] > (ew - 1) / 2 || v[4] + v[5] > ew - 1)
    return 0;
  n->in[0] = x;
  n->p.conv.pad_t = v[2]; n->p.conv.pad_b = v[3];
  n->p.conv.pad_l = v[4]; n->p.conv.pad_r = v[5];
  pad->fused = FX_FUSED_SKIP;
  return 0;
}

int fx_fuse_node(fx_graph *g, fx_node *n) {
  if (n->kind == FX_OP_QELEM) return fuse_qswish(g, n);
  if (n->kind == FX_OP_MEAN) return fuse_layernorm(g, n);
  if (n->kind == FX_OP_BATCH_MATMUL) return fuse_attention(g, n);
  if (n->kind == FX_OP_PAD) return fuse_pad(g, n);
  if (n->kind != FX_OP_CONV && n->kind != FX_OP_FC && n->kind != FX_OP_DEPTHWISE && !hybrid_layer(g, n)) return 0;
  if (n->at_prepare) return 0;
  const int y = n->out[0];
  if (!is_f32_arena(g, y)) return 0; /* a partition output must be written as computed */
  fx_node *who[2];
  const int uses = readers(g, y, who);
  const int conv = n->kind == FX_OP_CONV || (n->kind == FX_OP_QCONV && hybrid_layer(g, n));
  if (conv && uses == 1 && !fx_act_is_curve(n->act) && n->n_in <= 3) {
    if (fuse_residual(g, n, who[0])) return -1;
    if (who[0]->fused) return 0;
  }
  /* The curve takes the activation's place: only over NONE (which clamps to the float range,
   * as the curve kernels' bounds do). */
  if (n->act != FLEX_ACT_NONE) return 0;
  fx_node *gl = uses == 1 ? who[0] : NULL;
  const int fc = n->kind == FX_OP_FC || n->kind == FX_OP_QFC;
  if (fc && gl && gl->kind == FX_OP_UNARY && gl->in[0] == y && !gl->at_prepare && !gl->fused &&
      (gl->p.un.kind == FX_U_GELU || gl->p.un.kind == FX_U_GELU_TANH)) { /* Dense(activation="gelu") */
    n->act = gl->p.un.kind == FX_U_GELU ? FLEX_ACT_GELU : FLEX_ACT_GELU_TANH;
    gl->fused = FX_FUSED_COPY;
    gl->fuse_from = y;
    return 0;
  }
  if (uses == 1 && is_logistic_of(who[0], y)) { /* gate: y -> sigmoid(y) */
    n->act = FLEX_ACT_SIGMOID;
    who[0]->fused = FX_FUSED_COPY;
    who[0]->fuse_from = y;
    return 0;
  }
  if (uses != 2) return 0;
  fx_node *lg = is_logistic_of(who[0], y) ? who[0] : is_logistic_of(who[1], y) ? who[1] : NULL;
  if (!lg) return 0;
  fx_node *mul = lg == who[0] ? who[1] : who[0];
  const int s = lg->out[0];
  fx_node *sr[2];
  if (!is_f32_arena(g, s) || !is_mul_of(mul, y, s) || readers(g, s, sr) != 1) return 0;
  n->act = FLEX_ACT_SWISH; /* y -> y * sigmoid(y); the sigmoid alone is never stored */
  lg->fused = FX_FUSED_SKIP;
  mul->fused = FX_FUSED_COPY;
  mul->fuse_from = y;
  return 0;
}
