/* The native module's Python-facing API (also fed verbatim to cffi's cdef, so: plain
 * declarations only; lines starting with '#' are dropped for the cdef). */
#ifndef FLEX_API_H
#define FLEX_API_H
#include <stddef.h>
#include <stdint.h>

/* TFLite external-delegate plugin entry points (the runtime finds them with dlsym). The
 * delegate is opaque here: Python only passes the pointer back. */
void *tflite_plugin_create_delegate(char **keys, char **values, size_t n,
                                    void (*report_error)(const char *));
void tflite_plugin_destroy_delegate(void *delegate);

/* Statistics of the last Prepare as JSON, written into buf (NUL-terminated when cap > 0).
 * Returns the full length, so a caller can retry with a bigger buffer. */
size_t flex_stats_json(void *delegate, char *buf, size_t cap);

/* Re-plans every partition for a new budget (MB; 0 = unlimited) between invokes. 0 ok; -1 with
 * msg set (e.g. an infeasible budget: the old one stays in force). */
int flex_set_budget(void *delegate, double mb, char *msg, size_t msg_len);

/* Validates one option as the plugin would; returns NULL if fine, else a message. */
const char *flex_check_option(const char *key, const char *value);

/* The largest budget accepted (MB): 10 TB, far past any machine, and exact in a size_t. */
enum { FLEX_BUDGET_MAX_MB = 10000000 };
/* The one budget check, for the option and set_budget: NULL if mb is a number of megabytes
 * in [0, FLEX_BUDGET_MAX_MB] (0 = unlimited), else a message. */
const char *flex_check_budget(double mb);

/* Arena planner (exposed for tests and the Python planner): buffers with byte sizes and
 * [first, last] lifetimes (inclusive node indices) get offsets; returns the arena size.
 * kind 0 = greedy by size, 1 = trivial (back to back). Returns (size_t)-1 on bad input. */
size_t flex_plan_arena(int kind, int n, const size_t *sizes, const int *first, const int *last,
                       size_t *offsets);

/* Name of the GEMM microkernel chosen for this CPU, e.g. "f32-gemm-8x32-avx512f". */
const char *flex_gemm_kernel_name(void);
/* Name of the i-th microkernel this CPU can run (0 = scalar reference), NULL past the end. */
const char *flex_gemm_kernel_at(int i);
/* c[m x n] = clamp(a[m x k] * w[n x k]^T + bias, lo, hi) with the i-th microkernel, packing
 * w as the delegate does (for tests against the scalar reference); then, with res [m x n],
 * c = clamp(c + res, rlo, rhi) (a fused residual ADD). 0 ok, -1 bad args/OOM. */
int flex_gemm_run(int i, int m, int n, int k, const float *a, const float *w, const float *bias,
                  float *c, float lo, float hi, const float *res, float rlo, float rhi);

/* The weight cache's 64-bit content hash (cache/FORMAT.md), for the Python cache tools. */
uint64_t flex_hash64(const void *data, size_t len, uint64_t seed);
/* The cache loader's verdict on the file at path: 0 valid (a load would map it), 1 missing,
 * -1 invalid or unreadable, with the reason in msg (NUL-terminated). */
int flex_cache_check(const char *path, char *msg, size_t msg_len);

/* Depthwise convolution variants (0 = the portable scalar reference): name of the i-th this CPU
 * can run, NULL past the end. flex_dwconv_run runs variant `variant` on x [n,h,w,cin] with
 * filter [kh,kw,cin*mult] and optional bias into y [n,oh,ow,cin*mult] (oh/ow must match TFLite's
 * SAME/VALID sizes), single-threaded, `iters` times; *seconds (if not NULL) gets the fastest.
 * 0 ok, -1 bad arguments or variant unavailable. */
const char *flex_dwconv_variant_at(int i);
int flex_dwconv_run(int variant, int n, int h, int w, int cin, int mult, int kh, int kw,
                    int stride_h, int stride_w, int dil_h, int dil_w, int same, const float *x,
                    const float *filter, const float *bias, int act, float *y, int oh, int ow,
                    int iters, double *seconds);

/* Sigmoid / swish variants (0 = the portable scalar reference): name of the i-th this CPU can
 * run, NULL past the end; flex_vsigmoid_run applies variant `variant` to n floats (swish = 1:
 * x * sigmoid(x)). 0 ok, -1 variant unavailable. */
const char *flex_vsigmoid_variant_at(int i);
int flex_vsigmoid_run(int variant, const float *x, float *y, size_t n, int swish);

/* Winograd F(tile x tile, 3x3) stride-1 convolution (tile 4 or 6) with GEMM microkernel
 * `variant` (as flex_gemm_kernel_at): packs filter [cout][3][3][cin], then runs x [n,h,w,cin]
 * into y [n,oh,ow,cout] (pad_top/pad_left leading zeros; oh/ow as given) on `threads` threads,
 * `iters` times; *seconds (if not NULL) gets the fastest run. slice_panels > 0 runs it as a
 * budget plan does: slices of that many GEMM panels, each from its own copy of its packed byte
 * range. 0 ok, -1 bad arguments/OOM. */
