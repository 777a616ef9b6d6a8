/* What the stock TFLite kernels refuse at Prepare, checked before a node is claimed: a node
 * the delegate claims never meets its stock kernel's Prepare, so without these the delegate
 * ran models the stock interpreter refuses (the graph fuzzer reports each as a disagreement).
 * As TFLite 2.14's kernels check them; tests/fuzz/test_graph_parity.py and the corpus
 * replay ask the installed runtime at test time. */
#include "delegate.h"

/* Input checks beyond the count (k_builtins in ops.c holds the counts stock accepts). */
static const char *inputs_stock_refuses(int builtin, const TfLiteNode *node) {
  const int n = node->inputs->size;
  switch (builtin) {
    case kTfLiteBuiltinConv2d: /* the bias is required, and must be a tensor */
      return n == 3 && node->inputs->data[2] < 0 ? "CONV_2D needs a bias tensor" : NULL;
    case kTfLiteBuiltinDepthwiseConv2d: /* stock needs a present bias when it has three inputs */
      return n == 3 && node->inputs->data[2] < 0 ? "DEPTHWISE_CONV_2D needs a bias tensor" : NULL;
    case kTfLiteBuiltinPack: /* one input per value */
      return node->builtin_data && ((const TfLitePackParams *)node->builtin_data)->values_count != n
                 ? "input count the stock kernel refuses"
                 : NULL;
  }
  return NULL;
}

static const TfLiteTensor *input(const TfLiteContext *ctx, const TfLiteNode *node, int i) {
  int t = i < node->inputs->size ? node->inputs->data[i] : -1;
  return t >= 0 && (size_t)t < ctx->tensors_size ? &ctx->tensors[t] : NULL;
}

static int rank(const TfLiteTensor *t) { return t && t->dims ? t->dims->size : -1; }

/* PRELU: stock resizes the output to broadcast(input, alpha) and then needs that to be the
 * input's shape: alpha no deeper than the input, each of its dims 1 or the input's. */
static int alpha_keeps_shape(const TfLiteTensor *x, const TfLiteTensor *alpha) {
  const int rx = rank(x), ra = rank(alpha);
  if (rx < 0 || ra < 0 || ra > rx) return 0;
  for (int i = 1; i <= ra; i++) {
    const int a = alpha->dims->data[ra - i], d = x->dims->data[rx - i];
    if (a != 1 && a != d) return 0;
  }
  return 1;
}

/* PACK: stock packs no quantized tensors, so every input's scale and zero point must be the
 * output's (float tensors included: a stray quantization on one is refused too). */
static int pack_params_match(const TfLiteContext *ctx, const TfLiteNode *node) {
  const int o = node->outputs && node->outputs->size > 0 ? node->outputs->data[0] : -1;
  if (o < 0 || (size_t)o >= ctx->tensors_size) return 1; /* ops.c refuses a missing output */
  const TfLiteTensor *out = &ctx->tensors[o];
  for (int i = 0; i < node->inputs->size; i++) {
    const TfLiteTensor *x = input(ctx, node, i);
    if (x && (x->params.scale != out->params.scale || x->params.zero_point != out->params.zero_point))
      return 0;
  }
  return 1;
}

/* The parameter and input checks of stock Prepare functions the delegate's own translation
 * does not make (it can run these cases, but stock refuses them). */
