/* The budget planner (planner.h, after FlexNN): describes the partition to the Python planner
 * (through the flex_plan_callback extern), checks the plan it returns against what the kernels
 * need, turns it into steps and load units for the weight loader (loader.h), and runs those
 * steps. Nothing here knows TFLite. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "conv/conv.h"
#include "flex_api.h"
#include "ir/band.h"
#include "kernels/gemm/gemm.h"
#include "loader.h"
#include "planner.h"
#include "runtime/clock.h"
#include "store/store.h"

/* The budget bounds the delegate's whole footprint, so the arena gets it less what lives
 * outside: the partition inputs/outputs TFLite holds, plus this for the runtime itself (IR,
 * loader and pool threads, what planning leaves in the Python heap): measured 1-2.5 MB above
 * the arena on MobileNetV2, ResNet-152 and VGG-19 (bench/budget_sweep.py). */
#define FX_BUDGET_RUNTIME_RESERVE (5u << 19) /* 2.5 MiB */

/* Estimates for the planner beside the convolutions' (conv/choose.c fx_conv_cost_us,
 * fx_conv_qs8_cost_us), per thread: good enough to rank kernels and to decide how early to
 * preload; the planner only compares them. */
#define OTHER_FLOPS_PER_US 8e3
#define LOAD_BYTES_PER_US 3e3

/* Ways to run one layer at most: GEMM by channels, GEMM by rows, Winograd, direct, Winograd
 * from the GEMM panels (a chain: band by band only). */
#define FX_MAX_KERNELS 5

typedef struct {
  fx_budget *exec;         /* the loader and its steps, once started */
  fx_step *steps;          /* made by plan, handed over to the loader by start */
  fx_load_unit *units;
  int n_units, *deps, deps_start;
  /* The cache file versions its units stream from (one reference each: their fds stay open
   * and name the mapped bytes whatever happens to the path). */
  struct fx_cache_map **maps;
  int n_maps;
} budget_state;

static size_t external_bytes(const fx_graph *g) {
  size_t bytes = 0;
  for (int t = 0; t < g->n_tensors; t++)
    if (g->tensors[t].storage == FX_ST_EXTERNAL)
      bytes += fx_shape_numel(&g->tensors[t].shape) * fx_dtype_size(g->tensors[t].dtype);
  return bytes;
}

size_t fx_budget_reserve_bytes(const fx_graph *g) { return FX_BUDGET_RUNTIME_RESERVE + external_bytes(g); }

/* A raw constant the node's own kernel reads from a weight slot (the depthwise filter). */
static size_t raw_weight_bytes(const fx_graph *g, const fx_node *n) {
  return n->kind == FX_OP_DEPTHWISE ? fx_shape_numel(&g->tensors[n->in[1]].shape) * sizeof(float) : 0;
}

/* An active layer chain (ir/band.h) is one layer to the planner, FLEX_KERNEL_BAND: its layers'
 * weights (a conv's whole GEMM panels, a depthwise filter) side by side in one slot, at
 * off[l] with len[l] bytes (0: none), its band buffers and conv tiles as scratch. Its
 * intermediates never exist whole, which is what lets a budget plan keep the band speed and
 * go lower than running the members one by one. Returns the slot's bytes, or 0 when some conv
 * layer has no packed weights (packing ran out of memory: the chain cannot be offered). */
static size_t chain_layout(const fx_graph *g, const fx_band_chain *c, size_t *off, size_t *len) {
  size_t at = 0;
  for (int l = 0; l < c->n_layers; l++) {
    const fx_node *n = &g->nodes[c->layer[l].node];
    len[l] = 0;
    if (n->kind == FX_OP_CONV) {
      if (!fx_conv_weights(n->pack)->data) return 0;
      len[l] = (size_t)fx_conv_panels(n->pack) * fx_conv_panel_bytes(n->pack);
    } else {
      len[l] = raw_weight_bytes(g, n);
    }
    off[l] = at;
    at += (len[l] + FLEX_ARENA_ALIGN - 1) / FLEX_ARENA_ALIGN * FLEX_ARENA_ALIGN;
  }
  return at ? at : FLEX_ARENA_ALIGN; /* (a chain of no weights still gets a token slot) */
}

/* The chain as the planner's one option for it: its layers' estimates, scaled by the flops its
 * bands recompute at the strips' starts. */
