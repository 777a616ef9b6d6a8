/* A partition under a budget: describe it to the planner (Python, through the flex_plan_callback
 * extern), check the plan it returns against what the kernels need, turn it into steps and load
 * units, and run those steps. Nothing here knows TFLite. */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "loader.h"
#include "budget.h"
#include "runtime/clock.h"
#include "conv/conv.h"
#include "flex_api.h"
#include "kernels/gemm/gemm.h"
#include "store/store.h"

/* The budget bounds the delegate's whole footprint, so the arena gets it less what lives
 * outside: the partition inputs/outputs TFLite holds, plus this for the runtime itself (IR,
 * loader and pool threads, what planning leaves in the Python heap): measured 1-2.5 MB above
 * the arena on MobileNetV2, ResNet-152 and VGG-19 (bench/budget_sweep.py). */
#define FX_BUDGET_RUNTIME_RESERVE (5u << 19) /* 2.5 MiB */

/* Estimates for the planner beside the convolutions' (conv/choose.c fx_conv_cost_us), per
 * thread: good enough to rank kernels and to decide how early to preload; the planner only
 * compares them. */
#define OTHER_FLOPS_PER_US 8e3
#define LOAD_BYTES_PER_US 3e3

/* Ways to run one layer at most: Winograd, GEMM by channels, GEMM by rows, direct. */
#define FX_MAX_KERNELS 4

/* The packed weights a kernel runs with: a conv's GEMM panels (its own, or the GEMM form of a
 * Winograd conv) or its Winograd panels; NULL for FLEX_KERNEL_NODE or a form the node lacks. */
static const fx_conv_pack *pack_for(const fx_node *n, int kernel) {
  if ((n->kind != FX_OP_CONV && n->kind != FX_OP_FC) || !n->pack) return NULL;
  const int winograd = fx_conv_pack_tile(n->pack) != 0;
  if (kernel == FLEX_KERNEL_WINOGRAD) return winograd ? n->pack : NULL;
  if (kernel == FLEX_KERNEL_GEMM || kernel == FLEX_KERNEL_GEMM_ROWS || kernel == FLEX_KERNEL_DIRECT)
    return winograd ? n->gemm_pack : n->pack;
  return NULL;
}

/* A raw constant the node's own kernel reads from a weight slot (the depthwise filter). */
static size_t raw_weight_bytes(const fx_graph *g, const fx_node *n) {
  return n->kind == FX_OP_DEPTHWISE ? fx_shape_numel(&g->tensors[n->in[1]].shape) * sizeof(float) : 0;
}

/* Every way layer n can run, with its bytes and estimates (the planner ranks them). A packed
 * form whose packing ran out of memory is not offered. Returns how many (>= 1 unless none). */
static int kernels_of(const fx_graph *g, const fx_node *n, int threads, flex_kernel_desc *k) {
  const double flops = n->flops > 0 ? n->flops : 1;
  if ((n->kind != FX_OP_CONV && n->kind != FX_OP_FC) || !n->pack) {
    const size_t raw = raw_weight_bytes(g, n);
    k[0] = (flex_kernel_desc){.kernel = FLEX_KERNEL_NODE, .slicing = FX_SLICE_NONE, .weight_bytes = raw,
                              .compute_us = flops / (OTHER_FLOPS_PER_US * threads),
                              .load_us = (double)raw / LOAD_BYTES_PER_US, .simd = 1};
    return 1;
  }
  fx_conv_geom geo;
  fx_node_conv_geom(g, n, &geo);
  int nk = 0;
  for (int kernel = FLEX_KERNEL_GEMM; kernel <= FLEX_KERNEL_DIRECT; kernel++) {
    const fx_conv_pack *p = pack_for(n, kernel);
    if (!p || !fx_conv_weights(p)->data) continue;
    const int direct = kernel == FLEX_KERNEL_DIRECT;
    /* direct is its own option only where im2col runs by default (else GEMM already is direct) */
    if (direct && (n->kind != FX_OP_CONV || geo.direct || fx_conv_pack_direct(p) || !fx_conv_direct_supported(p, &geo)))
      continue;
    const size_t scratch = direct ? 0 : fx_conv_scratch_bytes(p, &geo, threads);
    if (kernel == FLEX_KERNEL_GEMM_ROWS && !scratch) continue; /* no im2col: nothing to slice by rows */
    const uint64_t bytes = (uint64_t)fx_conv_panels(p) * fx_conv_panel_bytes(p);
    const int rows = kernel == FLEX_KERNEL_GEMM_ROWS;
    k[nk++] = (flex_kernel_desc){
        .kernel = kernel, .slicing = rows ? FX_SLICE_INPUT : FX_SLICE_WEIGHTS, .weight_bytes = bytes,
        .scratch_bytes = scratch, .compute_us = fx_conv_cost_us(kernel, flops, threads),
        .load_us = (double)bytes / LOAD_BYTES_PER_US, .out_channels = fx_conv_panels(p) * fx_conv_nr(p),
        .out_rows = (int)geo.m, .simd = rows ? fx_gemm_config_get()->mr * threads : fx_conv_nr(p)};
  }
  return nk;
}

