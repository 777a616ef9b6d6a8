/* Running a chain band by band (band.h): per strip, per band, each layer's new rows through its
 * ordinary kernel on one thread, as a sub-image (rows [ilo, ihi) of its input, the top padding
 * reduced by what lies above ilo) into its band buffer, or into the chain's output for the last
 * layer. */
#include <string.h>
#include "band.h"
#include "conv/conv.h"

static size_t align64(size_t bytes) { return (bytes + 63) / 64 * 64; }

/* One layer's output rows [a, b) of image `image` from its input rows [ilo, ihi) at x, into y;
 * w: its weights (a conv's GEMM panels, a depthwise filter), NULL for its own. */
typedef struct {
  const float *x;
  int ilo, ihi, a, b, image;
  float *y;
  const void *w;
} layer_rows;

static void run_conv(fx_graph *g, const fx_band_layer *l, const fx_node *n, const layer_rows *r, float *scratch) {
  fx_conv_geom geo;
  fx_node_conv_geom(g, n, &geo);
  geo.ih = r->ihi - r->ilo;
  geo.pad_top = l->pad + r->ilo - r->a * l->stride;
  geo.oh = r->b - r->a;
  geo.m = (size_t)geo.oh * (size_t)geo.ow;
  if (geo.residual) geo.residual += ((size_t)r->image * (size_t)l->oh + (size_t)r->a) * l->out_row;
  if (r->w) /* the panels in a budget plan's slot */
    fx_conv_run_part(NULL, n->pack, &geo, r->x, r->y, scratch, n->act, r->w, 0, fx_conv_panels(n->pack), 0, geo.m, 0);
  else
    fx_conv_run(NULL, n->pack, &geo, r->x, r->y, scratch, n->act);
}

/* Depthwise and pooling: the node's window with the sub-image's top padding. */
static void run_window(fx_graph *g, const fx_band_layer *l, const fx_node *n, const layer_rows *r) {
  const fx_shape *xf = &g->tensors[n->in[0]].shape, *yf = &g->tensors[n->out[0]].shape;
  const fx_shape xs = {4, {1, r->ihi - r->ilo, xf->d[2], xf->d[3]}}, ys = {4, {1, r->b - r->a, yf->d[2], yf->d[3]}};
  fx_window w = {n->p.conv.stride_h, n->p.conv.stride_w, n->p.conv.dil_h, n->p.conv.dil_w, n->p.conv.kh,
                 n->p.conv.kw, l->pad + r->ilo - r->a * l->stride, 0};
  int ow;
  fx_node_window(n, 1, xf->d[2], w.kw, &ow, &w.pad_left);
  if (n->kind == FX_OP_DEPTHWISE)
    fx_depthwise_f32(NULL, r->x, &xs, r->w ? r->w : (const float *)g->tensors[n->in[1]].ptr,
                     n->n_in > 2 && n->in[2] >= 0 ? (const float *)g->tensors[n->in[2]].ptr : NULL, n->p.conv.mult,
                     &w, r->y, &ys, n->act);
  else
    fx_pool2d_f32(NULL, n->p.conv.is_max, r->x, &xs, &w, r->y, &ys, n->act);
}

/* A binary layer: the other operand's rows [a, b) when it has the output's shape, else the
 * whole of it (it broadcasts over rows), one image's part of it when it has one per image. */
static void run_binary(fx_graph *g, const fx_band_layer *l, const fx_node *n, const layer_rows *r) {
  const fx_tensor *ot = &g->tensors[n->in[1 - l->slot]];
  const fx_shape *yf = &g->tensors[n->out[0]].shape;
  const fx_shape band = {4, {1, r->b - r->a, yf->d[2], yf->d[3]}};
  const float *o = (const float *)ot->ptr;
  fx_shape os = ot->shape;
  if (fx_shape_equal(&os, yf)) {
    o += ((size_t)r->image * (size_t)l->oh + (size_t)r->a) * l->out_row;
    os = band;
  } else if (os.rank == 4 && os.d[0] == yf->d[0] && os.d[0] > 1) {
    o += (size_t)r->image * (fx_shape_numel(&os) / (size_t)os.d[0]);
    os.d[0] = 1;
  }
  if (l->slot == 0) fx_binary_f32(NULL, n->p.bin.op, r->x, &band, o, &os, r->y, &band, n->act);
  else fx_binary_f32(NULL, n->p.bin.op, o, &os, r->x, &band, r->y, &band, n->act);
}

static void run_layer(fx_graph *g, const fx_band_layer *l, const layer_rows *r, float *conv_scratch) {
  const fx_node *n = &g->nodes[l->node];
  switch (n->kind) {
    case FX_OP_CONV: run_conv(g, l, n, r, conv_scratch); break;
    case FX_OP_DEPTHWISE: case FX_OP_POOL: run_window(g, l, n, r); break;
    case FX_OP_BINARY: run_binary(g, l, n, r); break;
    case FX_OP_UNARY:
      fx_unary_f32(n->p.un.kind, n->p.un.alpha, r->x, r->y, (size_t)(r->b - r->a) * l->out_row);
      break;
    default: break;
  }
}

