/* Layer chains for band-by-band execution (band.h): which chains qualify (at init), their
 * geometry for the current shapes and what a band height costs (at prepare). Running them is
 * band_run.c's, choosing them band_choose.c's. */
#include <stdlib.h>
#include <string.h>
#include "band.h"
#include "conv/conv.h"

static const fx_tensor *T(const fx_graph *g, int id) { return &g->tensors[id]; }

/* Reads of tensor t (a node reading it twice counts twice); the first `cap` readers in who[]. */
static int readers(const fx_graph *g, int t, int *who, int cap) {
  int count = 0;
  for (int i = 0; i < g->n_nodes; i++) {
    const fx_node *m = &g->nodes[i];
    for (int k = 0; k < m->n_in; k++)
      if (m->in[k] == t) {
        if (count < cap) who[count] = i;
        count++;
      }
  }
  return count;
}

int fx_band_layer_ok(const fx_graph *g, const fx_node *n) {
  if (n->fused || n->at_prepare || n->n_out != 1 || T(g, n->out[0])->dtype != FX_F32) return 0;
  switch (n->kind) {
    case FX_OP_CONV: /* Winograd runs whole maps in tiles: not row by row */
      return n->pack && !fx_conv_pack_tile(n->pack) && !fx_conv_pack_winograd_rt(n->pack);
    case FX_OP_DEPTHWISE: case FX_OP_POOL: case FX_OP_UNARY: return 1;
    case FX_OP_BINARY: return n->n_in == 2;
    default: return 0;
  }
}

/* Which input of n carries tensor t as the chain's data: the first input (a binary op's either),
 * read nowhere else by n; -1 if none. */
static int data_slot(const fx_node *n, int t) {
  int slot = -1, reads = 0;
  for (int k = 0; k < n->n_in; k++)
    if (n->in[k] == t) {
      reads++;
      slot = k;
    }
  if (reads != 1) return -1;
  return slot == 0 || (slot == 1 && n->kind == FX_OP_BINARY) ? slot : -1;
}

static int add_member(fx_band_chain *c, int node) {
  for (int i = 0; i < c->n_members; i++)
    if (c->members[i] == node) return 0;
  if (c->n_members == FX_BAND_MAX_MEMBERS) return -1;
  c->members[c->n_members++] = node;
  return 0;
}

/* Follows layer node i's output through the fused tails that took its work (fuse.c: a gate's
 * LOGISTIC, a swish's LOGISTIC + MUL, a residual ADD), adding them to c's members: the tensor
 * the rest of the graph reads, or -1 when the tails are not the simple forms fuse.c makes. */
static int follow_tails(const fx_graph *g, int i, fx_band_chain *c) {
  int t = g->nodes[i].out[0];
  for (;;) {
    int who[4], fused = 0, next = -1;
    const int n = readers(g, t, who, 4);
    for (int k = 0; k < n && k < 4; k++) {
      const fx_node *m = &g->nodes[who[k]];
      if (!m->fused) continue;
      fused++;
      if (add_member(c, who[k])) return -1;
      if (m->fused == FX_FUSED_COPY && m->fuse_from == t) next = m->out[0];
    }
    if (!fused) return t;
    if (fused != n || next < 0) return -1;
    t = next;
  }
}

static int by_index(const void *a, const void *b) { return *(const int *)a - *(const int *)b; }

/* Whether input `slot` of layer n carries the rows of its output: a binary op's data must have
 * the output's shape (the other operand may broadcast; never the data, as an SE gate would).
 * By the shapes at init: a resize that changes this makes fx_band_shape refuse the chain. */
static int carries_rows(const fx_graph *g, const fx_node *n, int slot) {
  return n->kind != FX_OP_BINARY || fx_shape_equal(&T(g, n->in[slot])->shape, &T(g, n->out[0])->shape);
}

/* A conv to fewer channels than it reads (an inverted residual's projection) ends a chain: its
 * output is the narrow tensor between blocks, cheap to keep whole, and a chain of one block fits
 * taller bands in cache than one spanning two. Weight shapes are constant: known at init. */
static int projects(const fx_graph *g, const fx_node *n) {
  if (n->kind != FX_OP_CONV) return 0;
  const fx_shape *w = &T(g, n->in[1])->shape;
  return w->rank == 4 && w->d[0] < w->d[3];
}

