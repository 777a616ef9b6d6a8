/* The IR's element types and its refcounted constant buffers (blobs): folded values, and
 * deferred folds a conv packs its weights from (conv/ reads them through this header alone). */
#ifndef FLEX_BLOB_H
#define FLEX_BLOB_H
#include <stddef.h>
#include "kernels/ops/ops.h"

/* Element types: TfLiteType values for the ones we handle. */
enum fx_dtype { FX_F32 = 1, FX_I32 = 2, FX_U8 = 3, FX_I64 = 4, FX_BOOL = 6, FX_I16 = 7,
                FX_I8 = 9, FX_F16 = 10 };
size_t fx_dtype_size(int dtype);

/* A fold computed on first use: DEQUANTIZE of a model constant. Packed weights derived from
 * it are keyed by its source bytes and parameters, not its value, so a warm load, which finds
 * them in the cache, never computes it (no float32 copy of an fp16/int8 model in memory). */
typedef struct {
  void (*make)(const void *params, const void *src, void *dst); /* cannot fail */
  const void *src;   /* the model bytes it reads (live as long as the interpreter) */
  size_t src_len;
  void *params;      /* owned; hashed with src into derived keys */
  size_t params_len;
} fx_fold_recipe;

/* A refcounted immutable buffer: folded constants (dequantized / densified weights,
 * static shape values) and packed weights. Data is 64-byte aligned. */
typedef struct fx_blob {
  int refs;
  int shape_dependent; /* derived from a SHAPE: re-evaluated when input shapes change */
  int dtype;
  fx_shape shape;
  size_t bytes;
  void *data;              /* NULL until a deferred blob is first used: read it with fx_blob_data */
  fx_fold_recipe *deferred; /* how to compute it, or NULL */
} fx_blob;
fx_blob *fx_blob_new(int dtype, const fx_shape *shape);  /* zero-filled; NULL on OOM */
/* A blob computed by `recipe` (taken over, also on failure) when first read. */
fx_blob *fx_blob_new_deferred(int dtype, const fx_shape *shape, fx_fold_recipe *recipe);
/* The blob's data, computing a deferred one now; NULL on OOM. */
void *fx_blob_data(fx_blob *b);
/* A deferred blob's value in a fresh buffer the caller frees, the blob left as it is (packing
 * needs the value once, not for the blob's lifetime); NULL on OOM. */
void *fx_blob_compute(const fx_blob *b);
fx_blob *fx_blob_ref(fx_blob *b);
void fx_blob_unref(fx_blob *b);
#endif
