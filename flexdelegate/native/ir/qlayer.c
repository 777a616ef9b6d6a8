/* int8 / uint8 CONV_2D / FULLY_CONNECTED / DEPTHWISE_CONV_2D and int8 TRANSPOSE_CONV:
 * requantization parameters as stock TFLite computes them (kernels/quant/requant.h), the weights
 * packed once at init into the QS8 kernels' panels (kernels/quant/pack.h; a TRANSPOSE_CONV's as a
 * FULLY_CONNECTED's of K = kh * kw * cin: kernels/transpose-conv), and the runs over the
 * whole-layer drivers, split across the pool by output pixels and, for layers with few of them,
 * GEMM panels too (run_grid), or depthwise rows. A budget plan (plan/budget.c) runs a GEMM layer
 * a panel range at a time from its streamed slice (fx_qlayer_run_part). The tflite reader
 * (read_qconv) has checked dtypes, zero points, the channel axis and the rounding.
 *
 * uint8 layers (QU8) run on the same int8 kernels in the int8 domain (quant/pack.h): the
 * input flipped (x ^ 0x80) into the node's scratch before a run, the weight zero point packed
 * into the bias and a per-row correction, output zero point and clamps moved by -128, and each
 * output region flipped back to uint8 as soon as the kernels wrote it. */
#include <stdlib.h>
#include <string.h>
#include "conv/conv.h"
#include "graph.h"
#include "kernels/qs8-dwconv/qs8-dwconv.h"
#include "kernels/quant/pack.h"
#include "qop.h"
#include "runtime/pool.h"
#include "store/store.h"

/* Bumped whenever fx_qs8_pack_gemm / fx_qs8_pack_dw's output changes (old blobs never misread). */
#define FX_QS8_PACK_VERSION 1

/* What packing reads (kept until commit, and to pack again in memory over a damaged blob). */
typedef struct {
  int dw;                /* depthwise panels, else GEMM panels */
  fx_qs8_gemm_geom geom; /* GEMM */
  int cout, taps, ct;    /* depthwise */
  const void *w;         /* int8, or uint8 (u8) */
  const int32_t *bias;
  int32_t zx;
  int u8;                /* uint8 input, weights and output */
  int32_t zw;            /* uint8 weights' zero point */
  const int32_t *ms;     /* cout multipliers then cout shifts (owned by the layer) */
  size_t wbytes;         /* the int8 weights read (dropped from RSS once packed) */
} qpack_args;

struct fx_qlayer {
  const fx_qs8_gemm_config *gemm;  /* QCONV / QFC */
  int form;                        /* QCONV: FX_QS8_CONV_* (conv/choose.c) */
  const fx_qs8_dwconv_config *dw;  /* QDEPTHWISE */
  qpack_args args;
  int32_t *ms;
  fx_wref *ref;     /* the packed weights, in the cache file or in memory */
  int8_t *zero_row; /* cin bytes of the input zero point (int8 domain): the padding taps */
  fx_qs8_out out;   /* the output stage the kernels run: the node's, in the int8 domain */
  int32_t row_factor; /* uint8 GEMM layers: fx_qu8_row_factor of the weight zero point */
};

/* GEMM panels [lo, hi) of NR output channels: the blob is panel-major and a panel depends only
 * on its own channels (weights, bias, requantization: quant/pack.h), so a panel range is the
 * same packing of that range of channels (a budgeted cold load packs and writes a few at a
 * time). Depthwise panels interleave every channel's taps in the model's filter, so a depthwise
 * blob (a few KB) is packed whole. */
