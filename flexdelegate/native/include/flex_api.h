/* The native module's Python-facing API, and the one statement of everything the C runtime and
 * Python share: enums, the option table, limits and message sizes. Fed verbatim to cffi's cdef
 * (so: plain declarations, and constants as `enum { NAME = value };`, which Python reads as
 * flexdelegate._native.lib.NAME); lines starting with '#' are dropped for the cdef. */
#ifndef FLEX_API_H
#define FLEX_API_H
#include <stddef.h>
#include <stdint.h>

/* ---- limits and sizes ---- */
enum {
  FLEX_BUDGET_MAX_MB = 10000000, /* the largest budget accepted: 10 TB, far past any machine, exact in a size_t */
  FLEX_THREADS_MAX = 256,        /* num_threads: 1..FLEX_THREADS_MAX, or -1 for the interpreter's */
  FLEX_MSG_LEN = 512,            /* an error message, NUL included */
  FLEX_OP_NAME_LEN = 64,         /* a TFLite builtin operator's name, NUL included */
  FLEX_CACHE_PATH_MAX = 4096,    /* a model path a cache file records, NUL included (Linux PATH_MAX) */
  /* the least arithmetic (flops at load, of convolutions, FC, BATCH_MATMUL, attention, pooling)
   * an island of delegated nodes needs when the rest of the subgraph stays with stock
   * (tflite/islands.c: the "never slower to turn on" rule) */
  FLEX_ISLAND_MIN_FLOPS = 1000000
};

/* Fused activations (TFLite's first four, then the curves the delegate fuses into a conv,
 * FC or depthwise output: a following LOGISTIC, or LOGISTIC + MUL by the same input; and a
 * GELU after a FULLY_CONNECTED, exact or tanh form). */
enum {
  FLEX_ACT_NONE = 0, FLEX_ACT_RELU = 1, FLEX_ACT_RELU_N1_TO_1 = 2, FLEX_ACT_RELU6 = 3, FLEX_ACT_TANH = 4,
  FLEX_ACT_SIGMOID = 5, FLEX_ACT_SWISH = 6, FLEX_ACT_GELU = 7, FLEX_ACT_GELU_TANH = 8
};

/* The internal option "_rounding" (quant_rounding.py -> tflite/options.c): per (builtin, type),
 * the stock arithmetic the delegate reproduces. Requantizing layers: a FLEX_RQ_* rule
 * (kernels/quant/requant.h says what each computes); QUANTIZE / DEQUANTIZE to or from float:
 * FLEX_QUANT_AWAY (TFLite's scalar loop) or FLEX_QUANT_RECIP_EVEN (its NEON loop, ir/exec.c);
 * the element-wise ops ADD / MUL / MEAN: FLEX_STOCK_* (kernels/qs8-ops/qs8-ops.h); the
 * dynamic-range ("hybrid") CONV_2D and FULLY_CONNECTED's quantization of their float input,
 * "OP.f32": FLEX_STOCK_* too (kernels/quant/dynamic.h). */
enum { FLEX_RQ_AWAY = 0, FLEX_RQ_UP = 1, FLEX_RQ_SINGLE = 2, FLEX_RQ_AWAY_SAT = 3 };
enum { FLEX_QUANT_AWAY = 0, FLEX_QUANT_RECIP_EVEN = 1 };
enum { FLEX_STOCK_PORTABLE = 0, FLEX_STOCK_NEON = 1 };

/* The memory planners' alignment: every arena block starts and ends on a multiple of it
 * (cache line, AVX-512 vector); the Python planner and the C plan check share it. */
enum { FLEX_ARENA_ALIGN = 64 };

/* ---- the TFLite external-delegate plugin (the runtime finds these with dlsym) ---- */
/* The delegate is opaque here: Python only passes the pointer back. */
void *tflite_plugin_create_delegate(char **keys, char **values, size_t n,
                                    void (*report_error)(const char *));
void tflite_plugin_destroy_delegate(void *delegate);

/* ---- options ---- */
enum { FLEX_OPTION_TEXT = 0, FLEX_OPTION_NUMBER = 1 };
typedef struct {
  const char *name;
  int kind;         /* FLEX_OPTION_NUMBER: Python refuses a bool for it; TEXT: any string */
  const char *help; /* what it accepts: a bad value is refused as "invalid NAME: expected HELP" */
} flex_option;
/* The delegate's options, the i-th (README order), NULL past the end. */
const flex_option *flex_option_at(int i);
/* Validates one option as the plugin would; returns NULL if fine, else a message. */
const char *flex_check_option(const char *key, const char *value);
/* The one budget check, for the option and set_budget: NULL if mb is a number of megabytes
 * in [0, FLEX_BUDGET_MAX_MB] (0 = unlimited), else a message. */
const char *flex_check_budget(double mb);

/* The plain library's refusal of a budget (plain/no_python.c, tflite/plugin.c). */
#define FLEX_PLAIN_NO_BUDGET "a memory budget needs the Python planner: libflexdelegate.so (no Python) runs without one; drop the budget option, or load flexdelegate.library_path() from a Python process"

/* Packing algorithm families: the high byte of a cache blob's algo (store/store.h builds the
 * rest: GEMM panels = nr; Winograd = tile << 8 | nr; int8 GEMM = kg_align << 17 | a_offset << 16 |
 * kr << 8 | nr;
 * int8 depthwise = ct; a hybrid layer's int8 GEMM panels, as int8 GEMM's). `flexdelegate cache
 * info` names them. */