static const char *params(const TfLiteContext *ctx, int builtin, const TfLiteNode *node) {
  const void *bd = node->builtin_data;
  switch (builtin) {
    case kTfLiteBuiltinShape:
      if (bd && ((const TfLiteShapeParams *)bd)->out_type != kTfLiteInt32 &&
          ((const TfLiteShapeParams *)bd)->out_type != kTfLiteInt64)
        return "SHAPE out_type must be int32 or int64";
      return NULL;
    case kTfLiteBuiltinResizeBilinear:
      if (rank(input(ctx, node, 1)) != 1) return "resize size must be 1-D";
      if (bd && ((const TfLiteResizeBilinearParams *)bd)->align_corners &&
          ((const TfLiteResizeBilinearParams *)bd)->half_pixel_centers)
        return "align_corners with half_pixel_centers";
      return NULL;
    case kTfLiteBuiltinConcatenation:
      if (bd && ((const TfLiteConcatenationParams *)bd)->activation != kTfLiteActNone)
        return "fused activation on CONCATENATION";
      return rank(input(ctx, node, 0)) > 4 ? "CONCATENATION of more than 4 dimensions" : NULL;
    case kTfLiteBuiltinDepthwiseConv2d: {
      const TfLiteDepthwiseConvParams *p = bd;
      if (p && (p->dilation_width_factor < 1 || p->dilation_height_factor < 1)) return "dilation must be >= 1";
      const TfLiteTensor *bias = node->inputs->size > 2 ? input(ctx, node, 2) : NULL;
      return bias && rank(bias) != 1 ? "DEPTHWISE_CONV_2D bias must be 1-D" : NULL;
    }
    case kTfLiteBuiltinPrelu:
      return alpha_keeps_shape(input(ctx, node, 0), input(ctx, node, 1)) ? NULL
             : "PRELU alpha must broadcast to the input's shape";
    case kTfLiteBuiltinSoftmax:
      return rank(input(ctx, node, 0)) < 1 ? "SOFTMAX of a scalar" : NULL;
    case kTfLiteBuiltinPack:
      return pack_params_match(ctx, node) ? NULL : "PACK inputs quantized unlike the output";
    case kTfLiteBuiltinResizeNearestNeighbor:
      return rank(input(ctx, node, 1)) != 1 ? "resize size must be 1-D" : NULL;
    case kTfLiteBuiltinPad: case kTfLiteBuiltinPadv2: { /* paddings: [rank of the input, 2] */
      const TfLiteTensor *x = input(ctx, node, 0), *pad = input(ctx, node, 1);
      if (!x || !pad || rank(pad) != 2 || pad->dims->data[0] != rank(x) || pad->dims->data[1] != 2)
        return "paddings must be [rank, 2]";
      return NULL;
    }
    case kTfLiteBuiltinReduceProd: { /* EvalProd: an input with a quantization must be int8 / int16 */
      const TfLiteTensor *x = input(ctx, node, 0);
      return x && x->quantization.type == kTfLiteAffineQuantization && x->type != kTfLiteInt8 &&
                     x->type != kTfLiteInt16
                 ? "REDUCE_PROD of a quantized type stock refuses"
                 : NULL;
    }
    case kTfLiteBuiltinMean: {
      const TfLiteTensor *axis = input(ctx, node, 1);
      return axis && axis->type != kTfLiteInt32 ? "MEAN axis must be int32" : NULL;
    }
    case kTfLiteBuiltinBatchMatmul: { /* both operands 2-D to 5-D */
      const int a = rank(input(ctx, node, 0)), b = rank(input(ctx, node, 1));
      return a < 2 || a > 5 || b < 2 || b > 5 ? "BATCH_MATMUL operands beyond 2-D..5-D" : NULL;
    }
    case kTfLiteBuiltinStridedSlice: { /* at most 5-D, counting the axes it adds */
      const TfLiteStridedSliceParams *p = bd;
      int added = 0;
      for (int i = 1; i <= 3; i++)
        if (rank(input(ctx, node, i)) != 1) return "STRIDED_SLICE begin, end and strides must be 1-D";
      for (unsigned m = p ? (unsigned)p->new_axis_mask : 0; m; m &= m - 1) added++;
      return rank(input(ctx, node, 0)) + added > 5 ? "STRIDED_SLICE beyond 5-D" : NULL;
    }
  }
  return NULL;
}

const char *fx_tfl_stock_refuses(const TfLiteContext *ctx, int builtin, const TfLiteNode *node) {
  const char *why = inputs_stock_refuses(builtin, node);
  return why ? why : params(ctx, builtin, node);
}
