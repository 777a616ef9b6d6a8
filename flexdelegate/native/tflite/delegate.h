/* Delegate-wide state shared by the plugin entry, Prepare and the partition kernels. */
#ifndef FLEX_DELEGATE_H
#define FLEX_DELEGATE_H
#include <pthread.h>
#include "flex_api.h"
#include "ir/graph.h"
#include "runtime/log.h"
#include "runtime/pool.h"
#include "abi.h"


/* Stock's requantization rounding per (op, int8 | uint8), as the internal option "_rounding"
 * states it (Python's load_flex passes quant_rounding.detect()'s findings). An op/type absent
 * from it is unknown: its nodes stay with the stock kernel (a plugin created without the
 * option, by a C/C++ host, knows none and never guesses). */
enum { FX_MAX_ROUNDINGS = 32 };
/* u8: 0 int8, 1 uint8, FX_ROUNDING_F32 a hybrid layer's float input (its rule a FLEX_STOCK_*) */
enum { FX_ROUNDING_F32 = 2 };
typedef struct {
  int builtin, u8;
  int rounding, tail_rounding, split8; /* fx_qs8_out's rules; split8: tail on the last C % 8 */
} fx_rounding_rule;
typedef struct {
  int n;
  fx_rounding_rule rules[FX_MAX_ROUNDINGS];
} fx_roundings;
/* The rule for (builtin, u8: 0, 1 or FX_ROUNDING_F32), or NULL: unknown. */
const fx_rounding_rule *fx_rounding_find(const fx_roundings *r, int builtin, int u8);

typedef struct {
  int num_threads;   /* <= 0: the interpreter's setting */
  double budget_mb;  /* 0: unlimited */
  char *cache_path;  /* NULL: default location; "": in memory */
  unsigned log;
  int profile;       /* time every delegated node (off the hot path otherwise) */
  int winograd;      /* FX_WINO_AUTO / ALL / OFF (conv/conv.h) */
  fx_roundings rounding; /* internal option "_rounding" */
} fx_options;
/* Parses one key/value into opts; NULL or a message naming the accepted values. */
const char *fx_parse_option(fx_options *opts, const char *key, const char *value);

typedef struct { int node; int builtin; char reason[120]; } fx_fallback;

/* What one Prepare found in one subgraph (one TfLiteContext). */
typedef struct {
  const void *ctx;
  int nodes_total, nodes_delegated, nodes_folded, partitions;
  int n_fallback;
  fx_fallback *fallback;
  int n_tensors;
  fx_blob **statics; /* by tensor index: values known at load (folded), or NULL */
  int n_parts;       /* live partition kernels (for per-op reports); not reset by Prepare */
  struct fx_partition **parts;
} fx_subgraph;

typedef struct fx_delegate {
  TfLiteDelegate base; /* first, so a TfLiteDelegate* is an fx_delegate* */
  /* The plugin's handle and every live partition kernel each hold a reference: the runtime
   * may destroy the delegate before the interpreter whose kernels still point at it
   * (interpreter exit, reference cycles, an explicit __del__). Atomic. */
  int refs;
  /* Guards the delegate's structure (subgraphs, partitions, their plans) against a
   * concurrent stats(), set_budget(), Prepare or kernel free (cffi and TFLite drop the GIL).
   * Recursive: Prepare's ReplaceNodeSubsetsWithDelegateKernels calls back into partition
   * init and, on failure, free. Taken before weights_lock, never after. */
  pthread_mutex_t state_lock;
  fx_options opts;
  int n_subgraphs;
  fx_subgraph *subgraphs;
  /* One pool per thread count its interpreters asked for (never freed while the delegate
   * lives: an interpreter at another count must not free the pool another one runs on);
   * pool = the last one handed out (stats()["threads"]). */
  fx_pool **pools;
  int n_pools;
  fx_pool *pool;
  struct fx_store *store; /* packed weights: cache file or memory */
  /* Invokes hold it shared; moving weights into the cache file once a background write is
   * done (fx_store_settle) holds it exclusive, so no kernel reads a copy being freed. */
  pthread_rwlock_t weights_lock;
  /* The last failed memory plan (a Prepare's or set_budget's; message empty: none since the
   * last plan that worked), for flex_last_error. Under state_lock. */
  flex_error last_error;
} fx_delegate;
/* Records (why non-NULL) or clears d's last planning failure; err may hold its fields. */
void fx_delegate_plan_outcome(fx_delegate *d, const char *why, const flex_error *err);

/* A delegate with these options (taking over opts->cache_path, also on failure), one reference
 * held; NULL when out of memory. */