int flex_winograd_run(int variant, int tile, int threads, int n, int h, int w, int cin, int cout,
                      int pad_top, int pad_left, int oh, int ow, const float *x,
                      const float *filter, const float *bias, int act, float *y, int slice_panels,
                      int from_gemm, int iters, double *seconds);

/* Direct (implicit-GEMM) convolution: name of the IGEMM kernel paired with GEMM kernel i (as
 * flex_gemm_kernel_at; NULL past the end or without one). flex_conv2d_run packs filter
 * [cout][kh][kw][cin] for GEMM kernel `variant` and runs CONV_2D of x [n,h,w,cin] into
 * y [n,oh,ow,cout] (pad_top/pad_left leading zeros; oh/ow as given) as im2col GEMM (algo 0) or
 * direct conv over the same packed weights (algo 1), on `threads` threads, `iters` times;
 * seconds (if not NULL, room for max(iters, 1)) gets each run's time. 0 ok, -1 bad arguments,
 * unsupported or OOM. */
const char *flex_igemm_kernel_at(int i);
int flex_conv2d_run(int variant, int algo, int threads, int n, int h, int w, int cin, int cout, int kh, int kw,
                    int stride_h, int stride_w, int dil_h, int dil_w, int pad_top, int pad_left, int oh, int ow,
                    const float *x, const float *filter, const float *bias, int act, float *y, int iters,
                    double *seconds);

/* ---- budget planning: the runtime describes a partition, Python's planner answers ---- */
/* The ways a layer can run under a budget (flex_kernel_desc.kernel, flex_step_plan.kernel). */
enum {
  FLEX_KERNEL_NODE = 0,     /* the node's own kernel; its raw constant (depthwise filter) in a slot */
  FLEX_KERNEL_GEMM = 1,     /* im2col/direct GEMM panels, sliced by output channels */
  FLEX_KERNEL_GEMM_ROWS = 2, /* the same panels whole, the im2col rows sliced */
  FLEX_KERNEL_WINOGRAD = 3, /* Winograd-transformed panels, sliced by output channels */
  FLEX_KERNEL_DIRECT = 4    /* the GEMM panels as a direct (implicit-GEMM) conv: no scratch at all */
};

typedef struct {
  int kernel;             /* FLEX_KERNEL_* */
  int slicing;            /* 0 none, 1 weights (output channels), 2 input (output rows) */
  uint64_t weight_bytes;  /* this kernel's packed weights (Winograd: transformed), or raw constant bytes */
  uint64_t scratch_bytes; /* its whole scratch (im2col tiles, Winograd transforms) */
  double compute_us, load_us;
  int out_channels, out_rows; /* what slicing 1 / 2 splits */
  int simd;               /* slices are multiples of this many channels (panel width) or rows */
} flex_kernel_desc;

typedef struct {
  int index;            /* step order = layer order */
  int node;             /* its TFLite node index (for messages) */
  int builtin;          /* TFLite builtin code (for names) */
  int n_inputs;
  const int *inputs;    /* tensor ids (activations and partition inputs) */
  int output;
  int n_kernels;
  const flex_kernel_desc *kernels;
} flex_layer_desc;

typedef struct {
  int id;
  uint64_t nbytes;      /* 0 for tensors TFLite owns (partition inputs/outputs) */
  int kind;             /* 0 activation, 1 input, 2 output */
} flex_tensor_desc;

typedef struct {
  int n_layers, n_tensors, threads;
  flex_layer_desc *layers;
  flex_tensor_desc *tensors;
  uint64_t budget_bytes;  /* the user's budget */
  uint64_t reserve_bytes; /* what it must also hold outside the arena (the arena gets the rest) */
  const char *isa;
} flex_graph_desc;

typedef struct {
  int layer, slice;
  int kernel;           /* FLEX_KERNEL_*: one the layer's description offered */
  int slicing;          /* 0 none, 1 weights (channels), 2 input (rows) */
  int64_t start, count; /* the slice's channels or rows */
  uint64_t w_offset, w_bytes; /* its weight slot (w_bytes 0: none) */
  int w_pinned;
  int w_new;            /* 1: this step is the first to use that slot's contents (a load) */
  uint64_t s_offset, s_bytes; /* its scratch slot */
  int dep;              /* after this step, the loader may load slots of steps <= dep */
} flex_step_plan;

typedef struct {
  int capacity;         /* steps the runtime allocated */
  int n_steps;          /* set by the planner (> capacity: call again with more room) */
  flex_step_plan *steps;
  int deps_start;
  uint64_t arena_bytes, min_budget_bytes;
  uint64_t *tensor_offsets; /* by index into the description's tensors */
  char error[512];
} flex_plan;

/* Implemented in Python (flexdelegate/_native.py): 0 ok, -1 infeasible budget, -2 other error.
 * The cdef declares it extern "Python+C"; C sees this prototype of the function cffi generates. */
int flex_plan_callback(flex_graph_desc *desc, flex_plan *plan); /* c-only */
#endif
