/* Op translation: builtin nodes (params, tensors) into the IR. Whether a node is supported is
 * decided by translating it and inferring its shapes with the same code the runtime uses, so
 * "claimed" and "runs" cannot drift apart. */
#include <string.h>
#include "delegate.h"
#include "ir/qop.h"
#include "kernels/qs8-ops/qs8-ops.h"

int fx_tfl_dtype(TfLiteType t) {
  switch (t) {
    case kTfLiteFloat32: return FX_F32;
    case kTfLiteInt32: return FX_I32;
    case kTfLiteInt64: return FX_I64;
    case kTfLiteFloat16: return FX_F16;
    case kTfLiteInt8: return FX_I8;
    case kTfLiteUInt8: return FX_U8;
    case kTfLiteInt16: return FX_I16;
    case kTfLiteBool: return FX_BOOL;
    default: return 0;
  }
}

/* The quantization of an integer tensor (float ones: none, whatever the model attached). A
 * record the interpreter would trip over (no scales, zero points not one per scale, a channel
 * axis outside the shape or of another length) is a reason, never read past. */
static const char *read_quant(const TfLiteTensor *t, int dtype, fx_quant *q) {
  memset(q, 0, sizeof *q);
  if (dtype != FX_I8 && dtype != FX_U8 && dtype != FX_I16 && dtype != FX_I32) return NULL;
  if (t->quantization.type == kTfLiteNoQuantization) return NULL;
  const TfLiteAffineQuantization *a = t->quantization.params;
  if (t->quantization.type != kTfLiteAffineQuantization || !a) return "unsupported quantization";
  if (!a->scale || a->scale->size < 1 || !a->zero_point || a->zero_point->size != a->scale->size)
    return "malformed quantization parameters";
  q->n = a->scale->size;
  q->axis = a->quantized_dimension;
  q->scales = a->scale->data;
  q->zero_points = a->zero_point->data;
  q->scale = t->params.scale;
  q->zero_point = t->params.zero_point;
  if (q->n > 1 && (!t->dims || q->axis < 0 || q->axis >= t->dims->size || t->dims->data[q->axis] != q->n))
    return "per-channel scales do not match the quantized dimension";
  return NULL;
}

/* Adds TFLite tensor `idx` (or finds it); -1 for an absent optional input, -2 on error. */
static int add_tensor(fx_translate *tr, fx_graph *g, int idx, const char **why) {
  if (idx < 0) return -1;
  if ((size_t)idx >= tr->ctx->tensors_size) { *why = "tensor index out of range"; return -2; }
  if (tr->local[idx] >= 0) return tr->local[idx];
  const TfLiteTensor *t = &tr->ctx->tensors[idx];
  fx_tensor ft = {.tfl = idx, .dtype = fx_tfl_dtype(t->type), .storage = FX_ST_ARENA};
  fx_blob *blob = tr->sg && tr->sg->statics && idx < tr->sg->n_tensors ? tr->sg->statics[idx] : NULL;
  if (blob) {
    ft.dtype = blob->dtype;
    ft.shape = blob->shape;
    ft.storage = FX_ST_CONST;
    ft.cdata = blob->data;
    ft.blob = fx_blob_ref(blob);
  } else {
    if (!t->dims || t->dims->size > FX_MAX_RANK) { *why = "tensor rank above 8"; return -2; }
    if (t->sparsity) { *why = "sparse tensor outside DENSIFY"; return -2; }
    if (tr->shapes) {
      ft.shape = tr->shapes[idx];
    } else {
      ft.shape.rank = t->dims->size;
      for (int i = 0; i < t->dims->size; i++) ft.shape.d[i] = t->dims->data[i];
    }
    for (int i = 0; i < ft.shape.rank; i++)
      if (ft.shape.d[i] < 0) { *why = "dynamic (unknown) dimension"; return -2; }
    if (t->allocation_type == kTfLiteMmapRo || t->allocation_type == kTfLitePersistentRo) {
      if (!t->data.raw && fx_shape_numel(&ft.shape)) { *why = "constant without data"; return -2; }
      ft.storage = FX_ST_CONST;
      ft.cdata = t->data.raw;
    } else if (t->allocation_type == kTfLiteDynamic) {
      *why = "dynamic tensor";
      return -2;
    }
  }
  if (!ft.dtype) { *why = "unsupported tensor type"; fx_blob_unref(ft.blob); return -2; }
  if ((*why = read_quant(t, fx_tfl_dtype(t->type), &ft.quant))) { fx_blob_unref(ft.blob); return -2; }
  int id = fx_graph_add_tensor(g, &ft);
  if (id < 0) { *why = "out of memory"; fx_blob_unref(ft.blob); return -2; }
  tr->local[idx] = id;
  return id;
}

/* A dynamic-range ("hybrid") CONV_2D / DEPTHWISE_CONV_2D / FULLY_CONNECTED / BATCH_MATMUL: float32
 * input, int8 weights (BATCH_MATMUL: a constant int8 right-hand side). CONV_2D and
 * FULLY_CONNECTED run as stock's hybrid kernels do, on the int8 GEMM (QCONV / QFC, ir/qlayer.c),
 * where this CPU's int8 variant has a float output stage (fx_qlayer_hybrid_on); the others, and
 * those elsewhere, on the FP32 kernels from the weights dequantized once: when packed for a GEMM
 * (CONV, FC), at load for the others (their FP32 kernels read plain weights). */
static int is_hybrid(const fx_translate *tr, int kind, const TfLiteNode *node) {
  if ((kind != FX_OP_CONV && kind != FX_OP_DEPTHWISE && kind != FX_OP_FC && kind != FX_OP_BATCH_MATMUL) ||
      node->inputs->size < 2)
    return 0;
  const int x = node->inputs->data[0], w = node->inputs->data[1];
  if (x < 0 || w < 0 || (size_t)x >= tr->ctx->tensors_size || (size_t)w >= tr->ctx->tensors_size) return 0;
  return tr->ctx->tensors[x].type == kTfLiteFloat32 && tr->ctx->tensors[w].type == kTfLiteInt8;
}

/* Whether a hybrid layer's weights (model constant `idx`) are what we compute as stock does:
 * scales per tensor or along the output channels, zero points 0 (stock's hybrid kernels ignore
 * a weight zero point, so a model with one stays with them). NULL, or why not. */
static const char *check_hybrid_weights(const fx_translate *tr, int idx, int kind) {
  const TfLiteTensor *t = &tr->ctx->tensors[idx];
  fx_quant q;
  const char *why;
  if (t->sparsity) return "sparse tensor outside DENSIFY";
  if (!t->dims || t->dims->size > FX_MAX_RANK) return "hybrid weight shape unknown";
  if ((why = read_quant(t, FX_I8, &q))) return why;
  if (!q.n) return "hybrid int8 weights without quantization";
  if (kind == FX_OP_BATCH_MATMUL && q.n != 1) /* stock's hybrid BATCH_MATMUL applies the tensor's one scale */
    return "hybrid BATCH_MATMUL with per-channel scales (stock applies one)";
  if (q.n > 1 && q.axis != (kind == FX_OP_DEPTHWISE ? 3 : 0))
    return "per-channel weight scales not along the output channels";
  /* stock's hybrid depthwise reads one scale per output channel, and refuses fewer */
  if (kind == FX_OP_DEPTHWISE && (t->dims->size != 4 || q.n != t->dims->data[3]))
    return "hybrid depthwise weights without one scale per output channel (stock refuses them)";
  for (int c = 0; c < q.n; c++)
    if (q.zero_points[c]) return "hybrid int8 weights with a nonzero zero point (stock ignores it)";
  if (tr->sg->statics && tr->sg->statics[idx])
    return "hybrid weights computed at load (e.g. densified): left to stock";
  return t->allocation_type == kTfLiteMmapRo ? NULL : "non-constant hybrid weights";
}

/* A hybrid layer's weights: the int8 tensor itself for the int8 GEMM (int8_path), else a float32
 * constant, a deferred dequantize fold of its own, not entered in tr->local (another node may
 * read the int8 tensor as such). */
static int add_hybrid_weights(fx_translate *tr, fx_graph *g, int idx, int kind, int int8_path, const char **why) {
  if ((*why = check_hybrid_weights(tr, idx, kind))) return -2;
  if (int8_path) return add_tensor(tr, g, idx, why);
  fx_blob *b;
  if ((*why = fx_fold_hybrid_weights(tr, idx, &b))) return -2;
  fx_tensor ft = {.tfl = idx, .dtype = FX_F32, .shape = b->shape, .storage = FX_ST_CONST, .blob = b};
  const int id = fx_graph_add_tensor(g, &ft);
  if (id < 0) { *why = "out of memory"; fx_blob_unref(b); return -2; }
  return id;
}

_Static_assert((int)FLEX_ACT_RELU == (int)kTfLiteActRelu && (int)FLEX_ACT_RELU_N1_TO_1 == (int)kTfLiteActReluN1To1 &&
                   (int)FLEX_ACT_RELU6 == (int)kTfLiteActRelu6,
               "the clamp activations are TFLite's values");

