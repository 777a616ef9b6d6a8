#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <time.h>
#include <unistd.h>
#include "cache/sigbus.h"
#include "delegate.h"
#include "weights.h"

typedef struct { uintptr_t lo, hi; uint64_t dev, ino; char *path; } ro_range;

struct fx_store {
  char *path;
  fx_cache_map *map;
  fx_wref **pending;
  size_t n_pending, cap_pending;
  fx_store_stats stats;
  ro_range *ro;     /* read-only file mappings of this process (the model among them) */
  size_t n_ro;
  fx_hasher model;  /* fingerprint of this load: every key it asked for, in order */
  fx_cache_keyref *keys; /* ... and the keys themselves, for this load's record */
  size_t n_keys, cap_keys;
  fx_cache_model id;     /* the model file's identity (dev = ino = 0: unknown) */
  const fx_cache_keyref *replay; /* a recorded load of the same unchanged file */
  size_t n_replay, replay_pos;
};

fx_store *fx_store_new(void) { return calloc(1, sizeof(fx_store)); }

static void drop_pending(fx_store *s) {
  for (size_t i = 0; i < s->n_pending; i++) fx_wref_unref(s->pending[i]);
  s->n_pending = 0;
}

static void free_ro(fx_store *s) {
  for (size_t i = 0; i < s->n_ro; i++) free(s->ro[i].path);
  free(s->ro);
  s->ro = NULL;
  s->n_ro = 0;
}

void fx_store_free(fx_store *s) {
  if (!s) return;
  drop_pending(s);
  free(s->pending);
  fx_cache_map_unref(s->map);
  free(s->path);
  free(s->keys);
  free_ro(s);
  free(s);
}

/* Snapshot of the read-only, file-backed mappings in /proc/self/maps. */
static void scan_ro_mappings(fx_store *s) {
  free_ro(s);
  FILE *f = fopen("/proc/self/maps", "re");
  if (!f) return;
  char line[4400];
  size_t cap = 0;
  while (fgets(line, sizeof line, f)) {
    unsigned long lo, hi, inode;
    unsigned maj, min;
    char perms[8];
    int path_at = 0;
    if (sscanf(line, "%lx-%lx %7s %*s %x:%x %lu %n", &lo, &hi, perms, &maj, &min, &inode, &path_at) != 6) continue;
    if (inode == 0 || perms[1] != '-') continue; /* anonymous, or writable: never drop */
    if (s->n_ro == cap) {
      cap = cap ? cap * 2 : 64;
      ro_range *r = realloc(s->ro, cap * sizeof *r);
      if (!r) break;
      s->ro = r;
    }
    char *path = line + path_at;
    path[strcspn(path, "\n")] = 0;
    s->ro[s->n_ro++] = (ro_range){lo, hi, makedev(maj, min), inode, strdup(path)};
  }
  fclose(f);
}

/* Identity of the file behind a mapped model (dev = ino = 0 if not a file mapping or the
 * path now names another file). */
static fx_cache_model file_identity(const fx_store *s, const void *p) {
  fx_cache_model id = {0};
  for (size_t i = 0; p && i < s->n_ro; i++) {
    if ((uintptr_t)p < s->ro[i].lo || (uintptr_t)p >= s->ro[i].hi || !s->ro[i].path) continue;
    struct stat st;
    if (stat(s->ro[i].path, &st) || st.st_ino != s->ro[i].ino || st.st_dev != s->ro[i].dev) break;
    id.dev = st.st_dev;
    id.ino = st.st_ino;
    id.size = (uint64_t)st.st_size;
    id.mtime_ns = (int64_t)st.st_mtim.tv_sec * 1000000000 + st.st_mtim.tv_nsec;
    id.ctime_ns = (int64_t)st.st_ctim.tv_sec * 1000000000 + st.st_ctim.tv_nsec;
    break;
  }
  return id;
}

