/* The greedy planner (planner.h): every tensor of the partition and every node's scratch in one
 * arena, placed by lifetime (largest first, each at the lowest offset clear of the buffers alive
 * with it), elementwise ops writing over an input that dies there; all weights stay resident.
 * A run is the nodes in order, an active layer chain (ir/band.h) at its last member's turn, its
 * intermediates in no buffer but a band scratch of its own. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "greedy.h"
#include "planner.h"
#include "flex_api.h"
#include "ir/band.h"

static size_t align_up(size_t v) { return (v + FLEX_ARENA_ALIGN - 1) / FLEX_ARENA_ALIGN * FLEX_ARENA_ALIGN; }

static int valid(const fx_arena_buf *bufs, int n) {
  if (n < 0 || (n > 0 && !bufs)) return 0;
  for (int i = 0; i < n; i++)
    if (bufs[i].first > bufs[i].last || bufs[i].size > ((size_t)1 << 48)) return 0;
  return 1;
}

size_t fx_arena_plan_trivial(fx_arena_buf *bufs, int n) {
  if (!valid(bufs, n)) return (size_t)-1;
  size_t total = 0;
  for (int i = 0; i < n; i++) {
    bufs[i].offset = total;
    total += align_up(bufs[i].size);
  }
  return total;
}

static int by_size_desc(const void *a, const void *b) {
  const fx_arena_buf *x = *(fx_arena_buf *const *)a, *y = *(fx_arena_buf *const *)b;
  if (x->size != y->size) return x->size < y->size ? 1 : -1;
  return x->first - y->first;
}

size_t fx_arena_plan_greedy(fx_arena_buf *bufs, int n) {
  if (!valid(bufs, n)) return (size_t)-1;
  /* order[i]: the i-th largest buffer; order[0..i) are the ones placed so far. */
  fx_arena_buf **order = malloc(sizeof *order * (size_t)(n ? n : 1));
  if (!order) return (size_t)-1;
  for (int i = 0; i < n; i++) order[i] = &bufs[i];
  qsort(order, (size_t)n, sizeof *order, by_size_desc);
  size_t total = 0;
  for (int oi = 0; oi < n; oi++) {
    fx_arena_buf *b = order[oi];
    size_t size = align_up(b->size);
    /* Candidate offsets: 0 and the end of every placed, lifetime-overlapping buffer; take the
     * lowest that collides with none of them. O(n^2) per buffer: graphs have ~hundreds. */
    size_t best = (size_t)-1;
    for (int c = -1; c < oi; c++) {
      size_t cand = 0;
      if (c >= 0) {
        const fx_arena_buf *o = order[c];
        if (o->last < b->first || o->first > b->last) continue;
        cand = o->offset + align_up(o->size);
      }
      if (cand >= best) continue;
      int clear = 1;
      for (int j = 0; j < oi && clear; j++) {
        const fx_arena_buf *o = order[j];
        if (o->last < b->first || o->first > b->last) continue;
        if (cand < o->offset + align_up(o->size) && o->offset < cand + size) clear = 0;
      }
      if (clear) best = cand;
    }
    b->offset = best;
    if (best + size > total) total = best + size;
  }
  free(order);
  return total;
}

/* Element-wise ops may write their output over an input that dies at that node (same size,
 * not broadcast): the residual ADDs of ResNets then need no third buffer. alias[t] = the
 * tensor whose buffer t shares (-1: its own); that buffer's lifetime grows to cover t's. */
static int in_place_ok(const fx_graph *g, const fx_node *n, int k) {
  const fx_tensor *x = &g->tensors[n->in[k]], *y = &g->tensors[n->out[0]];
  if (fx_dtype_size(x->dtype) != fx_dtype_size(y->dtype)) return 0;
  switch (n->kind) {
    case FX_OP_BINARY: /* the aliased side must not be broadcast */
      return fx_shape_equal(&x->shape, &y->shape);
    case FX_OP_UNARY: case FX_OP_RESHAPE: case FX_OP_CAST:
      return k == 0 && fx_shape_numel(&x->shape) == fx_shape_numel(&y->shape);
    case FX_OP_QELEM: /* only a swish its producer took: the copy of that input */
      return n->fused == FX_FUSED_COPY && n->in[k] == n->fuse_from && fx_shape_equal(&x->shape, &y->shape);
    default:
      return 0;
  }
}

