/* Partition IR: what the runtime executes, free of TfLite types. tflite/ops.c translates
 * nodes into fx_node; folding, shape inference and execution work on this IR only, so one code
 * path serves load-time folding and invoke. */
#ifndef FLEX_GRAPH_H
#define FLEX_GRAPH_H
#include "blob.h"
#include "kernels/attention/attention.h"
#include "kernels/batch-matmul/batch_matmul.h"
#include "kernels/ops/ops.h"
#include "kernels/quant/requant.h"
#include "kernels/transpose-conv/transpose_conv.h"

enum fx_storage {
  FX_ST_CONST,    /* read-only data outside the arena (model mmap or a blob) */
  FX_ST_EXTERNAL, /* owned by TFLite: partition inputs and outputs */
  FX_ST_ARENA,    /* internal to the partition: lives at `offset` in the arena */
};

/* A tensor's affine quantization as TFLite's integer kernels read it: real = scale * (q -
 * zero_point), with the per-tensor (legacy) scale and zero point, which every kernel uses for
 * activations; a per-channel tensor (weights) has n > 1 scales along dimension `axis`. n == 0:
 * not quantized (float tensors, or integers the model left without parameters). `scales`
 * points into the interpreter's record of the tensor (valid as long as the interpreter). */
typedef struct {
  int n, axis;
  float scale;
  int32_t zero_point;
  const float *scales;
  const int32_t *zero_points; /* n of them, as scales */
} fx_quant;
/* Same parameters (scales compared as floats, as TFLite's kernels compare them). */
int fx_quant_equal(const fx_quant *a, const fx_quant *b);

typedef struct {
  int tfl;          /* TfLite tensor index, or -1 for partition scratch */
  int dtype;
  fx_quant quant;   /* integer tensors only */
  fx_shape shape;
  int storage;
  const void *cdata; /* FX_ST_CONST */
  fx_blob *blob;     /* FX_ST_CONST from a blob (one reference held) */
  size_t offset;     /* FX_ST_ARENA */
  void *ptr;         /* resolved data pointer for the current invoke */
} fx_tensor;

/* The operations (ops.inc: one line each). */
enum fx_opkind {
#define FX_OP(kind, name, infer, run, flops) FX_OP_##kind,
#include "ops.inc"
#undef FX_OP
  FX_OP_COUNT
};
const char *fx_op_name(int kind);

struct fx_conv_pack;    /* conv/conv.c */
struct fx_qlayer;       /* qlayer.c: an int8 conv / FC / depthwise, packed */
struct fx_store;        /* store/store.h */
struct fx_qop;          /* qop.c: an int8 / uint8 element-wise op, prepared */