static void find_replay(fx_store *s) {
  const fx_cache_model *r = fx_cache_find_file(s->map, &s->id);
  s->replay = r ? s->map->keys + r->first_key : NULL;
  s->n_replay = r ? r->n_keys : 0;
  s->replay_pos = 0;
}

void fx_store_open(fx_store *s, const char *path, const void *model_ptr, uint32_t machine) {
  scan_ro_mappings(s);
  fx_hasher_init(&s->model, 0);
  s->n_keys = 0;
  s->id = file_identity(s, model_ptr);
  s->id.machine = machine;
  int file_ok = s->stats.file_ok;
  memset(&s->stats, 0, sizeof s->stats);
  s->stats.file_ok = file_ok;
  int same = (!path || !*path) ? !s->path : (s->path && !strcmp(s->path, path));
  if (same && (s->map || !s->path)) { find_replay(s); return; }
  fx_cache_map_unref(s->map);
  s->map = NULL;
  free(s->path);
  s->path = path && *path ? strdup(path) : NULL;
  if (!s->path) return;
  char why[200];
  s->map = fx_cache_open(s->path, why, sizeof why);
  s->stats.file_ok = s->map != NULL;
  if (s->map) fx_log(FX_LOG_CACHE, "%s: %llu blobs, %llu models", s->path,
                     (unsigned long long)s->map->n_entries, (unsigned long long)s->map->n_models);
  else if (why[0]) fprintf(stderr, "flexdelegate: warning: ignoring cache %s (%s); it will be rebuilt\n", s->path, why);
  else fx_log(FX_LOG_CACHE, "%s: not there yet (cold load)", s->path);
  find_replay(s);
}

int fx_store_replay(fx_store *s, uint32_t algo, uint32_t version, size_t size, uint64_t key[2]) {
  if (!s->replay || s->replay_pos >= s->n_replay) return 0;
  const fx_cache_keyref *k = &s->replay[s->replay_pos];
  if (k->algo != algo || k->layout_version != version || k->size != size) {
    s->replay = NULL; /* the graph changed shape: hash from here on */
    return 0;
  }
  s->replay_pos++;
  s->stats.keys_replayed++;
  key[0] = k->key_hi;
  key[1] = k->key_lo;
  return 1;
}

/* Drops the pages of a model weight we no longer need from our RSS, when they belong to a
 * read-only file mapping (validation should not leave the model resident). */
static void release_source(fx_store *s, const void *p, size_t len) {
  uintptr_t lo = (uintptr_t)p, hi = lo + len;
  for (size_t i = 0; p && i < s->n_ro; i++) {
    if (lo < s->ro[i].lo || hi > s->ro[i].hi) continue;
    /* Only whole pages inside the weight, so neighbours that are still needed stay. */
    uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);
    uintptr_t a = (lo + page - 1) & ~(page - 1), b = hi & ~(page - 1);
    if (b > a) madvise((void *)a, b - a, MADV_DONTNEED);
    return;
  }
}

/* Big enough to amortise the madvise, small against any budget. */
#define FX_HASH_CHUNK (4u << 20)

void fx_store_hash(fx_store *s, fx_hasher *h, const void *p, size_t len) {
  const uint8_t *b = p;
  for (size_t off = 0; off < len; off += FX_HASH_CHUNK) {
    size_t n = len - off < FX_HASH_CHUNK ? len - off : FX_HASH_CHUNK;
    fx_hasher_update(h, b + off, n);
    release_source(s, b + off, n);
  }
}

static fx_wref *from_map(fx_cache_map *m, const fx_cache_entry *e, size_t size) {
  if (e->size != size) return NULL; /* same key, other size: never trust it */
  fx_wref *w = calloc(1, sizeof *w);
  if (!w) return NULL;
  w->refs = 1;
  w->data = m->base + e->offset;
  w->size = size;
  w->map = fx_cache_map_ref(m);
  w->key_hi = e->key_hi;
  w->key_lo = e->key_lo;
  w->algo = e->algo;
  w->version = e->layout_version;
  w->checksum = e->checksum;
  return w;
}

