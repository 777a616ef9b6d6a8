/* The input counts the stock TFLite kernels accept, checked before a node is claimed: a node
 * the delegate claims never meets the stock kernel's Prepare, so without this the delegate
 * ran models the stock interpreter refuses (RELU6 with three inputs, CONV_2D without a bias,
 * ...), which the graph fuzzer reports as a disagreement. Counts as TFLite 2.14's kernels
 * check them (tests/fuzz/test_graph_parity.py asks the installed runtime at test time). */
#include "delegate.h"

const char *fx_tfl_check_arity(int builtin, const TfLiteNode *node) {
  const int n = node->inputs ? node->inputs->size : 0;
  int lo = 1, hi = 1; /* unary ops, pools, softmax, squeeze, shape, cast, space/depth moves */
  switch (builtin) {
    case kTfLiteBuiltinAdd: case kTfLiteBuiltinSub: case kTfLiteBuiltinMul: case kTfLiteBuiltinDiv:
    case kTfLiteBuiltinMaximum: case kTfLiteBuiltinMinimum: case kTfLiteBuiltinPrelu:
    case kTfLiteBuiltinMean: case kTfLiteBuiltinTranspose: case kTfLiteBuiltinGather:
    case kTfLiteBuiltinResizeBilinear: case kTfLiteBuiltinResizeNearestNeighbor:
      lo = hi = 2;
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
  }
  return n < lo || n > hi ? "input count the stock kernel refuses" : NULL;
}
