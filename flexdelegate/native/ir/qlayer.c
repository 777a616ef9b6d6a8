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
 * output region flipped back to uint8 as soon as the kernels wrote it.
 *
 * Dynamic-range ("hybrid") CONV_2D / FULLY_CONNECTED (float activations, int8 weights; where
 * conv/choose.c runs them here) are the same GEMM layers with a float output stage: each run
 * quantizes the input per image / batch row as stock does (kernels/quant/dynamic.h) into the
 * node's scratch, then the GEMM's int32 sums leave as stock's floats (qs8-gemm.h
 * fx_qs8_f32_out), with the fused activation, residual ADD or curve (fuse.c) of an FP32 conv. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "conv/conv.h"
#include "flex_api.h"
#include "graph.h"
#include "kernels/qs8-dwconv/qs8-dwconv.h"
#include "kernels/quant/dynamic.h"
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
  int hybrid;            /* hybrid GEMM panels (no bias, no requantization: quant/pack.h) */
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
  /* hybrid: how its input is quantized (quant/dynamic.h), and the weight scales and float
   * biases by output channel (malloc'd together) */
  int hybrid, asymmetric, stock;
  float *w_scale, *bias;
  /* A hybrid conv whose output another hybrid conv reads records each image's range (least,
   * greatest) as its output stage writes it (range_images of them at its last run), and that
   * reader (src) quantizes from it without a pass of its own over the map. */
  float *range;
  int range_cap, range_images;
  const struct fx_qlayer *src;
};

/* GEMM panels [lo, hi) of NR output channels: the blob is panel-major and a panel depends only
 * on its own channels (weights, bias, requantization: quant/pack.h), so a panel range is the
 * same packing of that range of channels (a budgeted cold load packs and writes a few at a
 * time). Depthwise panels interleave every channel's taps in the model's filter, so a depthwise
 * blob (a few KB) is packed whole. */
static int pack_qweights(void *ctx, const void *src, void *dst, size_t lo, size_t hi) {
  const qpack_args *a = ctx;
  const int32_t *m = a->ms, *shift = m ? m + a->cout : NULL;
  if (a->dw)
    return a->u8 ? fx_qu8_pack_dw(a->cout, a->taps, a->ct, a->w, a->zw, a->bias, a->zx, m, shift, dst)
                 : fx_qs8_pack_dw(a->cout, a->taps, a->ct, a->w, a->bias, a->zx, m, shift, dst);
  const int c0 = (int)lo * a->geom.nr, c1 = (int)hi * a->geom.nr < a->cout ? (int)hi * a->geom.nr : a->cout;
  fx_qs8_gemm_geom part = a->geom;
  part.n = c1 - c0;
  const size_t k = (size_t)a->geom.ks * (size_t)a->geom.kc;
  const uint8_t *w = src ? (const uint8_t *)src : (const uint8_t *)a->w + (size_t)c0 * k; /* one byte a weight */
  if (a->hybrid) return fx_qs8_pack_hybrid(&part, (const int8_t *)w, dst);
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
  fx_node_window(n, 0, cg.h, cg.kh, &o, &cg.pt);
  fx_node_window(n, 1, cg.w, cg.kw, &o, &cg.pl);
  return cg;
}

/* An int8 / uint8 layer's requantization (ms), output stage and, for the convs whose taps read
 * one, the zero-point row of the padding (zero_row). */
static const char *int8_params(const fx_graph *g, const fx_node *n, struct fx_qlayer *q) {
  const char *why = NULL;
  if (!(q->ms = requant_of(g, n, &why))) return why;
  q->out = kernel_out(g, n);
  if (n->kind != FX_OP_QCONV && n->kind != FX_OP_QDEPTHWISE) return NULL;
  const fx_tensor *x = T(g, x_of(n));
  const int cin = x->shape.d[x->shape.rank - 1];
  if (!(q->zero_row = malloc((size_t)(cin > 0 ? cin : 1)))) return "out of memory";
  memset(q->zero_row, (int8_t)(is_u8(g, n) ? x->quant.zero_point - 128 : x->quant.zero_point), (size_t)cin);
  return NULL;
}

