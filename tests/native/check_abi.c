/* Compile-only check of flexdelegate/native/tflite/abi.h: the header's static
 * assertions hold and its declarations are usable from C11 without warnings (built by
 * test_check_abi.py). */
#include "tflite/abi.h"

#include <string.h>

/* Exercise the signatures a delegate uses, so a wrong prototype in the
 * header surfaces as a compile error here. */

static void* k_init(TfLiteContext* ctx, const char* buf, size_t len) {
  (void)ctx;
  (void)len;
  const TfLiteDelegateParams* p = (const TfLiteDelegateParams*)(const void*)buf;
  return p ? p->nodes_to_replace : NULL;
}

static void k_free(TfLiteContext* ctx, void* buf) {
  (void)ctx;
  (void)buf;
}

static TfLiteStatus k_prepare(TfLiteContext* ctx, TfLiteNode* node) {
  const TfLiteTensor* t = &ctx->tensors[node->inputs->data[0]];
  return t->type == kTfLiteFloat32 ? kTfLiteOk : kTfLiteError;
}

static TfLiteStatus k_invoke(TfLiteContext* ctx, TfLiteNode* node) {
  (void)ctx;
  (void)node;
  return kTfLiteOk;
}

static TfLiteStatus d_prepare(TfLiteContext* ctx, TfLiteDelegate* d) {
  TfLiteIntArray* plan = NULL;
  if (ctx->GetExecutionPlan(ctx, &plan) != kTfLiteOk) return kTfLiteError;
  for (int i = 0; i < plan->size; ++i) {
    TfLiteNode* node = NULL;
    TfLiteRegistration* reg = NULL;
    if (ctx->GetNodeAndRegistration(ctx, plan->data[i], &node, &reg) !=
        kTfLiteOk)
      return kTfLiteError;
    if (reg->builtin_code == kTfLiteBuiltinConv2d) {
      const TfLiteConvParams* cp = (const TfLiteConvParams*)node->builtin_data;
      if (cp->activation == kTfLiteActRelu6) ctx->ReportError(ctx, "%d", i);
    }
  }
  TfLiteRegistration kernel;
  memset(&kernel, 0, sizeof kernel);
  kernel.init = k_init;
  kernel.free = k_free;
  kernel.prepare = k_prepare;
  kernel.invoke = k_invoke;
  kernel.builtin_code = kTfLiteBuiltinDelegate;
  kernel.custom_name = "flexdelegate";
  kernel.version = 1;
  return ctx->ReplaceNodeSubsetsWithDelegateKernels(ctx, kernel, plan, d);
}

TfLiteDelegate check_abi_make_delegate(void);
TfLiteDelegate check_abi_make_delegate(void) {
  TfLiteDelegate d;
  memset(&d, 0, sizeof d);
  d.Prepare = d_prepare;
  d.flags = kTfLiteDelegateFlagsNone;
  return d;
}

float check_abi_first_scale(const TfLiteTensor* t);
float check_abi_first_scale(const TfLiteTensor* t) {
  if (t->quantization.type != kTfLiteAffineQuantization) return t->params.scale;
  const TfLiteAffineQuantization* q =
      (const TfLiteAffineQuantization*)t->quantization.params;
  return q->scale->size > 0 ? q->scale->data[0] : 0.0f;
}
