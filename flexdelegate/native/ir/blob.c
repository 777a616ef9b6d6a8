/* Element sizes and blobs (blob.h). */
#include <stdlib.h>
#include <string.h>
#include "blob.h"

size_t fx_dtype_size(int dtype) {
  switch (dtype) {
    case FX_F32: case FX_I32: return 4;
    case FX_I64: return 8;
    case FX_F16: case FX_I16: return 2;
    case FX_U8: case FX_I8: case FX_BOOL: return 1;
    default: return 0;
  }
}

/* 64 bytes: a cache line, and a whole AVX-512 vector. */
#define FX_BLOB_ALIGN 64

fx_blob *fx_blob_new(int dtype, const fx_shape *shape) {
  fx_blob *b = calloc(1, sizeof *b);
  if (!b) return NULL;
  b->refs = 1;
  b->dtype = dtype;
  b->shape = *shape;
  b->bytes = fx_shape_numel(shape) * fx_dtype_size(dtype);
  size_t alloc = (b->bytes + FX_BLOB_ALIGN - 1) / FX_BLOB_ALIGN * FX_BLOB_ALIGN;
  b->data = aligned_alloc(FX_BLOB_ALIGN, alloc ? alloc : FX_BLOB_ALIGN);
  if (!b->data) { free(b); return NULL; }
  memset(b->data, 0, alloc ? alloc : FX_BLOB_ALIGN);
  return b;
}

static void free_recipe(fx_fold_recipe *r) {
  if (!r) return;
  free(r->params);
  free(r);
}

fx_blob *fx_blob_new_deferred(int dtype, const fx_shape *shape, fx_fold_recipe *recipe) {
  fx_blob *b = calloc(1, sizeof *b);
  if (!b) { free_recipe(recipe); return NULL; }
  b->refs = 1;
  b->dtype = dtype;
  b->shape = *shape;
  b->bytes = fx_shape_numel(shape) * fx_dtype_size(dtype);
  b->deferred = recipe;
  return b;
}

void *fx_blob_compute(const fx_blob *b) {
  size_t alloc = (b->bytes + FX_BLOB_ALIGN - 1) / FX_BLOB_ALIGN * FX_BLOB_ALIGN;
  void *d = aligned_alloc(FX_BLOB_ALIGN, alloc ? alloc : FX_BLOB_ALIGN);
  if (d) b->deferred->make(b->deferred->params, b->deferred->src, d);
  return d;
}

void *fx_blob_data(fx_blob *b) {
  if (!b->data && b->deferred) b->data = fx_blob_compute(b);
  return b->data;
}

fx_blob *fx_blob_ref(fx_blob *b) {
  if (b) b->refs++;
  return b;
}

void fx_blob_unref(fx_blob *b) {
  if (b && --b->refs == 0) {
    free(b->data);
    free_recipe(b->deferred);
    free(b);
  }
}