static const char *map_act(int tfl_act, int *act) {
  if (tfl_act < kTfLiteActNone || tfl_act > kTfLiteActTanh) return "unsupported fused activation";
  /* TFLite's float kernels derive clamp bounds from the activation and give TANH no bounds
   * and no tanh (CalculateActivationRange), so a fused TANH is a no-op on the stock path;
   * we match it. The other four share our enum's values. */
  *act = tfl_act == kTfLiteActTanh ? FLEX_ACT_NONE : tfl_act;
  return NULL;
}

/* Every input in `f32_mask` (bit i = input i) and every output must be float32. */
static const char *need_f32(fx_graph *g, const fx_node *n, unsigned f32_mask) {
  for (int i = 0; i < n->n_in; i++)
    if (((f32_mask >> i) & 1) && n->in[i] >= 0 && g->tensors[n->in[i]].dtype != FX_F32)
      return "non-float32 input";
  for (int i = 0; i < n->n_out; i++)
    if (g->tensors[n->out[i]].dtype != FX_F32) return "non-float32 output";
  return NULL;
}

static int is_q8(int dtype) { return dtype == FX_I8 || dtype == FX_U8; }

/* Layout ops move elements of any 1-, 4- or 8-byte type, and inputs and outputs agree. Quantized
 * bytes move unchanged whatever the tensors' quantization says, as in the stock kernels. */
static const char *same_dtype(fx_graph *g, const fx_node *n, int n_data_inputs) {
  int dt = g->tensors[n->out[0]].dtype;
  if (dt != FX_F32 && dt != FX_I32 && dt != FX_I64 && !is_q8(dt)) return "unsupported tensor type";
  for (int i = 0; i < n_data_inputs; i++)
    if (n->in[i] >= 0 && g->tensors[n->in[i]].dtype != dt) return "input and output types differ";
  return NULL;
}

/* Whether tensors a and b carry the same per-tensor scale and zero point (stock compares these). */
static int same_scale(const fx_graph *g, int a, int b) {
  const fx_quant *qa = &g->tensors[a].quant, *qb = &g->tensors[b].quant;
  return qa->scale == qb->scale && qa->zero_point == qb->zero_point;
}

/* Quantized CONCATENATION / PACK: stock int8 kernels require every input quantized as the
 * output (else they refuse the model), and uint8 ones copy such inputs unchanged. */
static const char *same_quant(fx_graph *g, const fx_node *n, int n_data_inputs) {
  if (!is_q8(g->tensors[n->out[0]].dtype)) return NULL;
  for (int i = 0; i < n_data_inputs; i++)
    if (n->in[i] >= 0 && !same_scale(g, n->in[i], n->out[0])) return "inputs quantized differently from the output";
  return NULL;
}

/* An integer op's output stage in n->qout: the output zero point and the fused activation's
 * range (CalculateActivationRangeQuantized, which gives TANH no range, like the float path). */
static const char *q8_out(fx_graph *g, fx_node *n, int tfl_act) {
  const fx_tensor *y = &g->tensors[n->out[0]];
  const int u8 = y->dtype == FX_U8;
  int act;
  const char *e = map_act(tfl_act, &act);
  if (e) return e;
  n->qout.zp = y->quant.zero_point;
  if (fx_qs8_act_range(act, y->quant.scale, y->quant.zero_point, u8 ? 0 : -128, u8 ? 255 : 127, &n->qout.lo,
                       &n->qout.hi))
    return "fused activation range outside int32 (the stock kernel refuses the model)";
  return NULL;
}

static const char *need_const(fx_graph *g, const fx_node *n, int input, int optional) {
  int id = input < n->n_in ? n->in[input] : -1;
  if (id < 0) return optional ? NULL : "missing input";
  return g->tensors[id].storage == FX_ST_CONST ? NULL : "non-constant weights or parameters";
}

static void conv_params(fx_node *n, int padding, int sw, int sh, int dw, int dh) {
  n->p.conv.same = padding == kTfLitePaddingSame;
  n->p.conv.stride_w = sw;
  n->p.conv.stride_h = sh;
  n->p.conv.dil_w = dw; /* 0 is refused: stock CONV_2D runs it as every tap on one row */
  n->p.conv.dil_h = dh;
}

static const char *check_window(const fx_node *n, int padding) {
  if (padding != kTfLitePaddingSame && padding != kTfLitePaddingValid) return "unknown padding";
  if (n->p.conv.stride_w < 1 || n->p.conv.stride_h < 1 || n->p.conv.dil_w < 1 || n->p.conv.dil_h < 1)
    return "stride and dilation must be >= 1";
  /* LiteRT's stock kernels refuse wider strides, tflite-runtime 2.14's run them (its optimized
   * and reference kernels then disagree): stock decides, whichever runtime it is. */
  if (n->p.conv.stride_w > INT16_MAX || n->p.conv.stride_h > INT16_MAX) return "stride above 32767";
  return NULL;
}

/* ---- param readers: each reads one builtin's params into the node and applies its dtype
 * rule; NULL, or the reason the variant is unsupported. `bd` is the node's builtin_data. ---- */
typedef const char *(*reader_fn)(fx_graph *g, fx_node *n, const void *bd);

/* Conv weights and the optional bias are constants; every tensor is float32. */
static const char *conv_tensors(fx_graph *g, fx_node *n) {
  const char *e;
  if ((e = need_f32(g, n, 7)) || (e = need_const(g, n, 1, 0))) return e;
  return n->n_in > 2 ? need_const(g, n, 2, 1) : NULL;
}

/* The weight quantization stock's integer kernels take: int8, per-tensor or per-channel scales
 * along the output channels (axis) with zero points 0; uint8 (QU8), one scale, and every zero
 * point inside uint8 (what the int8-domain kernels reproduce: ir/qlayer.c). */
static const char *qweight_params(const fx_tensor *x, const fx_tensor *w, const fx_tensor *y, int axis) {
  if (x->dtype == FX_U8) {
    if (w->quant.n > 1) return "uint8 weights with per-channel scales (stock's uint8 kernels take one scale)";
    const int32_t z[3] = {x->quant.zero_point, w->quant.zero_point, y->quant.zero_point};
    for (int i = 0; i < 3; i++)
      if (z[i] < 0 || z[i] > 255) return "uint8 zero point outside 0..255";
    return NULL;
  }
  if (w->quant.n > 1 && (w->quant.axis != axis || w->quant.n != w->shape.d[axis]))
    return "per-channel weight scales not along the output channels";
  for (int c = 0; c < w->quant.n; c++)
    if (w->quant.zero_points[c] != 0) return "int8 weights with a nonzero zero point";
  return NULL;
}

/* Stock refuses a bias scale off input x weight scale by over 2% of the output scale
 * (GetQuantizedConvolutionMultipler: FULLY_CONNECTED always, convs on uint8 only): so do we. */
static const char *bias_scale(const fx_tensor *x, const fx_tensor *w, const fx_tensor *b, const fx_tensor *y) {
  const double product = (double)x->quant.scale * (double)w->quant.scale;
  const double diff = product > b->quant.scale ? product - b->quant.scale : b->quant.scale - product;
  return diff / (double)y->quant.scale <= 0.02 ? NULL : "bias scale is not input scale x weight scale (stock refuses it)";
}

/* int8 / uint8 CONV_2D / DEPTHWISE_CONV_2D / FULLY_CONNECTED and int8 TRANSPOSE_CONV (the node
 * becomes QCONV / QDEPTHWISE / QFC / QTRANSPOSE_CONV): input, weights and output of one of the
 * two types, int32 bias, weights quantized as stock takes them (qweight_params), a fused
 * activation with a quantized range, and the stock rounding known for this op and type. */
static const char *read_qconv(fx_graph *g, fx_node *n, int tfl_act, int qkind) {
  const int tconv = qkind == FX_OP_QTRANSPOSE_CONV, xi = tconv ? 2 : 0, bi = tconv ? 3 : 2; /* TRANSPOSE_CONV: shape, w, x, bias */
  const fx_tensor *x = &g->tensors[n->in[xi]], *w = &g->tensors[n->in[1]], *y = &g->tensors[n->out[0]];
  const fx_tensor *b = n->n_in > bi && n->in[bi] >= 0 ? &g->tensors[n->in[bi]] : NULL;
  const char *e;
  if (qkind == FX_OP_QTRANSPOSE_CONV && x->dtype != FX_I8) return "uint8 TRANSPOSE_CONV is left to the stock kernel";
  if (w->dtype != x->dtype || y->dtype != x->dtype) return "quantized input with weights or output of another type";
  if (b && b->dtype != FX_I32) return "quantized layer with a bias that is not int32";
  if (qkind == FX_OP_QTRANSPOSE_CONV && b && b->quant.zero_point)
    return "int8 TRANSPOSE_CONV bias with a nonzero zero point (stock refuses it)";
  if ((e = need_const(g, n, 1, 0)) || (e = need_const(g, n, bi, 1))) return e;
  if (!x->quant.n || !w->quant.n || !y->quant.n) return "quantized layer with a tensor without quantization";
  if (x->quant.n > 1 || y->quant.n > 1) return "per-channel activations";
  const int axis = qkind == FX_OP_QDEPTHWISE ? 3 : 0;
  if (w->shape.rank < 2 || (qkind == FX_OP_QDEPTHWISE && w->shape.rank != 4)) return "unexpected weight rank";
  if ((e = qweight_params(x, w, y, axis))) return e;
  if (n->qout.rounding < 0) return "stock's rounding for this integer op unknown (no rounding table)";
  if ((qkind == FX_OP_QFC || x->dtype == FX_U8) && b && (e = bias_scale(x, w, b, y))) return e;
  n->kind = qkind;
  if ((e = q8_out(g, n, tfl_act))) return e;
  /* split8 (LiteRT's NEON Quantize loop after an int32 map): the last C % 8 channels */
  if ((qkind != FX_OP_QDEPTHWISE && qkind != FX_OP_QTRANSPOSE_CONV) || n->qout.tail_from) n->qout.tail_from = INT32_MAX;
  else n->qout.tail_from = w->shape.d[axis] - w->shape.d[axis] % 8;
  return fx_qlayer_check(g, n);
}