static int pack_qweights(void *ctx, const void *src, void *dst, size_t lo, size_t hi) {
  const qpack_args *a = ctx;
  const int32_t *m = a->ms, *shift = a->ms + a->cout;
  if (a->dw)
    return a->u8 ? fx_qu8_pack_dw(a->cout, a->taps, a->ct, a->w, a->zw, a->bias, a->zx, m, shift, dst)
                 : fx_qs8_pack_dw(a->cout, a->taps, a->ct, a->w, a->bias, a->zx, m, shift, dst);
  const int c0 = (int)lo * a->geom.nr, c1 = (int)hi * a->geom.nr < a->cout ? (int)hi * a->geom.nr : a->cout;
  fx_qs8_gemm_geom part = a->geom;
  part.n = c1 - c0;
  const size_t k = (size_t)a->geom.ks * (size_t)a->geom.kc;
  const uint8_t *w = src ? (const uint8_t *)src : (const uint8_t *)a->w + (size_t)c0 * k; /* one byte a weight */
  const int32_t *bias = a->bias ? a->bias + c0 : NULL;
  return a->u8 ? fx_qu8_pack_gemm(&part, w, a->zw, bias, a->zx, m + c0, shift + c0, dst)
               : fx_qs8_pack_gemm(&part, (const int8_t *)w, bias, a->zx, m + c0, shift + c0, dst);
}

static fx_pack_desc qpack_desc(const qpack_args *a) {
  if (a->dw)
    return (fx_pack_desc){.pack = pack_qweights, .ctx = a, .ctx_size = sizeof *a, .n_parts = 1, .whole = 1,
                          .src = a->w, .src_len = a->wbytes, .src_part = a->wbytes};
  const size_t panels = (size_t)(a->cout + a->geom.nr - 1) / (size_t)a->geom.nr;
  const size_t row = (size_t)a->geom.ks * (size_t)a->geom.kc; /* one channel's model bytes */
  return (fx_pack_desc){.pack = pack_qweights, .ctx = a, .ctx_size = sizeof *a, .n_parts = panels,
                        .src = a->w, .src_len = a->wbytes, .src_part = (size_t)a->geom.nr * row};
}


static const fx_tensor *T(const fx_graph *g, int id) { return id >= 0 ? &g->tensors[id] : NULL; }

/* The data input and the bias (-1: none): TRANSPOSE_CONV's inputs are output_shape, weights,
 * x[, bias], the others' x, weights[, bias]. */
static int x_of(const fx_node *n) { return n->in[n->kind == FX_OP_QTRANSPOSE_CONV ? 2 : 0]; }
static int bias_of(const fx_node *n) {
  const int i = n->kind == FX_OP_QTRANSPOSE_CONV ? 3 : 2;
  return n->n_in > i ? n->in[i] : -1;
}

static int out_channels(const fx_graph *g, const fx_node *n) {
  const fx_shape *w = &T(g, n->in[1])->shape;
  return n->kind == FX_OP_QDEPTHWISE ? w->d[3] : w->d[0];
}

static int is_u8(const fx_graph *g, const fx_node *n) { return T(g, x_of(n))->dtype == FX_U8; }

/* Which multipliers stock's kernel runs (requant.h's FX_QS8_SCALES_*): the one legacy
 * multiplier of GetQuantizedConvolutionMultipler for uint8 layers and for int8
 * FULLY_CONNECTED with per-tensor weights, else the per-channel arrays. */
static int scales_mode(const fx_graph *g, const fx_node *n) {
  const fx_quant *qw = &T(g, n->in[1])->quant;
  if (is_u8(g, n) || (n->kind == FX_OP_QFC && qw->n <= 1)) return FX_QS8_SCALES_LEGACY;
  return qw->n > 1 ? FX_QS8_SCALES_PER_CHANNEL : FX_QS8_SCALES_PER_TENSOR;
}

/* A uint8 layer runs with output zero point zy - 128 where stock adds zy, both in wrapping int32:
 * they clamp alike unless the requantized value comes within 2^8 of an int32 limit, which takes
 * no right shift (shift >= 0) and, as |value| <= m under double rounding, a multiplier within
 * 2^8 of 2^31 (any multiplier under single rounding, whose int64 result is truncated). */
static int u8_zero_point_may_wrap(int cout, const int32_t *m, const int32_t *shift, int single) {
  for (int c = 0; c < cout; c++)
    if (shift[c] >= 0 && (single || m[c] > INT32_MAX - 255)) return 1;
  return 0;
}