/* The node writing tensor t, through a fused ADD's or swish's copy of a conv's output (fuse.c). */
static fx_node *writer_of(const fx_graph *g, int t) {
  int i = fx_graph_producer(g, t);
  if (i >= 0 && g->nodes[i].fused == FX_FUSED_COPY) i = fx_graph_producer(g, g->nodes[i].fuse_from);
  return i >= 0 ? &g->nodes[i] : NULL;
}

/* A hybrid conv reading a hybrid conv's output (packed before it: node order) takes that map's
 * range from it. In ResNet-50 every conv but the stem and the first after the max pool. */
static void link_source(const fx_graph *g, const fx_node *n, struct fx_qlayer *q) {
  const fx_node *p = writer_of(g, n->in[0]);
  if (n->kind != FX_OP_QCONV || !p || p->kind != FX_OP_QCONV || !fx_qlayer_is_hybrid(p->qlayer)) return;
  struct fx_qlayer *pq = p->qlayer;
  const int images = T(g, n->in[0])->shape.d[0];
  if (!pq->range && images > 0) {
    if (!(pq->range = malloc(2 * sizeof(float) * (size_t)images))) return; /* then it makes its own pass */
    pq->range_cap = images;
  }
  q->src = pq;
}

/* Whether stock quantizes a hybrid layer's input asymmetrically: FULLY_CONNECTED when its
 * asymmetric_quantize_inputs says so; CONV_2D when its weights have per-channel scales that
 * differ (stock's EvalHybridPerChannel; equal ones take the per-tensor, symmetric kernel). */
static int hybrid_asymmetric(const fx_node *n, const fx_quant *qw) {
  if (n->kind == FX_OP_QFC) return n->p.fc.asym_inputs;
  for (int c = 1; c < qw->n; c++)
    if (qw->scales[c] != qw->scales[0]) return 1;
  return 0;
}

/* A hybrid layer's weight scales and float biases (0 without a bias), and its quantization. */
static const char *hybrid_params(const fx_graph *g, const fx_node *n, struct fx_qlayer *q) {
  const fx_quant *qw = &T(g, n->in[1])->quant;
  const fx_tensor *b = n->n_in > 2 ? T(g, n->in[2]) : NULL;
  const int cout = out_channels(g, n);
  if (!(q->w_scale = calloc(2 * (size_t)(cout > 0 ? cout : 1), sizeof(float)))) return "out of memory";
  q->bias = q->w_scale + cout;
  for (int c = 0; c < cout; c++) q->w_scale[c] = qw->scales[qw->n > 1 ? c : 0];
  if (b) memcpy(q->bias, b->cdata, sizeof(float) * (size_t)cout);
  q->hybrid = 1;
  q->asymmetric = hybrid_asymmetric(n, qw);
  /* unknown (a host without Python's detection): ai-edge-litert's, the newer build */
  q->stock = n->qout.rounding >= 0 ? n->qout.rounding : FLEX_STOCK_NEON;
  link_source(g, n, q);
  return NULL;
}

/* The GEMM form, geometry and algo of a conv / FC (hybrid: its own algo, the same panels). */
static uint32_t gemm_layout(const fx_graph *g, const fx_node *n, struct fx_qlayer *q, int cout, size_t *bytes) {
  qpack_args *a = &q->args;
  const int depth = (int)(fx_shape_numel(&T(g, n->in[1])->shape) / (size_t)cout); /* kh * kw * cin, or K */
  q->gemm = fx_conv_choose_qs8_gemm(depth, q->hybrid);
  if (n->kind == FX_OP_QCONV) {
    const fx_qs8_conv_geom cg = conv_geom(g, n);
    q->form = fx_conv_choose_qs8_form(q->gemm, &cg, q->hybrid);
    a->geom = fx_qs8_conv_pack_geom(q->gemm, &cg, q->form);
  } else { /* FULLY_CONNECTED, TRANSPOSE_CONV: [cout][K] */
    a->geom = fx_qs8_gemm_geom_of(q->gemm, cout, 1, depth);
  }
  *bytes = fx_qs8_gemm_packed_bytes(&a->geom);
  return q->hybrid ? FX_ALGO_QS8_HYBRID(a->geom.nr, a->geom.kr, a->geom.a_offset, a->geom.kg_align)
                   : FX_ALGO_QS8_GEMM(a->geom.nr, a->geom.kr, a->geom.a_offset, a->geom.kg_align);
}

