/* Load-time folding of DEQUANTIZE and DENSIFY over constants (and of a hybrid layer's int8
 * weights, an implicit DEQUANTIZE). These read TFLite's quantization
 * and sparsity metadata, so they live on the TFLite side; every offset and index in that
 * metadata is bounds-checked (models are untrusted input). */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "delegate.h"

static float half_to_float(uint16_t h) {
  uint32_t sign = (uint32_t)(h >> 15) << 31, exp = (h >> 10) & 0x1F, man = h & 0x3FF;
  float v;
  if (exp == 0) v = ldexpf((float)man, -24);                          /* zero / subnormal */
  else if (exp == 31) v = man ? NAN : INFINITY;
  else v = ldexpf((float)(man | 0x400), (int)exp - 25);
  uint32_t bits;
  memcpy(&bits, &v, 4);
  bits |= sign;
  memcpy(&v, &bits, 4);
  return v;
}

/* The constant data of input tensor `idx`: a folded blob or the model's buffer. */
static const void *const_data(fx_translate *tr, int idx, int *dtype, size_t *bytes) {
  fx_blob *b = tr->sg->statics[idx];
  if (b) { *dtype = b->dtype; *bytes = b->bytes; return fx_blob_data(b); }
  const TfLiteTensor *t = &tr->ctx->tensors[idx];
  if (t->allocation_type != kTfLiteMmapRo || !t->data.raw) return NULL;
  *dtype = fx_tfl_dtype(t->type);
  *bytes = t->bytes;
  return t->data.raw;
}

static int tensor_shape(const TfLiteTensor *t, fx_shape *s) {
  if (!t->dims || t->dims->size > FX_MAX_RANK) return -1;
  s->rank = t->dims->size;
  for (int i = 0; i < s->rank; i++) {
    if (t->dims->data[i] < 0) return -1;
    s->d[i] = t->dims->data[i];
  }
  return 0;
}

/* DEQUANTIZE's parameters, hashed into the keys of weights packed from it: calloc'd, so
 * padding is zero. Followed by nq scales and nq zero points. */
typedef struct {
  int dtype, nq;
  size_t count, inner;
} dq_params;

static void dequantize_into(const void *params, const void *src, void *dst) {
  const dq_params *q = params;
  const float *scales = (const float *)(q + 1);
  const int *zps = (const int *)(scales + q->nq);
  float *y = dst;
  if (q->dtype == FX_F16) {
    for (size_t i = 0; i < q->count; i++) y[i] = half_to_float(((const uint16_t *)src)[i]);
    return;
  }
  for (size_t i = 0; i < q->count; i++) {
    int c = q->nq > 1 ? (int)(i / q->inner % (size_t)q->nq) : 0;
    int v = q->dtype == FX_I8 ? ((const int8_t *)src)[i] : q->dtype == FX_U8 ? ((const uint8_t *)src)[i]
                                                                             : ((const int16_t *)src)[i];
    y[i] = scales[c] * (float)(v - zps[c]);
  }
}

/* Checks everything up front (a fold that fails later could no longer fall back), then
 * defers the work when the source is the model's own buffer. */