/* The per-channel multipliers and shifts (2 * cout int32, malloc'd), or NULL with *why. */
static int32_t *requant_of(const fx_graph *g, const fx_node *n, const char **why) {
  const int cout = out_channels(g, n), single = n->qout.rounding == FLEX_RQ_SINGLE;
  const fx_quant *qx = &T(g, x_of(n))->quant, *qw = &T(g, n->in[1])->quant, *qy = &T(g, n->out[0])->quant;
  int32_t *ms = malloc(sizeof(int32_t) * 2 * (size_t)(cout > 0 ? cout : 1));
  if (!ms) { *why = "out of memory"; return NULL; }
  const int mode = scales_mode(g, n);
  const float one = qw->scale; /* the tensor's legacy scale: what the per-tensor forms read */
  if (fx_qs8_requant_params(cout, qx->scale, mode == FX_QS8_SCALES_PER_CHANNEL ? qw->scales : &one, mode,
                            qy->scale, single, ms, ms + cout)) {
    *why = "a requantization multiplier of 2^30 or more (left to the stock kernel)";
    free(ms);
    return NULL;
  }
  if (is_u8(g, n) && u8_zero_point_may_wrap(cout, ms, ms + cout, single)) {
    *why = "uint8 requantized values may reach the int32 limits, where stock's zero point wraps (a "
           "multiplier just below a power of two >= 1): left to the stock kernel";
    free(ms);
    return NULL;
  }
  return ms;
}

/* The node's output stage as the kernels run it: uint8 in the int8 domain (x - 128). */
static fx_qs8_out kernel_out(const fx_graph *g, const fx_node *n) {
  fx_qs8_out o = n->qout;
  if (is_u8(g, n)) o.zp -= 128, o.lo -= 128, o.hi -= 128;
  return o;
}

const char *fx_qlayer_check(const fx_graph *g, const fx_node *n) {
  const char *why = NULL;
  free(requant_of(g, n, &why));
  return why;
}

static fx_qs8_conv_geom conv_geom(const fx_graph *g, const fx_node *n) {
  const fx_shape *x = &T(g, n->in[0])->shape, *y = &T(g, n->out[0])->shape, *w = &T(g, n->in[1])->shape;
  fx_qs8_conv_geom cg = {x->d[0], x->d[1], x->d[2], x->d[3], n->p.conv.kh, n->p.conv.kw,
                         n->p.conv.stride_h, n->p.conv.stride_w, n->p.conv.dil_h, n->p.conv.dil_w,
                         0, 0, y->d[1], y->d[2], y->d[3]};
  if (n->kind == FX_OP_QCONV) { cg.kh = w->d[1]; cg.kw = w->d[2]; }
  int o;
  fx_same_valid(n->p.conv.same, cg.h, cg.kh, cg.sh, cg.dh, &o, &cg.pt);
  fx_same_valid(n->p.conv.same, cg.w, cg.kw, cg.sw, cg.dw, &o, &cg.pl);
  return cg;
}