typedef struct {
  int kind;
  int tfl_node;       /* node index in the TFLite graph (for logs and stats) */
  int tfl_builtin;    /* its TFLite builtin code */
  int n_in, n_out;
  int *in, *out;      /* local tensor ids; -1 = optional input absent */
  int act;            /* fused activation (FLEX_ACT_*) */
  int at_prepare;     /* computes a shape-derived value: runs at prepare, not at invoke */
  double flops;       /* per run, for the current shapes (set at prepare) */
  uint64_t prof_ns, prof_runs; /* accumulated when profiling */
  union {
    /* conv, depthwise, pool (is_max), transpose conv */
    /* pad_*: the zeros of a PAD folded into the window (fuse.c), before SAME / VALID applies */
    struct { int same, stride_h, stride_w, dil_h, dil_w, mult, kh, kw, is_max, pad_t, pad_b, pad_l, pad_r; } conv;
    struct { int op; } bin;
    struct { int kind; float alpha; } un;
    struct { int keep_num_dims, asym_inputs; } fc; /* asym_inputs: a hybrid FC's asymmetric_quantize_inputs */
    struct { int adj_x, adj_y; int32_t qm, qshift; } bmm; /* QBATCH_MATMUL: stock's one multiplier */
    struct { int op; } cmp;                             /* COMPARE (FX_CMP_*), LOGICAL (FX_LOGIC_*) */
    struct { int v2; } select;                          /* SELECT_V2 broadcasts all three */
    /* LAYERNORM (fuse.c): in = x, gamma, beta (-1: absent); over the last of `rank` axes */
    struct { float eps; int mode, rank; } ln;
    /* ATTENTION (fuse.c): in = q, k, v, SELECT mask (-1: none). *_seq_first: that operand is in
     * the converter's [B,S,H,D] (before / after its TRANSPOSE), else [B,H,S,D]; k_seq_first: K
     * as [B,Sk,H,D], else [B,H,Sk,D] (BATCH_MATMUL with adj_y). */
    struct { float scale, fill; int causal, causal_offset, q_seq_first, k_seq_first, v_seq_first, o_seq_first; } attn;
    struct { int keep_dims, op; } mean;                 /* MEAN, REDUCE (op: FX_RED_*) */
    struct { float beta; } softmax;
    struct { int axis, pack; } concat;                  /* pack: inputs gain a new dim at axis */
    struct { int axis, batch_dims; } gather;
    struct { int align_corners, half_pixel; } resize;
    struct { int block; } block;
    /* STRIDED_SLICE; slice: TFLite's SLICE (in = x, begin, size; no masks) */
    struct { int begin_mask, end_mask, ellipsis_mask, new_axis_mask, shrink_mask, offset, slice; } ss;
    struct { int axis, exclusive, reverse; } cumsum;
    /* SPLIT_PART: output `part` of `parts` of a SPLIT / SPLIT_V, a slice of in[0] along the
     * constant axis in[n_in - 1] (SPLIT_V: the sizes in in[1]); its plan in `slice` */
    struct { int part, parts; } split;
    struct { int out_type; } shape;
    /* squeeze: FX_RESHAPE_* (EXPAND_DIMS: in[1] is the new axis) */
    struct { int n_dims; int dims[FX_MAX_RANK]; int squeeze; unsigned squeeze_mask; } reshape;
    struct { int has_fill; int32_t fill; } pad; /* 1-byte data without a value input: fill byte */
  } p;
  /* Integer ops: the output zero point, the fused activation's quantized range [lo, hi] and
   * the stock kernel's rounding (kernels/quant/requant.h), set when the node is read:
   * rounding < 0 when the delegate does not know the stock rule for this op and type;
   * tail_from == 0 before the reader resolves a split8 rule to C - C % 8. A hybrid conv / FC
   * (float activations, int8 weights) keeps in rounding the stock loops its input quantization
   * runs (FLEX_STOCK_*, < 0: unknown; kernels/quant/dynamic.h). */
  fx_qs8_out qout;
  struct fx_qlayer *qlayer;    /* int8 conv / FC / depthwise / transpose conv: packed at init (qlayer.c) */
  struct fx_qop *qop;          /* QELEM: made by the reader, prepared at shape inference (qop.h) */
  /* Filled at prepare/init by the kernels that need them. */
  struct fx_conv_pack *pack;   /* packed weights for conv / fc */
  struct fx_conv_pack *gemm_pack; /* a Winograd conv's im2col GEMM form, for a budget plan to
                                     run instead: packed at load into the cache file whenever
                                     there is one (fx_pack_gemm_forms), else NULL */
  int scratch;                 /* local tensor id of per-node scratch, or -1 */
  fx_slice_plan slice;         /* strided slice, resolved at shape inference */
  int perm[FX_MAX_RANK];       /* transpose permutation, resolved at shape inference */
  int pads[2 * FX_MAX_RANK];   /* pad amounts, resolved at shape inference */
  /* Set at init by fx_fuse_node (fuse.c) when a producer took this node's work into its
   * fused activation: FX_FUSED_SKIP, nothing to do (nobody reads the output); FX_FUSED_COPY,
   * the output equals tensor fuse_from (a copy, or nothing when they share a buffer). */
  int fused, fuse_from;
  int wino_tile;               /* set by fx_choose_winograd: 4 or 6 packs Winograd weights */
  int wino_rt;                 /* or 4 / 6: Winograd from the GEMM panels, transformed per run */
  /* A conv that took the following residual ADD (fx_fuse_node) has a 4th input, in[3], and
   * computes res_act(act(conv) + in[3]); the ADD copies (or aliases) the conv's output. */
  int res_act;
  int band;                    /* 1 + the index of the chain (band.h) it is a member of, or 0 */
  /* An int8 conv / FC / depthwise that took the integer swish reading its output (fuse.c):
   * 1 + that MUL node's index, else 0. It applies the MUL's table to each output tile it just
   * wrote (in L1), and the MUL copies, or shares the buffer. */
  int post_table;
} fx_node;

enum { FX_FUSED_NONE = 0, FX_FUSED_SKIP, FX_FUSED_COPY };
enum { FX_RESHAPE_PLAIN = 0, FX_RESHAPE_SQUEEZE, FX_RESHAPE_EXPAND_DIMS };
/* SPLIT / SPLIT_V outputs the delegate takes (one SPLIT_PART node each); more stay with stock. */
#define FX_MAX_SPLIT_PARTS 64

struct fx_band_chain; /* band.h */

typedef struct {
  int n_tensors, n_nodes;
  fx_tensor *tensors;
  fx_node *nodes;
  int cap_tensors, cap_nodes;
  struct fx_band_chain *chains; /* layer chains that may run band by band (band.h) */
  int n_chains;
} fx_graph;