const char *fx_qlayer_pack(fx_graph *g, fx_node *n, struct fx_store *store) {
  const fx_tensor *w = T(g, n->in[1]), *b = T(g, bias_of(n)), *x = T(g, x_of(n));
  if (!w->cdata || (b && !b->cdata)) return "weights are not constant";
  const int cout = out_channels(g, n);
  struct fx_qlayer *q = calloc(1, sizeof *q);
  if (!q) return "out of memory";
  const char *why = x->dtype == FX_F32 ? hybrid_params(g, n, q) : int8_params(g, n, q);
  if (why) {
    fx_qlayer_free(q);
    return why;
  }
  qpack_args *a = &q->args;
  *a = (qpack_args){.w = w->cdata, .bias = b && !q->hybrid ? b->cdata : NULL, .zx = x->quant.zero_point,
                    .ms = q->ms, .cout = cout, .u8 = is_u8(g, n), .zw = w->quant.zero_point, .hybrid = q->hybrid};
  if (a->u8) q->row_factor = fx_qu8_row_factor(a->zw);
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
    algo = gemm_layout(g, n, q, cout, &bytes);
  }
  /* The key: everything the packed bytes depend on (geometry, weights, bias, input zero point,
   * requantization: the scales and the rounding's QuantizeMultiplier variant; a hybrid layer's
   * panels only on the geometry and weights). */
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
    if (q->ms) fx_hasher_update(&h, q->ms, sizeof(int32_t) * 2 * (size_t)cout);
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
  free(q->w_scale);
  free(q->range);
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

int fx_qlayer_hybrid_on(void) { return fx_conv_choose_hybrid(fx_qs8_gemm_config_get()); }

int fx_qlayer_is_hybrid(const struct fx_qlayer *q) { return q && q->hybrid; }
const char *fx_qlayer_gemm_name(const struct fx_qlayer *q) { return q && q->gemm ? q->gemm->name : NULL; }

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
  /* hybrid: float outputs through fo (rows from the layer's first), the rows' scales and zero
   * points per image (conv: rows_per_image) or per row (FC), a fused curve */
  float *yf;
  fx_qs8_f32_out fo;
  const float *x_scale;
  const int32_t *x_zp;
  size_t rows_per_image;
  fx_qs8_curve curve;
} qrun;

/* into[0] = min(into[0], r[0]), into[1] = max(into[1], r[1]), as tasks of other threads may too. */
static void merge_range(float *into, const float r[2]) {
  float cur;
  __atomic_load(&into[0], &cur, __ATOMIC_RELAXED);
  while (r[0] < cur && !__atomic_compare_exchange(&into[0], &cur, &r[0], 1, __ATOMIC_RELAXED, __ATOMIC_RELAXED)) {
  }
  __atomic_load(&into[1], &cur, __ATOMIC_RELAXED);
  while (r[1] > cur && !__atomic_compare_exchange(&into[1], &cur, &r[1], 1, __ATOMIC_RELAXED, __ATOMIC_RELAXED)) {
  }
}

/* A hybrid layer's rows [m0, m1) x panels [pb, pe): FULLY_CONNECTED rows at once, a conv image
 * by image (each its own scale, zero point and padding byte, and range when it keeps them). */