int fx_budget_add_gemm_forms(fx_graph *g, struct fx_store *store) {
  int added = 0;
  for (int i = 0; i < g->n_nodes; i++) {
    fx_node *n = &g->nodes[i];
    if (!n->pack || !fx_conv_pack_tile(n->pack) || n->gemm_pack) continue;
    if (!(n->gemm_pack = fx_conv_pack_gemm_form(store, n->pack))) return -1;
    added++;
  }
  return added;
}

/* Keeps mapping m (and so its fd) alive for the plan's life. 0 ok, -1 out of memory. */
static int hold_map(fx_budget_plan *bp, fx_cache_map *m) {
  for (int i = 0; i < bp->n_maps; i++)
    if (bp->maps[i] == m) return 0;
  fx_cache_map **grown = realloc(bp->maps, sizeof *grown * (size_t)(bp->n_maps + 1));
  if (!grown) return -1;
  bp->maps = grown;
  bp->maps[bp->n_maps++] = fx_cache_map_ref(m);
  return 0;
}

void fx_budget_plan_free(fx_budget_plan *bp) {
  fx_budget_free(bp->exec); /* the loader stops before the fds it reads close */
  for (int i = 0; i < bp->n_maps; i++) fx_cache_map_unref(bp->maps[i]);
  free(bp->maps);
  free(bp->tensor_offset);
  memset(bp, 0, sizeof *bp);
}

static size_t external_bytes(const fx_graph *g) {
  size_t bytes = 0;
  for (int t = 0; t < g->n_tensors; t++)
    if (g->tensors[t].storage == FX_ST_EXTERNAL)
      bytes += fx_shape_numel(&g->tensors[t].shape) * fx_dtype_size(g->tensors[t].dtype);
  return bytes;
}

size_t fx_budget_unlimited_extra(const fx_graph *g) {
  size_t bytes = FX_BUDGET_RUNTIME_RESERVE + external_bytes(g);
  for (int i = 0; i < g->n_nodes; i++) {
    const fx_node *n = &g->nodes[i];
    if (n->at_prepare) continue;
    int packed = (n->kind == FX_OP_CONV || n->kind == FX_OP_FC) && n->pack;
    if (packed) bytes += fx_conv_weights(n->pack)->size;
    for (int k = 0; k < n->n_in; k++) {
      int id = n->in[k];
      if (id < 0 || g->tensors[id].storage != FX_ST_CONST || (packed && k == 1)) continue;
      bytes += fx_shape_numel(&g->tensors[id].shape) * fx_dtype_size(g->tensors[id].dtype);
    }
  }
  return bytes;
}

/* What the planner needs to know about the partition. */
static void describe(const fx_graph *g, int threads, const int *layers, int n_layers, flex_layer_desc *ld,
                     flex_kernel_desc *kd, int *ins, flex_tensor_desc *td, int *n_td) {
  int nt = 0, used_ins = 0;
  for (int l = 0; l < n_layers; l++) {
    const fx_node *n = &g->nodes[layers[l]];
    flex_layer_desc *d = &ld[l];
    memset(d, 0, sizeof *d);
    d->index = l;
    d->node = n->tfl_node;
    d->builtin = n->tfl_builtin;
    d->inputs = ins + used_ins;
    for (int k = 0; k < n->n_in; k++) {
      int id = n->in[k];
      if (id < 0 || g->tensors[id].storage == FX_ST_CONST) continue;
      ins[used_ins++] = id;
      d->n_inputs++;
    }
    d->output = n->out[0];
    d->kernels = kd + (size_t)l * FX_MAX_KERNELS;
    d->n_kernels = kernels_of(g, n, threads, kd + (size_t)l * FX_MAX_KERNELS);
    for (int k = -1; k < d->n_inputs; k++) { /* every tensor the layers touch, once */
      int id = k < 0 ? d->output : d->inputs[k];
      int seen = 0;
      for (int t = 0; t < nt && !seen; t++) seen = td[t].id == id;
      if (seen) continue;
      const fx_tensor *t = &g->tensors[id];
      td[nt].id = id;
      td[nt].kind = t->storage == FX_ST_ARENA ? 0 : k < 0 ? 2 : 1;
      td[nt].nbytes = t->storage == FX_ST_ARENA ? fx_shape_numel(&t->shape) * fx_dtype_size(t->dtype) : 0;
      nt++;
    }
  }
  *n_td = nt;
}