static int chain_kernel(const fx_graph *g, const fx_band_chain *c, int threads, flex_kernel_desc *k) {
  size_t off[FX_BAND_MAX_LAYERS], len[FX_BAND_MAX_LAYERS];
  const size_t bytes = chain_layout(g, c, off, len);
  if (!bytes) return 0;
  double us = 0, flops = 0;
  for (int l = 0; l < c->n_layers; l++) {
    const fx_node *n = &g->nodes[c->layer[l].node];
    const double f = n->flops > 0 ? n->flops : 1;
    flops += f;
    if (n->kind == FX_OP_CONV) {
      fx_conv_geom geo;
      fx_node_conv_geom(g, n, &geo);
      us += fx_conv_cost_us(FLEX_KERNEL_GEMM, f, threads, &geo, n->pack);
    } else {
      us += f / (OTHER_FLOPS_PER_US * threads);
    }
  }
  if (c->cost.flops > flops) us *= c->cost.flops / flops;
  k[0] = (flex_kernel_desc){.kernel = FLEX_KERNEL_BAND, .slicing = FLEX_SLICE_NONE, .weight_bytes = bytes,
                            .scratch_bytes = c->cost.scratch_bytes * (size_t)threads, .compute_us = us,
                            .load_us = (double)bytes / LOAD_BYTES_PER_US, .simd = 1};
  return 1;
}

/* An int8 / uint8 conv / FC / depthwise (ir/qlayer.c): its packed panels, in a slot, by
 * output-channel panels (their requantization parameters are inside each panel: quant/pack.h)
 * as GEMM, or whole as the node's own kernel (depthwise). Scratch: a uint8 layer's flipped
 * input, or a hybrid one's quantized input, whole at each step (every panel reads all of it;
 * each slice makes it again: a pass over the input); the drivers' indirection buffers are a
 * few KB on the stack. */
static int qkernel_of(const fx_graph *g, const fx_node *n, int threads, flex_kernel_desc *k) {
  fx_qlayer_layout l;
  fx_qlayer_get_layout(n->qlayer, &l);
  const uint64_t bytes = (uint64_t)l.panels * l.panel_bytes;
  const size_t scratch = fx_qlayer_scratch_bytes(g, n);
  k[0] = (flex_kernel_desc){.kernel = l.sliceable ? FLEX_KERNEL_GEMM : FLEX_KERNEL_NODE,
                            .slicing = l.sliceable ? FLEX_SLICE_WEIGHTS : FLEX_SLICE_NONE, .weight_bytes = bytes,
                            .scratch_bytes = scratch,
                            .compute_us = fx_conv_qs8_cost_us(n->flops > 0 ? n->flops : 1, threads),
                            .slice_us = (double)scratch / (OTHER_FLOPS_PER_US * threads),
                            .load_us = (double)bytes / LOAD_BYTES_PER_US,
                            .out_channels = l.sliceable ? l.panels * l.nr : 0, .simd = l.sliceable ? l.nr : 1};
  return 1;
}

/* Every way layer n can run, with its bytes and estimates (the planner ranks them). A packed
 * form whose packing ran out of memory is not offered. Returns how many (>= 1 unless none). */
static int kernels_of(const fx_graph *g, const fx_node *n, int threads, flex_kernel_desc *k) {
  const double flops = n->flops > 0 ? n->flops : 1;
  const fx_band_chain *chain = fx_band_of(g, (int)(n - g->nodes));
  if (chain) return chain_kernel(g, chain, threads, k);
  if (n->qlayer) return qkernel_of(g, n, threads, k);
  if ((n->kind != FX_OP_CONV && n->kind != FX_OP_FC) || !n->pack) {
    const size_t raw = raw_weight_bytes(g, n);
    k[0] = (flex_kernel_desc){.kernel = FLEX_KERNEL_NODE, .slicing = FLEX_SLICE_NONE, .weight_bytes = raw,
                              .scratch_bytes = fx_node_scratch_bytes(g, n, threads),
                              .compute_us = flops / (OTHER_FLOPS_PER_US * threads),
                              .load_us = (double)raw / LOAD_BYTES_PER_US, .simd = 1};
    return 1;
  }
  fx_conv_geom geo;
  fx_node_conv_geom(g, n, &geo);
  int nk = 0;
  for (int kernel = FLEX_KERNEL_GEMM; kernel <= FLEX_KERNEL_WINOGRAD_RT; kernel++) {
    const fx_conv_pack *p = fx_node_pack(n, kernel);
    if (!p || !fx_conv_weights(p)->data) continue;
    const int direct = kernel == FLEX_KERNEL_DIRECT, rt = kernel == FLEX_KERNEL_WINOGRAD_RT;
    const int wino = rt || kernel == FLEX_KERNEL_WINOGRAD;
    /* direct is its own option only where im2col runs by default (else GEMM already is direct) */
    if (direct && (n->kind != FX_OP_CONV || geo.direct || fx_conv_pack_direct(p) || !fx_conv_direct_supported(p, &geo)))
      continue;
    const size_t scratch = direct ? 0 : rt ? fx_conv_winograd_rt_scratch_bytes(p, &geo, threads)
                                           : fx_conv_scratch_bytes(p, &geo, threads);
    if (kernel == FLEX_KERNEL_GEMM_ROWS && !scratch) continue; /* no im2col: nothing to slice by rows */
    const uint64_t bytes = (uint64_t)fx_conv_panels(p) * fx_conv_panel_bytes(p);
    const int rows = kernel == FLEX_KERNEL_GEMM_ROWS;
    k[nk++] = (flex_kernel_desc){
        .kernel = kernel, .slicing = rows ? FLEX_SLICE_INPUT : FLEX_SLICE_WEIGHTS, .weight_bytes = bytes,
        .scratch_bytes = scratch, .compute_us = fx_conv_cost_us(kernel, flops, threads, &geo, p),
        .slice_us = wino ? fx_conv_winograd_slice_us(&geo, rt ? fx_conv_pack_winograd_rt(p) : fx_conv_pack_tile(p), threads) : 0,
        .load_us = (double)bytes / LOAD_BYTES_PER_US, .out_channels = fx_conv_panels(p) * fx_conv_nr(p),
        .out_rows = (int)geo.m, .simd = rows ? fx_gemm_config_get()->mr * threads : fx_conv_nr(p)};
  }
  return nk;
}

