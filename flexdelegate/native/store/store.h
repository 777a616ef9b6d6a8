/* The weight store: every packed weight a kernel needs comes from here. A blob already in
 * the cache file is used in place from its read-only mapping (no packing, no copy). A new one
 * stays pending until commit, which packs it into memory and writes the file on a thread
 * (settle then points it into the file), or, for budget plans, packs it into the file before
 * returning. */
#ifndef FLEX_WEIGHTS_H
#define FLEX_WEIGHTS_H
#include <stddef.h>
#include <stdint.h>
#include "cache_file.h"
#include "flex_api.h"
#include "hash.h"

/* Packs parts [lo, hi) of a blob (its panels: equal-sized, contiguous, in order) into dst;
 * 0, or -1 when out of memory. A budgeted cold load packs a few parts at a time, reading their
 * model bytes through the file: src is then a copy of them (from part lo's first byte, as
 * fx_pack_desc.src_part says), else NULL (read the model's own). */
typedef int (*fx_pack_fn)(void *ctx, const void *src, void *dst, size_t lo, size_t hi);

/* How to pack a blob that the cache file lacks, and the model bytes it reads. */
typedef struct {
  fx_pack_fn pack;
  const void *ctx; /* copied (ctx_size bytes); what it points to must live until commit */
  size_t ctx_size;
  size_t n_parts;  /* the blob is n_parts equal parts (size / n_parts bytes each) */
  int whole;       /* pack all parts in one call (its source is computed whole, e.g. a fold) */
  const void *src; /* the model bytes it reads: part i reads [i, i + 1) * src_part bytes of them */
  size_t src_len, src_part;
} fx_pack_desc;

/* One packed weight, shared by every node that packs the same source the same way. */
typedef struct fx_wref {
  int refs;
  const void *data;  /* in a mapping, or `owned`; NULL while pending */
  void *owned;       /* packed in memory (no cache file, or a damaged blob replaced) */
  size_t size;
  fx_cache_map *map; /* the mapping `data` points into (one reference) */
  uint64_t key_hi, key_lo;
  uint32_t algo, version;
  uint64_t checksum; /* of the blob in the file */
  int verified;      /* packed here, or its checksum checked at first use */
  /* While pending: how to pack it, and the model bytes to release from RSS afterwards
   * (desc.ctx is this wref's own copy). */
  fx_pack_desc desc;
} fx_wref;

/* Packing algorithms (part of the cache key): family in the high byte, its parameter below. */
#define FX_ALGO_GEMM_PANEL(nr) (((uint32_t)FLEX_PACK_GEMM_PANELS << 24) | (uint32_t)(nr))
#define FX_ALGO_WINOGRAD(tile, nr) (((uint32_t)FLEX_PACK_WINOGRAD << 24) | ((uint32_t)(tile) << 8) | (uint32_t)(nr))
/* int8 panels (kernels/quant/pack.h): GEMM / IGEMM of NR channels, k-groups of KR, activation
 * offset (VNNI's 128), k-groups padded to a multiple of kg_align (AMX: 16; 0 or 1: none, which
 * keeps the ids of the variants before it); depthwise of CT channels. */
#define FX_ALGO_QS8_GEMM(nr, kr, a_offset, kg_align)                                              \
  (((uint32_t)FLEX_PACK_QS8_GEMM << 24) | ((uint32_t)((kg_align) > 1 ? (kg_align) : 0) << 17) |      \
   ((uint32_t)((a_offset) != 0) << 16) | ((uint32_t)(kr) << 8) | (uint32_t)(nr))
#define FX_ALGO_QS8_DW(ct) (((uint32_t)FLEX_PACK_QS8_DW << 24) | (uint32_t)(ct))
/* A hybrid layer's int8 panels (float activations): the int8 GEMM's layout and parameters,
 * bias 0 and the weight sums where the requantization goes (quant/pack.h). */
#define FX_ALGO_QS8_HYBRID(nr, kr, a_offset, kg_align) \
  ((FX_ALGO_QS8_GEMM(nr, kr, a_offset, kg_align) & 0xFFFFFFu) | ((uint32_t)FLEX_PACK_QS8_HYBRID << 24))

typedef struct fx_store fx_store;

fx_store *fx_store_new(void);
void fx_store_free(fx_store *s);
/* Uses the cache file at `path` (NULL or "" = memory only) for what follows. model_ptr: any
 * constant of the model being loaded; when it lies in a file mapping, that file's identity
 * (dev, inode, size, times) lets a later load of the unchanged file skip hashing weights. */