/* The panels [pan0, pan1) of pack p a step computes: its channel slice, or all of them. */
static void step_panels(const fx_conv_pack *p, int slicing, int64_t start, int64_t count, int *pan0, int *pan1) {
  const int nr = fx_conv_nr(p), panels = fx_conv_panels(p);
  *pan0 = 0;
  *pan1 = panels;
  if (slicing != FX_SLICE_WEIGHTS) return;
  *pan0 = (int)(start / nr);
  *pan1 = (int)((start + count + nr - 1) / nr);
  if (*pan1 > panels) *pan1 = panels;
}

static const char *check_step(const fx_graph *g, const flex_step_plan *s, int n_layers, const int *layers,
                              uint64_t arena, int threads) {
  if (s->layer < 0 || s->layer >= n_layers) return "plan names an unknown layer";
  if (s->w_bytes && (s->w_offset > arena || s->w_bytes > arena - s->w_offset)) return "weight slot outside the arena";
  if (s->s_bytes && (s->s_offset > arena || s->s_bytes > arena - s->s_offset)) return "scratch slot outside the arena";
  const fx_node *n = &g->nodes[layers[s->layer]];
  flex_kernel_desc offered[FX_MAX_KERNELS];
  const int nk = kernels_of(g, n, threads, offered);
  const flex_kernel_desc *k = NULL;
  for (int i = 0; i < nk && !k; i++)
    if (offered[i].kernel == s->kernel) k = &offered[i];
  if (!k) return "plan names a kernel the layer does not offer";
  if (s->slicing != FX_SLICE_NONE && s->slicing != k->slicing) return "plan slices a layer its kernel cannot slice so";
  const fx_conv_pack *p = pack_for(n, s->kernel);
  if (!p) return s->w_bytes < k->weight_bytes ? "weight slot too small" : NULL;
  fx_conv_geom geo;
  fx_node_conv_geom(g, n, &geo);
  const int nr = fx_conv_nr(p), panels = fx_conv_panels(p);
  if (s->slicing == FX_SLICE_WEIGHTS) {
    if (s->start < 0 || s->count <= 0 || s->start % nr || s->start >= (int64_t)panels * nr) return "bad channel slice";
  } else if (s->slicing == FX_SLICE_INPUT) {
    if (s->start < 0 || s->count <= 0 || (uint64_t)(s->start + s->count) > geo.m) return "bad row slice";
  }
  if (!s->w_bytes) return "conv layer without a weight slot";
  if (fx_conv_pack_tile(p)) return s->s_bytes < k->scratch_bytes ? "scratch slot too small" : NULL;
  if (k->scratch_bytes && s->s_bytes < (uint64_t)threads * fx_gemm_config_get()->mr * fx_conv_row_bytes(p))
    return "scratch slot below one tile";
  return NULL;
}
const char *fx_budget_plan_make(fx_graph *g, int threads, size_t budget, struct fx_store *store, fx_budget_plan *out,
                                char *msg, size_t msg_len) {
  memset(out, 0, sizeof *out);
  int *layers = malloc(sizeof(int) * (size_t)(g->n_nodes + 1));
  int n_layers = 0, total_in = 0;
  for (int i = 0; i < g->n_nodes; i++) {
    total_in += g->nodes[i].n_in;
    if (!g->nodes[i].at_prepare) layers[n_layers++] = i;
  }
  flex_layer_desc *ld = calloc((size_t)n_layers + 1, sizeof *ld);
  flex_kernel_desc *kd = calloc((size_t)n_layers * FX_MAX_KERNELS + 1, sizeof *kd);
  int *ins = calloc((size_t)total_in + 1, sizeof *ins);
  flex_tensor_desc *td = calloc((size_t)(total_in + n_layers) + 1, sizeof *td);
  flex_step_plan *sp = NULL;
  uint64_t *offs = NULL;
  const char *why = NULL;
  if (!layers || !ld || !kd || !ins || !td) { why = "out of memory"; goto done; }
  int n_td = 0;
  describe(g, threads, layers, n_layers, ld, kd, ins, td, &n_td);
  size_t reserve = FX_BUDGET_RUNTIME_RESERVE + external_bytes(g);
  flex_graph_desc desc = {n_layers, n_td, threads, ld, td, budget, reserve, fx_gemm_config_get()->name};
  flex_plan plan = {0};
  offs = calloc((size_t)n_td + 1, sizeof *offs);
  plan.tensor_offsets = offs;
  for (int cap = n_layers * 4 + 16;;) { /* the planner says how many steps it needs */
    free(sp);
    sp = calloc((size_t)cap, sizeof *sp);
    if (!sp || !offs) { why = "out of memory"; goto done; }
    plan.capacity = cap;
    plan.steps = sp;
    int rc = flex_plan_callback(&desc, &plan);
    if (rc) {
      snprintf(msg, msg_len, "%s", plan.error[0] ? plan.error : "the budget planner failed");
      why = msg;
      goto done;
    }
    if (plan.n_steps <= cap) break;
    cap = plan.n_steps;
  }
  if (plan.n_steps < n_layers) { why = "the planner returned fewer steps than layers"; goto done; }
  /* Never trust a plan blindly: every slot inside the arena, every slice what the kernel can run. */
  for (int i = 0; i < n_td; i++)
    if (td[i].nbytes && (offs[i] > plan.arena_bytes || td[i].nbytes > plan.arena_bytes - offs[i])) {
      why = "plan places a tensor outside the arena";
      goto done;
    }
  for (int i = 0; i < plan.n_steps; i++)
    if ((why = check_step(g, &sp[i], n_layers, layers, plan.arena_bytes, threads))) goto done;
  fx_step *steps = calloc((size_t)plan.n_steps + 1, sizeof *steps);
  fx_load_unit *units = calloc((size_t)plan.n_steps + 1, sizeof *units);
  int *deps = calloc((size_t)plan.n_steps + 1, sizeof *deps);
  out->tensor_offset = calloc((size_t)g->n_tensors + 1, sizeof *out->tensor_offset);
  if (!steps || !units || !deps || !out->tensor_offset) {
    free(steps); free(units); free(deps);
    why = "out of memory";
    goto done;
  }
  for (int t = 0; t < g->n_tensors; t++) out->tensor_offset[t] = (size_t)-1;
  for (int i = 0; i < n_td; i++) out->tensor_offset[td[i].id] = offs[i];
  int n_units = 0, last_unit_of_layer = -1, last_layer = -1;
  for (int i = 0; i < plan.n_steps; i++) {
    const flex_step_plan *s = &sp[i];
    const fx_node *n = &g->nodes[layers[s->layer]];
    fx_step *st = &steps[i];
    *st = (fx_step){layers[s->layer], s->kernel, s->slicing, s->start, s->count, -1, s->w_offset, s->s_offset,
                    s->s_bytes};
    deps[i] = s->dep;
    if (s->layer != last_layer) last_unit_of_layer = -1;
    last_layer = s->layer;
    const fx_conv_pack *p = pack_for(n, s->kernel);
    const size_t raw = p ? 0 : raw_weight_bytes(g, n);
    if (!s->w_bytes || (!p && !raw)) continue;
    if (!s->w_new && last_unit_of_layer >= 0) { st->unit = last_unit_of_layer; continue; }
    fx_load_unit *u = &units[n_units];
    u->fd = -1;
    u->slot = s->w_offset;
    u->step = i;
    u->pinned = s->w_pinned;
    if (p) { /* a run of whole panels: one contiguous range of the packed blob */
      const fx_wref *w = fx_conv_weights(p);
      int pan0, pan1;
      step_panels(p, s->slicing, s->start, s->count, &pan0, &pan1);
      size_t off = (size_t)pan0 * fx_conv_panel_bytes(p);
      u->bytes = (size_t)(pan1 - pan0) * fx_conv_panel_bytes(p);
      if (u->bytes > s->w_bytes) { why = "weight slot smaller than its slice"; free(steps); free(units); free(deps); goto done; }
      if (w->map) { /* stream from the file: pread, so the pages never enter our mapping */
        if (hold_map(out, w->map)) { why = "out of memory"; free(steps); free(units); free(deps); goto done; }
        u->fd = w->map->fd;
        u->file_off = (off_t)((const uint8_t *)w->data - w->map->base + off);
      } else {
        u->mem = (const uint8_t *)w->data + off;
      }
    } else {
      u->mem = g->tensors[n->in[1]].cdata;
      u->bytes = raw;
    }
    st->unit = last_unit_of_layer = n_units++;
  }
  out->arena_bytes = plan.arena_bytes;
  out->min_budget_bytes = plan.min_budget_bytes;
  out->n_steps = plan.n_steps;
  out->pending_steps = steps;
  out->pending_units = units;
  out->pending_n_units = n_units;
  out->pending_deps = deps;
  out->deps_start = plan.deps_start;
done:
  free(layers);
  free(ld);
  free(kd);
  free(ins);
  free(td);
  free(sp);
  free(offs);
  if (why) {
    free(out->tensor_offset);
    out->tensor_offset = NULL;
  }
  return why;
}