const char *fx_qlayer_pack(fx_graph *g, fx_node *n, struct fx_store *store) {
  const fx_tensor *w = T(g, n->in[1]), *b = T(g, bias_of(n)), *x = T(g, x_of(n));
  if (!w->cdata || (b && !b->cdata)) return "weights are not constant";
  const int cout = out_channels(g, n);
  const char *why = NULL;
  int32_t *ms = requant_of(g, n, &why);
  if (!ms) return why;
  struct fx_qlayer *q = calloc(1, sizeof *q);
  const int cin = x->shape.d[x->shape.rank - 1];
  const int padded = n->kind == FX_OP_QCONV || n->kind == FX_OP_QDEPTHWISE; /* taps read a zero-point row */
  if (!q || (padded && !(q->zero_row = malloc((size_t)(cin > 0 ? cin : 1))))) {
    free(ms);
    fx_qlayer_free(q);
    return "out of memory";
  }
  q->ms = ms;
  q->out = kernel_out(g, n);
  qpack_args *a = &q->args;
  *a = (qpack_args){.w = w->cdata, .bias = b ? b->cdata : NULL, .zx = x->quant.zero_point,
                    .ms = ms, .cout = cout, .u8 = is_u8(g, n), .zw = w->quant.zero_point};
  if (a->u8) q->row_factor = fx_qu8_row_factor(a->zw);
  if (q->zero_row) memset(q->zero_row, (int8_t)(a->u8 ? a->zx - 128 : a->zx), (size_t)cin);
  uint32_t algo;
  size_t bytes;
  if (n->kind == FX_OP_QDEPTHWISE) {
    q->dw = fx_qs8_dwconv_config_get();
    a->dw = 1;
    a->taps = n->p.conv.kh * n->p.conv.kw;
    a->ct = q->dw->ct;
    bytes = fx_qs8_dw_packed_bytes(cout, a->taps, a->ct);
    algo = FX_ALGO_QS8_DW(a->ct);
  } else {
    q->gemm = fx_qs8_gemm_config_get();
    if (n->kind == FX_OP_QCONV) {
      const fx_qs8_conv_geom cg = conv_geom(g, n);
      q->form = fx_conv_choose_qs8_form(q->gemm, &cg);
      a->geom = fx_qs8_conv_pack_geom(q->gemm, &cg, q->form);
    } else { /* FULLY_CONNECTED, TRANSPOSE_CONV: [cout][K] */
      a->geom = fx_qs8_gemm_geom_of(q->gemm, cout, 1, (int)(fx_shape_numel(&w->shape) / (size_t)cout));
    }
    bytes = fx_qs8_gemm_packed_bytes(&a->geom);
    algo = FX_ALGO_QS8_GEMM(a->geom.nr, a->geom.kr, a->geom.a_offset, a->geom.kg_align);
  }
  /* The key: everything the packed bytes depend on (geometry, weights, bias, input zero point,
   * requantization: the scales and the rounding's QuantizeMultiplier variant). */
  const size_t wbytes = fx_shape_numel(&w->shape);
  uint64_t key[2];
  if (!fx_store_replay(store, algo, FX_QS8_PACK_VERSION, bytes, key)) {
    fx_hasher h;
    const int dims[] = {a->dw, cout, a->taps, a->ct, a->geom.n, a->geom.ks, a->geom.kc, a->geom.nr, a->geom.kr,
                        a->geom.a_offset, a->bias != NULL, (int)a->zx};
    fx_hasher_init(&h, algo);
    fx_hasher_update(&h, dims, sizeof dims);
    fx_store_hash(store, &h, a->w, wbytes);
    if (a->bias) fx_store_hash(store, &h, a->bias, sizeof(int32_t) * (size_t)cout);
    fx_hasher_update(&h, ms, sizeof(int32_t) * 2 * (size_t)cout);
    if (a->u8) { /* (int8 layers' keys stay what they were: their cached blobs still serve) */
      const int32_t qu8[2] = {1, a->zw};
      fx_hasher_update(&h, qu8, sizeof qu8);
    }
    fx_hasher_final(&h, key);
  }
  a->wbytes = wbytes;
  const fx_pack_desc d = qpack_desc(a);
  q->ref = fx_store_get(store, key, algo, FX_QS8_PACK_VERSION, bytes, &d);
  if (!q->ref) {
    fx_qlayer_free(q);
    return "out of memory packing int8 weights";
  }
  n->qlayer = q;
  return NULL;
}

void fx_qlayer_free(struct fx_qlayer *q) {
  if (!q) return;
  if (q->ref) fx_wref_unref(q->ref);
  free(q->ms);
  free(q->zero_row);
  free(q);
}

size_t fx_qlayer_bytes(const struct fx_qlayer *q) { return q && q->ref ? q->ref->size : 0; }

/* Before a run: the weights are there and, when mapped from the file, checked once. */
static int check_weights(struct fx_qlayer *q) {
  if (!q) return -1;
  const fx_pack_desc d = qpack_desc(&q->args);
  return fx_wref_check(&q->ref, &d, 0); /* resident weights: checked through the mapping */
}

int fx_qlayer_repair(struct fx_qlayer *q) {
  if (!q) return 0;
  const fx_pack_desc d = qpack_desc(&q->args);
  return fx_wref_repair(&q->ref, &d);
}