void fx_store_open(fx_store *s, const char *path, const void *model_ptr, uint32_t machine);
/* The next key this load asked for last time, when the model file is unchanged since (its
 * identity matches a record): fills key and returns 1 if algo and size agree; 0 = hash it. */
int fx_store_replay(fx_store *s, uint32_t algo, uint32_t version, size_t size, uint64_t key[2]);
/* The packed weight with this key: from the file, from this load's pending blobs, or a new
 * pending one that commit packs as `d` says. The model bytes it reads (d->src) are dropped
 * from RSS once packed (or at once, for a blob found in the file). NULL on OOM. */
fx_wref *fx_store_get(fx_store *s, const uint64_t key[2], uint32_t algo, uint32_t version, size_t size,
                      const fx_pack_desc *d);
void fx_wref_unref(fx_wref *w);
/* Takes a pending blob back out of the next commit (its caller still holds its reference):
 * asked for only in case the file had it. */
void fx_store_forget(fx_store *s, fx_wref *w);
/* Before a weight's first use: checks a mapped blob against its checksum (once: the load
 * validates only the index; this catches damage inside blobs before any result depends on
 * them); unmapped: through the file (pread), for weights a budget plan streams, whose pages
 * must not become resident. A blob that fails is dropped from the file and *w replaced by a
 * packing in memory from d, with a warning. 0 ok, -1 out of memory (or packing failed). */
int fx_wref_check(fx_wref **w, const fx_pack_desc *d, int unmapped);
/* If the cache mapping behind *w was damaged under us (store/sigbus.h: truncated, rewritten
 * in place), replaces *w by a packing in memory from d (one warning per process): 1 repaired,
 * 0 nothing to do, -1 out of memory. */
int fx_wref_repair(fx_wref **w, const fx_pack_desc *d);
/* Hashes model bytes into h, read through the file behind their read-only mapping a chunk at a
 * time (else in place, each chunk's pages dropped from RSS once hashed), so validating a
 * 400 MB weight does not make it resident. */
void fx_store_hash(fx_store *s, fx_hasher *h, const void *p, size_t len);
/* Drops the model's pages from RSS (its read-only file mapping, which the runtime faults back
 * in from the file if it reads it again): what the runtime touched building the interpreter
 * (a weight's length prefix maps its whole folio, 2 MB) before a budgeted load starts. */
void fx_store_release_model(fx_store *s);
/* Packs everything pending: into the cache file (adding the load's fingerprint: the keys it
 * asked for), else into memory with a warning. After it, every wref has data. background:
 * pack into memory now and write the file on a thread (the load does not wait for the disk);
 * fx_store_settle then moves the weights into the file. Otherwise (a budgeted load) the file
 * is written a few MB of panels at a time, the model bytes each read dropped after it, so
 * building the file needs no more memory than that (FX_WRITE_CHUNK); and when there is no
 * cache path or it cannot be written, the file is a private one under $TMPDIR (or /tmp),
 * unlinked once mapped, so streaming still has a file to read from (stats: backing). */
void fx_store_commit(fx_store *s, int background);
/* Packed weights asked for since the last commit that the cache file does not hold yet. */
size_t fx_store_pending(const fx_store *s);
/* Nonzero when a background commit has finished and waits to be settled. */
int fx_store_settling(const fx_store *s);
/* Finishes a background commit: the weights it wrote point into the file and their memory
 * copies are freed. Without `wait`, only if the writer is done. Callers make sure no kernel is
 * reading weights meanwhile. */
void fx_store_settle(fx_store *s, int wait);

/* Where the packed weights live after a commit. */
enum { FX_BACKING_MEMORY = 0, FX_BACKING_CACHE_FILE = 1, FX_BACKING_TEMP_FILE = 2 };

typedef struct {
  size_t blobs_mapped, bytes_mapped, blobs_packed, bytes_packed, blobs_deduped, bytes_deduped;
  size_t keys_replayed; /* weights not hashed: the model file is unchanged since a recorded load */
  int file_ok; /* the file was usable (read or written) */
  int writable; /* the file may be (re)written: a read-only cache is only read, another file left alone */
  int backing;     /* FX_BACKING_*: MEMORY only when something was packed and no file took it */
  int temp_tmpfs;  /* the temp file is on tmpfs: RAM, though outside this process's RSS */
  char temp_dir[256];
} fx_store_stats;
void fx_store_get_stats(const fx_store *s, fx_store_stats *out);
const char *fx_store_path(const fx_store *s);
/* Nonzero when the store has a cache file it may write (so packing more forms costs no memory). */
int fx_store_writable(const fx_store *s);
#endif
