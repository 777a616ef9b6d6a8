/* The weight store: every packed weight a kernel needs comes from here. A blob already in
 * the cache file is used in place from its read-only mapping (no packing, no copy); a new
 * one is packed into memory and, at commit, written to the file and re-pointed into it. */
#ifndef FLEX_WEIGHTS_H
#define FLEX_WEIGHTS_H
#include <stddef.h>
#include <stdint.h>
#include "cache/cache_file.h"
#include "cache/hash.h"

/* One packed weight, shared by every node that packs the same source the same way. */
typedef struct fx_wref {
  int refs;
  const void *data;  /* in the mapping, or `owned` */
  void *owned;       /* packed in memory (cold, or no cache file) */
  size_t size;
  fx_cache_map *map; /* the mapping `data` points into (one reference) */
  uint64_t key_hi, key_lo;
  uint32_t algo, version;
  uint64_t checksum; /* of the blob in the file */
  int verified;      /* packed here, or its checksum checked at first use */
} fx_wref;

/* Packing algorithms (part of the cache key): family in the high byte, its parameter below. */
#define FX_ALGO_GEMM_PANEL(nr) (0x01000000u | (uint32_t)(nr))

typedef struct fx_store fx_store;
typedef void (*fx_pack_fn)(void *ctx, void *dst);

fx_store *fx_store_new(void);
void fx_store_free(fx_store *s);
/* Uses the cache file at `path` (NULL or "" = memory only) for what follows. */
void fx_store_open(fx_store *s, const char *path);
/* The packed weight with this key: from the file, from this load's pending blobs, or packed
 * now by pack(ctx, dst) into `size` bytes. NULL only when out of memory. */
fx_wref *fx_store_get(fx_store *s, const uint64_t key[2], uint32_t algo, uint32_t version, size_t size,
                      fx_pack_fn pack, void *ctx);
void fx_wref_unref(fx_wref *w);
/* Checks a mapped blob against its checksum (once: the load only validates the index, this
 * catches damage inside blobs before any result depends on them). Nonzero if damaged. */
int fx_wref_verify(fx_wref *w);
/* A private in-memory packing, outside any store (replacing a damaged blob). */
fx_wref *fx_wref_packed(size_t size, fx_pack_fn pack, void *ctx);
/* Nonzero if the mapping behind w was damaged under us (file truncated while mapped). */
int fx_wref_damaged(const fx_wref *w);
/* Adds what this load packed (and its fingerprint: the keys it asked for) to the file; re-points the
 * pending weights into the new mapping. Failures warn and leave them in memory. */
void fx_store_commit(fx_store *s);
/* Lets the kernel drop pages of a source weight it has hashed/packed, when they belong to a
 * read-only file mapping (the model), so validation does not leave the model resident. */
void fx_store_release_source(fx_store *s, const void *p, size_t len);

typedef struct {
  size_t blobs_mapped, bytes_mapped, blobs_packed, bytes_packed, blobs_deduped, bytes_deduped;
  int file_ok; /* the file was usable (read or written) */
} fx_store_stats;
void fx_store_get_stats(const fx_store *s, fx_store_stats *out);
const char *fx_store_path(const fx_store *s);
#endif
