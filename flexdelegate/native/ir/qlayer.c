/* int8 CONV_2D / FULLY_CONNECTED / DEPTHWISE_CONV_2D: requantization parameters as stock TFLite
 * computes them (kernels/quant/requant.h), the weights packed once at init into the QS8 kernels'
 * panels (kernels/quant/pack.h), and the runs over the whole-layer drivers, split across the
 * pool by output pixels (GEMM panels for FULLY_CONNECTED's few rows) or depthwise rows. The
 * tflite reader (read_qconv) has checked dtypes, zero points, the channel axis and the rounding. */
#include <stdlib.h>
#include <string.h>
#include "graph.h"
#include "kernels/qs8-dwconv/qs8-dwconv.h"
#include "kernels/quant/pack.h"
#include "runtime/pool.h"

struct fx_qlayer {
  const fx_qs8_gemm_config *gemm;  /* QCONV / QFC */
  const fx_qs8_dwconv_config *dw;  /* QDEPTHWISE */
  fx_qs8_gemm_geom geom;
  void *packed;
  size_t bytes;
  int8_t *zero_row; /* cin bytes of the input zero point: the padding taps */
};

static const fx_tensor *T(const fx_graph *g, int id) { return id >= 0 ? &g->tensors[id] : NULL; }

static int out_channels(const fx_graph *g, const fx_node *n) {
  const fx_shape *w = &T(g, n->in[1])->shape;
  return n->kind == FX_OP_QDEPTHWISE ? w->d[3] : w->d[0];
}