static int hybrid_task(const qrun *r, size_t m0, size_t m1, size_t pb, size_t pe) {
  const uint8_t *w = r->w + (pb - r->p0) * r->panel_bytes;
  const fx_qs8_curve *curve = r->curve.act ? &r->curve : NULL;
  if (!r->rows_per_image)
    return fx_qs8_hybrid_run(r->q->gemm, NULL, 0, r->x, 0, r->k, r->cout, w, r->yf, &r->fo, curve, m0, m1, pb, pe);
  for (size_t m = m0; m < m1;) {
    const size_t b = m / r->rows_per_image, end = (b + 1) * r->rows_per_image < m1 ? (b + 1) * r->rows_per_image : m1;
    fx_qs8_f32_out fo = r->fo;
    fo.x_scale = r->x_scale + b; /* the image's, for each of its rows */
    fo.x_zp = r->x_zp ? r->x_zp + b : NULL;
    fo.x_step = 0;
    float range[2] = {INFINITY, -INFINITY};
    fo.range = r->q->range_images ? range : NULL;
    if (fx_qs8_hybrid_run(r->q->gemm, &r->cg, r->q->form, r->x, fo.x_zp ? (int8_t)*fo.x_zp : 0, 0, r->cout, w, r->yf,
                          &fo, curve, m, end, pb, pe))
      return -1;
    if (fo.range) merge_range(r->q->range + 2 * b, range);
    m = end;
  }
  return 0;
}


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
  if (r->q->hybrid) {
    if (hybrid_task(r, m0, m1, r->p0 + b, r->p0 + e)) r->failed = 1;
    return;
  }
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
 * few channels (16 per thread: EfficientNet-B0 INT8 2 threads 2.77 -> 2.73 ms with 4). A layer
 * whose tasks gather their rows (`gathers`: im2col, TRANSPOSE_CONV, every task copying its rows'
 * windows) splits rows alone whenever they make at least one chunk per thread: a panel split
 * gathers the same rows again in each task, and on AMX gathering a row costs about what one pair
 * of panels computes on it. Unless it has more channels than rows: then every row task would
 * stream all the weights (ResNet-50's 3x3 512->512 at 7x7, 2.4 MB of them for 49 rows, took as
 * long at 2 threads as at 1), and gathering the rows in each panel task costs less. */
static void run_grid(fx_pool *pool, qrun *r, size_t grain, int gathers) {
  const size_t threads = (size_t)fx_pool_threads(pool), want = 4 * threads, mr = (size_t)r->q->gemm->mr;
  if (!r->m) return;
  qgrid gd = {.r = r, .panels = r->p1 - r->p0, .row_chunks = 1, .panel_chunks = 1};
  if (threads > 1) {
    gd.row_chunks = (r->m + grain - 1) / grain;
    if (gd.row_chunks >= want) gd.row_chunks = want;
    else if (!gathers || gd.row_chunks < threads || r->cout > r->m)
      gd.panel_chunks = (want + gd.row_chunks - 1) / gd.row_chunks;
  }
  gd.rows = ((r->m + gd.row_chunks - 1) / gd.row_chunks + mr - 1) / mr * mr;
  gd.row_chunks = (r->m + gd.rows - 1) / gd.rows;
  if (gd.panel_chunks > gd.panels) gd.panel_chunks = gd.panels;
  gd.panel_chunk = (gd.panels + gd.panel_chunks - 1) / gd.panel_chunks;
  gd.panel_chunks = (gd.panels + gd.panel_chunk - 1) / gd.panel_chunk;
  fx_parallel_tasks(pool, gd.row_chunks * gd.panel_chunks, grid_task, &gd);
}

#define DW_TASK_ROWS 4 /* rows of a depthwise layer per task at least (below: run_qdepthwise) */

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

/* ---- a hybrid layer's input, quantized into the node's scratch at each run ---- */
/* Rows quantized on their own: FULLY_CONNECTED's batch rows, a conv's images. */
static size_t quant_rows(const fx_graph *g, const fx_node *n) {
  const fx_shape *x = &T(g, n->in[0])->shape;
  if (n->kind == FX_OP_QCONV) return (size_t)x->d[0];
  const size_t k = fx_shape_numel(&T(g, n->in[1])->shape) / (size_t)out_channels(g, n);
  return fx_shape_numel(x) / k;
}

