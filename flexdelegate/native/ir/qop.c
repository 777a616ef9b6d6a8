/* Integer element-wise ops in the IR (qop.h): prepared at shape inference, run over the pool. */
#include <stdlib.h>
#include <string.h>
#include "qop.h"
#include "kernels/qs8-ops/qs8-ops.h"
#include "runtime/pool.h"

const char *fx_infer_binary(fx_graph *g, fx_node *n);
const char *fx_infer_mean(fx_graph *g, fx_node *n);
const char *fx_infer_same(fx_graph *g, fx_node *n);

struct fx_qop {
  int kind, stock, act, stock_threads, general;
  float param;
  union {
    fx_qs8_binary_op bin;
    fx_qs8_mean_op mean;       /* stock's fast path (general = 0) */
    fx_qs8_mean_any_op mean_any; /* its general path (general = 1) */
    fx_qs8_sum_op sum;
    fx_qs8_softmax_op softmax;
    fx_qs8_lut_op lut;
  } k;
};

const char *fx_qop_make(fx_node *n, int kind, int stock, int act, float param, int stock_threads) {
  fx_qop_free(n->qop);
  n->qop = calloc(1, sizeof *n->qop);
  if (!n->qop) return "out of memory";
  *n->qop = (struct fx_qop){.kind = kind, .stock = stock, .act = act, .stock_threads = stock_threads, .param = param};
  n->kind = FX_OP_QELEM;
  return NULL;
}

void fx_qop_free(struct fx_qop *q) { free(q); }

int fx_qop_kind(const fx_node *n) { return n->kind == FX_OP_QELEM && n->qop ? n->qop->kind : -1; }

void fx_qop_fuse_swish(fx_node *mul, int x_at) {
  mul->qop->kind = FX_QOP_MUL_LOGISTIC;
  mul->qop->param = (float)x_at;
}

void fx_qop_table_range(const fx_node *mul, void *y, size_t count, size_t e0, size_t e1) {
  fx_qs8_lut_run(fx_qs8_ops_config_get(), &mul->qop->k.lut, count, y, y, e0, e1);
}

void fx_qop_set_stock_threads(fx_node *n, int threads) { n->qop->stock_threads = threads; }

static fx_tensor *T(fx_graph *g, int id) { return &g->tensors[id]; }

static int to_qs8_shape(const fx_shape *s, fx_qs8_shape *q) {
  if (s->rank > FX_QS8_MAX_RANK) return -1;
  q->rank = s->rank;
  for (int i = 0; i < s->rank; i++) q->d[i] = s->d[i];
  return 0;
}

/* The node's MEAN axis tensor as the model wrote it (stock picks its path from the entries). */
static int mean_axes(fx_graph *g, const fx_node *n, int32_t *axes, int cap) {
  const fx_tensor *t = T(g, n->in[1]);
  const size_t count = fx_shape_numel(&t->shape);
  if (t->storage != FX_ST_CONST || !t->cdata || count > (size_t)cap) return -1;
  for (size_t i = 0; i < count; i++)
    axes[i] = t->dtype == FX_I32 ? ((const int32_t *)t->cdata)[i] : (int32_t)((const int64_t *)t->cdata)[i];
  return (int)count;
}