/* What the IR knows of an operation (ops.c's table, from ops.inc). */
typedef struct {
  const char *name;
  const char *(*infer)(fx_graph *g, fx_node *n);       /* output shape; NULL, or why it cannot run */
  int (*run)(fx_graph *g, fx_node *n, fx_pool *pool);  /* 0, or -1 on a runtime data error */
  double (*flops)(const fx_graph *g, const fx_node *n); /* of one run; NULL: one per output element */
} fx_op_def;
extern const fx_op_def fx_op_defs[FX_OP_COUNT];

int fx_graph_add_tensor(fx_graph *g, const fx_tensor *t);  /* returns id or -1 */
fx_node *fx_graph_add_node(fx_graph *g, int kind, int n_in, int n_out);
/* Index of the node writing tensor t, or -1 (a partition input). */
int fx_graph_producer(const fx_graph *g, int t);
void fx_graph_free(fx_graph *g);

/* If n is a conv / FC / depthwise whose output feeds only LOGISTIC (and MUL by itself), turns
 * that tail into n's activation (FLEX_ACT_SIGMOID / FLEX_ACT_SWISH) and marks the tail fused;
 * if n is a conv whose output feeds only an ADD of an equal-shaped tensor computed earlier,
 * n adds it (in[3], res_act) and the ADD is marked fused. Called once per node at init, in
 * node order, after partition inputs/outputs are marked. Returns -1 when out of memory. */
int fx_fuse_node(fx_graph *g, fx_node *n);
/* Conv / depthwise / pool node n's window along the height (axis 0) or width (axis 1) over `in`
 * input rows or columns, k taps: the output extent and the padding before it, a folded PAD
 * included (TFLite's ComputeOutSize and padding over the padded extent). */
void fx_node_window(const fx_node *n, int axis, int in, int k, int *out, int *pad_before);

/* Which stride-1 3x3 convs pack Winograd weights (wino_tile) or run it from their plain
 * weights (wino_rt), for the `winograd` option (FX_WINO_*, conv/conv.h): conv/choose.c decides.
 * Called once at init, before weights are packed. Returns -1 when out of memory. */
int fx_choose_winograd(fx_graph *g, int mode);

/* An int8 / uint8 CONV_2D / FULLY_CONNECTED / DEPTHWISE_CONV_2D or int8 TRANSPOSE_CONV node
 * (QCONV, QFC, QDEPTHWISE, QTRANSPOSE_CONV: its inputs stay TFLite's output_shape, weights, x,
 * bias): whether its parameters give requantization the kernels take (NULL, or why not), and its
 * packing at init (qlayer.c: the packed panels are content-addressed blobs of the weight store,
 * so a warm load maps them from the cache file; NULL or why it failed). */
const char *fx_qlayer_check(const fx_graph *g, const fx_node *n);
/* Its scratch (n->scratch): a uint8 layer's input flipped to int8 for the kernels, a hybrid
 * layer's quantized input and its rows' scales and zero points, else 0. */
size_t fx_qlayer_scratch_bytes(const fx_graph *g, const fx_node *n);
const char *fx_qlayer_pack(fx_graph *g, fx_node *n, struct fx_store *store);
void fx_qlayer_free(struct fx_qlayer *q);
size_t fx_qlayer_bytes(const struct fx_qlayer *q);
/* 1 if its cache blob was damaged under us and it packed again in memory, -1 if that failed. */
int fx_qlayer_repair(struct fx_qlayer *q);
/* Its cached blob checked through the file, never the mapping (a budget plan streams it), as
 * fx_node_check_unmapped; -1 out of memory. */
int fx_qlayer_check_unmapped(struct fx_qlayer *q);
/* How a budget plan streams the packed weights: `panels` panels of panel_bytes (panel-major: a
 * panel range is one contiguous byte range of ref's blob), nr output channels each (the last
 * may be short); sliceable: a run may compute any panel range (GEMM / IGEMM), else only all of
 * them (depthwise: its panels are a few KB). */
typedef struct {
  const struct fx_wref *ref;
  size_t panel_bytes;
  int panels, nr, sliceable;
} fx_qlayer_layout;
void fx_qlayer_get_layout(const struct fx_qlayer *q, fx_qlayer_layout *out);
/* Dynamic-range ("hybrid") CONV_2D / FULLY_CONNECTED (float activations, int8 weights): whether
 * they run as QCONV / QFC on this CPU's int8 GEMM (conv/choose.c), else on the FP32 kernels from
 * dequantized weights; and whether a packed layer is one. */
int fx_qlayer_hybrid_on(void);
int fx_qlayer_is_hybrid(const struct fx_qlayer *q);
/* The name of the int8 GEMM variant a conv / FC / transpose conv layer runs on, or NULL. */
const char *fx_qlayer_gemm_name(const struct fx_qlayer *q);
/* Runs node n's output channels of panels [p0, p1) from `panels` (pointing at panel p0: a
 * budget plan's slot), bit-identical to those channels of the whole run. 0, or -1. */