#define ALIGN64(v) (((v) + (size_t)63) & ~(size_t)63)

/* A uint8 layer's flipped input; a hybrid layer's quantized one, then each quantized row's scale
 * and zero point. */
size_t fx_qlayer_scratch_bytes(const fx_graph *g, const fx_node *n) {
  const fx_tensor *x = T(g, x_of(n));
  if (x->dtype == FX_U8) return fx_shape_numel(&x->shape);
  if (x->dtype != FX_F32) return 0;
  const size_t rows = quant_rows(g, n);
  return ALIGN64(fx_shape_numel(&x->shape)) + ALIGN64(rows * sizeof(float)) + rows * sizeof(int32_t);
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
  const size_t bytes = is_u8(g, n) ? fx_qlayer_scratch_bytes(g, n) : 0;
  *x = T(g, x_of(n))->ptr;
  if (!bytes) return 0;
  flip_job j = {T(g, x_of(n))->ptr, n->scratch >= 0 ? g->tensors[n->scratch].ptr : NULL};
  if (!j.y) return -1;
  fx_parallel_for(pool, bytes, (size_t)1 << 16, flip_range, &j);
  *x = j.y;
  return 0;
}

typedef struct {
  const float *x;
  int8_t *xq;
  float *scale;
  int32_t *zp;
  size_t len; /* values per quantized row */
  const struct fx_qlayer *q;
} quant_job;

/* FULLY_CONNECTED rows [b, e): each its own range, parameters and values. */
static void quantize_rows(void *ctx, size_t b, size_t e) {
  const quant_job *j = ctx;
  for (size_t i = b; i < e; i++) {
    float lo = INFINITY, hi = -INFINITY;
    fx_dynq_minmax(j->x + i * j->len, j->len, &lo, &hi);
    const fx_dynq p = fx_dynq_params(lo, hi, j->q->asymmetric, j->q->stock);
    const int poisoned = fx_dynq_quantize(j->x + i * j->len, j->len, j->xq + i * j->len, &p, 0, j->len);
    j->scale[i] = poisoned ? NAN : p.scale;
    j->zp[i] = p.zp;
  }
}

/* An image's values in pieces of this many: its range per thread, then the values. */
#define QUANT_PIECE 16384

typedef struct {
  const float *x;
  int8_t *xq;
  size_t len;
  fx_dynq p;
  float lo[FLEX_THREADS_MAX], hi[FLEX_THREADS_MAX]; /* its range, per thread */
  int poisoned;                                     /* a piece met a NaN (dynamic.h) */
} quant_image;

static void image_range_piece(void *ctx, int tid, size_t t) {
  quant_image *qi = ctx;
  const size_t b = t * QUANT_PIECE, e = b + QUANT_PIECE < qi->len ? b + QUANT_PIECE : qi->len;
  fx_dynq_minmax(qi->x + b, e - b, &qi->lo[tid], &qi->hi[tid]);
}

static void image_values(void *ctx, size_t b, size_t e) {
  quant_image *qi = ctx;
  if (fx_dynq_quantize(qi->x + b, e - b, qi->xq + b, &qi->p, b, qi->len))
    __atomic_store_n(&qi->poisoned, 1, __ATOMIC_RELAXED);
}

/* A conv's image: its range (known: its writer's record; else over every thread's pieces), then
 * the values in parallel. */