static const char *dequantize(fx_translate *tr, int in, const fx_shape *shape, fx_blob **out) {
  int dt;
  size_t bytes;
  const void *src = const_data(tr, in, &dt, &bytes);
  if (!src) return "dequantize of a non-constant tensor";
  size_t count = fx_shape_numel(shape);
  if (!fx_dtype_size(dt) || bytes < count * fx_dtype_size(dt)) return "constant smaller than its shape";
  if (dt != FX_F16 && dt != FX_I8 && dt != FX_U8 && dt != FX_I16) return "dequantize from an unsupported type";
  const TfLiteTensor *t = &tr->ctx->tensors[in];
  if (dt == FX_F16 && t->quantization.type == kTfLiteAffineQuantization && t->quantization.params &&
      ((const TfLiteAffineQuantization *)t->quantization.params)->scale &&
      ((const TfLiteAffineQuantization *)t->quantization.params)->scale->size > 1)
    return "per-channel parameters on FP16 data (stock refuses them)";
  /* Per-channel (affine) parameters, else the per-tensor ones. */
  const float *scales = &t->params.scale;
  const int *zps = &t->params.zero_point;
  int nq = 1, qdim = 0;
  if (dt != FX_F16 && t->quantization.type == kTfLiteAffineQuantization && t->quantization.params) {
    const TfLiteAffineQuantization *q = t->quantization.params;
    if (!q->scale || !q->zero_point || q->scale->size < 1) return "malformed quantization";
    nq = q->scale->size;
    if (q->zero_point->size != nq && q->zero_point->size != 1) return "malformed quantization";
    scales = q->scale->data;
    zps = q->zero_point->data;
    qdim = q->quantized_dimension;
    if (nq > 1 && (qdim < 0 || qdim >= shape->rank || shape->d[qdim] != nq))
      return "quantized dimension does not match the scales";
    if (q->zero_point->size == 1 && nq > 1) return "per-channel scales with one zero point";
  }
  size_t inner = 1;
  for (int i = qdim + 1; i < shape->rank; i++) inner *= (size_t)shape->d[i];
  size_t params_len = sizeof(dq_params) + (size_t)nq * (sizeof(float) + sizeof(int));
  dq_params *q = calloc(1, params_len);
  fx_fold_recipe *r = calloc(1, sizeof *r);
  if (!q || !r) { free(q); free(r); return "out of memory"; }
  *q = (dq_params){dt, nq, count, inner};
  if (dt != FX_F16) {
    memcpy(q + 1, scales, (size_t)nq * sizeof(float));
    memcpy((float *)(q + 1) + nq, zps, (size_t)nq * sizeof(int));
  }
  *r = (fx_fold_recipe){dequantize_into, src, count * fx_dtype_size(dt), q, params_len};
  const int from_model = !tr->sg->statics[in];
  if (from_model) {
    *out = fx_blob_new_deferred(FX_F32, shape, r);
    return *out ? NULL : "out of memory";
  }
  /* From another fold's blob (which may go away): compute now. */
  *out = fx_blob_new(FX_F32, shape);
  if (*out) dequantize_into(q, src, (*out)->data);
  free(q);
  free(r);
  return *out ? NULL : "out of memory";
}

/* A dynamic-range ("hybrid") layer's int8 weights (a model constant: ops.c checked) as the
 * float32 constant its FP32 kernel reads: the same deferred dequantize fold as DEQUANTIZE's, so
 * a GEMM packs them once into an ordinary FP32 blob keyed by the int8 bytes and the scales, and
 * a warm load maps that blob without ever computing the floats. */
const char *fx_fold_hybrid_weights(fx_translate *tr, int idx, fx_blob **out) {
  *out = NULL;
  const TfLiteTensor *t = &tr->ctx->tensors[idx];
  fx_shape s;
  if (tensor_shape(t, &s)) return "hybrid weight shape unknown";
  return dequantize(tr, idx, &s, out);
}

typedef struct {
  const TfLiteSparsity *sp;
  int levels, rank;
  int coord[2 * FX_MAX_RANK]; /* by traversal dimension id */
  const char *src;
  size_t esize, n_values, next;
  fx_blob *out;
  const char *err;
} densify_walk;

