/* The IR graph's growth and release. */
#include <stdlib.h>
#include <string.h>
#include "graph.h"

static int grow(void **items, int *cap, int need, size_t item) {
  if (need <= *cap) return 0;
  int c = *cap ? *cap * 2 : 16;
  while (c < need) c *= 2;
  void *p = realloc(*items, (size_t)c * item);
  if (!p) return -1;
  memset((char *)p + (size_t)*cap * item, 0, (size_t)(c - *cap) * item);
  *items = p;
  *cap = c;
  return 0;
}

int fx_graph_add_tensor(fx_graph *g, const fx_tensor *t) {
  if (grow((void **)&g->tensors, &g->cap_tensors, g->n_tensors + 1, sizeof *t)) return -1;
  g->tensors[g->n_tensors] = *t;
  return g->n_tensors++;
}

fx_node *fx_graph_add_node(fx_graph *g, int kind, int n_in, int n_out) {
  if (grow((void **)&g->nodes, &g->cap_nodes, g->n_nodes + 1, sizeof(fx_node))) return NULL;
  fx_node *n = &g->nodes[g->n_nodes];
  memset(n, 0, sizeof *n);
  n->in = calloc((size_t)(n_in ? n_in : 1), sizeof(int));
  n->out = calloc((size_t)(n_out ? n_out : 1), sizeof(int));
  if (!n->in || !n->out) {
    free(n->in);
    free(n->out);
    return NULL;
  }
  n->kind = kind;
  n->n_in = n_in;
  n->n_out = n_out;
  n->scratch = -1;
  g->n_nodes++;
  return n;
}

int fx_graph_producer(const fx_graph *g, int t) {
  for (int i = 0; t >= 0 && i < g->n_nodes; i++)
    for (int k = 0; k < g->nodes[i].n_out; k++)
      if (g->nodes[i].out[k] == t) return i;
  return -1;
}

int fx_quant_equal(const fx_quant *a, const fx_quant *b) {
  if (a->n != b->n || a->scale != b->scale || a->zero_point != b->zero_point) return 0;
  if (a->n <= 1) return 1;
  if (a->axis != b->axis) return 0;
  for (int i = 0; i < a->n; i++)
    if (a->scales[i] != b->scales[i]) return 0;
  return 1;
}

void fx_graph_free(fx_graph *g) {
  for (int i = 0; i < g->n_nodes; i++) {
    fx_node_release(&g->nodes[i]);
    free(g->nodes[i].in);
    free(g->nodes[i].out);
  }
  for (int i = 0; i < g->n_tensors; i++) fx_blob_unref(g->tensors[i].blob);
  free(g->nodes);
  free(g->tensors);
  free(g->chains);
  memset(g, 0, sizeof *g);
}

void fx_node_window(const fx_node *n, int axis, int in, int k, int *out, int *pad_before) {
  const int before = axis ? n->p.conv.pad_l : n->p.conv.pad_t, after = axis ? n->p.conv.pad_r : n->p.conv.pad_b;
  fx_same_valid(n->p.conv.same, in + before + after, k, axis ? n->p.conv.stride_w : n->p.conv.stride_h,
                axis ? n->p.conv.dil_w : n->p.conv.dil_h, out, pad_before);
  *pad_before += before;
}