static void quantize_image(fx_pool *pool, const quant_job *j, size_t b, const float *known) {
  quant_image qi = {.x = j->x + b * j->len, .xq = j->xq + b * j->len, .len = j->len};
  const int threads = fx_pool_threads(pool);
  float lo = INFINITY, hi = -INFINITY;
  if (known) {
    lo = known[2 * b], hi = known[2 * b + 1];
  } else {
    for (int t = 0; t < threads; t++) qi.lo[t] = INFINITY, qi.hi[t] = -INFINITY;
    fx_parallel_tasks(pool, (j->len + QUANT_PIECE - 1) / QUANT_PIECE, image_range_piece, &qi);
    for (int t = 0; t < threads; t++) lo = qi.lo[t] < lo ? qi.lo[t] : lo, hi = qi.hi[t] > hi ? qi.hi[t] : hi;
  }
  qi.p = fx_dynq_params(lo, hi, j->q->asymmetric, j->q->stock);
  fx_parallel_for(pool, j->len, QUANT_PIECE, image_values, &qi);
  j->scale[b] = __atomic_load_n(&qi.poisoned, __ATOMIC_RELAXED) ? NAN : qi.p.scale;
  j->zp[b] = qi.p.zp;
}

/* The input quantized into the scratch as stock's hybrid kernel does (its rows or images). */
static int quantize_input(fx_graph *g, const fx_node *n, fx_pool *pool, qrun *r) {
  const fx_tensor *x = T(g, n->in[0]), *sc = n->scratch >= 0 ? T(g, n->scratch) : NULL;
  if (!sc || !sc->ptr) return -1;
  const size_t rows = quant_rows(g, n), numel = fx_shape_numel(&x->shape);
  quant_job j = {.x = x->ptr, .xq = sc->ptr, .len = rows ? numel / rows : 0, .q = n->qlayer};
  j.scale = (float *)((char *)sc->ptr + ALIGN64(numel));
  j.zp = (int32_t *)((char *)j.scale + ALIGN64(rows * sizeof(float)));
  const struct fx_qlayer *src = n->qlayer->src;
  const float *known = src && (size_t)src->range_images == rows ? src->range : NULL;
  if (n->kind == FX_OP_QFC)
    fx_parallel_for(pool, rows, (QUANT_PIECE + j.len - 1) / (j.len ? j.len : 1), quantize_rows, &j);
  else
    for (size_t b = 0; b < rows; b++) quantize_image(pool, &j, b, known);
  r->x = j.xq;
  r->x_scale = j.scale;
  r->x_zp = n->qlayer->asymmetric ? j.zp : NULL;
  return 0;
}

/* The float output stage: the layer's clamp, its fused residual ADD (in[3]) and curve. */
static void hybrid_out(fx_graph *g, const fx_node *n, qrun *r) {
  const struct fx_qlayer *q = n->qlayer;
  r->fo = (fx_qs8_f32_out){.x_scale = r->x_scale, .x_zp = r->x_zp, .x_step = 1, .w_scale = q->w_scale, .bias = q->bias};
  fx_act_bounds(n->act, &r->fo.lo, &r->fo.hi);
  if (n->kind == FX_OP_QFC) { /* stock's FC: tensor_utils' activation loops (qs8-gemm.h) */
    r->fo.nan_to_lo = n->act == FLEX_ACT_RELU || n->act == FLEX_ACT_RELU6 || n->act == FLEX_ACT_RELU_N1_TO_1;
    if (n->act == FLEX_ACT_RELU || !r->fo.nan_to_lo) r->fo.hi = INFINITY;
    if (!r->fo.nan_to_lo) r->fo.lo = -INFINITY;
  }
  if (n->n_in > 3 && n->in[3] >= 0) {
    r->fo.res = T(g, n->in[3])->ptr;
    r->fo.res_stride = r->cout;
    fx_act_bounds(n->res_act, &r->fo.res_lo, &r->fo.res_hi);
  }
  r->curve = (fx_qs8_curve){fx_apply_act, fx_act_is_curve(n->act) ? n->act : 0};
  r->yf = T(g, n->out[0])->ptr;
}

/* Before a run over panels from p0: a conv whose output a hybrid conv reads starts its images'
 * ranges afresh (a budget plan's later slices add to them). */