int fx_wref_verify(fx_wref *w) {
  if (w->verified) return 0;
  if (fx_hash64(w->data, w->size, 0) != w->checksum) return 1;
  w->verified = 1;
  return 0;
}

fx_wref *fx_wref_packed(size_t size, fx_pack_fn pack, void *ctx) {
  fx_wref *w = calloc(1, sizeof *w);
  void *dst = aligned_alloc(64, (size + 63) / 64 * 64);
  if (!w || !dst) { free(w); free(dst); return NULL; }
  pack(ctx, dst);
  *w = (fx_wref){.refs = 1, .data = dst, .owned = dst, .size = size, .verified = 1};
  return w;
}

fx_wref *fx_store_get(fx_store *s, const uint64_t key[2], uint32_t algo, uint32_t version, size_t size,
                      fx_pack_fn pack, const void *ctx, size_t ctx_size, const void *src, size_t src_len) {
  uint64_t fp[3] = {key[0], key[1], ((uint64_t)algo << 32) | version};
  fx_hasher_update(&s->model, fp, sizeof fp);
  if (s->n_keys == s->cap_keys) {
    size_t cap = s->cap_keys ? s->cap_keys * 2 : 64;
    fx_cache_keyref *k = realloc(s->keys, cap * sizeof *k);
    if (!k) return NULL;
    s->keys = k;
    s->cap_keys = cap;
  }
  s->keys[s->n_keys++] = (fx_cache_keyref){key[0], key[1], algo, version, size};
  const fx_cache_entry *e = fx_cache_find(s->map, key[0], key[1], algo, version);
  fx_wref *w = e ? from_map(s->map, e, size) : NULL;
  if (w) {
    s->stats.blobs_mapped++;
    s->stats.bytes_mapped += size;
    release_source(s, src, src_len);
    return w;
  }
  for (size_t i = 0; i < s->n_pending; i++) {
    fx_wref *p = s->pending[i];
    if (p->key_hi == key[0] && p->key_lo == key[1] && p->algo == algo && p->version == version && p->size == size) {
      s->stats.blobs_deduped++;
      s->stats.bytes_deduped += size;
      p->refs++;
      release_source(s, src, src_len);
      return p;
    }
  }
  if (s->n_pending == s->cap_pending) {
    size_t cap = s->cap_pending ? s->cap_pending * 2 : 64;
    fx_wref **grown = realloc(s->pending, cap * sizeof *grown);
    if (!grown) return NULL;
    s->pending = grown;
    s->cap_pending = cap;
  }
  w = calloc(1, sizeof *w);
  void *c = malloc(ctx_size ? ctx_size : 1);
  if (!w || !c) { free(w); free(c); return NULL; }
  memcpy(c, ctx, ctx_size);
  *w = (fx_wref){.refs = 2, .size = size, .key_hi = key[0], .key_lo = key[1], .algo = algo,
                 .version = version, .verified = 1, .pack = pack, .pack_ctx = c, .src = src,
                 .src_len = src_len}; /* refs: the caller's and pending's */
  s->pending[s->n_pending++] = w;
  s->stats.blobs_packed++;
  s->stats.bytes_packed += size;
  return w;
}

void fx_wref_unref(fx_wref *w) {
  if (!w || --w->refs) return;
  free(w->pack_ctx);
  free(w->owned);
  fx_cache_map_unref(w->map);
  free(w);
}

int fx_wref_damaged(const fx_wref *w) { return w->map && fx_sigbus_damaged(w->map->base); }

/* Called by the cache writer as it packs each blob into the file. */
typedef struct { fx_store *s; fx_wref *w; } pack_job;

static void pack_pending(void *ctx, void *dst) {
  pack_job *j = ctx;
  j->w->pack(j->w->pack_ctx, dst);
  j->w->verified = 1;
  release_source(j->s, j->w->src, j->w->src_len);
}

