/* The packed-weight cache file (flexdelegate/cache/FORMAT.md): validated read-only mappings
 * and whole-file replacement under a lock. Nothing here knows about TFLite or kernels. */
#ifndef FLEX_CACHE_FILE_H
#define FLEX_CACHE_FILE_H
#include <stddef.h>
#include <stdint.h>

#define FX_CACHE_PAGE 4096

typedef struct {
  uint64_t key_hi, key_lo;
  uint32_t algo, layout_version;
  uint64_t offset, size, checksum;
  uint64_t zero[2];
} fx_cache_entry;

/* One load a file served: its fingerprint (hash of the keys it asked for), the identity of the
 * model file it read (dev = ino = 0 when unknown; size = times = 0 when too recent to trust,
 * which is never replayed), and the keys it asked
 * for in order, so a later load of the same unchanged file can skip hashing the weights; and
 * where that file was (its path as the load saw it, for `cache info`; path_len 0: unknown). */
typedef struct {
  uint64_t fingerprint, dev, ino, size;
  int64_t mtime_ns, ctime_ns;
  uint64_t first_key;
  uint32_t n_keys, machine; /* machine: packing family of the loader (keys differ per ISA) */
  uint64_t path_offset;     /* into the file's path strings */
  uint32_t path_len, zero;  /* path_len: bytes before its NUL */
} fx_cache_model;

typedef struct {
  uint64_t key_hi, key_lo;
  uint32_t algo, layout_version;
  uint64_t size;
} fx_cache_keyref;

/* A validated, read-only, shared mapping of one cache file version (refcounted: packed
 * weights in use keep it alive after a newer file replaces it). */
typedef struct fx_cache_map {
  int refs;
  int fd; /* the mapped file, open for the map's life: streamed reads (pread) see the same
           * bytes as the mapping even once the path is deleted, pruned or replaced */
  const uint8_t *base;
  size_t size;
  const fx_cache_entry *entries; /* sorted */
  uint64_t n_entries;
  const fx_cache_model *models;  /* sorted by (fingerprint, dev, ino) */
  uint64_t n_models;
  const fx_cache_keyref *keys;   /* the models' key lists */
  uint64_t n_keys;
  const char *paths;             /* the models' paths, NUL-terminated strings */
  uint64_t paths_bytes;
  uint64_t blob_bytes, dedup_saved;
} fx_cache_map;

/* Whose file is at a cache path. Only a missing path or a file that starts with the cache
 * magic (a cache of any version, damaged or not) may be (re)written: anything else (the model
 * itself, a text file, a symlink, a directory, a FIFO, a file we may not read) is someone
 * else's and is never replaced. */
typedef enum { FX_CACHE_ABSENT, FX_CACHE_OURS, FX_CACHE_FOREIGN } fx_cache_owner;
/* FX_CACHE_FOREIGN fills why (what the path is). Never blocks, never follows a symlink. */
fx_cache_owner fx_cache_owner_of(const char *path, char *why, size_t why_len);

/* Maps `path` if it is a valid cache file. Returns NULL when it is missing (msg empty) or
 * unusable (msg says why: the caller warns and rebuilds). */
fx_cache_map *fx_cache_open(const char *path, char *msg, size_t msg_len);
fx_cache_map *fx_cache_map_ref(fx_cache_map *m);
void fx_cache_map_unref(fx_cache_map *m);
const fx_cache_entry *fx_cache_find(const fx_cache_map *m, uint64_t hi, uint64_t lo, uint32_t algo,
                                    uint32_t version);
/* The record of a load of exactly this model file (same dev, inode, size, times) made on a
 * machine packing the same way, or NULL. */
const fx_cache_model *fx_cache_find_file(const fx_cache_map *m, const fx_cache_model *id);
/* The model path record r of m holds ("" when none). */
const char *fx_cache_model_path(const fx_cache_map *m, const fx_cache_model *r);
/* The file already holds exactly this record, model path included (so a load adding nothing
 * need not write; a model seen at a new path is written again: "path as last seen"). */
int fx_cache_has_record(const fx_cache_map *m, const fx_cache_model *r, const char *model_path);

/* A blob a writer adds: its bytes, or a function that packs its parts [lo, hi) (n_parts
 * equal, contiguous parts; `chunk` parts at most per call) into a buffer the writer pwrites
 * and reuses, so a blob is never whole in memory unless chunk >= n_parts. */
typedef struct {
  uint64_t key_hi, key_lo;
  uint32_t algo, layout_version;
  const void *data;
  size_t size;
  int (*pack)(void *ctx, void *dst, size_t lo, size_t hi); /* 0, or -1 when out of memory */
  void *ctx;
  size_t n_parts, chunk;
} fx_cache_blob;

/* Under an exclusive lock on <path>.lock (taken only when the path is ours or missing, and
 * checked again under it): re-reads the current file, and if it lacks any of `blobs` or the
 * model record (model->n_keys keys; model_path: the model file's absolute path, NULL or ""
 * when unknown; its path_offset and path_len are ignored), writes a new version (temp + fsync + rename) holding the
 * old blobs and records, the missing blobs and this record (replacing one with the same
 * fingerprint, dev and inode). Returns the mapping of the file now at `path` (which holds
 * every blob), or NULL with msg set (disk full, unwritable directory, a file that is not ours
 * at the path, ...). dedup_bytes: what this model asked for that was already stored. */
fx_cache_map *fx_cache_commit(const char *path, const fx_cache_blob *blobs, size_t n,
                              const fx_cache_model *model, const fx_cache_keyref *keys, const char *model_path,
                              uint64_t dedup_bytes, char *msg, size_t msg_len);
/* The checksum (fx_hasher, seed 0) of size bytes at offset in m's file, read through pread a
 * chunk at a time so that no page of the mapping becomes resident (it counts against the
 * budget). 0, or -1 if the file ends before (as damaged) or memory runs out. */
int fx_cache_read_sum(const fx_cache_map *m, uint64_t offset, uint64_t size, uint64_t *sum);
/* Removes the blob with this key, which failed its checksum in `seen`, from the file now at the
 * path `seen` was opened from (the next writable load packs and stores it again instead of
 * repacking it on every load forever): when that is still the same file, or a newer version
 * whose copy of the blob is damaged too (a writer carried the damaged bytes over). 0 if
 * dropped. */
int fx_cache_drop_blob(const fx_cache_map *seen, uint64_t hi, uint64_t lo, uint32_t algo, uint32_t version);
#endif