const char *fx_infer_qelem(fx_graph *g, fx_node *n) {
  struct fx_qop *q = n->qop;
  const fx_tensor *x = T(g, n->in[0]), *y = T(g, n->out[0]);
  const int u8 = x->dtype == FX_U8;
  const float si = x->quant.scale, so = y->quant.scale;
  const int32_t zi = x->quant.zero_point, zo = y->quant.zero_point;
  const char *e;
  if (!q) return "integer op not prepared";
  switch (q->kind) {
    case FX_QOP_ADD:
    case FX_QOP_SUB:
    case FX_QOP_MUL:
    case FX_QOP_PRELU: {
      const fx_tensor *b = T(g, n->in[1]);
      fx_qs8_shape sa, sb;
      if ((e = fx_infer_binary(g, n))) return e;
      if (to_qs8_shape(&x->shape, &sa) || to_qs8_shape(&b->shape, &sb)) return "integer ADD / MUL / PRELU of rank > 6";
      const int op = q->kind == FX_QOP_ADD   ? FX_QS8_ADD
                     : q->kind == FX_QOP_SUB ? FX_QS8_SUB
                     : q->kind == FX_QOP_MUL ? FX_QS8_MUL
                                             : FX_QS8_PRELU;
      if (fx_qs8_binary_prepare(op, u8, si, zi, b->quant.scale,
                                b->quant.zero_point, so, zo, q->act, &sa, &sb, q->stock, &q->k.bin))
        return op == FX_QS8_PRELU
                   ? "integer PRELU parameters not reproduced (or beyond 4-D with alpha broadcast: tflite-runtime 2.14 aborts)"
                   : "quantization parameters stock's integer ADD / MUL refuses or these kernels do not reproduce";
      return NULL;
    }
    case FX_QOP_MUL_LOGISTIC: { /* MUL(x, LOGISTIC(x)): x is in[param], the other the sigmoid's */
      const int xi = (int)q->param;
      const fx_tensor *xt = T(g, n->in[xi]), *st = T(g, n->in[1 - xi]), *b = T(g, n->in[1]);
      fx_qs8_shape sa, sb;
      fx_qs8_binary_op mul;
      fx_qs8_lut_op curve;
      if ((e = fx_infer_binary(g, n))) return e;
      if (to_qs8_shape(&x->shape, &sa) || to_qs8_shape(&b->shape, &sb)) return "integer MUL of rank > 6";
      if (fx_qs8_curve_prepare(FX_QS8_LOGISTIC, u8, xt->quant.scale, xt->quant.zero_point, st->quant.scale,
                               st->quant.zero_point, &curve) ||
          fx_qs8_binary_prepare(FX_QS8_MUL, u8, si, zi, b->quant.scale, b->quant.zero_point, so, zo, q->act, &sa,
                                &sb, q->stock, &mul) ||
          fx_qs8_mul_of_table_prepare(&mul, &curve, xi, &q->k.lut))
        return "integer swish (MUL of LOGISTIC) parameters not reproduced";
      return NULL;
    }
    case FX_QOP_MEAN: {
      int32_t axes[16];
      const int na = mean_axes(g, n, axes, 16);
      fx_qs8_shape sx;
      if ((e = fx_infer_mean(g, n))) return e;
      if (na < 0) return "MEAN axes not constant";
      const fx_shape *s = &x->shape;
      q->general = !fx_qs8_mean_fast_path(s->rank, n->p.mean.keep_dims, axes, na, q->stock);
      if (!q->general) {
        if (u8) return "uint8 MEAN on stock's fast path (not reproduced)";
        return fx_qs8_mean_hw_prepare(s->d[0], s->d[1], s->d[2], s->d[3], axes, na, si, zi, so, zo, q->stock,
                                      q->stock_threads, &q->k.mean) ? "integer MEAN parameters not reproduced" : NULL;
      }
      if (to_qs8_shape(s, &sx) || fx_qs8_mean_prepare(u8, &sx, (uint32_t)n->pads[0], si, zi, so, zo, &q->k.mean_any))
        return "integer MEAN parameters not reproduced (an empty input, over 2^23 values a mean)";
      return NULL;
    }
    case FX_QOP_SUM: {
      fx_qs8_shape sx;
      if ((e = fx_infer_mean(g, n))) return e;
      if (to_qs8_shape(&x->shape, &sx) || fx_qs8_sum_prepare(u8, &sx, (uint32_t)n->pads[0], si, zi, so, zo, &q->k.sum))
        return "integer SUM parameters not reproduced (an empty input, stock leaves its output unwritten; over "
               "2^23 values a sum)";
      return NULL;
    }
    case FX_QOP_SOFTMAX:
      if ((e = fx_infer_same(g, n))) return e;
      return fx_qs8_softmax_prepare(u8, si, q->param, so, zo, &q->k.softmax)
                 ? "integer SOFTMAX output not quantized as stock requires (1/256, type minimum)" : NULL;
    default: {
      int rc;
      if ((e = fx_infer_same(g, n))) return e;
      if (q->kind == FX_QOP_REQUANTIZE)
        rc = fx_qs8_requantize_prepare(u8, si, zi, y->dtype == FX_U8, so, zo, q->stock, &q->k.lut);
      else if (q->kind == FX_QOP_RELU) rc = fx_qs8_relu_prepare((int)q->param, u8, si, zi, so, zo, &q->k.lut);
      else if (q->kind == FX_QOP_HARD_SWISH) rc = fx_qs8_hard_swish_prepare(u8, si, zi, so, zo, &q->k.lut);
      else if (q->kind == FX_QOP_LEAKY_RELU) rc = fx_qs8_leaky_relu_prepare(u8, q->param, si, zi, so, zo, &q->k.lut);
      else if (q->kind == FX_QOP_GELU)
        rc = fx_qs8_curve_prepare(q->param != 0 ? FX_QS8_GELU_TANH : FX_QS8_GELU, u8, si, zi, so, zo, &q->k.lut);
      else rc = fx_qs8_curve_prepare(q->kind == FX_QOP_TANH ? FX_QS8_TANH : FX_QS8_LOGISTIC, u8, si, zi, so, zo, &q->k.lut);
      return rc ? "quantization parameters stock refuses or these kernels do not reproduce" : NULL;
    }
  }
}