/* The per-channel multipliers and shifts (2 * cout int32, malloc'd), or NULL with *why. */
static int32_t *requant_of(const fx_graph *g, const fx_node *n, const char **why) {
  const int cout = out_channels(g, n);
  const fx_quant *qx = &T(g, n->in[0])->quant, *qw = &T(g, n->in[1])->quant, *qy = &T(g, n->out[0])->quant;
  int32_t *ms = malloc(sizeof(int32_t) * 2 * (size_t)(cout > 0 ? cout : 1));
  if (!ms) { *why = "out of memory"; return NULL; }
  const float one = qw->scale;
  if (fx_qs8_requant_params(cout, qx->scale, qw->n > 1 ? qw->scales : &one, qw->n > 1, qy->scale,
                            n->qout.rounding == FX_RQ_SINGLE, ms, ms + cout)) {
    *why = "a requantization multiplier of 2^30 or more (left to the stock kernel)";
    free(ms);
    return NULL;
  }
  return ms;
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

const char *fx_qlayer_pack(fx_graph *g, fx_node *n) {
  const fx_tensor *w = T(g, n->in[1]), *b = n->n_in > 2 ? T(g, n->in[2]) : NULL;
  if (!w->cdata || (b && !b->cdata)) return "weights are not constant";
  const int cout = out_channels(g, n);
  const char *why = NULL;
  int32_t *ms = requant_of(g, n, &why);
  if (!ms) return why;
  struct fx_qlayer *q = calloc(1, sizeof *q);
  const int32_t zx = T(g, n->in[0])->quant.zero_point;
  const int32_t *bias = b ? b->cdata : NULL;
  int rc = -1;
  if (!q) goto done;
  if (n->kind == FX_OP_QDEPTHWISE) {
    q->dw = fx_qs8_dwconv_config_get();
    const int taps = n->p.conv.kh * n->p.conv.kw;
    q->bytes = fx_qs8_dw_packed_bytes(cout, taps, q->dw->ct);
    if ((q->packed = malloc(q->bytes)))
      rc = fx_qs8_pack_dw(cout, taps, q->dw->ct, w->cdata, bias, zx, ms, ms + cout, q->packed);
  } else {
    q->gemm = fx_qs8_gemm_config_get();
    const int k = (int)(fx_shape_numel(&w->shape) / (size_t)cout);
    if (n->kind == FX_OP_QCONV) {
      const fx_qs8_conv_geom cg = conv_geom(g, n);
      q->geom = fx_qs8_conv_pack_geom(q->gemm, &cg);
    } else {
      q->geom = fx_qs8_gemm_geom_of(q->gemm, cout, 1, k);
    }
    q->bytes = fx_qs8_gemm_packed_bytes(&q->geom);
    if ((q->packed = malloc(q->bytes))) rc = fx_qs8_pack_gemm(&q->geom, w->cdata, bias, zx, ms, ms + cout, q->packed);
  }
  const int cin = T(g, n->in[0])->shape.d[T(g, n->in[0])->shape.rank - 1];
  if (rc == 0 && n->kind != FX_OP_QFC) {
    if ((q->zero_row = malloc((size_t)(cin > 0 ? cin : 1)))) memset(q->zero_row, (int8_t)zx, (size_t)cin);
    else rc = -1;
  }
done:
  free(ms);
  if (rc) {
    fx_qlayer_free(q);
    return "out of memory packing int8 weights";
  }
  n->qlayer = q;
  return NULL;
}

void fx_qlayer_free(struct fx_qlayer *q) {
  if (!q) return;
  free(q->packed);
  free(q->zero_row);
  free(q);
}

size_t fx_qlayer_bytes(const struct fx_qlayer *q) { return q ? q->bytes : 0; }

/* ---- runs ---- */
typedef struct {
  const struct fx_qlayer *q;
  fx_qs8_conv_geom cg;
  const int8_t *x;
  int8_t *y;
  size_t m, k, cout, panels;
  int mult;
  const fx_qs8_out *o;
  int failed;
} qrun;

static void conv_pixels(void *ctx, size_t begin, size_t end) {
  qrun *r = ctx;
  if (fx_qs8_conv_run(r->q->gemm, &r->cg, r->x, r->q->zero_row, r->q->packed, r->y, 0, r->o, begin, end, 0, r->panels))
    r->failed = 1;
}

static void fc_rows(void *ctx, size_t begin, size_t end) {
  qrun *r = ctx;
  fx_qs8_gemm_run(r->q->gemm, end - begin, r->cout, r->k, r->x + begin * r->k, r->k, r->q->packed,
                  r->y + begin * r->cout, r->cout, 0, r->o, 0, r->panels);
}

static void fc_panels(void *ctx, size_t begin, size_t end) {
  qrun *r = ctx;
  fx_qs8_gemm_run(r->q->gemm, r->m, r->cout, r->k, r->x, r->k, r->q->packed, r->y, r->cout, 0, r->o, begin, end);
}

static void dw_rows(void *ctx, size_t begin, size_t end) {
  qrun *r = ctx;
  if (fx_qs8_dwconv_run(r->q->dw, &r->cg, r->mult, r->x, r->q->zero_row, r->q->packed, r->y, r->o, begin, end))
    r->failed = 1;
}

int fx_run_qgemm(fx_graph *g, fx_node *n, fx_pool *pool) {
  if (!n->qlayer) return -1;
  const fx_tensor *x = T(g, n->in[0]), *w = T(g, n->in[1]), *y = T(g, n->out[0]);
  qrun r = {.q = n->qlayer, .x = x->ptr, .y = y->ptr, .o = &n->qout};
  r.cout = (size_t)w->shape.d[0];
  r.panels = (r.cout + (size_t)r.q->gemm->nr - 1) / (size_t)r.q->gemm->nr;
  if (n->kind == FX_OP_QFC) {
    r.k = fx_shape_numel(&w->shape) / r.cout;
    r.m = fx_shape_numel(&x->shape) / r.k;
    /* few rows (a classifier head): split the panels; else rows in whole MR tiles */
    if (r.m < (size_t)r.q->gemm->mr * (size_t)fx_pool_threads(pool)) fx_parallel_for(pool, r.panels, 1, fc_panels, &r);
    else fx_parallel_for(pool, r.m, (size_t)r.q->gemm->mr, fc_rows, &r);
    return 0;
  }
  r.cg = conv_geom(g, n);
  const size_t pixels = (size_t)r.cg.batch * r.cg.oh * r.cg.ow;
  fx_parallel_for(pool, pixels, (size_t)r.q->gemm->mr * 4, conv_pixels, &r);
  return r.failed ? -1 : 0;
}

int fx_run_qdepthwise(fx_graph *g, fx_node *n, fx_pool *pool) {
  if (!n->qlayer) return -1;
  qrun r = {.q = n->qlayer, .x = T(g, n->in[0])->ptr, .y = T(g, n->out[0])->ptr, .o = &n->qout, .mult = n->p.conv.mult};
  r.cg = conv_geom(g, n);
  fx_parallel_for(pool, (size_t)r.cg.batch * r.cg.oh, 1, dw_rows, &r);
  return r.failed ? -1 : 0;
}