/* The partition as flex_api.h describes it to the planner: its layers (the nodes run at
 * invoke, an active chain as one at its last member), their kernel options, and every tensor
 * they touch, once. */
typedef struct {
  int *layers; /* node of each layer */
  int n_layers;
  flex_layer_desc *ld;
  flex_kernel_desc *kd;
  int *ins;
  flex_tensor_desc *td;
  int n_td;
} partition_desc;

static void desc_free(partition_desc *d) {
  free(d->layers);
  free(d->ld);
  free(d->kd);
  free(d->ins);
  free(d->td);
}

/* Whether tensor id is made inside chain c (one of its members' outputs but the chain's). */
static int chain_made(const fx_graph *g, const fx_band_chain *c, int id) {
  for (int m = 0; m < c->n_members; m++) {
    const fx_node *n = &g->nodes[c->members[m]];
    for (int k = 0; k < n->n_out; k++)
      if (n->out[k] == id && id != c->out) return 1;
  }
  return 0;
}

/* The activations node n reads (a chain: all its members read but make), once each. */
static void layer_inputs(const fx_graph *g, const fx_node *n, const fx_band_chain *c, flex_layer_desc *ld,
                         int *ins, int *used_ins) {
  const int one = (int)(n - g->nodes);
  for (int m = 0; m < (c ? c->n_members : 1); m++) {
    const fx_node *r = &g->nodes[c ? c->members[m] : one];
    for (int k = 0; k < r->n_in; k++) {
      int id = r->in[k], seen = 0;
      if (id < 0 || g->tensors[id].storage == FX_ST_CONST || (c && chain_made(g, c, id))) continue;
      for (int j = 0; j < ld->n_inputs && !seen; j++) seen = ld->inputs[j] == id;
      if (seen) continue;
      ins[(*used_ins)++] = id;
      ld->n_inputs++;
    }
  }
}

static void describe_layer(const fx_graph *g, const fx_node *n, int threads, partition_desc *d, int l, int *used_ins) {
  flex_layer_desc *ld = &d->ld[l];
  const fx_band_chain *c = fx_band_of(g, (int)(n - g->nodes));
  memset(ld, 0, sizeof *ld);
  ld->index = l;
  ld->node = n->tfl_node;
  ld->builtin = n->tfl_builtin;
  ld->inputs = d->ins + *used_ins;
  layer_inputs(g, n, c, ld, d->ins, used_ins);
  ld->output = c ? c->out : n->out[0];
  ld->kernels = d->kd + (size_t)l * FX_MAX_KERNELS;
  ld->n_kernels = kernels_of(g, n, threads, d->kd + (size_t)l * FX_MAX_KERNELS);
  for (int k = -1; k < ld->n_inputs; k++) { /* every tensor the layers touch, once */
    int id = k < 0 ? ld->output : ld->inputs[k];
    int seen = 0;
    for (int t = 0; t < d->n_td && !seen; t++) seen = d->td[t].id == id;
    if (seen) continue;
    const fx_tensor *t = &g->tensors[id];
    flex_tensor_desc *td = &d->td[d->n_td++];
    td->id = id;
    td->kind = t->storage == FX_ST_ARENA ? FLEX_TENSOR_ACTIVATION : k < 0 ? FLEX_TENSOR_OUTPUT : FLEX_TENSOR_INPUT;
    td->nbytes = t->storage == FX_ST_ARENA ? fx_shape_numel(&t->shape) * fx_dtype_size(t->dtype) : 0;
  }
}