int fx_qlayer_check_unmapped(struct fx_qlayer *q) {
  if (!q) return 0;
  const fx_pack_desc d = qpack_desc(&q->args);
  return fx_wref_check(&q->ref, &d, 1);
}

void fx_qlayer_get_layout(const struct fx_qlayer *q, fx_qlayer_layout *out) {
  const qpack_args *a = &q->args;
  const int per_panel = a->dw ? a->ct : a->geom.nr;
  out->ref = q->ref;
  out->nr = per_panel;
  out->panels = (a->cout + per_panel - 1) / per_panel;
  out->panel_bytes = a->dw ? fx_qs8_dw_panel_bytes(a->taps, a->ct) : fx_qs8_gemm_panel_bytes(&a->geom);
  out->sliceable = !a->dw;
}

/* ---- runs ---- */
typedef struct {
  const struct fx_qlayer *q;
  fx_qs8_conv_geom cg;
  const int8_t *x;
  int8_t *y;
  const uint8_t *w; /* panel p0 */
  size_t m, k, cout, p0, p1, panel_bytes;
  int mult;
  int a_direct; /* x is the GEMM's A (FULLY_CONNECTED, a pointwise conv): no gather */
  int u8;               /* uint8: each region a task wrote is flipped back (x ^ 0x80) */
  const fx_node *swish; /* a fused swish's MUL (fuse.c): its table on each region a task wrote */
  size_t total;          /* elements of the output */
  const fx_qs8_out *o;
  const fx_tconv_geom *tconv; /* TRANSPOSE_CONV: its taps gathered per output pixel */
  int failed;
} qrun;

/* Elements [e0, e1) of the output, just written by the kernels (in L1): back to uint8 for a
 * uint8 layer, then through a fused swish's table (which reads the layer's own type). */
static void finish_span(const qrun *r, size_t e0, size_t e1) {
  if (r->u8) fx_qu8_flip((const uint8_t *)r->y + e0, r->y + e0, e1 - e0);
  if (r->swish) fx_qop_table_range(r->swish, r->y, r->total, e0, e1);
}

/* Channels [c0, c1) of output rows [m0, m1) (pixels; FULLY_CONNECTED rows): whole rows in one span. */
static void finish_region(const qrun *r, size_t m0, size_t m1, size_t c0, size_t c1) {
  if (!r->u8 && !r->swish) return;
  if (c0 == 0 && c1 == r->cout) {
    finish_span(r, m0 * r->cout, m1 * r->cout);
    return;
  }
  for (size_t m = m0; m < m1; m++) finish_span(r, m * r->cout + c0, m * r->cout + c1);
}

/* A GEMM layer's work as a grid of tasks: row chunks (output pixels; FULLY_CONNECTED rows) x
 * panel chunks. Rows alone when there are enough chunks to balance the threads; a layer with
 * few rows (7x7 and 14x14 maps, a classifier head) also splits its panels, each task reading
 * its rows of A (a few KB at these sizes) again. */
typedef struct {
  qrun *r;
  size_t rows, row_chunks, panels, panel_chunk, panel_chunks;
} qgrid;

static void grid_task(void *ctx, int tid, size_t t) {
  (void)tid;
  const qgrid *gd = ctx;
  qrun *r = gd->r;
  const size_t rc = t % gd->row_chunks, pc = t / gd->row_chunks;
  const size_t m0 = rc * gd->rows, m1 = m0 + gd->rows < r->m ? m0 + gd->rows : r->m;
  const size_t b = pc * gd->panel_chunk, e = b + gd->panel_chunk < gd->panels ? b + gd->panel_chunk : gd->panels;
  const uint8_t *w = r->w + b * r->panel_bytes;
  const int32_t row_factor = r->q->row_factor;
  if (r->a_direct)
    fx_qs8_gemm_run(r->q->gemm, m1 - m0, r->cout, r->k, r->x + m0 * r->k, r->k, w, r->y + m0 * r->cout, r->cout,
                    row_factor, r->o, r->p0 + b, r->p0 + e);
  else if (r->tconv) { /* int8 only: uint8 TRANSPOSE_CONV stays with stock */
    if (fx_tconv_qs8_run(r->q->gemm, r->tconv, r->x, (int8_t)r->q->args.zx, w, r->y, r->o, m0, m1, r->p0 + b,
                         r->p0 + e))
      r->failed = 1;
  } else if (fx_qs8_conv_run(r->q->gemm, &r->cg, r->q->form, r->x, r->q->zero_row, w, r->y, row_factor, r->o, m0,
                             m1, r->p0 + b, r->p0 + e))
    r->failed = 1;
  const size_t nr = (size_t)r->q->gemm->nr, c0 = (r->p0 + b) * nr, end = (r->p0 + e) * nr;
  finish_region(r, m0, m1, c0, end < r->cout ? end : r->cout);
}

