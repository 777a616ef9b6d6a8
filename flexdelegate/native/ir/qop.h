/* The integer element-wise ops of the IR (kind QELEM): ADD, SUB, MUL, PRELU, MEAN, SUM, SOFTMAX
 * and the table ops (LOGISTIC, TANH, HARD_SWISH, LEAKY_RELU, GELU) on int8 / uint8 data, run by
 * kernels/qs8-ops bit-exactly as the stock kernel in use computes them. The reader
 * (tflite/ops.c) makes the node's fx_qop with what the TFLite node says; shape inference
 * (fx_infer_qelem) prepares the kernel for the current shapes (multipliers, tables, the
 * broadcast walk), or says why stock must run the node. */
#ifndef FLEX_IR_QOP_H
#define FLEX_IR_QOP_H
#include "graph.h"

enum { FX_QOP_ADD, FX_QOP_SUB, FX_QOP_MUL, FX_QOP_MEAN, FX_QOP_SOFTMAX, FX_QOP_LOGISTIC, FX_QOP_TANH,
       FX_QOP_HARD_SWISH, FX_QOP_LEAKY_RELU, FX_QOP_RELU, FX_QOP_REQUANTIZE, FX_QOP_PRELU, FX_QOP_GELU,
       FX_QOP_SUM, FX_QOP_MUL_LOGISTIC /* made by fx_qop_fuse_swish only */ };

/* Makes n's fx_qop (freed with the node): kind FX_QOP_*, stock the arithmetic to reproduce
 * (qs8-ops.h FLEX_STOCK_*; the delegate's "_rounding" entry for the op), act the TFLite fused
 * activation, param beta (SOFTMAX), alpha (LEAKY_RELU), which RELU (qs8-ops.h FX_QS8_RELU*) or
 * GELU's approximate (0 or 1), stock_threads the interpreter's
 * thread count (MEAN on LiteRT splits by it). NULL ok, or why not. */
const char *fx_qop_make(fx_node *n, int kind, int stock, int act, float param, int stock_threads);
void fx_qop_free(struct fx_qop *q);
/* The interpreter's thread count (TfLiteContext.recommended_num_threads, 1 when unset). */
void fx_qop_set_stock_threads(fx_node *n, int threads);
/* n's FX_QOP_* kind, or -1 when n is not an integer element-wise node. */
int fx_qop_kind(const fx_node *n);
/* Swish (fuse.c): the MUL node `mul` of x and LOGISTIC(x), x its input x_at, becomes one table
 * of x (fx_qs8_mul_of_table_prepare); the LOGISTIC node is skipped by the caller, its output
 * (never written) stays the MUL's other input so lifetimes and plans are unchanged. */
void fx_qop_fuse_swish(fx_node *mul, int x_at);
/* The swish MUL's table on elements [e0, e1) of its count-element input y, in place (each
 * element by its index: stock's NEON split of the MUL holds for any range). */
void fx_qop_table_range(const fx_node *mul, void *y, size_t count, size_t e0, size_t e1);
#endif
