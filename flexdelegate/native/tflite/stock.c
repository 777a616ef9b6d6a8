/* What the stock TFLite kernels refuse at Prepare, checked before a node is claimed: a node
 * the delegate claims never meets its stock kernel's Prepare, so without these the delegate
 * ran models the stock interpreter refuses (the graph fuzzer reports each as a disagreement).
 * As TFLite 2.14's kernels check them; tests/fuzz/test_graph_parity.py and the corpus
 * replay ask the installed runtime at test time. */
#include "delegate.h"

static const char *input_count(int builtin, const TfLiteNode *node) {
  const int n = node->inputs ? node->inputs->size : 0;
  int lo = 1, hi = 1;
  switch (builtin) {
    case kTfLiteBuiltinRelu: case kTfLiteBuiltinRelu6: case kTfLiteBuiltinReluN1To1:
    case kTfLiteBuiltinLogistic: case kTfLiteBuiltinTanh: case kTfLiteBuiltinHardSwish:
    case kTfLiteBuiltinLeakyRelu: case kTfLiteBuiltinMaxPool2d: case kTfLiteBuiltinAveragePool2d:
    case kTfLiteBuiltinSoftmax: case kTfLiteBuiltinSqueeze: case kTfLiteBuiltinShape:
    case kTfLiteBuiltinCast: case kTfLiteBuiltinDepthToSpace: case kTfLiteBuiltinSpaceToDepth:
    case kTfLiteBuiltinNeg: case kTfLiteBuiltinAbs: case kTfLiteBuiltinSquare: case kTfLiteBuiltinSqrt:
    case kTfLiteBuiltinRsqrt: case kTfLiteBuiltinExp: case kTfLiteBuiltinLog: case kTfLiteBuiltinGelu:
    case kTfLiteBuiltinLogicalNot:
      break;
    case kTfLiteBuiltinAdd: case kTfLiteBuiltinSub: case kTfLiteBuiltinMul: case kTfLiteBuiltinDiv:
    case kTfLiteBuiltinMaximum: case kTfLiteBuiltinMinimum: case kTfLiteBuiltinPrelu:
    case kTfLiteBuiltinMean: case kTfLiteBuiltinTranspose: case kTfLiteBuiltinGather:
    case kTfLiteBuiltinResizeBilinear: case kTfLiteBuiltinResizeNearestNeighbor:
    case kTfLiteBuiltinSquaredDifference: case kTfLiteBuiltinPow: case kTfLiteBuiltinBatchMatmul:
    case kTfLiteBuiltinLess: case kTfLiteBuiltinLessEqual: case kTfLiteBuiltinGreater:
    case kTfLiteBuiltinGreaterEqual: case kTfLiteBuiltinEqual: case kTfLiteBuiltinNotEqual:
    case kTfLiteBuiltinLogicalAnd: case kTfLiteBuiltinLogicalOr:
      lo = hi = 2;
      break;
    case kTfLiteBuiltinSelect: case kTfLiteBuiltinSelectV2:
      lo = hi = 3;
      break;
    case kTfLiteBuiltinConv2d: /* the bias is required, and must be a tensor */
      if (n == 3 && node->inputs->data[2] < 0) return "CONV_2D needs a bias tensor";
      lo = hi = 3;
      break;
    case kTfLiteBuiltinDepthwiseConv2d: /* stock needs a present bias when it has three inputs */
      if (n == 3 && node->inputs->data[2] < 0) return "DEPTHWISE_CONV_2D needs a bias tensor";
      lo = 2, hi = 3;
      break;
    case kTfLiteBuiltinFullyConnected: case kTfLiteBuiltinPad: case kTfLiteBuiltinPadv2:
      lo = 2, hi = 3;
      break;
    case kTfLiteBuiltinTransposeConv:
      lo = 3, hi = 4;
      break;
    case kTfLiteBuiltinReshape:
      lo = 1, hi = 2;
      break;
    case kTfLiteBuiltinStridedSlice:
      lo = hi = 4;
      break;
    case kTfLiteBuiltinPack:
      lo = hi = node->builtin_data ? ((const TfLitePackParams *)node->builtin_data)->values_count : n;
      break;
    case kTfLiteBuiltinConcatenation:
      hi = n;
      break;
    default: /* a builtin not listed here: its table row's input checks (ops.c) are all there is */
      return NULL;
  }
  return n < lo || n > hi ? "input count the stock kernel refuses" : NULL;
}

static const TfLiteTensor *input(const TfLiteContext *ctx, const TfLiteNode *node, int i) {
  int t = i < node->inputs->size ? node->inputs->data[i] : -1;
  return t >= 0 && (size_t)t < ctx->tensors_size ? &ctx->tensors[t] : NULL;
}

static int rank(const TfLiteTensor *t) { return t && t->dims ? t->dims->size : -1; }

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
      return p && (p->dilation_width_factor < 1 || p->dilation_height_factor < 1) ? "dilation must be >= 1" : NULL;
    }
    case kTfLiteBuiltinPad: case kTfLiteBuiltinPadv2: { /* paddings: [rank of the input, 2] */
      const TfLiteTensor *x = input(ctx, node, 0), *pad = input(ctx, node, 1);
      if (!x || !pad || rank(pad) != 2 || pad->dims->data[0] != rank(x) || pad->dims->data[1] != 2)
        return "paddings must be [rank, 2]";
      return NULL;
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
      for (unsigned m = p ? (unsigned)p->new_axis_mask : 0; m; m &= m - 1) added++;
      return rank(input(ctx, node, 0)) + added > 5 ? "STRIDED_SLICE beyond 5-D" : NULL;
    }
  }
  return NULL;
}

const char *fx_tfl_stock_refuses(const TfLiteContext *ctx, int builtin, const TfLiteNode *node) {
  const char *why = input_count(builtin, node);
  return why ? why : params(ctx, builtin, node);
}