/* A hybrid CONV_2D / FULLY_CONNECTED on the int8 GEMM (the node becomes QCONV / QFC; qlayer.c):
 * float32 input and output, the int8 weights add_hybrid_weights checked, a float32 constant
 * bias or none. The fused activation is the FP32 layer's (n->act). */
static const char *read_hybrid(fx_graph *g, fx_node *n, int qkind) {
  const char *e;
  if ((e = need_f32(g, n, 1)) || (e = need_const(g, n, 1, 0)) || (e = need_const(g, n, 2, 1))) return e;
  if (n->n_in > 2 && n->in[2] >= 0 && g->tensors[n->in[2]].dtype != FX_F32)
    return "hybrid layer with a bias that is not float32";
  n->kind = qkind;
  return NULL;
}

static int is_hybrid_node(const fx_graph *g, const fx_node *n) {
  return g->tensors[n->in[0]].dtype == FX_F32 && g->tensors[n->in[1]].dtype == FX_I8;
}

/* CONV_2D's and DEPTHWISE_CONV_2D's window (padding, strides, dilations) and fused activation. */
static const char *read_window(fx_node *n, int padding, int sw, int sh, int dw, int dh, int act) {
  conv_params(n, padding, sw, sh, dw, dh);
  const char *e = check_window(n, padding);
  return e ? e : map_act(act, &n->act);
}

static const char *read_conv(fx_graph *g, fx_node *n, const void *bd) {
  const TfLiteConvParams *p = bd;
  const char *e;
  if ((e = read_window(n, p->padding, p->stride_width, p->stride_height, p->dilation_width_factor,
                       p->dilation_height_factor, p->activation)))
    return e;
  if (is_q8(g->tensors[n->in[0]].dtype)) return read_qconv(g, n, p->activation, FX_OP_QCONV);
  return is_hybrid_node(g, n) ? read_hybrid(g, n, FX_OP_QCONV) : conv_tensors(g, n);
}

static const char *read_depthwise(fx_graph *g, fx_node *n, const void *bd) {
  const TfLiteDepthwiseConvParams *p = bd;
  const char *e;
  if ((e = read_window(n, p->padding, p->stride_width, p->stride_height, p->dilation_width_factor,
                       p->dilation_height_factor, p->activation)))
    return e;
  const int q8 = is_q8(g->tensors[n->in[0]].dtype);
  if (!q8 && (e = conv_tensors(g, n))) return e;
  /* The multiplier follows from the shapes (newer converters leave the param 0). */
  const fx_shape *x = &g->tensors[n->in[0]].shape, *f = &g->tensors[n->in[1]].shape;
  if (x->rank != 4 || f->rank != 4 || x->d[3] == 0 || f->d[3] % x->d[3]) return "filter depth is not a multiple of input depth";
  n->p.conv.mult = f->d[3] / x->d[3];
  return q8 ? read_qconv(g, n, p->activation, FX_OP_QDEPTHWISE) : NULL;
}

static const char *read_fc(fx_graph *g, fx_node *n, const void *bd) {
  const TfLiteFullyConnectedParams *p = bd;
  const char *e;
  if (p->weights_format != kTfLiteFullyConnectedWeightsFormatDefault) return "shuffled weights format";
  n->p.fc.keep_num_dims = p->keep_num_dims;
  n->p.fc.asym_inputs = p->asymmetric_quantize_inputs;
  if (n->n_out != 1) return "multiple outputs";
  if (p->activation == kTfLiteActTanh) return "fused TANH (stock float FULLY_CONNECTED rejects it too)";
  if ((e = map_act(p->activation, &n->act))) return e;
  if (is_q8(g->tensors[n->in[0]].dtype)) return read_qconv(g, n, p->activation, FX_OP_QFC);
  return is_hybrid_node(g, n) ? read_hybrid(g, n, FX_OP_QFC) : conv_tensors(g, n);
}

static const char *read_transpose_conv(fx_graph *g, fx_node *n, const void *bd) {
  const TfLiteTransposeConvParams *p = bd;
  const char *e;
  if (n->n_in < 3) return "missing inputs";
  conv_params(n, p->padding, p->stride_width, p->stride_height, 1, 1);
  if ((e = check_window(n, p->padding)) || (e = map_act(p->activation, &n->act))) return e;
  /* int8: stock applies the fused activation (op version 4) on both runtimes, as for float */
  if (is_q8(g->tensors[n->in[2]].dtype))
    return (e = need_const(g, n, 0, 0)) ? e : read_qconv(g, n, p->activation, FX_OP_QTRANSPOSE_CONV);
  if ((e = need_f32(g, n, 0xE)) || (e = need_const(g, n, 0, 0)) || (e = need_const(g, n, 1, 0))) return e;
  return n->n_in > 3 ? need_const(g, n, 3, 1) : NULL;
}

/* int8 / uint8 ADD, SUB, MUL, PRELU, MEAN, SUM, SOFTMAX, LOGISTIC, TANH, HARD_SWISH, LEAKY_RELU,
 * GELU on the qs8-ops kernels (ir/qop.h; the node becomes QELEM): the data inputs and the output
 * of one type, one scale and zero point each. ADD, MUL and MEAN compute differently on
 * tflite-runtime and LiteRT (kernels/qs8-ops/NOTES.md): their "_rounding" entry names stock's
 * arithmetic (FLEX_STOCK_*); PRELU's only matters beyond 4-D (only LiteRT runs those).
 * Parameters the stock kernel refuses, or that these kernels do not reproduce, are found when
 * the node is prepared for its shapes (fx_infer_qelem) and leave the node to stock. */
static const char *read_qelem(fx_graph *g, fx_node *n, int kind, int n_data, int tfl_act, float param) {
  const fx_tensor *y = &g->tensors[n->out[0]];
  int act;
  const char *e;
  for (int i = 0; i < n_data; i++) {
    const fx_tensor *x = &g->tensors[n->in[i]];
    if (x->dtype != y->dtype) return "integer op with inputs of another type than its output";
    if (x->quant.n != 1) return "integer op input without one scale and zero point";
  }
  if (y->quant.n != 1) return "integer op output without one scale and zero point";
  if ((kind == FX_QOP_ADD || kind == FX_QOP_MUL || kind == FX_QOP_MEAN) && n->qout.rounding < 0)
    return "stock's arithmetic for this integer op unknown (no rounding table)";
  if ((e = map_act(tfl_act, &act))) return e;
  return fx_qop_make(n, kind, n->qout.rounding, act, param, 1);
}

/* Every input and the output of one integer type (int32 or int64). */
static const char *same_int(fx_graph *g, const fx_node *n) {
  int dt = g->tensors[n->out[0]].dtype;
  if (dt != FX_I32 && dt != FX_I64) return "non-float32 input";
  for (int i = 0; i < n->n_in; i++)
    if (g->tensors[n->in[i]].dtype != dt) return "input and output types differ";
  return NULL;
}

/* ADD / SUB / MUL / DIV: their params all start with the activation (and may be absent).
 * ADD, SUB and MUL also run on int32 / int64 (ids, positions, shapes), without activation, and
 * on int8 / uint8 (read_qelem). */
static const char *read_arith(fx_graph *g, fx_node *n, const void *bd) {
  const char *e;
  const int act = bd ? ((const TfLiteMulParams *)bd)->activation : kTfLiteActNone;
  if (is_q8(g->tensors[n->in[0]].dtype)) {
    const int op = n->p.bin.op;
    if (op != FX_B_ADD && op != FX_B_SUB && op != FX_B_MUL) return "integer DIV is left to the stock kernel";
    return read_qelem(g, n, op == FX_B_ADD ? FX_QOP_ADD : op == FX_B_SUB ? FX_QOP_SUB : FX_QOP_MUL, 2, act, 0.0f);
  }
  if ((e = map_act(act, &n->act))) return e;
  if (g->tensors[n->out[0]].dtype != FX_F32 && n->p.bin.op != FX_B_DIV) {
    if ((e = same_int(g, n))) return e;
    return n->act == FLEX_ACT_NONE ? NULL : "fused activation on integers";
  }
  return need_f32(g, n, 3);
}