static void start_ranges(struct fx_qlayer *q, const fx_qs8_conv_geom *cg, size_t p0) {
  if (!q->range || p0) return;
  q->range_images = cg->batch <= q->range_cap ? cg->batch : 0;
  for (int b = 0; b < q->range_images; b++) q->range[2 * b] = INFINITY, q->range[2 * b + 1] = -INFINITY;
}

static int run_hybrid(fx_graph *g, fx_node *n, fx_pool *pool, qrun *r) {
  if (quantize_input(g, n, pool, r)) return -1;
  hybrid_out(g, n, r);
  if (n->kind == FX_OP_QCONV) r->rows_per_image = (size_t)r->cg.oh * (size_t)r->cg.ow;
  if (n->kind == FX_OP_QCONV) start_ranges(n->qlayer, &r->cg, r->p0);
  run_grid(pool, r, (size_t)r->q->gemm->mr * (n->kind == FX_OP_QFC ? 1 : r->a_direct ? 8 : 1),
           n->kind != FX_OP_QFC && !r->a_direct);
  return r->failed ? -1 : 0;
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
    if (r.q->hybrid) return run_hybrid(g, n, pool, &r);
    run_grid(pool, &r, (size_t)r.q->gemm->mr, 0);
    return r.failed ? -1 : 0;
  }
  if (n->kind == FX_OP_QTRANSPOSE_CONV) {
    fx_tconv_geom tg;
    fx_node_tconv_geom(g, n, &tg);
    r.tconv = &tg;
    r.m = (size_t)tg.batch * (size_t)tg.oh * (size_t)tg.ow;
    run_grid(pool, &r, (size_t)r.q->gemm->mr, 1);
    return r.failed ? -1 : 0;
  }
  r.cg = conv_geom(g, n);
  r.m = (size_t)r.cg.batch * r.cg.oh * r.cg.ow;
  r.k = (size_t)r.cg.cin;
  r.a_direct = r.q->form == FX_QS8_CONV_GEMM;
  if (r.q->hybrid) return run_hybrid(g, n, pool, &r);
  run_grid(pool, &r, (size_t)r.q->gemm->mr * (r.a_direct ? 8 : r.q->form == FX_QS8_CONV_IM2COL ? 1 : 4),
           r.q->form == FX_QS8_CONV_IM2COL);
  return r.failed ? -1 : 0;
}

static int run_qdepthwise(fx_graph *g, fx_node *n, fx_pool *pool, const void *panels) {
  qrun r = {.q = n->qlayer, .y = T(g, n->out[0])->ptr, .w = panels, .mult = n->p.conv.mult};
  if (kernel_input(g, n, pool, &r.x)) return -1;
  finish_setup(g, n, &r);
  r.cg = conv_geom(g, n);
  r.cout = (size_t)r.cg.cout;
  /* One thread runs the layer as one range, each channel tile set up once (fx_parallel_for
   * cuts it in 4: MobileNetV2 / EfficientNet-B0 INT8 about 1 % slower). Several split rows alone: a
   * grid that also cut channel tiles on small maps (each tile then set up once per task, not
   * per row run) measured 1.06x / 1.17x slower at 2 threads, its tasks reading every pixel's
   * few channels and rebuilding the whole pointer buffer each. Rows go DW_TASK_ROWS to a task
   * unless that leaves a thread without one: a task of one row of a 14x14 or 7x7 map sets up
   * every channel tile for 14 or 7 pixels, and such layers ran slower at 2 threads than at 1
   * (MobileNetV2 INT8's 14x14x576: 17 us at 1 thread, 28 at 2 with a row a task, 12 with 4). */
  const size_t rows = (size_t)r.cg.batch * r.cg.oh, threads = (size_t)fx_pool_threads(pool);
  const size_t per_thread = (rows + threads - 1) / threads;
  fx_parallel_for(pool, rows, threads > 1 ? (per_thread < DW_TASK_ROWS ? per_thread : DW_TASK_ROWS) : rows, dw_rows, &r);
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