enum { FLEX_PACK_GEMM_PANELS = 1, FLEX_PACK_WINOGRAD = 2, FLEX_PACK_QS8_GEMM = 3, FLEX_PACK_QS8_DW = 4,
       FLEX_PACK_QS8_HYBRID = 5 };

/* ---- a running delegate ---- */
/* Why a call failed; for an infeasible budget also the smallest feasible one and the node it is
 * bottlenecked on. */
typedef struct {
  char message[FLEX_MSG_LEN];
  double min_budget_mb;       /* > 0: the budget was infeasible, this is the smallest that runs */
  int node;                   /* the bottleneck's TFLite node (-1: none) */
  char op[FLEX_OP_NAME_LEN];  /* and its operator */
} flex_error;

/* Statistics of the last Prepare as JSON, written into buf (NUL-terminated when cap > 0).
 * Returns the full length, so a caller can retry with a bigger buffer. */
size_t flex_stats_json(void *delegate, char *buf, size_t cap);
/* Re-plans every partition for a new budget (MB; 0 = unlimited) between invokes. 0 ok; -1 with
 * err filled (an infeasible budget: the old one stays in force). */
int flex_set_budget(void *delegate, double mb, flex_error *err);
/* The last memory plan that failed (an infeasible budget at an interpreter's Prepare, or a
 * refused set_budget), cleared by the next plan that works: 1 with err filled, else 0. */
int flex_last_error(void *delegate, flex_error *err);

/* The weight cache's 64-bit content hash (cache/FORMAT.md), for the Python cache tools. */
uint64_t flex_hash64(const void *data, size_t len, uint64_t seed);
/* The cache loader's verdict on the file at path: 0 valid (a load would map it), 1 missing,
 * -1 invalid or unreadable, with the reason in msg (NUL-terminated). */
int flex_cache_check(const char *path, char *msg, size_t msg_len);

/* ---- budget planning: the runtime describes a partition, Python's planner answers ---- */
/* The ways a layer can run under a budget (flex_kernel_desc.kernel, flex_step_plan.kernel). */
enum {
  FLEX_KERNEL_NODE = 0,     /* the node's own kernel; its raw constant (depthwise filter) in a slot */
  FLEX_KERNEL_GEMM = 1,     /* im2col/direct GEMM panels, sliced by output channels */
  FLEX_KERNEL_GEMM_ROWS = 2, /* the same panels whole, the im2col rows sliced */
  FLEX_KERNEL_WINOGRAD = 3, /* Winograd-transformed panels, sliced by output channels */
  FLEX_KERNEL_DIRECT = 4,   /* the GEMM panels as a direct (implicit-GEMM) conv: no scratch at all */
  FLEX_KERNEL_WINOGRAD_RT = 5, /* the GEMM panels as Winograd, filters transformed at run time (scratch
                                * only), sliced by output channels; each slice transforms the input again */
  FLEX_KERNEL_BAND = 6 /* a layer chain band by band (ir/band.h), one layer to the planner: every member's
                        * weights whole, side by side in one slot; its band buffers as scratch; unsliced */
};
/* How a kernel slices a layer (flex_kernel_desc.slicing, flex_step_plan.slicing). */
enum { FLEX_SLICE_NONE = 0, FLEX_SLICE_WEIGHTS = 1 /* output channels */, FLEX_SLICE_INPUT = 2 /* output rows */ };
/* The tensors a partition's layers touch (flex_tensor_desc.kind). */
enum { FLEX_TENSOR_ACTIVATION = 0, FLEX_TENSOR_INPUT = 1, FLEX_TENSOR_OUTPUT = 2 };

typedef struct {
  int kernel;             /* FLEX_KERNEL_* */
  int slicing;            /* FLEX_SLICE_* */
  uint64_t weight_bytes;  /* this kernel's packed weights (Winograd: transformed), or raw constant bytes */
  uint64_t scratch_bytes; /* its whole scratch (im2col tiles, Winograd transforms) */
  double compute_us, load_us;
  int out_channels, out_rows; /* what FLEX_SLICE_WEIGHTS / FLEX_SLICE_INPUT split */
  int simd;               /* slices are multiples of this many channels (panel width) or rows */
  double slice_us;        /* what each extra slice costs beyond the planner's flat per-slice cost */
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
  int kind;             /* FLEX_TENSOR_* */
} flex_tensor_desc;

typedef struct {
  int n_layers, n_tensors, threads;
  flex_layer_desc *layers;
  flex_tensor_desc *tensors;
  uint64_t budget_bytes;  /* the user's budget */
  uint64_t reserve_bytes; /* what it must also hold outside the arena (the arena gets the rest) */
  const char *isa;
  int attempt;            /* 0, or which retry of the same plan (a layer chain turned off since) */
} flex_graph_desc;

typedef struct {
  int layer, slice;
  int kernel;           /* FLEX_KERNEL_*: one the layer's description offered */
  int slicing;          /* FLEX_SLICE_* */
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
  flex_error error;     /* when it fails */
} flex_plan;

/* Implemented in Python (flexdelegate/_native.py): 0 ok, -1 infeasible budget, -2 other error.
 * The cdef declares it extern "Python+C"; C sees this prototype of the function cffi generates. */
int flex_plan_callback(flex_graph_desc *desc, flex_plan *plan); /* c-only */
#endif