/* Comparisons: two operands of one numeric type (bool for (NOT_)EQUAL), a bool result. */
static const char *read_compare(fx_graph *g, fx_node *n, const void *bd) {
  (void)bd;
  int a = g->tensors[n->in[0]].dtype, b = g->tensors[n->in[1]].dtype;
  int eq = n->p.cmp.op == FX_CMP_EQUAL || n->p.cmp.op == FX_CMP_NOT_EQUAL;
  if (a != b || !(a == FX_F32 || a == FX_I32 || a == FX_I64 || (eq && a == FX_BOOL))) return "unsupported operand types";
  return g->tensors[n->out[0]].dtype == FX_BOOL ? NULL : "comparison output must be bool";
}

static const char *read_logical(fx_graph *g, fx_node *n, const void *bd) {
  (void)bd;
  for (int i = 0; i < n->n_in; i++)
    if (g->tensors[n->in[i]].dtype != FX_BOOL) return "logical ops take bool";
  return g->tensors[n->out[0]].dtype == FX_BOOL ? NULL : "logical output must be bool";
}

/* SELECT / SELECT_V2: a bool condition picks x or y, of one 4- or 8-byte type. */
static const char *read_select(fx_graph *g, fx_node *n, const void *bd) {
  (void)bd;
  if (n->n_in != 3) return "needs condition, x and y";
  if (g->tensors[n->in[0]].dtype != FX_BOOL) return "condition must be bool";
  int dt = g->tensors[n->out[0]].dtype;
  if (dt != FX_F32 && dt != FX_I32 && dt != FX_I64) return "unsupported tensor type";
  if (g->tensors[n->in[1]].dtype != dt || g->tensors[n->in[2]].dtype != dt) return "input and output types differ";
  return NULL;
}

static const char *read_f32_binary(fx_graph *g, fx_node *n, const void *bd) {
  (void)bd;
  return need_f32(g, n, 3);
}

static const char *read_f32_unary(fx_graph *g, fx_node *n, const void *bd) {
  (void)bd;
  if (is_q8(g->tensors[n->in[0]].dtype)) {
    const int k = n->p.un.kind;
    if (k != FX_U_LOGISTIC && k != FX_U_TANH && k != FX_U_HARD_SWISH) return "unsupported integer op";
    return read_qelem(g, n, k == FX_U_LOGISTIC ? FX_QOP_LOGISTIC : k == FX_U_TANH ? FX_QOP_TANH : FX_QOP_HARD_SWISH,
                      1, kTfLiteActNone, 0.0f);
  }
  return need_f32(g, n, 1);
}

/* RELU, RELU6, RELU_N1_TO_1: on quantized data a clamp when input and output share their
 * quantization (stock's requantization by 1.0 is then exact), as TFLite's QuantizedReluX. */
static const char *read_relu(fx_graph *g, fx_node *n, const void *bd) {
  (void)bd;
  const char *e;
  if (!is_q8(g->tensors[n->in[0]].dtype)) return need_f32(g, n, 1);
  if ((e = same_dtype(g, n, 1))) return e;
  if (!same_scale(g, n->in[0], n->out[0])) { /* a requantizing RELU: QuantizedReluX as a table */
    const int k = n->p.un.kind;
    return read_qelem(g, n, FX_QOP_RELU, 1, kTfLiteActNone,
                      (float)(k == FX_U_RELU ? FX_QS8_RELU : k == FX_U_RELU6 ? FX_QS8_RELU6 : FX_QS8_RELU_N1_TO_1));
  }
  const int act = n->p.un.kind == FX_U_RELU ? kTfLiteActRelu : n->p.un.kind == FX_U_RELU6 ? kTfLiteActRelu6
                                                                                        : kTfLiteActReluN1To1;
  return q8_out(g, n, act);
}

static const char *read_leaky_relu(fx_graph *g, fx_node *n, const void *bd) {
  n->p.un.alpha = bd ? ((const TfLiteLeakyReluParams *)bd)->alpha : 0.2f;
  if (is_q8(g->tensors[n->in[0]].dtype)) return read_qelem(g, n, FX_QOP_LEAKY_RELU, 1, kTfLiteActNone, n->p.un.alpha);
  return need_f32(g, n, 1);
}

/* PRELU: on int8 / uint8 (read_qelem) x and alpha of the output's type (stock reads alpha as
 * the input's type, whatever it is), each with one scale and zero point. */
static const char *read_prelu(fx_graph *g, fx_node *n, const void *bd) {
  (void)bd;
  if (is_q8(g->tensors[n->in[0]].dtype)) return read_qelem(g, n, FX_QOP_PRELU, 2, kTfLiteActNone, 0.0f);
  return need_f32(g, n, 3);
}

/* GELU: on int8 / uint8 stock's 256-entry table of the exact (erfc) or tanh form. */
static const char *read_gelu(fx_graph *g, fx_node *n, const void *bd) {
  const int approximate = bd && ((const TfLiteGeluParams *)bd)->approximate;
  if (approximate) n->p.un.kind = FX_U_GELU_TANH;
  if (is_q8(g->tensors[n->in[0]].dtype)) return read_qelem(g, n, FX_QOP_GELU, 1, kTfLiteActNone, (float)approximate);
  return need_f32(g, n, 1);
}

static const char *read_pool(fx_graph *g, fx_node *n, const void *bd) {
  const TfLitePoolParams *p = bd;
  const char *e;
  conv_params(n, p->padding, p->stride_width, p->stride_height, 1, 1);
  n->p.conv.kh = p->filter_height;
  n->p.conv.kw = p->filter_width;
  if (p->filter_height < 1 || p->filter_width < 1) return "filter size must be >= 1";
  if ((e = check_window(n, p->padding)) || (e = map_act(p->activation, &n->act))) return e;
  /* max (or the average: kernels/qs8-ops/pool.c), then the activation's clamp; stock only
   * DCHECKs that input and output share their quantization, and computes as if they did */
  if (is_q8(g->tensors[n->in[0]].dtype)) return (e = same_dtype(g, n, 1)) ? e : q8_out(g, n, p->activation);
  return need_f32(g, n, 1);
}

static const char *read_mean(fx_graph *g, fx_node *n, const void *bd) {
  const char *e;
  n->p.mean.keep_dims = bd ? ((const TfLiteReducerParams *)bd)->keep_dims : 0;
  if (is_q8(g->tensors[n->in[0]].dtype)) {
    return (e = need_const(g, n, 1, 0)) ? e : read_qelem(g, n, FX_QOP_MEAN, 1, kTfLiteActNone, 0.0f);
  }
  return (e = need_f32(g, n, 1)) ? e : need_const(g, n, 1, 0);
}

static const char *read_softmax(fx_graph *g, fx_node *n, const void *bd) {
  n->p.softmax.beta = ((const TfLiteSoftmaxParams *)bd)->beta;
  if (is_q8(g->tensors[n->in[0]].dtype)) return read_qelem(g, n, FX_QOP_SOFTMAX, 1, kTfLiteActNone, n->p.softmax.beta);
  return need_f32(g, n, 1);
}

/* QUANTIZE (float -> int8/uint8, or int8/uint8 -> int8/uint8 with equal scales: a zero-point
 * move) and DEQUANTIZE of activations (constants are folded before this, fold.c). Per-tensor
 * quantization only; float -> int needs the stock rule known (quant_rounding.detect()'s
 * QUANTIZE probe: its two rules are exec.c's quantize_one). */
static const char *read_quantize(fx_graph *g, fx_node *n, const void *bd) {
  (void)bd;
  const fx_tensor *x = &g->tensors[n->in[0]], *y = &g->tensors[n->out[0]];
  const int xq = is_q8(x->dtype), yq = is_q8(y->dtype);
  if ((xq && x->quant.n != 1) || (yq && y->quant.n != 1)) return "quantize needs one scale and zero point per tensor";
  if (xq && y->dtype == FX_F32) {
    if (n->tfl_builtin != kTfLiteBuiltinDequantize) return "unexpected types";
    return n->qout.rounding < 0 ? "stock's dequantize arithmetic unknown (no rounding table)" : NULL;
  }
  if (!yq || (!xq && x->dtype != FX_F32)) return "unsupported quantize types";
  if (xq && x->quant.scale != y->quant.scale) { /* a rescale: kernels/qs8-ops as a table */
    /* LiteRT's NEON loop rounds ties up on whole 16-blocks: the QUANTIZE rule's 8-split is
     * that build's trace (quant_rounding.stock_arithmetic) */
    if (n->qout.rounding < 0) return "stock's arithmetic for a requantizing QUANTIZE unknown (no rounding table)";
    return fx_qop_make(n, FX_QOP_REQUANTIZE, n->qout.tail_from == 0 ? FLEX_STOCK_NEON : FLEX_STOCK_PORTABLE,
                       FLEX_ACT_NONE, 0.0f, 1);
  }
  if (!xq && n->qout.rounding < 0) return "stock's float quantize rounding unknown (no rounding table)";
  return q8_out(g, n, kTfLiteActNone);
}