/* The longest chain starting at layer node i (its data in slot `slot`), into *c: its layer count. */
static int grow_chain(const fx_graph *g, int i, int slot, fx_band_chain *c) {
  memset(c, 0, sizeof *c);
  c->scratch = -1;
  c->in = g->nodes[i].in[slot];
  for (int cur = i, in = c->in; c->n_layers < FX_BAND_MAX_LAYERS;) {
    const int members = c->n_members;
    if (add_member(c, cur)) break;
    const int out = follow_tails(g, cur, c);
    if (out < 0) {
      c->n_members = members;
      break;
    }
    c->layer[c->n_layers++] = (fx_band_layer){.node = cur, .slot = slot, .in = in, .out = out};
    c->out = out;
    if (projects(g, &g->nodes[cur])) break;
    /* the next layer: the only reader of an intermediate the arena would hold */
    int who[2];
    const fx_tensor *t = T(g, out);
    if (t->storage != FX_ST_ARENA || t->dtype != FX_F32 || readers(g, out, who, 2) != 1) break;
    const fx_node *m = &g->nodes[who[0]];
    if (m->band || !fx_band_layer_ok(g, m) || (slot = data_slot(m, out)) < 0 || !carries_rows(g, m, slot)) break;
    cur = who[0];
    in = out;
  }
  return c->n_layers;
}

int fx_band_find(fx_graph *g) {
  free(g->chains);
  g->chains = NULL;
  g->n_chains = 0;
  for (int i = 0; i < g->n_nodes; i++) g->nodes[i].band = 0;
  int cap = 0;
  for (int i = 0; i < g->n_nodes; i++) {
    const fx_node *n = &g->nodes[i];
    if (n->band || !fx_band_layer_ok(g, n)) continue;
    /* a binary op heads a chain through a non-constant input that carries the rows */
    int slot = 0;
    if (n->kind == FX_OP_BINARY && (T(g, n->in[0])->storage == FX_ST_CONST || !carries_rows(g, n, 0))) slot = 1;
    if (!carries_rows(g, n, slot) || T(g, n->in[slot])->storage == FX_ST_CONST) continue;
    fx_band_chain c;
    if (grow_chain(g, i, slot, &c) < 2) continue;
    if (g->n_chains == cap) {
      const int grown = cap ? 2 * cap : 8;
      fx_band_chain *more = realloc(g->chains, (size_t)grown * sizeof *more);
      if (!more) return -1;
      g->chains = more;
      cap = grown;
    }
    qsort(c.members, (size_t)c.n_members, sizeof c.members[0], by_index);
    c.run_at = c.members[c.n_members - 1];
    g->chains[g->n_chains] = c;
    for (int k = 0; k < c.n_members; k++) g->nodes[c.members[k]].band = g->n_chains + 1;
    g->n_chains++;
  }
  return g->n_chains;
}

/* An operand a binary layer can read whole for every band: it broadcasts over rows (and over
 * images, or has one per image). */
static int row_invariant(const fx_shape *s, int batch) {
  if (s->rank <= 2) return 1;
  if (s->rank == 3) return s->d[0] == 1;
  return s->rank == 4 && s->d[1] == 1 && (s->d[0] == 1 || s->d[0] == batch);
}

static int shape_layer(fx_graph *g, fx_band_chain *c, int i) {
  fx_band_layer *l = &c->layer[i];
  const fx_node *n = &g->nodes[l->node];
  const fx_shape *x = &T(g, n->in[l->slot])->shape, *y = &T(g, l->out)->shape;
  if (x->rank != 4 || !fx_shape_equal(y, &T(g, n->out[0])->shape)) return -1;
  if (i == 0) c->batch = x->d[0];
  if (x->d[0] != c->batch || y->d[0] != c->batch || c->batch < 1) return -1;
  l->ih = x->d[1];
  l->oh = y->d[1];
  l->in_row = (size_t)x->d[2] * (size_t)x->d[3];
  l->out_row = (size_t)y->d[2] * (size_t)y->d[3];
  if (l->ih < 1 || l->oh < 1 || !l->in_row || !l->out_row) return -1;
  if (i > 0 && (l->ih != c->layer[i - 1].oh || l->in_row != c->layer[i - 1].out_row)) return -1;
  l->kh = l->stride = l->dil = 1;
  l->pad = 0;
  l->row_flops = n->flops / ((double)c->batch * l->oh);
  switch (n->kind) {
    case FX_OP_CONV: case FX_OP_DEPTHWISE: case FX_OP_POOL: {
      int oh;
      l->kh = n->p.conv.kh;
      l->stride = n->p.conv.stride_h;
      l->dil = n->p.conv.dil_h > 0 ? n->p.conv.dil_h : 1;
      fx_node_window(n, 0, l->ih, l->kh, &oh, &l->pad);
      return oh == l->oh && l->stride >= 1 && l->kh >= 1 ? 0 : -1;
    }
    case FX_OP_BINARY: {
      const fx_shape *o = &T(g, n->in[1 - l->slot])->shape;
      return fx_shape_equal(x, y) && (fx_shape_equal(o, y) || row_invariant(o, c->batch)) ? 0 : -1;
    }
    case FX_OP_UNARY: return fx_shape_equal(x, y) ? 0 : -1;
    default: return -1;
  }
}