int fx_qlayer_run_part(fx_graph *g, fx_node *n, fx_pool *pool, const void *panels, int p0, int p1);

/* The values of constant int32 / int64 tensor id (at most cap of them, each within int32) into
 * vals, their count into *n. NULL, or why the tensor is not such a constant. */
const char *fx_const_ints(const fx_graph *g, int id, int *vals, int cap, int *n);
/* Whether RESHAPE node n takes its new shape from input 1, as stock decides (reshape.cc): when
 * that input is an int32 vector; otherwise from its options. */
int fx_reshape_shape_input(const fx_graph *g, const fx_node *n);
/* Output shapes (and per-node resolved plans) from input shapes and constant inputs.
 * Returns NULL on success or a static message naming why the node cannot run. */
const char *fx_infer_node(fx_graph *g, fx_node *n);

/* Weight packing for conv/fc at init (constant weights), through the weight store (cache
 * file or memory); NULL ok else message. */
struct fx_store;
const char *fx_prepare_node_weights(fx_graph *g, fx_node *n, struct fx_store *store);
/* Packs the im2col GEMM form of every Winograd conv in g that lacks one (a budget plan may run
 * that instead when the Winograd weights do not fit). mapped_only: only those the cache file
 * already holds (a read-only file: packing the others would only add memory). Returns how many
 * it added (pending in the store until its commit), or -1 when out of memory. */
int fx_pack_gemm_forms(fx_graph *g, struct fx_store *store, int mapped_only);
/* Repacks weights whose cache mapping was truncated under us: 1 repaired, 0 fine, -1 OOM. */
int fx_node_repair(fx_node *n);
/* Verifies the node's cached packed weights through the file, never touching the mapping (a
 * budget plan streams them: their pages must not become resident), repacking in memory what
 * fails its checksum. -1 out of memory. */
int fx_node_check_unmapped(fx_node *n);
/* An ATTENTION node's kernel parameters and operand views for the current shapes (data pointers
 * from the tensors' ptr, NULL before they are resolved). NULL, or why the shapes do not fit. */
const char *fx_node_attention(const fx_graph *g, const fx_node *n, fx_attn_params *p, fx_attn_in *q, fx_attn_in *k,
                              fx_attn_in *v, fx_attn_out *o, fx_shape *out_shape);
/* SELECT's condition shape as it broadcasts against x (version 1's rank-1 form spelled out). */
void fx_select_cond_shape(const fx_graph *g, const fx_node *n, fx_shape *c);
/* A BATCH_MATMUL node's plan (kernels/batch-matmul) for the current shapes: 0, or -1 when its
 * operands cannot multiply. */
int fx_node_bmm_plan(const fx_graph *g, const fx_node *n, fx_bmm_plan *plan);
/* A TRANSPOSE_CONV node's kernel geometry for the current shapes. */
void fx_node_tconv_geom(const fx_graph *g, const fx_node *n, fx_tconv_geom *geo);
/* Scratch bytes a node needs for `threads` workers (0 if none). */
size_t fx_node_scratch_bytes(const fx_graph *g, const fx_node *n, int threads);

/* Runs one node; tensors' ptr must be resolved. Returns 0, or -1 on a runtime data error
 * (e.g. a GATHER index out of range). */
int fx_run_node(fx_graph *g, fx_node *n, fx_pool *pool);
/* Runs every node in order but those evaluated at prepare, timing each when profiling: -1, or
 * the index of the node that failed. */
int fx_run_nodes(fx_graph *g, fx_pool *pool, int profile);
/* The packed weights FLEX_KERNEL_* `kernel` runs node n with: a conv's GEMM panels (its own, or
 * the GEMM form of a Winograd conv) or its Winograd panels; NULL for FLEX_KERNEL_NODE or a form
 * the node lacks. */
const struct fx_conv_pack *fx_node_pack(const fx_node *n, int kernel);
void fx_node_release(fx_node *n);
/* The GEMM geometry of a conv/fc node for the current shapes (conv/conv.h's fx_conv_geom). */
void fx_node_conv_geom(const fx_graph *g, const fx_node *n, void *geo);
/* Floating-point operations of one run (multiply-add = 2) for the current shapes. */
double fx_node_flops(const fx_graph *g, const fx_node *n);
/* What runs the node, e.g. "gemm-im2col f32-gemm-8x32-avx512f", "depthwise"; pack: the packed
 * weights it runs with (n->pack, or the form a budget plan chose); kernel: the FLEX_KERNEL_*
 * a budget plan runs them with (FLEX_KERNEL_NODE: no plan, the node's own choice). */
const char *fx_node_kernel(const fx_graph *g, const fx_node *n, const struct fx_conv_pack *pack, int kernel,
                           char *buf, size_t len);

#endif