typedef struct {
  const struct fx_qop *q;
  const fx_qs8_ops_config *v;
  const void *a, *b;
  void *y;
  size_t n, cols, c; /* c: MEAN's channels per unit */
} qtask;

static void binary_part(void *ctx, size_t e0, size_t e1) {
  const qtask *t = ctx;
  fx_qs8_binary_run(t->v, &t->q->k.bin, t->a, t->b, t->y, e0, e1);
}

static void lut_part(void *ctx, size_t e0, size_t e1) {
  const qtask *t = ctx;
  fx_qs8_lut_run(t->v, &t->q->k.lut, t->n, t->a, t->y, e0, e1);
}

static void softmax_part(void *ctx, size_t r0, size_t r1) {
  const qtask *t = ctx;
  fx_qs8_softmax_run(&t->q->k.softmax, t->a, t->y, t->cols, r0, r1);
}

/* Units [u0, u1) (pixel x t->c channels: fx_qs8_mean_hw_units), sums in a stack buffer. */
#define MEAN_CHUNK 64
static void mean_part(void *ctx, size_t u0, size_t u1) {
  const qtask *t = ctx;
  int32_t sums[MEAN_CHUNK];
  fx_qs8_mean_hw_run(t->v, &t->q->k.mean, t->a, t->y, t->c, u0, u1, sums);
}

/* Outputs [o0, o1) of a general-path MEAN or a SUM, sums in a stack buffer 256 at a time. */
static void reduce_part(void *ctx, size_t o0, size_t o1) {
  const qtask *t = ctx;
  int32_t sums[256];
  for (size_t o = o0; o < o1; o += 256) {
    const size_t e = o1 - o < 256 ? o1 : o + 256;
    if (t->q->kind == FX_QOP_SUM) fx_qs8_sum_run(t->v, &t->q->k.sum, t->a, t->y, o, e, sums);
    else fx_qs8_mean_run(t->v, &t->q->k.mean_any, t->a, t->y, o, e, sums);
  }
}

int fx_run_qelem(fx_graph *g, fx_node *n, fx_pool *pool) {
  const fx_tensor *x = T(g, n->in[0]), *y = T(g, n->out[0]);
  qtask t = {n->qop, fx_qs8_ops_config_get(), x->ptr, n->n_in > 1 ? T(g, n->in[1])->ptr : NULL, y->ptr,
             fx_shape_numel(&y->shape), 0, 0};
  if (n->qop->kind == FX_QOP_MUL_LOGISTIC) t.a = T(g, n->in[(int)n->qop->param])->ptr; /* the table's input */
  switch (n->qop->kind) {
    case FX_QOP_ADD:
    case FX_QOP_SUB:
    case FX_QOP_MUL:
    case FX_QOP_PRELU: fx_parallel_for(pool, t.n, 1 << 12, binary_part, &t); break;
    case FX_QOP_SUM: fx_parallel_for(pool, t.n, 256, reduce_part, &t); break;
    case FX_QOP_MEAN:
      if (n->qop->general) {
        fx_parallel_for(pool, t.n, 256, reduce_part, &t);
        break;
      }
      t.c = MEAN_CHUNK;
      fx_parallel_for(pool, fx_qs8_mean_hw_units(&n->qop->k.mean, t.c), 1, mean_part, &t);
      break;
    case FX_QOP_SOFTMAX:
      t.cols = x->shape.rank ? (size_t)x->shape.d[x->shape.rank - 1] : 1;
      fx_parallel_for(pool, t.cols ? t.n / t.cols : 0, 1 + (1 << 12) / (t.cols + 1), softmax_part, &t);
      break;
    default: fx_parallel_for(pool, t.n, 1 << 13, lut_part, &t); break;
  }
  return 0;
}