/* PAD / PADV2. Quantized data (uint8, or int8 with quantization) pads with the output zero point
 * or a value quantized as the output; unquantized int8 with 0 or the value (stock's EvalInt). */
static const char *read_pad(fx_graph *g, fx_node *n, const void *bd) {
  (void)bd;
  const char *e;
  if ((e = same_dtype(g, n, 1)) || (e = need_const(g, n, 1, 0))) return e;
  const fx_tensor *y = &g->tensors[n->out[0]];
  const int quantized = y->dtype == FX_U8 || (y->dtype == FX_I8 && g->tensors[n->in[0]].quant.n > 0);
  n->p.pad.has_fill = 0;
  if (n->n_in > 2 && n->in[2] >= 0) {
    const fx_tensor *v = &g->tensors[n->in[2]];
    if (v->dtype != y->dtype || fx_shape_numel(&v->shape) != 1) return "pad value must be a scalar of the data type";
    if (quantized && !same_scale(g, n->in[2], n->out[0])) return "pad value quantized differently from the output";
  } else if (is_q8(y->dtype)) {
    const int32_t zp = quantized ? y->quant.zero_point : 0, lo = y->dtype == FX_U8 ? 0 : -128;
    if (zp < lo || zp > lo + 255) return "output zero point outside its type";
    n->p.pad.has_fill = 1;
    n->p.pad.fill = zp;
  }
  return NULL;
}

static const char *read_concat(fx_graph *g, fx_node *n, const void *bd) {
  const TfLiteConcatenationParams *p = bd;
  const char *e;
  n->p.concat.axis = p->axis;
  if (n->n_in > 64) return "more than 64 inputs";
  if ((e = map_act(p->activation, &n->act))) return e;
  if (n->act != FLEX_ACT_NONE && g->tensors[n->out[0]].dtype != FX_F32) return "activation on non-float data";
  return (e = same_dtype(g, n, n->n_in)) ? e : same_quant(g, n, n->n_in);
}

static const char *read_pack(fx_graph *g, fx_node *n, const void *bd) {
  const char *e;
  n->p.concat.axis = ((const TfLitePackParams *)bd)->axis;
  if (n->n_in > 64) return "more than 64 inputs";
  return (e = same_dtype(g, n, n->n_in)) ? e : same_quant(g, n, n->n_in);
}

static const char *read_reshape(fx_graph *g, fx_node *n, const void *bd) {
  const TfLiteReshapeParams *p = bd;
  n->p.reshape.n_dims = 0;
  if (fx_reshape_shape_input(g, n)) {
    if (need_const(g, n, 1, 0)) return "new shape is not known at load";
  } else { /* the options; [0] is an old spelling of a scalar there (stock's reshape.cc) */
    if (!p || p->num_dimensions < 0 || p->num_dimensions > FX_MAX_RANK) return "no usable new shape";
    n->p.reshape.n_dims = p->num_dimensions == 1 && p->shape[0] == 0 ? 0 : p->num_dimensions;
    memcpy(n->p.reshape.dims, p->shape, sizeof(int) * (size_t)n->p.reshape.n_dims);
  }
  return same_dtype(g, n, 1);
}

static const char *read_squeeze(fx_graph *g, fx_node *n, const void *bd) {
  const TfLiteSqueezeParams *p = bd;
  const fx_shape *x = &g->tensors[n->in[0]].shape;
  for (int i = 0; i < p->num_squeeze_dims; i++) {
    int d = p->squeeze_dims[i] < 0 ? p->squeeze_dims[i] + x->rank : p->squeeze_dims[i];
    if (d < 0 || d >= x->rank) return "squeeze dim out of range";
    n->p.reshape.squeeze_mask |= 1u << d;
  }
  return same_dtype(g, n, 1);
}

/* TRANSPOSE and EXPAND_DIMS (a RESHAPE): elements of any layout type move, as input 1 (the
 * permutation, the axis), a constant, says. */
static const char *read_moved_by_const(fx_graph *g, fx_node *n, const void *bd) {
  (void)bd;
  const char *e;
  return (e = same_dtype(g, n, 1)) ? e : need_const(g, n, 1, 0);
}

static const char *read_strided_slice(fx_graph *g, fx_node *n, const void *bd) {
  const TfLiteStridedSliceParams *p = bd;
  const char *e;
  n->p.ss.begin_mask = p->begin_mask;
  n->p.ss.end_mask = p->end_mask;
  n->p.ss.ellipsis_mask = p->ellipsis_mask;
  n->p.ss.new_axis_mask = p->new_axis_mask;
  n->p.ss.shrink_mask = p->shrink_axis_mask;
  n->p.ss.offset = p->offset;
  if (n->n_in != 4) return "needs begin, end and strides";
  if ((e = same_dtype(g, n, 1))) return e;
  for (int i = 1; i < 4; i++)
    if ((e = need_const(g, n, i, 0))) return e;
  return NULL;
}

/* RESIZE_BILINEAR / RESIZE_NEAREST_NEIGHBOR: their params have the same layout. Bilinear also
 * on int8 / uint8 (stock's integer arithmetic, kernels/ops/resize.c), which stock computes on
 * the stored values whatever the tensors' quantization says (it checks none), as here. */
static const char *read_resize(fx_graph *g, fx_node *n, const void *bd) {
  const TfLiteResizeBilinearParams *p = bd;
  const char *e;
  n->p.resize.align_corners = p->align_corners;
  n->p.resize.half_pixel = p->half_pixel_centers;
  const int dt = g->tensors[n->out[0]].dtype;
  if (n->kind == FX_OP_RESIZE_NEAREST) {
    /* moves elements, of the types stock's kernel takes (it refuses int32 at invoke) */
    e = dt == FX_F32 || dt == FX_U8 || dt == FX_I8 || dt == FX_I16 ? same_dtype(g, n, 1) : "non-float32 output";
  } else {
    e = is_q8(dt) ? same_dtype(g, n, 1) : need_f32(g, n, 1);
  }
  return e ? e : need_const(g, n, 1, 0);
}

static const char *read_block(fx_graph *g, fx_node *n, const void *bd) {
  n->p.block.block = ((const TfLiteDepthToSpaceParams *)bd)->block_size;
  return same_dtype(g, n, 1);
}

/* A gather from a tensor of no element stays with stock: stock's index checks there differ
 * between the runtimes (tflite-runtime 2.14 checks flat byte positions, so it runs an index past
 * the axis that copies nothing; LiteRT refuses it), and only stock itself agrees with both. */
static const char *gathers_from_nothing(const fx_tensor *from) {
  return fx_shape_numel(&from->shape) ? NULL : "gathering from an empty tensor (the runtimes check indices apart)";
}

static const char *read_gather(fx_graph *g, fx_node *n, const void *bd) {
  const TfLiteGatherParams *p = bd;
  n->p.gather.axis = p->axis;
  n->p.gather.batch_dims = p->batch_dims;
  int it = g->tensors[n->in[1]].dtype;
  if (it != FX_I32 && it != FX_I64) return "indices must be int32 or int64";
  const char *why = gathers_from_nothing(&g->tensors[n->in[0]]);
  return why ? why : same_dtype(g, n, 1);
}

/* int8 BATCH_MATMUL (the node becomes QBATCH_MATMUL): int8 operands (both run-time, or B
 * constant) and output, one scale and zero point each (stock reads the per-tensor ones),
 * requantized by one multiplier from the float32 product of the operand scales
 * (GetQuantizedConvolutionMultipler) with the stock rounding known for the op; no activation. */
static const char *read_qbatch_matmul(fx_graph *g, fx_node *n) {
  const fx_tensor *a = &g->tensors[n->in[0]], *b = &g->tensors[n->in[1]], *y = &g->tensors[n->out[0]];
  if (a->dtype != FX_I8) return "uint8 BATCH_MATMUL (the stock kernel refuses it)";
  if (b->dtype != FX_I8) return "int8 BATCH_MATMUL with a right-hand side of another type";
  if (y->dtype != FX_I8) return "int8 BATCH_MATMUL to a non-int8 output (left to the stock kernel)";
  if (!a->quant.n || !b->quant.n || !y->quant.n) return "int8 tensor without quantization";
  if (a->quant.n > 1 || b->quant.n > 1 || y->quant.n > 1)
    return "int8 BATCH_MATMUL with per-channel scales (stock applies one per tensor)";
  if (n->qout.rounding < 0) return "stock's rounding for this int8 op unknown (no rounding table)";
  /* tflite-runtime 2.14 folds A's last batch dim into its rows when B's is 1, which with adj_x
   * (and that dim of A above 1) mixes A's depth into its rows (LiteRT 2.3 computes it): such a
   * node stays with stock */
  if (n->p.bmm.adj_x && a->shape.rank > 2 && b->shape.rank > 2 && b->shape.d[b->shape.rank - 3] == 1 &&
      a->shape.d[a->shape.rank - 3] != 1)
    return "int8 BATCH_MATMUL with adj_x, A batched and a right-hand batch dim of 1 before the matrix "
           "(tflite-runtime 2.14's stock kernel folds it into the rows)";
  const double real = (double)(a->quant.scale * b->quant.scale) / (double)y->quant.scale;
  if (!(real >= 0)) return "negative or undefined requantization multiplier";
  fx_quantize_multiplier(real, n->qout.rounding == FLEX_RQ_SINGLE, &n->p.bmm.qm, &n->p.bmm.qshift);
  if (n->p.bmm.qshift > 30) return "a requantization multiplier of 2^30 or more (left to the stock kernel)";
  n->kind = FX_OP_QBATCH_MATMUL;
  const char *e = q8_out(g, n, kTfLiteActNone);
  if (!n->qout.tail_from) return e; /* split8: resolved per run, from B's columns (ir/exec.c) */
  n->qout.tail_from = INT32_MAX;
  return e;
}