/* `want` tasks: equal row chunks of whole MR tiles, of at least about `grain` rows; where that
 * makes fewer than `want` chunks the panels are split too. One thread: one task. Each thread
 * runs its own range of tasks first and then helps (runtime/pool.h), so 4 per thread balance;
 * more cut the rows finer for nothing, and a fused swish then runs row by row on each task's
 * few channels (16 per thread: EfficientNet-B0 INT8 2 threads 2.77 -> 2.73 ms with 4). */
static void run_grid(fx_pool *pool, qrun *r, size_t grain) {
  const size_t threads = (size_t)fx_pool_threads(pool), want = 4 * threads, mr = (size_t)r->q->gemm->mr;
  if (!r->m) return;
  qgrid gd = {.r = r, .panels = r->p1 - r->p0, .row_chunks = 1, .panel_chunks = 1};
  if (threads > 1) {
    gd.row_chunks = (r->m + grain - 1) / grain;
    if (gd.row_chunks >= want) gd.row_chunks = want;
    else gd.panel_chunks = (want + gd.row_chunks - 1) / gd.row_chunks;
  }
  gd.rows = ((r->m + gd.row_chunks - 1) / gd.row_chunks + mr - 1) / mr * mr;
  gd.row_chunks = (r->m + gd.rows - 1) / gd.rows;
  if (gd.panel_chunks > gd.panels) gd.panel_chunks = gd.panels;
  gd.panel_chunk = (gd.panels + gd.panel_chunks - 1) / gd.panel_chunks;
  gd.panel_chunks = (gd.panels + gd.panel_chunk - 1) / gd.panel_chunk;
  fx_parallel_tasks(pool, gd.row_chunks * gd.panel_chunks, grid_task, &gd);
}

static void dw_rows(void *ctx, size_t begin, size_t end) {
  qrun *r = ctx;
  if (fx_qs8_dwconv_run(r->q->dw, &r->cg, r->mult, r->x, r->q->zero_row, r->w, r->y, r->o, begin, end))
    r->failed = 1;
  const size_t ow = (size_t)r->cg.ow;
  finish_region(r, begin * ow, end * ow, 0, r->cout);
}

/* What every run shares: the output stage and what follows the kernels (a fused swish: fuse.c,
 * its MUL node). */
static void finish_setup(fx_graph *g, const fx_node *n, qrun *r) {
  r->o = &n->qlayer->out;
  r->u8 = n->qlayer->args.u8;
  r->swish = n->post_table ? &g->nodes[n->post_table - 1] : NULL;
  r->total = fx_shape_numel(&T(g, n->out[0])->shape);
}

size_t fx_qlayer_scratch_bytes(const fx_graph *g, const fx_node *n) {
  const fx_tensor *x = T(g, x_of(n));
  return x->dtype == FX_U8 ? fx_shape_numel(&x->shape) : 0;
}

typedef struct {
  const uint8_t *x;
  int8_t *y;
} flip_job;

static void flip_range(void *ctx, size_t begin, size_t end) {
  const flip_job *j = ctx;
  fx_qu8_flip(j->x + begin, j->y + begin, end - begin);
}

/* The input the kernels read into *x: a uint8 layer's flipped into the node's scratch (its slot
 * in a budget step), in 64 KB pieces across the pool. -1 if that scratch is missing. */