const char *fx_budget_plan_start(fx_budget_plan *bp, char *arena) {
  bp->exec = fx_budget_new(bp->pending_steps, bp->n_steps, bp->pending_units, bp->pending_n_units,
                           bp->pending_deps, bp->deps_start, arena);
  if (!bp->exec) {
    free(bp->pending_steps); free(bp->pending_units); free(bp->pending_deps);
    return "cannot start the weight loader";
  }
  bp->pending_steps = NULL;
  bp->pending_units = NULL;
  bp->pending_deps = NULL;
  return fx_budget_load_pinned(bp->exec) ? "reading pinned weights failed" : NULL;
}

int fx_budget_plan_slices(const fx_budget_plan *bp, int node) {
  if (!bp->exec) return 1;
  int n_steps, count = 0;
  const fx_step *steps = fx_budget_steps(bp->exec, &n_steps);
  for (int i = 0; i < n_steps; i++) count += steps[i].node == node;
  return count ? count : 1;
}

const struct fx_conv_pack *fx_budget_plan_pack(const fx_budget_plan *bp, const fx_graph *g, int node, int *kernel) {
  int n_steps = 0;
  const fx_step *steps = bp->exec ? fx_budget_steps(bp->exec, &n_steps) : NULL;
  *kernel = FLEX_KERNEL_NODE;
  for (int i = 0; i < n_steps; i++)
    if (steps[i].node == node) {
      *kernel = steps[i].kernel;
      return pack_for(&g->nodes[node], steps[i].kernel);
    }
  return g->nodes[node].pack;
}