static const char *read_batch_matmul(fx_graph *g, fx_node *n, const void *bd) {
  const TfLiteBatchMatMulParams *p = bd;
  n->p.bmm.adj_x = p ? p->adj_x : 0;
  n->p.bmm.adj_y = p ? p->adj_y : 0;
  return is_q8(g->tensors[n->in[0]].dtype) ? read_qbatch_matmul(g, n) : need_f32(g, n, 3);
}

static const char *read_shape(fx_graph *g, fx_node *n, const void *bd) {
  if (bd) n->p.shape.out_type = ((const TfLiteShapeParams *)bd)->out_type;
  int dt = g->tensors[n->out[0]].dtype;
  if (dt != FX_I32 && dt != FX_I64) return "shape output must be int32 or int64";
  /* stock retypes the output to out_type at prepare */
  if (bd && n->p.shape.out_type != (dt == FX_I32 ? kTfLiteInt32 : kTfLiteInt64)) return "out_type differs from the output's type";
  return NULL;
}

static const char *read_cast(fx_graph *g, fx_node *n, const void *bd) {
  (void)bd;
  int a = g->tensors[n->in[0]].dtype, b = g->tensors[n->out[0]].dtype;
  int ok = (a == FX_F32 || a == FX_I32 || a == FX_I64) && (b == FX_F32 || b == FX_I32 || b == FX_I64);
  return ok ? NULL : "cast between unsupported types";
}

/* SUM, REDUCE_MAX / MIN / PROD (the node becomes REDUCE): float32, int32 or int64 data, a
 * constant int32 axis list (any order, repeats, negative axes); int8 / uint8 SUM becomes QELEM
 * (read_qelem), other quantized reductions stay with stock. */
/* Reductions and CUMSUM: float32, int32 or int64 data of one type in and out, and input 1 (the
 * axes) a constant int32 tensor. */
static const char *wide_data_const_axis(fx_graph *g, const fx_node *n) {
  const int dt = g->tensors[n->out[0]].dtype;
  if (dt != FX_F32 && dt != FX_I32 && dt != FX_I64) return "data must be float32, int32 or int64";
  if (g->tensors[n->in[0]].dtype != dt) return "input and output types differ";
  if (g->tensors[n->in[1]].dtype != FX_I32) return "axis must be int32";
  return need_const(g, n, 1, 0);
}

static const char *read_reduce(fx_graph *g, fx_node *n, const void *bd) {
  const char *e;
  n->p.mean.keep_dims = bd ? ((const TfLiteReducerParams *)bd)->keep_dims : 0;
  if (is_q8(g->tensors[n->in[0]].dtype) && n->p.mean.op == FX_RED_SUM) { /* SUM on the qs8-ops kernels */
    if (g->tensors[n->in[1]].dtype != FX_I32) return "axis must be int32";
    return (e = need_const(g, n, 1, 0)) ? e : read_qelem(g, n, FX_QOP_SUM, 1, kTfLiteActNone, 0.0f);
  }
  return wide_data_const_axis(g, n);
}

static const char *read_log_softmax(fx_graph *g, fx_node *n, const void *bd) {
  (void)bd;
  return need_f32(g, n, 1);
}

/* SLICE (a STRIDED_SLICE without masks): constant begin and size of one int type. */
static const char *read_slice(fx_graph *g, fx_node *n, const void *bd) {
  (void)bd;
  const char *e;
  memset(&n->p.ss, 0, sizeof n->p.ss);
  n->p.ss.slice = 1;
  if ((e = same_dtype(g, n, 1)) || (e = need_const(g, n, 1, 0)) || (e = need_const(g, n, 2, 0))) return e;
  return g->tensors[n->in[1]].dtype == g->tensors[n->in[2]].dtype ? NULL : "begin and size of different types";
}

/* BROADCAST_TO: any layout type (quantized bytes move unchanged), a constant shape. */
static const char *read_broadcast_to(fx_graph *g, fx_node *n, const void *bd) {
  (void)bd;
  const char *e;
  return (e = same_dtype(g, n, 1)) ? e : need_const(g, n, 1, 0);
}

/* GATHER_ND: params of any layout type, run-time int32 / int64 index tuples. */
static const char *read_gather_nd(fx_graph *g, fx_node *n, const void *bd) {
  (void)bd;
  const int it = g->tensors[n->in[1]].dtype;
  if (it != FX_I32 && it != FX_I64) return "indices must be int32 or int64";
  const char *why = gathers_from_nothing(&g->tensors[n->in[0]]);
  return why ? why : same_dtype(g, n, 1);
}

/* EMBEDDING_LOOKUP: 1-D int32 ids into a float32 table of rank >= 2 (hybrid int8 tables stay
 * with stock): a GATHER along axis 0 with the operands swapped. */
static const char *read_embedding_lookup(fx_graph *g, fx_node *n, const void *bd) {
  (void)bd;
  const fx_tensor *ids = &g->tensors[n->in[0]], *table = &g->tensors[n->in[1]];
  if (ids->dtype != FX_I32 || ids->shape.rank != 1) return "ids must be 1-D int32";
  if (table->shape.rank < 2) return "table rank below 2";
  if (table->dtype != FX_F32 || g->tensors[n->out[0]].dtype != FX_F32) return "non-float32 table (hybrid lookups stay with stock)";
  const char *why = gathers_from_nothing(table);
  if (why) return why;
  const int id = n->in[0];
  n->in[0] = n->in[1];
  n->in[1] = id;
  n->p.gather.axis = 0;
  n->p.gather.batch_dims = 0;
  return NULL;
}

/* FILL: a constant int32 / int64 dims list and a scalar value (run-time or constant) of the
 * output's type: float32, int32, int64 or bool. */
static const char *read_fill(fx_graph *g, fx_node *n, const void *bd) {
  (void)bd;
  const int dt = g->tensors[n->out[0]].dtype, dims = g->tensors[n->in[0]].dtype;
  if (dt != FX_F32 && dt != FX_I32 && dt != FX_I64 && dt != FX_BOOL) return "unsupported tensor type";
  if (g->tensors[n->in[1]].dtype != dt) return "value and output types differ";
  if (dims != FX_I32 && dims != FX_I64) return "dims must be int32 or int64";
  return need_const(g, n, 0, 0);
}

/* RANGE: constant start, limit and delta of the output's type (its length is their result). */
static const char *read_range(fx_graph *g, fx_node *n, const void *bd) {
  (void)bd;
  const int dt = g->tensors[n->out[0]].dtype;
  if (dt != FX_F32 && dt != FX_I32 && dt != FX_I64) return "unsupported tensor type";
  for (int i = 0; i < 3; i++)
    if (g->tensors[n->in[i]].dtype != dt) return "input and output types differ";
  return NULL;
}

/* CUMSUM: float32, int32 or int64 data, a constant int32 axis. */
static const char *read_cumsum(fx_graph *g, fx_node *n, const void *bd) {
  const TfLiteCumsumParams *p = bd;
  n->p.cumsum.exclusive = p ? p->exclusive : 0;
  n->p.cumsum.reverse = p ? p->reverse : 0;
  return wide_data_const_axis(g, n);
}

/* SPLIT (axis, x) / SPLIT_V (x, size_splits, axis): each output is its own SPLIT_PART node
 * (fx_translate_node), x moved to in[0]; any layout type, constant axis and sizes. */
static const char *read_split(fx_graph *g, fx_node *n, const void *bd) {
  const char *e;
  const int num = ((const TfLiteSplitParams *)bd)->num_splits; /* SPLIT_V's params: the same layout */
  if (num != n->p.split.parts) return "num_splits is not the number of outputs";
  if (n->n_in == 2) { /* SPLIT: x second */
    const int axis = n->in[0];
    n->in[0] = n->in[1];
    n->in[1] = axis;
  } else if ((e = need_const(g, n, 1, 0))) {
    return e;
  }
  if (g->tensors[n->in[n->n_in - 1]].dtype != FX_I32) return "axis must be int32";
  return (e = same_dtype(g, n, 1)) ? e : need_const(g, n, n->n_in - 1, 0);
}

