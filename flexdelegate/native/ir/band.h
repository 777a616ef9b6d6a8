/* Band-by-band execution of layer chains: a chain of row-local layers (convolutions run as
 * GEMM / direct conv, depthwise, pooling, element-wise ops) computed a band of output rows at a
 * time, each layer computing only the rows the next one needs, so the activations between the
 * layers exist only as a few rows in per-thread scratch (in cache) instead of whole tensors (in
 * DRAM or L3). MobileNetV2's inverted residual (expand 1x1 -> depthwise 3x3 -> project 1x1 +
 * residual ADD) is one such chain; so is any run of such layers whose intermediate tensors have
 * no other reader.
 *
 * The API has three parts, for the planners (plan/) and the choice (band_choose.c):
 *   which chains qualify    fx_band_find (at init: candidates into g->chains, never shape-
 *                           dependent; a node belongs to at most one chain);
 *   what a band height costs fx_band_measure (at prepare: scratch bytes per thread, rows and
 *                           flops recomputed at strip starts, the halo rows carried over);
 *   running it              fx_band_run (a whole chain: strips over the pool's threads, bands
 *                           within a strip; a budget plan runs it as one step, its weights from
 *                           a slot), or fx_band_run_strip (one strip).
 *
 * Geometry. The chain's final output rows of one image are split into `strips` (one task each,
 * spread over the threads); a strip is computed `band_rows` final rows at a time. For each band
 * the rows each layer must produce are found back to front through the layers' vertical windows
 * (kernel, stride, dilation, top padding). Every intermediate layer keeps the rows it computed
 * for the previous band in its buffer: rows the next band needs again (the halo of a 3x3 window)
 * are moved to the buffer's top, never recomputed; only a strip's first band computes its halo
 * afresh (the rows the strip above also computes). Each layer then runs its ordinary kernel, one
 * thread, on a sub-image: input rows [ilo, ihi) as an image of ihi - ilo rows with the top
 * padding reduced accordingly, output rows [a, b) as an image of b - a rows; so the numbers are
 * bit for bit those of the layer run whole.
 *
 * What runs where: a chain runs at its last member node (every tensor a member reads exists by
 * then); the planner keeps everything the members read alive until then and gives the
 * intermediates no arena space. Nothing here knows TFLite. */
#ifndef FLEX_BAND_H
#define FLEX_BAND_H
#include <stddef.h>
#include "graph.h"

#define FX_BAND_MAX_LAYERS 8
#define FX_BAND_MAX_MEMBERS 24

/* One layer of a chain: a node that computes (fused tails are members, not layers). */
typedef struct {
  int node;    /* its node index */
  int slot;    /* which input of the node is the chain's data (a binary op's other is an operand) */
  int in, out; /* tensor ids read and written: the chain input / output at the ends, else elided */
  /* The vertical window, from the shapes at prepare (fx_band_measure): output row r reads input
   * rows r * stride - pad + k * dil, k in [0, kh). Element-wise layers: 1, 1, 1, 0. */
  int kh, stride, dil, pad;
  int ih, oh;       /* input and output rows per image */
  size_t in_row, out_row; /* floats per input / output row (width x channels) */
  double row_flops; /* flops per output row */
} fx_band_layer;

/* What running a chain with a band height and strip count costs (fx_band_measure). */
typedef struct {
  size_t scratch_bytes;   /* per thread: every intermediate's band buffer + the largest conv scratch */
  size_t buffer_rows[FX_BAND_MAX_LAYERS]; /* rows each intermediate's buffer holds (0 for the last) */
  size_t conv_scratch_bytes; /* the largest im2col tile of its conv layers, after the buffers */
  double flops;           /* of one run, band by band (>= the layers' own: strips recompute halos) */
  double recompute_flops; /* the excess: rows computed twice, at the strips' starts */
  size_t carried_bytes;   /* halo rows moved to the buffers' tops per run */
} fx_band_cost;