/* 0, or -1 when out of memory. */
static int describe(const fx_graph *g, int threads, partition_desc *d) {
  memset(d, 0, sizeof *d);
  int total_in = 0;
  d->layers = malloc(sizeof(int) * (size_t)(g->n_nodes + 1));
  for (int i = 0; d->layers && i < g->n_nodes; i++) {
    const fx_band_chain *c = fx_band_of(g, i);
    total_in += g->nodes[i].n_in;
    if (!g->nodes[i].at_prepare && (!c || c->run_at == i)) d->layers[d->n_layers++] = i;
  }
  d->ld = calloc((size_t)d->n_layers + 1, sizeof *d->ld);
  d->kd = calloc((size_t)d->n_layers * FX_MAX_KERNELS + 1, sizeof *d->kd);
  d->ins = calloc((size_t)total_in + 1, sizeof *d->ins);
  d->td = calloc((size_t)(total_in + d->n_layers) + 1, sizeof *d->td);
  if (!d->layers || !d->ld || !d->kd || !d->ins || !d->td) return -1;
  int used_ins = 0;
  for (int l = 0; l < d->n_layers; l++) describe_layer(g, &g->nodes[d->layers[l]], threads, d, l, &used_ins);
  return 0;
}

/* Asks the Python planner, growing the step array until its plan fits. On success *steps (the
 * caller frees it) holds plan->n_steps steps. NULL, or why not (err: the planner's account). */
static const char *ask_planner(const fx_graph *g, const partition_desc *d, int threads, size_t budget, int attempt,
                               flex_plan *plan, flex_step_plan **steps, flex_error *err) {
  flex_graph_desc desc = {d->n_layers, d->n_td, threads, d->ld, d->td, budget, fx_budget_reserve_bytes(g),
                          fx_gemm_config_get()->name, attempt};
  *steps = NULL;
  for (int cap = d->n_layers * 4 + 16;;) { /* the planner says how many steps it needs */
    free(*steps);
    *steps = calloc((size_t)cap, sizeof **steps);
    if (!*steps) return "out of memory";
    plan->capacity = cap;
    plan->steps = *steps;
    plan->error = (flex_error){.node = -1};
    if (flex_plan_callback(&desc, plan)) {
      *err = plan->error;
      if (!err->message[0]) snprintf(err->message, sizeof err->message, "the budget planner failed");
      return err->message;
    }
    if (plan->n_steps <= cap) break;
    cap = plan->n_steps;
  }
  return plan->n_steps < d->n_layers ? "the planner returned fewer steps than layers" : NULL;
}

/* The panels [pan0, pan1) of a layer of `panels` panels of nr channels a step computes: its
 * channel slice, or all of them. */
static void step_panels(int nr, int panels, int slicing, int64_t start, int64_t count, int *pan0, int *pan1) {
  *pan0 = 0;
  *pan1 = panels;
  if (slicing != FLEX_SLICE_WEIGHTS) return;
  *pan0 = (int)(start / nr);
  *pan1 = (int)((start + count + nr - 1) / nr);
  if (*pan1 > panels) *pan1 = panels;
}

/* An int8 / uint8 layer's step: whole panels of its channels, in a slot that holds them, and a
 * scratch slot for all of a uint8 layer's flipped input or a hybrid one's quantized input. */
static const char *check_qstep(const fx_graph *g, const fx_node *n, const flex_step_plan *s) {
  fx_qlayer_layout l;
  fx_qlayer_get_layout(n->qlayer, &l);
  int pan0 = 0, pan1 = l.panels;
  if (s->slicing == FLEX_SLICE_WEIGHTS) {
    if (s->start < 0 || s->count <= 0 || s->start % l.nr || s->start >= (int64_t)l.panels * l.nr) return "bad channel slice";
    step_panels(l.nr, l.panels, s->slicing, s->start, s->count, &pan0, &pan1);
  } else if (s->slicing != FLEX_SLICE_NONE) {
    return "plan slices a layer its kernel cannot slice so";
  }
  if (s->s_bytes < fx_qlayer_scratch_bytes(g, n)) return "scratch slot too small";
  return s->w_bytes < (uint64_t)(pan1 - pan0) * l.panel_bytes ? "weight slot too small" : NULL;
}