void fx_band_run_strip(fx_graph *g, const fx_band_chain *c, int image, int strip, float *buffers, float *conv_scratch,
                       const void *const *weights) {
  const int n = c->n_layers;
  const fx_band_layer *first = &c->layer[0], *last = &c->layer[n - 1];
  float *buf[FX_BAND_MAX_LAYERS];
  int have_lo[FX_BAND_MAX_LAYERS] = {0}, have_hi[FX_BAND_MAX_LAYERS] = {0}; /* rows each buffer holds */
  char *at = (char *)buffers;
  for (int i = 0; i < n - 1; i++) {
    buf[i] = (float *)at;
    at += align64(c->cost.buffer_rows[i] * c->layer[i].out_row * sizeof(float));
  }
  const float *x0 = (const float *)g->tensors[c->in].ptr + (size_t)image * (size_t)first->ih * first->in_row;
  float *y0 = (float *)g->tensors[c->out].ptr + (size_t)image * (size_t)last->oh * last->out_row;
  const int a1 = fx_band_strip_begin(c, strip + 1);
  for (int a = fx_band_strip_begin(c, strip); a < a1; a += c->band_rows) {
    int lo[FX_BAND_MAX_LAYERS], hi[FX_BAND_MAX_LAYERS];
    if (fx_band_needs(c, a, a + c->band_rows < a1 ? a + c->band_rows : a1, lo, hi)) return; /* measured: never */
    for (int i = 0; i < n; i++) {
      const fx_band_layer *l = &c->layer[i];
      int from = lo[i];
      float *y = y0 + (size_t)lo[i] * l->out_row;
      if (i < n - 1) {
        if (have_lo[i] <= lo[i] && lo[i] < have_hi[i]) { /* the halo rows: to the buffer's top */
          from = have_hi[i] < hi[i] ? have_hi[i] : hi[i];
          memmove(buf[i], buf[i] + (size_t)(lo[i] - have_lo[i]) * l->out_row,
                  (size_t)(from - lo[i]) * l->out_row * sizeof(float));
        }
        have_lo[i] = lo[i];
        have_hi[i] = hi[i];
        y = buf[i] + (size_t)(from - lo[i]) * l->out_row;
      }
      if (from >= hi[i]) continue;
      layer_rows r = {.a = from, .b = hi[i], .image = image, .y = y, .w = weights ? weights[i] : NULL};
      fx_band_input_rows(l, from, hi[i], &r.ilo, &r.ihi);
      r.x = i == 0 ? x0 + (size_t)r.ilo * l->in_row : buf[i - 1] + (size_t)(r.ilo - lo[i - 1]) * l->in_row;
      run_layer(g, l, &r, conv_scratch);
    }
  }
}

typedef struct {
  fx_graph *g;
  const fx_band_chain *c;
  float *buffers, *conv_scratch;
  size_t buffer_floats, conv_floats;
  const void *const *weights;
} strip_job;

static void strip_task(void *arg, int tid, size_t task) {
  const strip_job *j = arg;
  fx_band_run_strip(j->g, j->c, (int)(task / (size_t)j->c->strips), (int)(task % (size_t)j->c->strips),
                    j->buffers + (size_t)tid * j->buffer_floats, j->conv_scratch + (size_t)tid * j->conv_floats,
                    j->weights);
}

void fx_band_run(fx_graph *g, const fx_band_chain *c, fx_pool *pool, float *scratch, const void *const *weights) {
  /* every thread's band buffers, then every thread's conv tile (the largest layer's one-thread
   * tile). Each thread's tile is its own: the layers' kernels run with no pool, so as tid 0
   * (runtime/pool.h). Tiles indexed by the task's tid x each layer's own tile size overlapped
   * when two threads ran layers of different sizes: 5 wrong outputs in 20,000 runs under load. */
  const size_t threads = (size_t)fx_pool_threads(pool);
  const size_t buffer_bytes = c->cost.scratch_bytes - c->cost.conv_scratch_bytes;
  strip_job j = {g, c, scratch, (float *)((char *)scratch + buffer_bytes * threads), buffer_bytes / sizeof(float),
                 c->cost.conv_scratch_bytes / sizeof(float), weights};
  fx_parallel_tasks(pool, (size_t)c->batch * (size_t)c->strips, strip_task, &j);
}

int fx_band_check(fx_graph *g, const fx_band_chain *c) {
  for (int i = 0; i < c->n_layers; i++) {
    fx_node *n = &g->nodes[c->layer[i].node];
    if (n->kind == FX_OP_CONV && fx_conv_pack_check(n->pack, 0)) return -1;
  }
  return 0;
}