typedef struct fx_band_chain {
  int n_layers;
  fx_band_layer layer[FX_BAND_MAX_LAYERS];
  int n_members;
  int members[FX_BAND_MAX_MEMBERS]; /* every node whose work it does, ascending */
  int run_at;      /* the node index it runs at: its last member */
  int in, out;     /* the chain's input and output tensors */
  int batch;       /* images (from the shapes at prepare) */
  /* Chosen at prepare, before memory is planned (band_choose.c), for the current shapes. */
  int active;      /* run band by band (else every member runs as a node) */
  int band_rows;   /* final output rows per band */
  int strips;      /* strips per image */
  int scratch;     /* tensor id of its scratch (all threads), -1 before the plan adds it */
  fx_band_cost cost; /* of the chosen band height and strips */
} fx_band_chain;


/* At init, after fusion (fuse.c) and weight packing: finds the candidate chains of g into
 * g->chains (each node's `band` names its chain + 1), all inactive. Returns the number found,
 * or -1 when out of memory. */
int fx_band_find(fx_graph *g);
/* Whether node n can be a chain layer by its kind and packing: a conv run from GEMM panels
 * (not Winograd), depthwise, pooling, element-wise (fx_band_shape checks the shapes). */
int fx_band_layer_ok(const fx_graph *g, const fx_node *n);

/* At prepare (shapes inferred): the layers' windows and sizes; 0, or -1 if the chain cannot run
 * band by band for these shapes (then it must stay inactive). */
int fx_band_shape(fx_graph *g, fx_band_chain *c);
/* The cost of running c (shaped) with band_rows final rows per band and `strips` strips per
 * image; 0, or -1 for arguments it cannot run with. */
int fx_band_measure(const fx_graph *g, const fx_band_chain *c, int band_rows, int strips, fx_band_cost *cost);

/* The first final output row of strip s of c->strips (s = c->strips: the row count). */
int fx_band_strip_begin(const fx_band_chain *c, int s);
/* Input rows [*lo, *hi) layer l reads for its output rows [a, b) (within its input's rows). */
void fx_band_input_rows(const fx_band_layer *l, int a, int b, int *lo, int *hi);
/* The rows [lo[i], hi[i]) each layer i must produce for final output rows [a, b) (lo/hi hold
 * n_layers entries; the last is [a, b)): 0, or -1 if some layer would need none. */
int fx_band_needs(const fx_band_chain *c, int a, int b, int *lo, int *hi);

/* Runs an active chain whole: batch x strips tasks over the pool, each thread in its own part
 * of the scratch (fx_band_measure's bytes, per thread, from `scratch`). Tensor pointers must be
 * resolved; the conv layers' packed weights checked (fx_band_check). weights: NULL, or per
 * layer where its weights are (a conv's whole GEMM panels, a depthwise filter; a budget plan's
 * slot), NULL for the layer's own. */
void fx_band_run(fx_graph *g, const fx_band_chain *c, fx_pool *pool, float *scratch, const void *const *weights);
/* One strip of one image (strip < c->strips), on the calling thread: its band buffers and its
 * conv tile (one thread's of each: fx_band_measure's bytes); weights as fx_band_run's. */
void fx_band_run_strip(fx_graph *g, const fx_band_chain *c, int image, int strip, float *buffers, float *conv_scratch,
                       const void *const *weights);
/* Verifies the conv layers' cached weights once (as fx_run_gemm does): 0, or -1 when a damaged
 * blob could not be repacked. */
int fx_band_check(fx_graph *g, const fx_band_chain *c);

/* Chooses, for every chain of g (shaped), whether it runs band by band and with what band
 * height and strips, for `threads` threads (band_choose.c; FLEXDELEGATE_BAND: the rule by
 * default or "auto", none, all[:ROWS[:STRIPS]] for every chain). */
void fx_band_choose(fx_graph *g, int threads);
/* The chain node i belongs to and runs in (active), else NULL. */
const fx_band_chain *fx_band_of(const fx_graph *g, int i);
#endif