static int kernel_input(fx_graph *g, const fx_node *n, fx_pool *pool, const int8_t **x) {
  const size_t bytes = fx_qlayer_scratch_bytes(g, n);
  *x = T(g, x_of(n))->ptr;
  if (!bytes) return 0;
  flip_job j = {T(g, x_of(n))->ptr, n->scratch >= 0 ? g->tensors[n->scratch].ptr : NULL};
  if (!j.y) return -1;
  fx_parallel_for(pool, bytes, (size_t)1 << 16, flip_range, &j);
  *x = j.y;
  return 0;
}

static int run_qgemm(fx_graph *g, fx_node *n, fx_pool *pool, const void *panels, int p0, int p1) {
  const fx_tensor *x = T(g, x_of(n)), *w = T(g, n->in[1]), *y = T(g, n->out[0]);
  qrun r = {.q = n->qlayer, .y = y->ptr, .w = panels, .p0 = (size_t)p0, .p1 = (size_t)p1,
            .panel_bytes = fx_qs8_gemm_panel_bytes(&n->qlayer->args.geom)};
  if (kernel_input(g, n, pool, &r.x)) return -1;
  finish_setup(g, n, &r);
  r.cout = (size_t)w->shape.d[0];
  if (n->kind == FX_OP_QFC) {
    r.k = fx_shape_numel(&w->shape) / r.cout;
    r.m = fx_shape_numel(&x->shape) / r.k;
    r.a_direct = 1;
    run_grid(pool, &r, (size_t)r.q->gemm->mr);
    return r.failed ? -1 : 0;
  }
  if (n->kind == FX_OP_QTRANSPOSE_CONV) {
    fx_tconv_geom tg;
    fx_node_tconv_geom(g, n, &tg);
    r.tconv = &tg;
    r.m = (size_t)tg.batch * (size_t)tg.oh * (size_t)tg.ow;
    run_grid(pool, &r, (size_t)r.q->gemm->mr * 4);
    return r.failed ? -1 : 0;
  }
  r.cg = conv_geom(g, n);
  r.m = (size_t)r.cg.batch * r.cg.oh * r.cg.ow;
  r.k = (size_t)r.cg.cin;
  r.a_direct = r.q->form == FX_QS8_CONV_GEMM;
  run_grid(pool, &r, (size_t)r.q->gemm->mr * (r.a_direct ? 8 : 4));
  return r.failed ? -1 : 0;
}

static int run_qdepthwise(fx_graph *g, fx_node *n, fx_pool *pool, const void *panels) {
  qrun r = {.q = n->qlayer, .y = T(g, n->out[0])->ptr, .w = panels, .mult = n->p.conv.mult};
  if (kernel_input(g, n, pool, &r.x)) return -1;
  finish_setup(g, n, &r);
  r.cg = conv_geom(g, n);
  r.cout = (size_t)r.cg.cout;
  fx_parallel_for(pool, (size_t)r.cg.batch * r.cg.oh, 1, dw_rows, &r);
  return r.failed ? -1 : 0;
}

int fx_qlayer_run_part(fx_graph *g, fx_node *n, fx_pool *pool, const void *panels, int p0, int p1) {
  fx_qlayer_layout l;
  fx_qlayer_get_layout(n->qlayer, &l);
  if (p0 < 0 || p1 > l.panels || p0 >= p1 || (!l.sliceable && (p0 || p1 != l.panels))) return -1;
  return n->kind == FX_OP_QDEPTHWISE ? run_qdepthwise(g, n, pool, panels) : run_qgemm(g, n, pool, panels, p0, p1);
}

/* Unbudgeted runs: every panel, from the store (the mapping, checked once). */
static int run_whole(fx_graph *g, fx_node *n, fx_pool *pool) {
  if (check_weights(n->qlayer)) return -1;
  fx_qlayer_layout l;
  fx_qlayer_get_layout(n->qlayer, &l);
  return fx_qlayer_run_part(g, n, pool, n->qlayer->ref->data, 0, l.panels);
}

int fx_run_qgemm(fx_graph *g, fx_node *n, fx_pool *pool) { return run_whole(g, n, pool); }

int fx_run_qdepthwise(fx_graph *g, fx_node *n, fx_pool *pool) { return run_whole(g, n, pool); }