int fx_band_shape(fx_graph *g, fx_band_chain *c) {
  for (int i = 0; i < c->n_layers; i++)
    if (shape_layer(g, c, i)) return -1;
  return 0;
}

void fx_band_input_rows(const fx_band_layer *l, int a, int b, int *lo, int *hi) {
  const int s = a * l->stride - l->pad, e = (b - 1) * l->stride - l->pad + (l->kh - 1) * l->dil + 1;
  *lo = s < 0 ? 0 : s;
  *hi = e > l->ih ? l->ih : e;
}

int fx_band_strip_begin(const fx_band_chain *c, int strip) {
  return (int)((long)c->layer[c->n_layers - 1].oh * strip / c->strips);
}

int fx_band_needs(const fx_band_chain *c, int a, int b, int *lo, int *hi) {
  const int n = c->n_layers;
  lo[n - 1] = a;
  hi[n - 1] = b;
  for (int i = n - 1; i > 0; i--) {
    fx_band_input_rows(&c->layer[i], lo[i], hi[i], &lo[i - 1], &hi[i - 1]);
    if (lo[i - 1] >= hi[i - 1]) return -1;
  }
  return 0;
}

static size_t align64(size_t bytes) { return (bytes + 63) / 64 * 64; }

int fx_band_measure(const fx_graph *g, const fx_band_chain *c, int band_rows, int strips, fx_band_cost *cost) {
  memset(cost, 0, sizeof *cost);
  const int n = c->n_layers, oh = c->layer[n - 1].oh;
  if (band_rows < 1 || strips < 1 || strips > oh) return -1;
  fx_band_chain probe = *c;
  probe.strips = strips;
  double rows[FX_BAND_MAX_LAYERS] = {0};
  for (int s = 0; s < strips; s++) {
    int have_lo[FX_BAND_MAX_LAYERS] = {0}, have_hi[FX_BAND_MAX_LAYERS] = {0};
    const int a1 = fx_band_strip_begin(&probe, s + 1);
    for (int a = fx_band_strip_begin(&probe, s); a < a1; a += band_rows) {
      int lo[FX_BAND_MAX_LAYERS], hi[FX_BAND_MAX_LAYERS];
      if (fx_band_needs(c, a, a + band_rows < a1 ? a + band_rows : a1, lo, hi)) return -1;
      for (int i = 0; i < n; i++) {
        int from = lo[i];
        if (i < n - 1 && have_lo[i] <= lo[i] && lo[i] < have_hi[i]) { /* the halo is already there */
          from = have_hi[i] < hi[i] ? have_hi[i] : hi[i];
          cost->carried_bytes += (size_t)(from - lo[i]) * c->layer[i].out_row * sizeof(float);
        }
        rows[i] += hi[i] - from;
        if (i == n - 1) continue;
        if ((size_t)(hi[i] - lo[i]) > cost->buffer_rows[i]) cost->buffer_rows[i] = (size_t)(hi[i] - lo[i]);
        have_lo[i] = lo[i];
        have_hi[i] = hi[i];
      }
    }
  }
  double own = 0;
  for (int i = 0; i < n; i++) {
    const fx_band_layer *l = &c->layer[i];
    cost->flops += rows[i] * l->row_flops * c->batch;
    own += (double)l->oh * l->row_flops * c->batch;
    if (i < n - 1) cost->scratch_bytes += align64(cost->buffer_rows[i] * l->out_row * sizeof(float));
    const fx_node *nd = &g->nodes[l->node];
    if (nd->kind == FX_OP_CONV) {
      fx_conv_geom geo;
      fx_node_conv_geom(g, nd, &geo);
      const size_t sc = align64(fx_conv_scratch_bytes(nd->pack, &geo, 1));
      if (sc > cost->conv_scratch_bytes) cost->conv_scratch_bytes = sc;
    }
  }
  cost->carried_bytes *= (size_t)c->batch;
  cost->recompute_flops = cost->flops - own;
  cost->scratch_bytes += cost->conv_scratch_bytes;
  return 0;
}

const fx_band_chain *fx_band_of(const fx_graph *g, int i) {
  const int b = g->nodes[i].band;
  return b > 0 && g->chains[b - 1].active ? &g->chains[b - 1] : NULL;
}