/* ---- the builtins the delegate runs: one row each ----
 * builtin -> IR kind (ir/ops.inc) and its sub-kind (the binary op, unary kind, pool max, concat
 * pack, reshape squeeze), param reader (params and dtype rule), the inputs it needs, those a
 * model may leave out (tensor index -1: biases, PADV2's value, RESHAPE's shape; any other
 * absent input is malformed, as for the stock kernels), whether builtin_data must be set, and
 * the input counts the stock kernel's Prepare accepts (stock.c makes its other checks). */
#define FX_ANY_INPUTS INT32_MAX
typedef struct {
  int builtin, kind, sub;
  reader_fn read;
  int min_inputs;
  unsigned optional; /* bit i: input i may be absent */
  int needs_params;
  int stock_min_inputs, stock_max_inputs; /* 0, FX_ANY_INPUTS: stock checks nothing */
} builtin_op;

static const builtin_op k_builtins[] = {
    {kTfLiteBuiltinConv2d, FX_OP_CONV, 0, read_conv, 2, 1u << 2, 1, 3, 3},
    {kTfLiteBuiltinDepthwiseConv2d, FX_OP_DEPTHWISE, 0, read_depthwise, 2, 1u << 2, 1, 2, 3},
    {kTfLiteBuiltinFullyConnected, FX_OP_FC, 0, read_fc, 2, 1u << 2, 1, 2, 3},
    {kTfLiteBuiltinTransposeConv, FX_OP_TRANSPOSE_CONV, 0, read_transpose_conv, 1, 1u << 3, 1, 3, 4},
    {kTfLiteBuiltinAdd, FX_OP_BINARY, FX_B_ADD, read_arith, 2, 0, 0, 2, 2},
    {kTfLiteBuiltinSub, FX_OP_BINARY, FX_B_SUB, read_arith, 2, 0, 0, 2, 2},
    {kTfLiteBuiltinMul, FX_OP_BINARY, FX_B_MUL, read_arith, 2, 0, 0, 2, 2},
    {kTfLiteBuiltinDiv, FX_OP_BINARY, FX_B_DIV, read_arith, 2, 0, 0, 2, 2},
    {kTfLiteBuiltinMaximum, FX_OP_BINARY, FX_B_MAX, read_f32_binary, 2, 0, 0, 2, 2},
    {kTfLiteBuiltinMinimum, FX_OP_BINARY, FX_B_MIN, read_f32_binary, 2, 0, 0, 2, 2},
    {kTfLiteBuiltinPrelu, FX_OP_BINARY, FX_B_PRELU, read_prelu, 2, 0, 0, 2, 2},
    {kTfLiteBuiltinSquaredDifference, FX_OP_BINARY, FX_B_SQDIFF, read_f32_binary, 2, 0, 0, 2, 2},
    {kTfLiteBuiltinPow, FX_OP_BINARY, FX_B_POW, read_f32_binary, 2, 0, 0, 2, 2},
    {kTfLiteBuiltinRelu, FX_OP_UNARY, FX_U_RELU, read_relu, 1, 0, 0, 1, 1},
    {kTfLiteBuiltinRelu6, FX_OP_UNARY, FX_U_RELU6, read_relu, 1, 0, 0, 1, 1},
    {kTfLiteBuiltinReluN1To1, FX_OP_UNARY, FX_U_RELU_N1_TO_1, read_relu, 1, 0, 0, 1, 1},
    {kTfLiteBuiltinLogistic, FX_OP_UNARY, FX_U_LOGISTIC, read_f32_unary, 1, 0, 0, 1, 1},
    {kTfLiteBuiltinTanh, FX_OP_UNARY, FX_U_TANH, read_f32_unary, 1, 0, 0, 1, 1},
    {kTfLiteBuiltinHardSwish, FX_OP_UNARY, FX_U_HARD_SWISH, read_f32_unary, 1, 0, 0, 1, 1},
    {kTfLiteBuiltinLeakyRelu, FX_OP_UNARY, FX_U_LEAKY_RELU, read_leaky_relu, 1, 0, 0, 1, 1},
    {kTfLiteBuiltinNeg, FX_OP_UNARY, FX_U_NEG, read_f32_unary, 1, 0, 0, 1, 1},
    {kTfLiteBuiltinAbs, FX_OP_UNARY, FX_U_ABS, read_f32_unary, 1, 0, 0, 1, 1},
    {kTfLiteBuiltinSquare, FX_OP_UNARY, FX_U_SQUARE, read_f32_unary, 1, 0, 0, 1, 1},
    {kTfLiteBuiltinSqrt, FX_OP_UNARY, FX_U_SQRT, read_f32_unary, 1, 0, 0, 1, 1},
    {kTfLiteBuiltinRsqrt, FX_OP_UNARY, FX_U_RSQRT, read_f32_unary, 1, 0, 0, 1, 1},
    {kTfLiteBuiltinExp, FX_OP_UNARY, FX_U_EXP, read_f32_unary, 1, 0, 0, 1, 1},
    {kTfLiteBuiltinLog, FX_OP_UNARY, FX_U_LOG, read_f32_unary, 1, 0, 0, 1, 1},
    {kTfLiteBuiltinGelu, FX_OP_UNARY, FX_U_GELU, read_gelu, 1, 0, 0, 1, 1},
    {kTfLiteBuiltinMaxPool2d, FX_OP_POOL, 1, read_pool, 1, 0, 1, 1, 1},
    {kTfLiteBuiltinAveragePool2d, FX_OP_POOL, 0, read_pool, 1, 0, 1, 1, 1},
    {kTfLiteBuiltinMean, FX_OP_MEAN, 0, read_mean, 2, 0, 0, 2, 2},
    {kTfLiteBuiltinSoftmax, FX_OP_SOFTMAX, 0, read_softmax, 1, 0, 1, 1, 1},
    {kTfLiteBuiltinPad, FX_OP_PAD, 0, read_pad, 2, 1u << 2, 0, 2, 3},
    {kTfLiteBuiltinPadv2, FX_OP_PAD, 0, read_pad, 2, 1u << 2, 0, 2, 3},
    {kTfLiteBuiltinConcatenation, FX_OP_CONCAT, 0, read_concat, 1, 0, 1, 1, FX_ANY_INPUTS},
    {kTfLiteBuiltinPack, FX_OP_CONCAT, 1, read_pack, 1, 0, 1, 1, FX_ANY_INPUTS},
    {kTfLiteBuiltinReshape, FX_OP_RESHAPE, 0, read_reshape, 1, 1u << 1, 0, 1, 2},
    {kTfLiteBuiltinSqueeze, FX_OP_RESHAPE, 1, read_squeeze, 1, 1u << 1, 1, 1, 1},
    {kTfLiteBuiltinTranspose, FX_OP_TRANSPOSE, 0, read_moved_by_const, 2, 0, 0, 2, 2},
    {kTfLiteBuiltinStridedSlice, FX_OP_STRIDED_SLICE, 0, read_strided_slice, 1, 0, 1, 4, 4},
    {kTfLiteBuiltinResizeBilinear, FX_OP_RESIZE_BILINEAR, 0, read_resize, 2, 0, 1, 2, 2},
    {kTfLiteBuiltinResizeNearestNeighbor, FX_OP_RESIZE_NEAREST, 0, read_resize, 2, 0, 1, 2, 2},
    {kTfLiteBuiltinDepthToSpace, FX_OP_DEPTH_TO_SPACE, 0, read_block, 1, 0, 1, 1, 1},
    {kTfLiteBuiltinSpaceToDepth, FX_OP_SPACE_TO_DEPTH, 0, read_block, 1, 0, 1, 1, 1},
    {kTfLiteBuiltinGather, FX_OP_GATHER, 0, read_gather, 2, 0, 1, 2, 2},
    {kTfLiteBuiltinShape, FX_OP_SHAPE, 0, read_shape, 1, 0, 0, 1, 1},
    {kTfLiteBuiltinCast, FX_OP_CAST, 0, read_cast, 1, 0, 0, 1, 1},
    {kTfLiteBuiltinQuantize, FX_OP_QUANTIZE, 0, read_quantize, 1, 0, 0, 0, FX_ANY_INPUTS},
    {kTfLiteBuiltinDequantize, FX_OP_QUANTIZE, 0, read_quantize, 1, 0, 0, 0, FX_ANY_INPUTS},
    {kTfLiteBuiltinLess, FX_OP_COMPARE, FX_CMP_LESS, read_compare, 2, 0, 0, 2, 2},
    {kTfLiteBuiltinLessEqual, FX_OP_COMPARE, FX_CMP_LESS_EQUAL, read_compare, 2, 0, 0, 2, 2},
    {kTfLiteBuiltinGreater, FX_OP_COMPARE, FX_CMP_GREATER, read_compare, 2, 0, 0, 2, 2},
    {kTfLiteBuiltinGreaterEqual, FX_OP_COMPARE, FX_CMP_GREATER_EQUAL, read_compare, 2, 0, 0, 2, 2},
    {kTfLiteBuiltinEqual, FX_OP_COMPARE, FX_CMP_EQUAL, read_compare, 2, 0, 0, 2, 2},
    {kTfLiteBuiltinNotEqual, FX_OP_COMPARE, FX_CMP_NOT_EQUAL, read_compare, 2, 0, 0, 2, 2},
    {kTfLiteBuiltinLogicalAnd, FX_OP_LOGICAL, FX_LOGIC_AND, read_logical, 2, 0, 0, 2, 2},
    {kTfLiteBuiltinLogicalOr, FX_OP_LOGICAL, FX_LOGIC_OR, read_logical, 2, 0, 0, 2, 2},
    {kTfLiteBuiltinLogicalNot, FX_OP_LOGICAL, FX_LOGIC_NOT, read_logical, 1, 0, 0, 1, 1},
    {kTfLiteBuiltinSelect, FX_OP_SELECT, 0, read_select, 3, 0, 0, 3, 3},
    {kTfLiteBuiltinSelectV2, FX_OP_SELECT, 1, read_select, 3, 0, 0, 3, 3},
    {kTfLiteBuiltinBatchMatmul, FX_OP_BATCH_MATMUL, 0, read_batch_matmul, 2, 0, 0, 2, 2},
    {kTfLiteBuiltinSum, FX_OP_REDUCE, FX_RED_SUM, read_reduce, 2, 0, 0, 2, 2},
    {kTfLiteBuiltinReduceMax, FX_OP_REDUCE, FX_RED_MAX, read_reduce, 2, 0, 0, 2, 2},
    {kTfLiteBuiltinReduceMin, FX_OP_REDUCE, FX_RED_MIN, read_reduce, 2, 0, 0, 2, 2},
    {kTfLiteBuiltinReduceProd, FX_OP_REDUCE, FX_RED_PROD, read_reduce, 2, 0, 0, 2, 2},
    {kTfLiteBuiltinLogSoftmax, FX_OP_LOG_SOFTMAX, 0, read_log_softmax, 1, 0, 0, 1, 1},
    {kTfLiteBuiltinExpandDims, FX_OP_RESHAPE, FX_RESHAPE_EXPAND_DIMS, read_moved_by_const, 2, 0, 0, 2, 2},
    {kTfLiteBuiltinSlice, FX_OP_STRIDED_SLICE, 0, read_slice, 3, 0, 0, 3, 3},
    {kTfLiteBuiltinBroadcastTo, FX_OP_BROADCAST_TO, 0, read_broadcast_to, 2, 0, 0, 2, 2},
    {kTfLiteBuiltinGatherNd, FX_OP_GATHER_ND, 0, read_gather_nd, 2, 0, 0, 2, 2},
    {kTfLiteBuiltinEmbeddingLookup, FX_OP_GATHER, 0, read_embedding_lookup, 2, 0, 0, 2, 2},
    {kTfLiteBuiltinFill, FX_OP_FILL, 0, read_fill, 2, 0, 0, 2, 2},
    {kTfLiteBuiltinRange, FX_OP_RANGE, 0, read_range, 3, 0, 0, 3, 3},
    {kTfLiteBuiltinCumsum, FX_OP_CUMSUM, 0, read_cumsum, 2, 0, 0, 2, 2},
    {kTfLiteBuiltinSplit, FX_OP_SPLIT_PART, 0, read_split, 2, 0, 1, 2, 2},
    {kTfLiteBuiltinSplitV, FX_OP_SPLIT_PART, 0, read_split, 3, 0, 1, 3, 3},
};