static const char *check_step(const fx_graph *g, const flex_step_plan *s, const partition_desc *d, uint64_t arena,
                              int threads) {
  if (s->layer < 0 || s->layer >= d->n_layers) return "plan names an unknown layer";
  if (s->w_bytes && (s->w_offset > arena || s->w_bytes > arena - s->w_offset)) return "weight slot outside the arena";
  if (s->s_bytes && (s->s_offset > arena || s->s_bytes > arena - s->s_offset)) return "scratch slot outside the arena";
  if (s->w_offset % FLEX_ARENA_ALIGN || s->s_offset % FLEX_ARENA_ALIGN) return "unaligned slot"; /* kernels use aligned loads */
  const fx_node *n = &g->nodes[d->layers[s->layer]];
  flex_kernel_desc offered[FX_MAX_KERNELS];
  const int nk = kernels_of(g, n, threads, offered);
  const flex_kernel_desc *k = NULL;
  for (int i = 0; i < nk && !k; i++)
    if (offered[i].kernel == s->kernel) k = &offered[i];
  if (!k) return "plan names a kernel the layer does not offer";
  if (s->slicing != FLEX_SLICE_NONE && s->slicing != k->slicing) return "plan slices a layer its kernel cannot slice so";
  if (k->kernel == FLEX_KERNEL_BAND) /* whole: every layer's weights, every thread's buffers */
    return s->w_bytes < k->weight_bytes ? "weight slot too small" : s->s_bytes < k->scratch_bytes ? "scratch slot too small" : NULL;
  if (n->qlayer) return check_qstep(g, n, s);
  const fx_conv_pack *p = fx_node_pack(n, s->kernel);
  if (!p) return s->w_bytes < k->weight_bytes ? "weight slot too small" : NULL;
  fx_conv_geom geo;
  fx_node_conv_geom(g, n, &geo);
  const int nr = fx_conv_nr(p), panels = fx_conv_panels(p);
  if (s->slicing == FLEX_SLICE_WEIGHTS) {
    if (s->start < 0 || s->count <= 0 || s->start % nr || s->start >= (int64_t)panels * nr) return "bad channel slice";
  } else if (s->slicing == FLEX_SLICE_INPUT) {
    if (s->start < 0 || s->count <= 0 || (uint64_t)(s->start + s->count) > geo.m) return "bad row slice";
  }
  if (!s->w_bytes) return "conv layer without a weight slot";
  if (fx_conv_pack_tile(p) || s->kernel == FLEX_KERNEL_WINOGRAD_RT)
    return s->s_bytes < k->scratch_bytes ? "scratch slot too small" : NULL;
  if (k->scratch_bytes && s->s_bytes < (uint64_t)threads * fx_gemm_config_get()->mr * fx_conv_row_bytes(p))
    return "scratch slot below one tile";
  return NULL;
}

/* Never trust a plan blindly: every slot inside the arena, every slice what the kernel can run. */
static const char *check_plan(const fx_graph *g, const partition_desc *d, const flex_plan *plan,
                              const flex_step_plan *steps, int threads) {
  for (int i = 0; i < d->n_td; i++) {
    const uint64_t off = plan->tensor_offsets[i];
    if (!d->td[i].nbytes) continue;
    if (off > plan->arena_bytes || d->td[i].nbytes > plan->arena_bytes - off) return "plan places a tensor outside the arena";
    if (off % FLEX_ARENA_ALIGN) return "plan places a tensor unaligned";
  }
  const char *why = NULL;
  for (int i = 0; i < plan->n_steps && !why; i++) why = check_step(g, &steps[i], d, plan->arena_bytes, threads);
  return why;
}

/* Keeps mapping m (and so its fd) alive for the plan's life. 0 ok, -1 out of memory. */
static int hold_map(budget_state *b, fx_cache_map *m) {
  for (int i = 0; i < b->n_maps; i++)
    if (b->maps[i] == m) return 0;
  fx_cache_map **grown = realloc(b->maps, sizeof *grown * (size_t)(b->n_maps + 1));
  if (!grown) return -1;
  b->maps = grown;
  b->maps[b->n_maps++] = fx_cache_map_ref(m);
  return 0;
}

/* The load unit of a step's whole panels (nr channels and panel_bytes each, in blob w): one
 * contiguous range of the packed blob, streamed from the cache file (pread, so its pages never
 * enter our mapping) or copied from memory. FP32 conv panels and int8 ones alike. */
static const char *panels_unit(budget_state *b, const fx_wref *w, int nr, int panels, size_t panel_bytes,
                               const flex_step_plan *s, fx_load_unit *u) {
  int pan0, pan1;
  step_panels(nr, panels, s->slicing, s->start, s->count, &pan0, &pan1);
  const size_t off = (size_t)pan0 * panel_bytes;
  u->bytes = (size_t)(pan1 - pan0) * panel_bytes;
  if (u->bytes > s->w_bytes) return "weight slot smaller than its slice";
  if (!w->map) {
    u->mem = (const uint8_t *)w->data + off;
    return NULL;
  }
  if (hold_map(b, w->map)) return "out of memory";
  u->fd = w->map->fd;
  u->file_off = (off_t)((const uint8_t *)w->data - w->map->base + off);
  return NULL;
}

/* A chain's step: a load unit per layer with weights, into its place in the step's slot (the
 * loader loads units in order, so the step waits for its last). NULL, or why not. */