static void plan_in_place(const fx_graph *g, const unsigned char *elided, fx_arena_buf *bufs, int *alias) {
  for (int i = 0; i < g->n_tensors; i++) alias[i] = -1;
  for (int i = 0; i < g->n_nodes; i++) {
    const fx_node *n = &g->nodes[i];
    int out = n->out[0];
    if (n->at_prepare || g->tensors[out].storage != FX_ST_ARENA || elided[out] || fx_band_of(g, i)) continue;
    for (int k = 0; k < n->n_in && k < 2; k++) {
      int in = n->in[k];
      if (in < 0 || g->tensors[in].storage != FX_ST_ARENA || !in_place_ok(g, n, k)) continue;
      int root = alias[in] >= 0 ? alias[in] : in;
      if (bufs[root].last != i || (k == 1 && n->in[0] == in)) continue; /* still read later */
      bufs[root].last = bufs[out].last;
      alias[out] = root;
      bufs[out] = (fx_arena_buf){0, 0, 0, 0};
      break;
    }
  }
}

/* When node i runs: its own turn, or for a member of an active chain the chain's (band.h). */
static int run_index(const fx_graph *g, int i) {
  const fx_band_chain *c = fx_band_of(g, i);
  return c ? c->run_at : i;
}

/* The tensors no buffer holds: an active chain's intermediates, which exist only as a few rows
 * in the chain's scratch; and a skipped node's output that nothing reads (a PAD folded into its
 * reader's window: fuse.c). */
static void mark_elided(const fx_graph *g, unsigned char *elided) {
  for (int i = 0; i < g->n_nodes; i++)
    if (g->nodes[i].fused == FX_FUSED_SKIP && g->tensors[g->nodes[i].out[0]].storage == FX_ST_ARENA)
      elided[g->nodes[i].out[0]] = 1;
  for (int i = 0; i < g->n_nodes; i++) /* ... unless something still reads it */
    for (int k = 0; k < g->nodes[i].n_in; k++)
      if (g->nodes[i].in[k] >= 0) elided[g->nodes[i].in[k]] = 0;
  for (int i = 0; i < g->n_chains; i++) {
    const fx_band_chain *c = &g->chains[i];
    for (int m = 0; c->active && m < c->n_members; m++) {
      const fx_node *n = &g->nodes[c->members[m]];
      for (int k = 0; k < n->n_out; k++)
        if (n->out[k] >= 0 && n->out[k] != c->out) elided[n->out[k]] = 1;
    }
  }
}

/* Buffers (size, lifetime) of every arena tensor, scratch included, into bufs (one per tensor:
 * size 0 if not in the arena). A tensor lives from the first to the last turn that touches it. */
static void lifetimes(const fx_graph *g, const unsigned char *elided, fx_arena_buf *bufs) {
  for (int i = 0; i < g->n_tensors; i++) bufs[i] = (fx_arena_buf){0, -1, -1, 0};
  for (int i = 0; i < g->n_nodes; i++) {
    const fx_node *n = &g->nodes[i];
    const int at = run_index(g, i), member = at != i || fx_band_of(g, i);
    for (int k = -1; k < n->n_in + n->n_out; k++) {
      int id = k < 0 ? (member ? -1 : n->scratch) : k < n->n_in ? n->in[k] : n->out[k - n->n_in];
      if (id < 0 || g->tensors[id].storage != FX_ST_ARENA || elided[id]) continue;
      fx_arena_buf *b = &bufs[id];
      if (b->first < 0 || at < b->first) b->first = at;
      if (at > b->last) b->last = at;
      b->size = fx_shape_numel(&g->tensors[id].shape) * fx_dtype_size(g->tensors[id].dtype);
    }
  }
  for (int i = 0; i < g->n_chains; i++) {
    const fx_band_chain *c = &g->chains[i];
    if (c->active && c->scratch >= 0)
      bufs[c->scratch] = (fx_arena_buf){fx_shape_numel(&g->tensors[c->scratch].shape) * sizeof(float), c->run_at,
                                        c->run_at, 0};
  }
  for (int i = 0; i < g->n_tensors; i++)
    if (bufs[i].first < 0) bufs[i] = (fx_arena_buf){0, 0, 0, 0};
}