static const builtin_op *builtin_of(int builtin) {
  for (size_t i = 0; i < sizeof k_builtins / sizeof *k_builtins; i++)
    if (k_builtins[i].builtin == builtin) return &k_builtins[i];
  return NULL;
}

/* The IR sub-kind field each kind's table sub-kind goes to. */
static void set_sub(fx_node *n, int sub) {
  switch (n->kind) {
    case FX_OP_BINARY: n->p.bin.op = sub; break;
    case FX_OP_UNARY: n->p.un.kind = sub; break;
    case FX_OP_POOL: n->p.conv.is_max = sub; break;
    case FX_OP_CONCAT: n->p.concat.pack = sub; break;
    case FX_OP_RESHAPE: n->p.reshape.squeeze = sub; break;
    case FX_OP_COMPARE: case FX_OP_LOGICAL: n->p.cmp.op = sub; break;
    case FX_OP_SELECT: n->p.select.v2 = sub; break;
    case FX_OP_REDUCE: n->p.mean.op = sub; break;
  }
}

/* One IR node of TFLite node `index`: output `part` of it (SPLIT / SPLIT_V have one node per
 * output, the others one). */
static const char *translate_part(fx_translate *tr, fx_graph *g, int index, const TfLiteNode *node,
                                  const TfLiteRegistration *reg, const builtin_op *op, int part) {
  fx_node *n = fx_graph_add_node(g, op->kind, node->inputs->size, 1);
  if (!n) return "out of memory";
  n->tfl_node = index;
  n->tfl_builtin = reg->builtin_code;
  const char *why = NULL;
  const int hybrid = is_hybrid(tr, op->kind, node);
  const int int8_path = hybrid && (op->kind == FX_OP_CONV || op->kind == FX_OP_FC) && fx_qlayer_hybrid_on();
  for (int i = 0; i < node->inputs->size; i++) {
    const int idx = node->inputs->data[i];
    n->in[i] = hybrid && i == 1 ? add_hybrid_weights(tr, g, idx, op->kind, int8_path, &why)
                                : add_tensor(tr, g, idx, &why);
    if (n->in[i] == -2) return why;
  }
  if ((n->out[0] = add_tensor(tr, g, node->outputs->data[part], &why)) < 0) return why ? why : "missing output";
  if (g->tensors[n->out[0]].storage == FX_ST_CONST && !tr->allow_const_output) return "output is a constant";
  if (n->in[0] < 0) return "missing input";
  set_sub(n, op->sub);
  if (op->kind == FX_OP_SPLIT_PART) {
    n->p.split.part = part;
    n->p.split.parts = node->outputs->size;
  }
  if (n->n_in < op->min_inputs) return "missing inputs";
  /* the stock rounding for this op on this type (integer readers check it is known; a hybrid
   * layer's is its input quantization's range rule) */
  const int u8 = g->tensors[n->out[0]].dtype == FX_U8 || g->tensors[n->in[0]].dtype == FX_U8;
  const fx_rounding_rule *rule = fx_rounding_find(tr->rounding, reg->builtin_code, int8_path ? FX_ROUNDING_F32 : u8);
  n->qout = (fx_qs8_out){.rounding = rule ? rule->rounding : -1, .tail_rounding = rule ? rule->tail_rounding : FLEX_RQ_AWAY,
                         .tail_from = rule && rule->split8 ? 0 : INT32_MAX};
  for (int i = 0; i < n->n_in; i++)
    if (n->in[i] < 0 && !((op->optional >> i) & 1)) return "missing input";
  /* Deferred folds become values here, except the weights a GEMM packs (see fx_fold_recipe). */
  for (int i = 0; i < n->n_in; i++) {
    fx_tensor *t = n->in[i] >= 0 ? &g->tensors[n->in[i]] : NULL;
    if (!t || !t->blob || t->cdata || ((op->kind == FX_OP_CONV || op->kind == FX_OP_FC) && i == 1)) continue;
    if (!(t->cdata = fx_blob_data(t->blob))) return "out of memory";
  }
  if ((why = op->read(g, n, node->builtin_data))) return why;
  if (n->qop) fx_qop_set_stock_threads(n, tr->ctx && tr->ctx->recommended_num_threads > 0 ? tr->ctx->recommended_num_threads : 1);
  return fx_infer_node(g, n);
}

const char *fx_translate_node(fx_translate *tr, fx_graph *g, int index, const TfLiteNode *node,
                              const TfLiteRegistration *reg) {
  const builtin_op *op = builtin_of(reg->builtin_code);
  if (!op) return reg->custom_name ? "custom op" : "unsupported op";
  const int parts = op->kind == FX_OP_SPLIT_PART && node->outputs ? node->outputs->size : 1;
  if (!node->inputs || !node->outputs || node->inputs->size < 1 || node->outputs->size != parts || parts < 1 ||
      parts > FX_MAX_SPLIT_PARTS)
    return "unexpected number of inputs/outputs";
  const char *refused = node->inputs->size < op->stock_min_inputs || node->inputs->size > op->stock_max_inputs
                            ? "input count the stock kernel refuses"
                            : fx_tfl_stock_refuses(tr->ctx, reg->builtin_code, node);
  if (refused) return refused;
  if (!node->builtin_data && op->needs_params) return "missing builtin params";
  const char *why = NULL;
  for (int part = 0; part < parts && !why; part++) why = translate_part(tr, g, index, node, reg, op, part);
  return why;
}