int fx_budget_plan_run(fx_budget_plan *bp, fx_graph *g, fx_pool *pool, char *arena, int profile) {
  int n_steps;
  const fx_step *steps = fx_budget_steps(bp->exec, &n_steps);
  fx_budget_start(bp->exec);
  for (int i = 0; i < n_steps; i++) {
    const fx_step *s = &steps[i];
    fx_node *n = &g->nodes[s->node];
    uint64_t t0 = profile ? fx_now_ns() : 0; /* includes waiting for its weights: that is its cost */
    if (fx_budget_wait(bp->exec, i)) return -1;
    const fx_conv_pack *p = pack_for(n, s->kernel);
    if (p) {
      fx_conv_geom geo;
      fx_node_conv_geom(g, n, &geo);
      int pan0, pan1;
      step_panels(p, s->slicing, s->start, s->count, &pan0, &pan1);
      size_t m0 = 0, m1 = geo.m, tile = 0;
      if (s->slicing == FX_SLICE_INPUT) {
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
      else
        fx_conv_run_part(pool, p, &geo, x, y, (float *)(arena + s->s_off), n->act, panels, pan0, pan1, m0, m1, tile);
    } else {
      void *saved = NULL;
      if (s->unit >= 0) { /* the filter was copied into its slot */
        saved = g->tensors[n->in[1]].ptr;
        g->tensors[n->in[1]].ptr = arena + s->w_off;
      }
      int rc = fx_run_node(g, n, pool);
      if (s->unit >= 0) g->tensors[n->in[1]].ptr = saved;
      if (rc) return -1;
    }
    fx_budget_done(bp->exec, i);
    if (profile) {
      n->prof_ns += fx_now_ns() - t0;
      if (i + 1 == n_steps || steps[i + 1].node != s->node) n->prof_runs++; /* one run per node */
    }
  }
  return 0;
}
