/* The IR's operations as one table (ops.inc): name, shape inference (shape.c), run (exec.c)
 * and flop count. */
#include "graph.h"

#define FX_OP(kind, name, infer, run, flops)        \
  const char *infer(fx_graph *g, fx_node *n);       \
  int run(fx_graph *g, fx_node *n, fx_pool *pool);
#include "ops.inc"
#undef FX_OP

static double fx_flops_gemm(const fx_graph *g, const fx_node *n) {
  const fx_shape *w = &g->tensors[n->in[1]].shape;
  return 2.0 * (double)fx_shape_numel(&g->tensors[n->out[0]].shape) *
         (double)(fx_shape_numel(w) / (size_t)(w->d[0] ? w->d[0] : 1));
}

static double fx_flops_window(const fx_graph *g, const fx_node *n) {
  return 2.0 * (double)fx_shape_numel(&g->tensors[n->out[0]].shape) * n->p.conv.kh * n->p.conv.kw;
}

static double fx_flops_transpose_conv(const fx_graph *g, const fx_node *n) {
  const fx_shape *f = &g->tensors[n->in[1]].shape, *x = &g->tensors[n->in[2]].shape;
  return 2.0 * (double)fx_shape_numel(x) * f->d[0] * f->d[1] * f->d[2];
}

static double fx_flops_batch_matmul(const fx_graph *g, const fx_node *n) {
  fx_bmm_plan p;
  return fx_node_bmm_plan(g, n, &p) ? 0.0 : 2.0 * (double)p.batches * p.m * p.n * p.k;
}

static double fx_flops_attention(const fx_graph *g, const fx_node *n) {
  fx_attn_params p;
  fx_attn_in q, k, v;
  fx_attn_out o;
  fx_shape ys;
  if (fx_node_attention(g, n, &p, &q, &k, &v, &o, &ys)) return 0.0;
  return 2.0 * p.batch * p.heads * (double)p.q_len * p.kv_len * (p.head_dim + p.value_dim);
}

const fx_op_def fx_op_defs[FX_OP_COUNT] = {
#define FX_OP(kind, name, infer, run, flops) [FX_OP_##kind] = {name, infer, run, flops},
#include "ops.inc"
#undef FX_OP
};

const char *fx_op_name(int kind) { return kind >= 0 && kind < FX_OP_COUNT ? fx_op_defs[kind].name : "?"; }

double fx_node_flops(const fx_graph *g, const fx_node *n) {
  const fx_op_def *op = &fx_op_defs[n->kind];
  return op->flops ? op->flops(g, n) : (double)fx_shape_numel(&g->tensors[n->out[0]].shape);
}