static const char *chain_units(budget_state *b, const fx_graph *g, const fx_band_chain *c, const flex_step_plan *s,
                               int step, fx_step *st) {
  size_t off[FX_BAND_MAX_LAYERS], len[FX_BAND_MAX_LAYERS];
  if (chain_layout(g, c, off, len) > s->w_bytes) return "weight slot smaller than its chain";
  for (int l = 0; l < c->n_layers; l++) {
    if (!len[l]) continue;
    const fx_node *n = &g->nodes[c->layer[l].node];
    fx_load_unit *u = &b->units[b->n_units];
    *u = (fx_load_unit){.slot = s->w_offset + off[l], .fd = -1, .step = step, .pinned = s->w_pinned};
    if (n->kind == FX_OP_CONV) {
      const flex_step_plan whole = {.slicing = FLEX_SLICE_NONE, .w_bytes = len[l]};
      const char *why = panels_unit(b, fx_conv_weights(n->pack), fx_conv_nr(n->pack), fx_conv_panels(n->pack),
                                    fx_conv_panel_bytes(n->pack), &whole, u);
      if (why) return why;
    } else {
      u->mem = g->tensors[n->in[1]].cdata;
      u->bytes = len[l];
    }
    st->unit = b->n_units++;
  }
  return NULL;
}

/* The units the plan's steps can need: one per step, and a chain's one per layer. */
static size_t max_units(const fx_graph *g, const flex_plan *plan) {
  size_t n = (size_t)plan->n_steps + 1;
  for (int i = 0; i < g->n_chains; i++)
    if (g->chains[i].active) n += (size_t)g->chains[i].n_layers;
  return n;
}

/* The plan's steps as the loader runs them, each step's weights a load unit of its own or
 * shared with the previous step of its layer (a chain's: one per layer). NULL, or why not. */
static const char *build_steps(budget_state *b, const fx_graph *g, const partition_desc *d, const flex_plan *plan,
                               const flex_step_plan *sp) {
  b->steps = calloc((size_t)plan->n_steps + 1, sizeof *b->steps);
  b->units = calloc(max_units(g, plan), sizeof *b->units);
  b->deps = calloc((size_t)plan->n_steps + 1, sizeof *b->deps);
  if (!b->steps || !b->units || !b->deps) return "out of memory";
  b->deps_start = plan->deps_start;
  int last_unit_of_layer = -1, last_layer = -1;
  for (int i = 0; i < plan->n_steps; i++) {
    const flex_step_plan *s = &sp[i];
    const fx_node *n = &g->nodes[d->layers[s->layer]];
    fx_step *st = &b->steps[i];
    *st = (fx_step){d->layers[s->layer], s->kernel, s->slicing, s->start, s->count, -1, s->w_offset, s->s_offset,
                    s->s_bytes};
    b->deps[i] = s->dep;
    if (s->layer != last_layer) last_unit_of_layer = -1;
    last_layer = s->layer;
    const fx_band_chain *c = fx_band_of(g, d->layers[s->layer]);
    if (c) { /* unsliced: one step */
      const char *why = chain_units(b, g, c, s, i, st);
      if (why) return why;
      continue;
    }
    const fx_conv_pack *p = fx_node_pack(n, s->kernel);
    const size_t raw = p || n->qlayer ? 0 : raw_weight_bytes(g, n);
    if (!s->w_bytes || (!p && !n->qlayer && !raw)) continue;
    if (!s->w_new && last_unit_of_layer >= 0) { st->unit = last_unit_of_layer; continue; }
    fx_load_unit *u = &b->units[b->n_units];
    *u = (fx_load_unit){.slot = s->w_offset, .fd = -1, .step = i, .pinned = s->w_pinned};
    const char *why = NULL;
    if (n->qlayer) {
      fx_qlayer_layout l;
      fx_qlayer_get_layout(n->qlayer, &l);
      why = panels_unit(b, l.ref, l.nr, l.panels, l.panel_bytes, s, u);
    } else if (p) {
      why = panels_unit(b, fx_conv_weights(p), fx_conv_nr(p), fx_conv_panels(p), fx_conv_panel_bytes(p), s, u);
    } else {
      u->mem = g->tensors[n->in[1]].cdata;
      u->bytes = raw;
    }
    if (why) return why;
    st->unit = last_unit_of_layer = b->n_units++;
  }
  return NULL;
}

static void budget_free(fx_mem_plan *p) {
  budget_state *b = p->state;
  if (b) {
    fx_budget_free(b->exec); /* the loader stops before the fds it reads close (it owns the steps then) */
    if (!b->exec) {
      free(b->steps);
      free(b->units);
      free(b->deps);
    }
    for (int i = 0; i < b->n_maps; i++) fx_cache_map_unref(b->maps[i]);
    free(b->maps);
    free(b);
  }
  free(p->offsets);
  memset(p, 0, sizeof *p);
}