/* A scratch tensor of `bytes` for *id (made on first use), or why not. */
static const char *scratch_tensor(fx_graph *g, int *id, size_t bytes) {
  if (*id < 0) {
    fx_tensor sc = {.tfl = -1, .dtype = FX_F32, .storage = FX_ST_ARENA};
    if ((*id = fx_graph_add_tensor(g, &sc)) < 0) return "out of memory";
  }
  g->tensors[*id].shape = (fx_shape){1, {(int)((bytes + 3) / 4)}};
  return NULL;
}

/* Scratch tensors (im2col tiles, Winograd transforms, band buffers) join the arena with the
 * lifetime of the turn that uses them. */
static const char *add_scratch(fx_graph *g, int threads) {
  for (int i = 0; i < g->n_nodes; i++) {
    fx_node *n = &g->nodes[i];
    size_t bytes = fx_node_scratch_bytes(g, n, threads);
    const char *why = bytes ? scratch_tensor(g, &n->scratch, bytes) : NULL;
    if (why) return why;
  }
  for (int i = 0; i < g->n_chains; i++) {
    fx_band_chain *c = &g->chains[i];
    const char *why = c->active ? scratch_tensor(g, &c->scratch, c->cost.scratch_bytes * (size_t)threads) : NULL;
    if (why) return why;
  }
  return NULL;
}

static void greedy_free(fx_mem_plan *p) {
  free(p->offsets);
  memset(p, 0, sizeof *p);
}

static const char *greedy_plan(fx_mem_plan *out, fx_graph *g, int threads, size_t budget, int attempt,
                               struct fx_store *store, flex_error *err) {
  (void)budget, (void)attempt, (void)store, (void)err;
  memset(out, 0, sizeof *out);
  out->planner = &fx_greedy_planner;
  const char *why = add_scratch(g, threads);
  if (why) return why;
  const size_t n = (size_t)(g->n_tensors > 0 ? g->n_tensors : 1);
  fx_arena_buf *bufs = calloc(n, sizeof *bufs);
  int *alias = malloc(sizeof(int) * n);
  unsigned char *elided = calloc(n, 1);
  out->offsets = calloc(n, sizeof *out->offsets);
  if (!bufs || !alias || !elided || !out->offsets) {
    why = "out of memory";
  } else {
    mark_elided(g, elided);
    lifetimes(g, elided, bufs);
    plan_in_place(g, elided, bufs, alias);
    out->arena_bytes = fx_arena_plan_greedy(bufs, g->n_tensors);
    if (out->arena_bytes == (size_t)-1) why = "arena planning failed";
    for (int i = 0; i < g->n_tensors; i++)
      out->offsets[i] = elided[i] ? (size_t)-1 : bufs[alias[i] >= 0 ? alias[i] : i].offset;
  }
  out->n_steps = g->n_nodes;
  free(bufs);
  free(alias);
  free(elided);
  if (why) greedy_free(out);
  return why;
}

static const char *greedy_start(fx_mem_plan *p, char *arena) {
  (void)p, (void)arena;
  return NULL;
}

static int greedy_run(fx_mem_plan *p, fx_graph *g, fx_pool *pool, char *arena, int profile, char *msg,
                      size_t msg_len) {
  (void)p, (void)arena;
  const int failed = fx_run_nodes(g, pool, profile);
  if (failed < 0) return 0;
  snprintf(msg, msg_len, "node %d (%s) failed on its input data", g->nodes[failed].tfl_node,
           fx_op_name(g->nodes[failed].kind));
  return -1;
}

static int greedy_node_kernel(const fx_mem_plan *p, int node, int *slices) {
  (void)p, (void)node;
  *slices = 1;
  return FLEX_KERNEL_NODE;
}

const fx_planner fx_greedy_planner = {"greedy", greedy_plan, greedy_start, greedy_run, greedy_node_kernel,
                                      greedy_free};
