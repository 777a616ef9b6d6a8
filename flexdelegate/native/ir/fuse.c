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
#include "graph.h"
#include "kernels/ops/ops.h"

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

/* Index of the node writing tensor t, or -1 (a partition input). */
static int producer(const fx_graph *g, int t) {
  for (int i = 0; i < g->n_nodes; i++)
    for (int k = 0; k < g->nodes[i].n_out; k++)
      if (g->nodes[i].out[k] == t) return i;
  return -1;
}

static int fuse_residual(fx_graph *g, fx_node *n, fx_node *add) {
  const int y = n->out[0];
  if (add->kind != FX_OP_BINARY || add->p.bin.op != FX_B_ADD || add->n_in != 2 || add->at_prepare || add->fused)
    return 0;
  const int r = add->in[0] == y ? add->in[1] : add->in[0];
  if (r == y || r < 0 || g->tensors[r].dtype != FX_F32 || g->tensors[r].storage == FX_ST_CONST) return 0;
  const fx_shape *ys = &g->tensors[y].shape;
  if (!fx_shape_equal(&g->tensors[r].shape, ys) || !fx_shape_equal(&g->tensors[add->out[0]].shape, ys)) return 0;
  if (producer(g, r) > (int)(n - g->nodes)) return 0; /* the shortcut must exist when n runs */
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

int fx_fuse_node(fx_graph *g, fx_node *n) {
  if (n->kind != FX_OP_CONV && n->kind != FX_OP_FC && n->kind != FX_OP_DEPTHWISE) return 0;
  if (n->at_prepare) return 0;
  const int y = n->out[0];
  if (!is_f32_arena(g, y)) return 0; /* a partition output must be written as computed */
  fx_node *who[2];
  const int uses = readers(g, y, who);
  if (n->kind == FX_OP_CONV && uses == 1 && !fx_act_is_curve(n->act) && n->n_in <= 3) {
    if (fuse_residual(g, n, who[0])) return -1;
    if (who[0]->fused) return 0;
  }
  /* The curve takes the activation's place: only over NONE (which clamps to the float range,
   * as the curve kernels' bounds do). */
  if (n->act != FLEX_ACT_NONE) return 0;
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