/* The plan's arena offsets by tensor id. NULL, or why not. */
static const char *take_offsets(fx_mem_plan *out, const fx_graph *g, const partition_desc *d, const uint64_t *offs) {
  out->offsets = calloc((size_t)g->n_tensors + 1, sizeof *out->offsets);
  if (!out->offsets) return "out of memory";
  for (int t = 0; t < g->n_tensors; t++) out->offsets[t] = (size_t)-1;
  for (int i = 0; i < d->n_td; i++) out->offsets[d->td[i].id] = offs[i];
  return NULL;
}

/* A scratch tensor for each node its own kernel runs with scratch (BATCH_MATMUL, a uint8
 * layer's flipped input): outside the plan's tensors, it points at the step's scratch slot
 * while the step runs (budget_run, run_qlayer_step). */
static const char *add_node_scratch(fx_graph *g, int threads) {
  for (int i = 0; i < g->n_nodes; i++) {
    fx_node *n = &g->nodes[i];
    if (n->pack || n->scratch >= 0 || !fx_node_scratch_bytes(g, n, threads)) continue;
    fx_tensor sc = {.tfl = -1, .dtype = FX_F32, .storage = FX_ST_ARENA};
    if ((g->nodes[i].scratch = fx_graph_add_tensor(g, &sc)) < 0) return "out of memory";
  }
  return NULL;
}

static const char *budget_plan(fx_mem_plan *out, fx_graph *g, int threads, size_t budget, int attempt,
                               struct fx_store *store, flex_error *err) {
  (void)store;
  memset(out, 0, sizeof *out);
  for (int i = 0; i < g->n_chains; i++) { /* a chain with a conv whose packing ran out of memory */
    size_t off[FX_BAND_MAX_LAYERS], len[FX_BAND_MAX_LAYERS];
    if (g->chains[i].active && !chain_layout(g, &g->chains[i], off, len)) g->chains[i].active = 0;
  }
  out->planner = &fx_budget_planner;
  budget_state *b = out->state = calloc(1, sizeof *b);
  partition_desc d = {0};
  flex_plan plan = {0};
  flex_step_plan *steps = NULL;
  const char *why = !b || add_node_scratch(g, threads) || describe(g, threads, &d) ? "out of memory" : NULL;
  uint64_t *offs = why ? NULL : calloc((size_t)d.n_td + 1, sizeof *offs);
  if (!why && !offs) why = "out of memory";
  plan.tensor_offsets = offs;
  if (!why) why = ask_planner(g, &d, threads, budget, attempt, &plan, &steps, err);
  if (!why) why = check_plan(g, &d, &plan, steps, threads);
  if (!why) why = take_offsets(out, g, &d, offs);
  if (!why) why = build_steps(b, g, &d, &plan, steps);
  if (!why) {
    out->arena_bytes = plan.arena_bytes;
    out->min_budget_bytes = plan.min_budget_bytes;
    out->n_steps = plan.n_steps;
  }
  if (b) desc_free(&d);
  free(steps);
  free(offs);
  if (why) budget_free(out);
  return why;
}

static const char *budget_start(fx_mem_plan *p, char *arena) {
  budget_state *b = p->state;
  b->exec = fx_budget_new(b->steps, p->n_steps, b->units, b->n_units, b->deps, b->deps_start, arena);
  if (!b->exec) return "cannot start the weight loader";
  b->steps = NULL; /* the loader owns them now */
  b->units = NULL;
  b->deps = NULL;
  return fx_budget_load_pinned(b->exec) ? "reading pinned weights failed" : NULL;
}

static int budget_node_kernel(const fx_mem_plan *p, int node, int *slices) {
  const budget_state *b = p->state;
  int n_steps = 0, kernel = FLEX_KERNEL_NODE;
  const fx_step *steps = b->exec ? fx_budget_steps(b->exec, &n_steps) : NULL;
  *slices = 0;
  for (int i = 0; i < n_steps; i++)
    if (steps[i].node == node) {
      if (!*slices) kernel = steps[i].kernel;
      ++*slices;
    }
  if (!*slices) *slices = 1;
  return kernel;
}