static void pack_into_memory(fx_store *s, fx_wref *w) {
  if (w->data) return;
  w->owned = aligned_alloc(64, (w->size + 63) / 64 * 64);
  if (!w->owned) return; /* data stays NULL: the kernel reports out of memory */
  w->pack(w->pack_ctx, w->owned);
  release_source(s, w->src, w->src_len);
  w->data = w->owned;
  w->verified = 1;
}

static void finish_pending(fx_store *s) {
  for (size_t i = 0; i < s->n_pending; i++) {
    fx_wref *w = s->pending[i];
    pack_into_memory(s, w); /* whatever the file did not take */
    free(w->pack_ctx);
    w->pack_ctx = NULL;
    w->pack = NULL;
  }
  drop_pending(s);
}

/* A model file changed less than this long ago may change again within the same timestamp
 * tick, unseen ("racy git"): its identity is not recorded, so the next load hashes again. */
#define FX_RACY_NS 2000000000LL

static int racy(const fx_cache_model *id) {
  struct timespec now;
  clock_gettime(CLOCK_REALTIME, &now);
  int64_t t = (int64_t)now.tv_sec * 1000000000 + now.tv_nsec;
  return t - id->mtime_ns < FX_RACY_NS || t - id->ctime_ns < FX_RACY_NS;
}

void fx_store_commit(fx_store *s) {
  uint64_t fp[2];
  fx_hasher_final(&s->model, fp);
  fx_cache_model rec = s->id;
  rec.fingerprint = fp[0];
  rec.n_keys = (uint32_t)s->n_keys;
  if (!rec.ino || racy(&rec)) { /* record the fingerprint and keys, not the file */
    rec.dev = rec.ino = rec.size = 0;
    rec.mtime_ns = rec.ctime_ns = 0;
  }
  if (!s->path || (!s->n_pending && fx_cache_has_record(s->map, &rec))) {
    finish_pending(s);
    return;
  }
  fx_cache_blob *blobs = calloc(s->n_pending + 1, sizeof *blobs);
  pack_job *jobs = calloc(s->n_pending + 1, sizeof *jobs);
  if (!blobs || !jobs) { free(blobs); free(jobs); finish_pending(s); return; }
  for (size_t i = 0; i < s->n_pending; i++) {
    fx_wref *w = s->pending[i];
    jobs[i] = (pack_job){s, w};
    w->verified = 0; /* stays 0 if another process stored it first: checked at first use */
    blobs[i] = (fx_cache_blob){w->key_hi, w->key_lo, w->algo, w->version, NULL, w->size, pack_pending, &jobs[i]};
  }
  char why[200];
  fx_cache_map *m = fx_cache_commit(s->path, blobs, s->n_pending, &rec, s->keys,
                                    s->stats.bytes_mapped + s->stats.bytes_deduped, why, sizeof why);
  free(blobs);
  free(jobs);
  if (!m) {
    fprintf(stderr, "flexdelegate: warning: cannot write cache %s (%s); weights stay in memory\n", s->path, why);
    s->stats.file_ok = 0;
    finish_pending(s);
    return;
  }
  /* Point what this load asked for into the file (another process may have written some of it
   * first: those were never packed here). */
  for (size_t i = 0; i < s->n_pending; i++) {
    fx_wref *w = s->pending[i];
    const fx_cache_entry *e = fx_cache_find(m, w->key_hi, w->key_lo, w->algo, w->version);
    if (!e || e->size != w->size) continue;
    w->data = m->base + e->offset;
    w->map = fx_cache_map_ref(m);
    w->checksum = e->checksum;
  }
  fx_log(FX_LOG_CACHE, "%s: committed %zu blobs (%zu bytes)", s->path, s->n_pending, s->stats.bytes_packed);
  finish_pending(s);
  fx_cache_map_unref(s->map);
  s->map = m;
  s->stats.file_ok = 1;
}

void fx_store_get_stats(const fx_store *s, fx_store_stats *out) { *out = s->stats; }
const char *fx_store_path(const fx_store *s) { return s->path; }