static void densify_level(densify_walk *w, int level, int pos) {
  if (w->err) return;
  if (level == w->levels) {
    if (w->next >= w->n_values) { w->err = "sparse values overrun"; return; }
    size_t lin = 0;
    for (int i = 0; i < w->rank; i++) {
      int c = w->coord[i];
      for (int j = 0; w->sp->block_map && j < w->sp->block_map->size; j++)
        if (w->sp->block_map->data[j] == i)
          c = c * w->sp->dim_metadata[w->rank + j].dense_size + w->coord[w->rank + j];
      if (c < 0 || c >= w->out->shape.d[i]) { w->err = "sparse index out of range"; return; }
      lin = lin * (size_t)w->out->shape.d[i] + (size_t)c;
    }
    memcpy((char *)w->out->data + lin * w->esize, w->src + w->next++ * w->esize, w->esize);
    return;
  }
  const TfLiteDimensionMetadata *md = &w->sp->dim_metadata[level];
  int dim = w->sp->traversal_order->data[level];
  if (md->format == kTfLiteDimDense) {
    for (int i = 0; i < md->dense_size && !w->err; i++) {
      w->coord[dim] = i;
      densify_level(w, level + 1, pos * md->dense_size + i);
    }
    return;
  }
  const TfLiteIntArray *seg = md->array_segments, *idx = md->array_indices;
  if (!seg || !idx || pos < 0 || pos + 1 >= seg->size) { w->err = "malformed sparse segments"; return; }
  for (int j = seg->data[pos]; j < seg->data[pos + 1] && !w->err; j++) {
    if (j < 0 || j >= idx->size) { w->err = "malformed sparse indices"; return; }
    w->coord[dim] = idx->data[j];
    densify_level(w, level + 1, j);
  }
}

static const char *densify(fx_translate *tr, int in, fx_blob *out) {
  const TfLiteTensor *t = &tr->ctx->tensors[in];
  const TfLiteSparsity *sp = t->sparsity;
  if (!sp || t->allocation_type != kTfLiteMmapRo || !t->data.raw) return "densify of a non-constant tensor";
  densify_walk w = {.sp = sp, .rank = out->shape.rank, .src = t->data.raw, .out = out};
  w.esize = fx_dtype_size(fx_tfl_dtype(t->type));
  if (!w.esize || fx_tfl_dtype(t->type) != out->dtype) return "densify type mismatch";
  w.n_values = t->bytes / w.esize;
  w.levels = sp->dim_metadata_size;
  if (!sp->traversal_order || !sp->dim_metadata || sp->traversal_order->size != w.levels ||
      w.levels < w.rank || w.levels > 2 * FX_MAX_RANK ||
      (w.levels > w.rank && (!sp->block_map || sp->block_map->size != w.levels - w.rank)))
    return "malformed sparsity metadata";
  for (int l = 0; l < w.levels; l++) {
    int dim = sp->traversal_order->data[l];
    if (dim < 0 || dim >= w.levels) return "malformed traversal order";
    if (sp->dim_metadata[l].format == kTfLiteDimDense && sp->dim_metadata[l].dense_size < 0) return "malformed sparsity metadata";
  }
  for (int j = 0; j < w.levels - w.rank; j++)
    if (sp->block_map->data[j] < 0 || sp->block_map->data[j] >= w.rank) return "malformed block map";
  densify_level(&w, 0, 0);
  return w.err;
}

const char *fx_fold_special(fx_translate *tr, const TfLiteNode *node, int builtin, fx_blob **out) {
  *out = NULL;
  if (!node->inputs || node->inputs->size != 1 || !node->outputs || node->outputs->size != 1)
    return "unexpected number of inputs/outputs";
  int in = node->inputs->data[0], o = node->outputs->data[0];
  if (in < 0 || o < 0 || (size_t)in >= tr->ctx->tensors_size || (size_t)o >= tr->ctx->tensors_size)
    return "tensor index out of range";
  /* Both ops give their output the input's (dense) shape at prepare, whatever the model
   * declares for it: the declared shape may be smaller than the data (TFLite resizes it). */
  const TfLiteTensor *ot = &tr->ctx->tensors[o];
  fx_shape s;
  int odt = fx_tfl_dtype(ot->type);
  if (tr->sg->statics[in]) s = tr->sg->statics[in]->shape;
  else if (tensor_shape(&tr->ctx->tensors[in], &s)) return "input shape unknown";
  if (builtin == kTfLiteBuiltinDequantize && odt != FX_F32) return "dequantize to a non-float32 type";
  if (!odt || odt == FX_BOOL) return "unsupported output type";
  if (builtin == kTfLiteBuiltinDequantize) return dequantize(tr, in, &s, out);
  fx_blob *b = fx_blob_new(odt, &s);
  if (!b) return "out of memory";
  const char *why = densify(tr, in, b);
  if (why) { fx_blob_unref(b); return why; }
  *out = b;
  return NULL;
}