/* One step of a conv whose weights the plan chose: its panels and rows, from the arena. */
static void run_conv_step(const fx_step *s, const fx_graph *g, const fx_node *n, const fx_conv_pack *p, fx_pool *pool,
                          char *arena) {
  fx_conv_geom geo;
  fx_node_conv_geom(g, n, &geo);
  int pan0, pan1;
  step_panels(fx_conv_nr(p), fx_conv_panels(p), s->slicing, s->start, s->count, &pan0, &pan1);
  size_t m0 = 0, m1 = geo.m, tile = 0;
  if (s->slicing == FLEX_SLICE_INPUT) {
    m0 = (size_t)s->start;
    m1 = (size_t)(s->start + s->count);
  }
  if (!fx_conv_pack_tile(p) && !geo.direct) { /* im2col rows per thread that fit the slot */
    int threads = fx_pool_threads(pool);
    tile = s->s_bytes / ((size_t)threads * fx_conv_row_bytes(p));
    tile = tile / (size_t)fx_gemm_config_get()->mr * (size_t)fx_gemm_config_get()->mr;
  }
  const float *x = g->tensors[n->in[0]].ptr, *panels = (const float *)(arena + s->w_off);
  float *y = g->tensors[n->out[0]].ptr;
  if (s->kernel == FLEX_KERNEL_DIRECT)
    fx_conv_run_direct_part(pool, p, &geo, x, y, n->act, panels, pan0, pan1, m0, m1);
  else if (s->kernel == FLEX_KERNEL_WINOGRAD_RT)
    fx_conv_run_winograd_rt_part(pool, p, &geo, x, y, (float *)(arena + s->s_off), n->act, panels, pan0, pan1);
  else
    fx_conv_run_part(pool, p, &geo, x, y, (float *)(arena + s->s_off), n->act, panels, pan0, pan1, m0, m1, tile);
}

/* A chain's step: band by band, each layer's weights from its place in the slot (chain_units),
 * the bands in the scratch slot. */
static void run_chain_step(const fx_step *s, fx_graph *g, const fx_band_chain *c, fx_pool *pool, char *arena) {
  size_t off[FX_BAND_MAX_LAYERS], len[FX_BAND_MAX_LAYERS];
  const void *w[FX_BAND_MAX_LAYERS];
  chain_layout(g, c, off, len);
  for (int l = 0; l < c->n_layers; l++) w[l] = len[l] ? arena + s->w_off + off[l] : NULL;
  fx_band_run(g, c, pool, (float *)(arena + s->s_off), w);
}

/* One step of an int8 layer: its panels (all, or the step's channel slice) from their slot. */
static int run_qlayer_step(const fx_step *s, fx_graph *g, fx_node *n, fx_pool *pool, char *arena) {
  fx_qlayer_layout l;
  fx_qlayer_get_layout(n->qlayer, &l);
  int pan0, pan1;
  step_panels(l.nr, l.panels, s->slicing, s->start, s->count, &pan0, &pan1);
  if (n->scratch >= 0) g->tensors[n->scratch].ptr = s->s_bytes ? arena + s->s_off : NULL; /* its input, made */
  return fx_qlayer_run_part(g, n, pool, arena + s->w_off, pan0, pan1);
}

static int budget_run(fx_mem_plan *p, fx_graph *g, fx_pool *pool, char *arena, int profile, char *msg,
                      size_t msg_len) {
  budget_state *b = p->state;
  int n_steps;
  const fx_step *steps = fx_budget_steps(b->exec, &n_steps);
  fx_budget_start(b->exec);
  for (int i = 0; i < n_steps; i++) {
    const fx_step *s = &steps[i];
    fx_node *n = &g->nodes[s->node];
    uint64_t t0 = profile ? fx_now_ns() : 0; /* includes waiting for its weights: that is its cost */
    int rc = fx_budget_wait(b->exec, i);
    const fx_conv_pack *pack = fx_node_pack(n, s->kernel);
    if (!rc && s->kernel == FLEX_KERNEL_BAND) {
      run_chain_step(s, g, fx_band_of(g, s->node), pool, arena);
    } else if (!rc && n->qlayer) {
      rc = run_qlayer_step(s, g, n, pool, arena);
    } else if (!rc && pack) {
      run_conv_step(s, g, n, pack, pool, arena);
    } else if (!rc) {
      void *saved = NULL;
      if (s->unit >= 0) { /* the filter was copied into its slot */
        saved = g->tensors[n->in[1]].ptr;
        g->tensors[n->in[1]].ptr = arena + s->w_off;
      }
      if (n->scratch >= 0) { /* the step's scratch slot */
        g->tensors[n->scratch].ptr = s->s_bytes ? arena + s->s_off : NULL;
        g->tensors[n->scratch].shape = (fx_shape){1, {(int)(s->s_bytes / sizeof(float))}};
      }
      rc = fx_run_node(g, n, pool);
      if (s->unit >= 0) g->tensors[n->in[1]].ptr = saved;
    }
    if (rc) {
      snprintf(msg, msg_len, "a budgeted run failed (weight streaming or kernel error)");
      return -1;
    }
    fx_budget_done(b->exec, i);
    if (profile) {
      n->prof_ns += fx_now_ns() - t0;
      if (i + 1 == n_steps || steps[i + 1].node != s->node) n->prof_runs++; /* one run per node */
    }
  }
  return 0;
}

const fx_planner fx_budget_planner = {"budget", budget_plan, budget_start, budget_run, budget_node_kernel,
                                      budget_free};