fx_delegate *fx_delegate_new(fx_options *opts);
fx_delegate *fx_delegate_ref(fx_delegate *d);
/* Drops a reference; the last one frees the delegate (waiting for a background write). */
void fx_delegate_unref(fx_delegate *d);

/* Settles the store's background commit: waiting for it (wait) or only if it is done. */
void fx_delegate_settle(fx_delegate *d, int wait);

TfLiteStatus fx_delegate_prepare(TfLiteContext *ctx, TfLiteDelegate *d);
fx_subgraph *fx_find_subgraph(fx_delegate *d, const void *ctx);
/* The record of subgraph ctx, added on its first Prepare (NULL when out of memory). */
fx_subgraph *fx_subgraph_for(fx_delegate *d, const void *ctx);
void fx_subgraph_clear(fx_subgraph *sg);
/* The pool for `threads` workers, made on first use (NULL when out of memory). */
fx_pool *fx_delegate_pool(fx_delegate *d, int threads);
TfLiteRegistration fx_partition_registration(void);

/* One delegated node's report (for stats()["ops"] and the profiler). */
typedef struct {
  int node, builtin;
  char kernel[96];
  double flops;        /* per run */
  uint64_t runs;       /* runs timed (0 unless profiling) */
  double time_us;      /* mean per run */
  int slices;          /* steps it runs in under a budget (1 otherwise) */
} fx_op_report;
int fx_partition_n_ops(const struct fx_partition *p);
/* Lays out the partition's memory again for the delegate's current budget (set_budget between
 * invokes); NULL ok, else why (err may hold the planner's account, e.g. the minimum budget). */
const char *fx_partition_replan(struct fx_partition *p, flex_error *err);
/* The GEMM form of its Winograd convs, for a budget plan to choose (see ir/graph.h
 * fx_pack_gemm_forms; mapped_only: those the cache file holds): how many were added, -1 when out
 * of memory. */
int fx_partition_add_gemm_forms(struct fx_partition *p, int mapped_only);
/* The memory plan of a partition: arena bytes, minimum budget (0 unless budgeted), steps per
 * invoke; returns its planner's name. */
const char *fx_partition_memory(const struct fx_partition *p, size_t *arena, size_t *min_budget, int *steps);
void fx_partition_op(const struct fx_partition *p, int i, fx_op_report *out);

/* --- translation of TFLite nodes into the IR (ops.c) --- */
typedef struct {
  TfLiteContext *ctx;
  fx_subgraph *sg;
  int *local;           /* TFLite tensor index -> local id, -1 if not yet added */
  const fx_shape *shapes; /* optional per-tensor shape overrides (propagated at Prepare) */
  int allow_const_output; /* kernel init re-translates shape-derived folded nodes */
  const fx_roundings *rounding; /* the delegate's; NULL: none known */
} fx_translate;
/* Adds node `index` to g. NULL on success, else why it cannot be delegated. */
const char *fx_translate_node(fx_translate *tr, fx_graph *g, int index, const TfLiteNode *node,
                              const TfLiteRegistration *reg);
/* Why the stock kernel of `builtin` would refuse the node at Prepare, or NULL (stock.c); the
 * input counts it accepts are checked first, from k_builtins (ops.c). */
const char *fx_tfl_stock_refuses(const TfLiteContext *ctx, int builtin, const TfLiteNode *node);
/* Records that node `node` stays with TFLite, and why (partition.c). */
void fx_add_fallback(fx_subgraph *sg, int node, int builtin, const char *why);
/* The "never slower to turn on" rule (islands.c): unclaims every island of claimed nodes with
 * less work than FLEX_ISLAND_MIN_FLOPS when some node stays with stock. produced_at: the plan
 * position writing each tensor (-1: none); flops: each plan position's work. 0, -1 on OOM. */
int fx_drop_small_islands(TfLiteContext *ctx, const TfLiteIntArray *plan, fx_subgraph *sg, const int *produced_at,
                          const double *flops, TfLiteIntArray *claimed);
/* Folds DEQUANTIZE / DENSIFY of constants into a blob; NULL ok (blob set) or a reason. */
const char *fx_fold_special(fx_translate *tr, const TfLiteNode *node, int builtin, fx_blob **out);
/* Int8 weights of a hybrid CONV / DEPTHWISE / FC / BATCH_MATMUL (float activations) as a
 * deferred float32 dequantize fold of model constant `idx`; NULL ok (blob set) or a reason. */
const char *fx_fold_hybrid_weights(fx_translate *tr, int idx, fx_blob **out);
const char *fx_builtin_name(int builtin);
int fx_tfl_dtype(TfLiteType t);
#endif
