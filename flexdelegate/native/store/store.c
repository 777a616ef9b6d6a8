#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <linux/magic.h>
#include <sys/sysmacros.h>
#include <time.h>
#include <unistd.h>
#include "sigbus.h"
#include "runtime/clock.h"
#include "runtime/log.h"
#include "store.h"

/* A read-only file mapping: its address range, the file offset it starts at, the file, and an
 * fd onto it (opened when its bytes are first read through the file: -2 not yet, -1 cannot). */
typedef struct { uintptr_t lo, hi; uint64_t off, dev, ino; char *path; int touched, fd; } ro_range;

struct fx_store {
  char *path;
  fx_cache_map *map;
  fx_wref **pending;
  size_t n_pending, cap_pending;
  fx_store_stats stats;
  ro_range *ro;     /* read-only file mappings of this process (the model among them) */
  size_t n_ro;
  void *staging;    /* model bytes read through their file (hashing, packing): staging_bytes */
  size_t staging_bytes;
  const void *model_at; /* a constant of the model being loaded (NULL: none) */
  fx_hasher model;  /* fingerprint of this load: every key it asked for, in order */
  fx_cache_keyref *keys; /* ... and the keys themselves, for this load's record */
  size_t n_keys, cap_keys;
  fx_cache_model id;     /* the model file's identity (dev = ino = 0: unknown) */
  char *model_path;      /* ... and its path as /proc/self/maps names it (NULL: unknown) */
  const fx_cache_keyref *replay; /* a recorded load of the same unchanged file */
  size_t n_replay, replay_pos;
  struct commit_job *job; /* a commit still writing in the background */
  /* The file at path may be (re)written: nothing is there, or a cache file we can write.
   * A read-only cache is used as it is; a file that is not a cache is left alone. */
  int writable;
};

fx_store *fx_store_new(void) { return calloc(1, sizeof(fx_store)); }

static void drop_pending(fx_store *s) {
  for (size_t i = 0; i < s->n_pending; i++) fx_wref_unref(s->pending[i]);
  s->n_pending = 0;
}

static void free_ro(fx_store *s) {
  for (size_t i = 0; i < s->n_ro; i++) {
    free(s->ro[i].path);
    if (s->ro[i].fd >= 0) close(s->ro[i].fd);
  }
  free(s->ro);
  s->ro = NULL;
  s->n_ro = 0;
}

void fx_store_free(fx_store *s) {
  if (!s) return;
  fx_store_settle(s, 1);
  drop_pending(s);
  free(s->pending);
  fx_cache_map_unref(s->map);
  free(s->path);
  free(s->keys);
  free(s->model_path);
  free_ro(s);
  free(s->staging);
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
    unsigned long lo, hi, off, inode;
    unsigned maj, min;
    char perms[8];
    int path_at = 0;
    if (sscanf(line, "%lx-%lx %7s %lx %x:%x %lu %n", &lo, &hi, perms, &off, &maj, &min, &inode, &path_at) != 7) continue;
    if (inode == 0 || perms[1] != '-') continue; /* anonymous, or writable: never drop */
    if (s->n_ro == cap) {
      cap = cap ? cap * 2 : 64;
      ro_range *r = realloc(s->ro, cap * sizeof *r);
      if (!r) break;
      s->ro = r;
    }
    char *path = line + path_at;
    path[strcspn(path, "\n")] = 0;
    s->ro[s->n_ro++] = (ro_range){lo, hi, off, makedev(maj, min), inode, strdup(path), 0, -2};
  }
  fclose(f);
}

/* Identity of the file behind a mapped model (dev = ino = 0 if not a file mapping or the
 * path now names another file), and that path (*path: the mapping's, else NULL). TFLite does
 * not tell a delegate where its model came from; the mapping it reads from names the file. */
static fx_cache_model file_identity(const fx_store *s, const void *p, const char **path) {
  fx_cache_model id = {0};
  *path = NULL;
  for (size_t i = 0; p && i < s->n_ro; i++) {
    if ((uintptr_t)p < s->ro[i].lo || (uintptr_t)p >= s->ro[i].hi || !s->ro[i].path) continue;
    struct stat st;
    if (stat(s->ro[i].path, &st) || st.st_ino != s->ro[i].ino || st.st_dev != s->ro[i].dev) break;
    id.dev = st.st_dev;
    id.ino = st.st_ino;
    id.size = (uint64_t)st.st_size;
    id.mtime_ns = (int64_t)st.st_mtim.tv_sec * 1000000000 + st.st_mtim.tv_nsec;
    id.ctime_ns = (int64_t)st.st_ctim.tv_sec * 1000000000 + st.st_ctim.tv_nsec;
    *path = s->ro[i].path;
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
  fx_store_settle(s, 1);
  scan_ro_mappings(s);
  fx_hasher_init(&s->model, 0);
  s->n_keys = 0;
  const char *model_path;
  s->id = file_identity(s, model_ptr, &model_path);
  s->model_at = model_ptr;
  s->id.machine = machine;
  free(s->model_path);
  s->model_path = model_path ? strdup(model_path) : NULL; /* NULL when out of memory too: no path */
  const fx_store_stats old = s->stats; /* the file's state outlives one load's counts */
  memset(&s->stats, 0, sizeof s->stats);
  s->stats.file_ok = old.file_ok;
  s->stats.backing = old.backing;
  s->stats.temp_tmpfs = old.temp_tmpfs;
  memcpy(s->stats.temp_dir, old.temp_dir, sizeof old.temp_dir);
  int same = (!path || !*path) ? !s->path : (s->path && !strcmp(s->path, path));
  if (same && (s->map || !s->path)) { find_replay(s); return; }
  fx_cache_map_unref(s->map);
  s->map = NULL;
  free(s->path);
  s->path = path && *path ? strdup(path) : NULL;
  if (!s->path) return;
  char why[200], what[64];
  s->map = fx_cache_open(s->path, why, sizeof why);
  s->stats.file_ok = s->map != NULL;
  s->writable = 1;
  s->stats.backing = s->map ? FX_BACKING_CACHE_FILE : FX_BACKING_MEMORY;
  if (s->map) {
    s->writable = !access(s->path, W_OK);
    fx_log(FX_LOG_CACHE, "%s: %llu blobs, %llu models%s", s->path, (unsigned long long)s->map->n_entries,
           (unsigned long long)s->map->n_models, s->writable ? "" : " (read-only: used as it is)");
  } else if (fx_cache_owner_of(s->path, what, sizeof what) == FX_CACHE_FOREIGN) {
    s->writable = 0;
    fprintf(stderr, "flexdelegate: warning: cache_path %s is %s: left alone, weights packed in memory\n",
            s->path, what);
  } else if (why[0]) {
    fprintf(stderr, "flexdelegate: warning: ignoring cache %s (%s); it will be rebuilt\n", s->path, why);
  } else {
    fx_log(FX_LOG_CACHE, "%s: not there yet (cold load)", s->path);
  }
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
    s->ro[i].touched = 1;
    /* Only whole pages inside the weight, so neighbours that are still needed stay. */
    uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);
    uintptr_t a = (lo + page - 1) & ~(page - 1), b = hi & ~(page - 1);
    if (b > a) madvise((void *)a, b - a, MADV_DONTNEED);
    return;
  }
}

/* The pages a weight shares with its neighbours stay resident when it is released; a budgeted
 * load drops them all at the end: the whole of each read-only file mapping weights were read
 * from (the model), which the runtime faults back in from the file if it reads it again
 * (measured: ~1 MB of ResNet-152's first budgeted load). */
static void release_touched(fx_store *s) {
  for (size_t i = 0; i < s->n_ro; i++)
    if (s->ro[i].touched) {
      madvise((void *)s->ro[i].lo, s->ro[i].hi - s->ro[i].lo, MADV_DONTNEED);
      s->ro[i].touched = 0;
    }
}

void fx_store_release_model(fx_store *s) {
  for (size_t i = 0; s->model_at && i < s->n_ro; i++)
    if ((uintptr_t)s->model_at >= s->ro[i].lo && (uintptr_t)s->model_at < s->ro[i].hi) s->ro[i].touched = 1;
  release_touched(s);
}

/* Model bytes are read through their file (pread) rather than their mapping wherever they are
 * read whole (hashing, packing): the page cache holds them either way, but through the mapping
 * they become our RSS, and not a page at a time: the kernel maps the whole folio a touched
 * page is in, and a file written in one go is cached in large folios (ext4 on Linux 6.18: 2 MB
 * made resident per byte touched, each weight's neighbours included). This many bytes a read:
 * enough to amortise the syscall, little against any budget. */
#define FX_READ_CHUNK (256u << 10)

/* The read-only file mapping holding [p, p + len), with an fd onto the file it maps (checked:
 * the same device and inode), or NULL: read it in place. */
static ro_range *file_behind(fx_store *s, const void *p, size_t len) {
  const uintptr_t lo = (uintptr_t)p, hi = lo + len;
  for (size_t i = 0; p && i < s->n_ro; i++) {
    ro_range *r = &s->ro[i];
    if (lo < r->lo || hi > r->hi) continue;
    if (r->fd == -2) {
      struct stat st;
      r->fd = r->path && r->path[0] == '/' ? open(r->path, O_RDONLY | O_CLOEXEC) : -1;
      if (r->fd >= 0 && (fstat(r->fd, &st) || st.st_ino != r->ino || st.st_dev != r->dev)) {
        close(r->fd);
        r->fd = -1;
      }
    }
    return r->fd >= 0 ? r : NULL;
  }
  return NULL;
}

/* [p, p + len) of mapping r copied from its file into the store's staging buffer: that
 * buffer, or NULL (out of memory, or the file reads short: read it in place). */
static const void *read_through(fx_store *s, const ro_range *r, const void *p, size_t len) {
  if (len > s->staging_bytes) {
    free(s->staging);
    s->staging_bytes = 0;
    if (!(s->staging = malloc(len))) return NULL;
    s->staging_bytes = len;
  }
  return fx_pread_all(r->fd, s->staging, len, r->off + ((uintptr_t)p - r->lo)) ? NULL : s->staging;
}

static void free_staging(fx_store *s) {
  free(s->staging);
  s->staging = NULL;
  s->staging_bytes = 0;
}

void fx_store_hash(fx_store *s, fx_hasher *h, const void *p, size_t len) {
  const uint8_t *b = p;
  const ro_range *r = file_behind(s, p, len);
  for (size_t off = 0; off < len; off += FX_READ_CHUNK) {
    const size_t n = len - off < FX_READ_CHUNK ? len - off : FX_READ_CHUNK;
    const void *copy = r ? read_through(s, r, b + off, n) : NULL;
    fx_hasher_update(h, copy ? copy : b + off, n);
    if (!copy) release_source(s, b + off, n);
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

static int verify(fx_wref *w, int unmapped) {
  if (w->verified) return 0;
  uint64_t sum;
  if (unmapped && w->map) { /* through the file: no page of the mapping made resident */
    if (fx_cache_read_sum(w->map, (uint64_t)((const uint8_t *)w->data - w->map->base), w->size, &sum)) return 1;
  } else {
    sum = fx_hash64(w->data, w->size, 0);
  }
  if (sum != w->checksum) return 1;
  w->verified = 1;
  return 0;
}

static fx_wref *packed_in_memory(size_t size, const fx_pack_desc *d) {
  fx_wref *w = calloc(1, sizeof *w);
  void *dst = aligned_alloc(64, (size + 63) / 64 * 64);
  if (!w || !dst) { free(w); free(dst); return NULL; }
  if (d->pack((void *)d->ctx, NULL, dst, 0, d->n_parts)) { free(w); free(dst); return NULL; }
  *w = (fx_wref){.refs = 1, .data = dst, .owned = dst, .size = size, .verified = 1};
  return w;
}

fx_wref *fx_store_get(fx_store *s, const uint64_t key[2], uint32_t algo, uint32_t version, size_t size,
                      const fx_pack_desc *d) {
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
    release_source(s, d->src, d->src_len);
    return w;
  }
  for (size_t i = 0; i < s->n_pending; i++) {
    fx_wref *p = s->pending[i];
    if (p->key_hi == key[0] && p->key_lo == key[1] && p->algo == algo && p->version == version && p->size == size) {
      s->stats.blobs_deduped++;
      s->stats.bytes_deduped += size;
      p->refs++;
      release_source(s, d->src, d->src_len);
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
  void *c = malloc(d->ctx_size ? d->ctx_size : 1);
  if (!w || !c) { free(w); free(c); return NULL; }
  memcpy(c, d->ctx, d->ctx_size);
  *w = (fx_wref){.refs = 2, .size = size, .key_hi = key[0], .key_lo = key[1], .algo = algo,
                 .version = version, .verified = 1, .desc = *d}; /* refs: the caller's and pending's */
  w->desc.ctx = c;
  if (!w->desc.n_parts) w->desc.n_parts = 1;
  s->pending[s->n_pending++] = w;
  s->stats.blobs_packed++;
  s->stats.bytes_packed += size;
  return w;
}

void fx_wref_unref(fx_wref *w) {
  if (!w || --w->refs) return;
  free((void *)w->desc.ctx);
  free(w->owned);
  fx_cache_map_unref(w->map);
  free(w);
}

void fx_store_forget(fx_store *s, fx_wref *w) {
  for (size_t i = 0; i < s->n_pending; i++) {
    if (s->pending[i] != w) continue;
    if (w->refs > 2) return; /* another node asked for the same blob: still needed */
    s->pending[i] = s->pending[--s->n_pending];
    s->stats.blobs_packed--;
    s->stats.bytes_packed -= w->size;
    fx_wref_unref(w);
    return;
  }
}

/* Replaces *w by a private in-memory packing from d: 0, or -1 when out of memory (*w kept). */
static int repack_in_memory(fx_wref **w, const fx_pack_desc *d) {
  fx_wref *fresh = packed_in_memory((*w)->size, d);
  if (!fresh) return -1;
  fx_wref_unref(*w);
  *w = fresh;
  return 0;
}

int fx_wref_check(fx_wref **w, const fx_pack_desc *d, int unmapped) {
  if (!(*w)->data) return -1; /* packing ran out of memory at commit */
  if (!verify(*w, unmapped)) return 0;
  /* Dropped from the file too (when it is still the one we mapped), so the next writable load
   * stores it again rather than every load repacking it forever. */
  const fx_wref *b = *w;
  const int dropped = !fx_cache_drop_blob(b->map, b->key_hi, b->key_lo, b->algo, b->version);
  fprintf(stderr, "flexdelegate: warning: a cached weight blob failed its checksum; packing it in memory%s\n",
          dropped ? " (removed from the cache file: the next load stores it again)"
                  : " (run 'flexdelegate cache verify' on the cache file)");
  return repack_in_memory(w, d);
}

int fx_wref_repair(fx_wref **w, const fx_pack_desc *d) {
  if (!(*w)->map || !fx_sigbus_damaged((*w)->map->base)) return 0;
  static atomic_int warned; /* one warning per process, however many weights it hit */
  if (!atomic_exchange(&warned, 1))
    fprintf(stderr, "flexdelegate: warning: the weight cache file was truncated or rewritten in place "
                    "while in use; packing the weights it held in memory\n");
  return repack_in_memory(w, d) ? -1 : 1;
}

/* Called by the cache writer as it packs each blob into the file. */
typedef struct { fx_store *s; fx_wref *w; } pack_job;

/* Only a budgeted load packs this way (the background writer gets blobs packed in memory), a
 * piece at a time: the piece's model bytes read through the file, and whatever of the model
 * mapping the packing still touched (a bias; its folio with it) dropped after each piece. */
static int pack_pending(void *ctx, void *dst, size_t lo, size_t hi) {
  pack_job *j = ctx;
  const fx_pack_desc *d = &j->w->desc;
  const void *src = NULL;
  if (!d->whole && d->src && d->src_part && lo * d->src_part < d->src_len) {
    const size_t a = lo * d->src_part, b = hi * d->src_part < d->src_len ? hi * d->src_part : d->src_len;
    const uint8_t *from = (const uint8_t *)d->src + a;
    const ro_range *r = file_behind(j->s, from, b - a);
    src = r ? read_through(j->s, r, from, b - a) : NULL;
  }
  if (d->pack((void *)d->ctx, src, dst, lo, hi)) return -1;
  j->w->verified = 1;
  release_source(j->s, d->src, d->src_len);
  release_touched(j->s);
  return 0;
}

static void pack_into_memory(fx_store *s, fx_wref *w) {
  if (w->data) return;
  w->owned = aligned_alloc(64, (w->size + 63) / 64 * 64);
  if (!w->owned) return; /* data stays NULL: the kernel reports out of memory */
  if (w->desc.pack((void *)w->desc.ctx, NULL, w->owned, 0, w->desc.n_parts)) {
    free(w->owned);
    w->owned = NULL;
    return;
  }
  release_source(s, w->desc.src, w->desc.src_len);
  w->data = w->owned;
  w->verified = 1;
}

static void finish_pending(fx_store *s) {
  for (size_t i = 0; i < s->n_pending; i++) {
    fx_wref *w = s->pending[i];
    pack_into_memory(s, w); /* whatever the file did not take */
    free((void *)w->desc.ctx);
    w->desc = (fx_pack_desc){0};
  }
  drop_pending(s);
}

/* A model file changed less than this long ago may change again within the same timestamp
 * tick, unseen ("racy git"): its size and times are not recorded, so the record is never
 * replayed and the next load hashes again (dev and inode still say which file it is about). */
#define FX_RACY_NS 2000000000LL

static int racy(const fx_cache_model *id) {
  struct timespec now;
  clock_gettime(CLOCK_REALTIME, &now);
  int64_t t = (int64_t)now.tv_sec * 1000000000 + now.tv_nsec;
  return t - id->mtime_ns < FX_RACY_NS || t - id->ctime_ns < FX_RACY_NS;
}

/* A commit writing in the background. The load computes from the weights it packed in
 * memory meanwhile (the cold load costs what stock packing costs); fx_store_settle then points
 * them into the file and frees the copies. The thread touches nothing but the job. */
typedef struct commit_job {
  pthread_t thread;
  atomic_int done;
  pid_t pid; /* a forked child inherits the job, not the thread: it never waits for it */
  char *path;
  fx_cache_blob *blobs;
  fx_wref **refs; /* one reference each: the memory the thread reads stays alive */
  size_t n;
  fx_cache_model rec;
  fx_cache_keyref *keys;
  char *model_path; /* the record's, NULL: unknown */
  uint64_t dedup_bytes;
  fx_cache_map *result;
  char why[200];
  double ms;
} commit_job;

/* Writers still running, so a process that exits right after loading still leaves its cache
 * file behind (atexit waits for them; a kill leaves a temp file the next writer removes). */
static pthread_mutex_t g_jobs_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t g_jobs_cv = PTHREAD_COND_INITIALIZER;
static int g_jobs_running, g_hooks_set;

static void forked_child(void) {
  pthread_mutex_t fresh = PTHREAD_MUTEX_INITIALIZER;
  g_jobs_mu = fresh;
  g_jobs_running = 0;
}

static void wait_for_writers(void) {
  pthread_mutex_lock(&g_jobs_mu);
  while (g_jobs_running) pthread_cond_wait(&g_jobs_cv, &g_jobs_mu);
  pthread_mutex_unlock(&g_jobs_mu);
}

static void run_job(commit_job *j) {
  const uint64_t t0 = fx_now_ns();
  j->result = fx_cache_commit(j->path, j->blobs, j->n, &j->rec, j->keys, j->model_path, j->dedup_bytes, j->why,
                              sizeof j->why);
  j->ms = (double)(fx_now_ns() - t0) / 1e6;
}

static void *job_main(void *arg) {
  commit_job *j = arg;
  run_job(j);
  pthread_mutex_lock(&g_jobs_mu);
  atomic_store(&j->done, 1);
  g_jobs_running--;
  pthread_cond_broadcast(&g_jobs_cv);
  pthread_mutex_unlock(&g_jobs_mu);
  return NULL;
}

static void free_job(commit_job *j) {
  for (size_t i = 0; i < j->n; i++) fx_wref_unref(j->refs[i]);
  free(j->refs);
  free(j->blobs);
  free(j->keys);
  free(j->model_path);
  free(j->path);
  fx_cache_map_unref(j->result);
  free(j);
}

/* Points what the job wrote into the file. from_memory: the weights were packed in memory
 * first; those copies are freed, and as another process may have stored some blobs first
 * (bytes not ours), each is checked at first use, as on a warm load. */
static void install(fx_store *s, commit_job *j, int from_memory) {
  fx_cache_map *m = j->result;
  if (!m && !j->n) { /* only this load's record was to be added: nothing lost but a faster next load */
    fx_log(FX_LOG_CACHE, "%s: load record not written (%s)", j->path, j->why);
    return;
  }
  if (!m) { /* a budgeted load (not from_memory) refuses to go on instead: partition.c */
    if (from_memory) fprintf(stderr, "flexdelegate: warning: cannot write cache %s (%s); weights stay in memory\n", j->path, j->why);
    s->stats.file_ok = 0;
    return;
  }
  for (size_t i = 0; i < j->n; i++) {
    fx_wref *w = j->refs[i];
    const fx_cache_entry *e = fx_cache_find(m, w->key_hi, w->key_lo, w->algo, w->version);
    if (!e || e->size != w->size || w->map || (w->data && !from_memory)) continue;
    w->data = m->base + e->offset;
    w->map = fx_cache_map_ref(m);
    w->checksum = e->checksum;
    if (from_memory) {
      w->verified = 0;
      free(w->owned);
      w->owned = NULL;
    }
  }
  fx_log(FX_LOG_CACHE, "%s: committed %zu blobs (%zu bytes) in %.1f ms", j->path, j->n, s->stats.bytes_packed, j->ms);
  s->replay = NULL; /* it pointed into the old mapping's records */
  s->n_replay = 0;
  fx_cache_map_unref(s->map);
  s->map = fx_cache_map_ref(m);
  s->stats.file_ok = 1;
  if (s->stats.backing != FX_BACKING_TEMP_FILE) s->stats.backing = FX_BACKING_CACHE_FILE;
}

static atomic_uint g_private_counter;

/* A budgeted load whose cache path is missing or unwritable: the job is written to a file of
 * this process's own under $TMPDIR (else /tmp), which is unlinked (with its lock file) as soon
 * as it is mapped: the mapping and its fd keep it alive for this process only. 0 if done. */
static int commit_private(fx_store *s, commit_job *j) {
  const char *dir = getenv("TMPDIR");
  if (!dir || !*dir) dir = "/tmp";
  char path[4200], lock[4300];
  snprintf(path, sizeof path, "%s/flexdelegate-%ld-%u.fxc", dir, (long)getpid(), atomic_fetch_add(&g_private_counter, 1));
  snprintf(lock, sizeof lock, "%s.lock", path);
  j->rec.dev = j->rec.ino = 0; /* no file identity: nobody else will read this one */
  j->result = fx_cache_commit(path, j->blobs, j->n, &j->rec, j->keys, NULL, 0, j->why, sizeof j->why);
  unlink(path);
  unlink(lock);
  if (!j->result) return -1;
  struct statfs fs;
  s->stats.backing = FX_BACKING_TEMP_FILE;
  s->stats.temp_tmpfs = !statfs(dir, &fs) && fs.f_type == TMPFS_MAGIC;
  snprintf(s->stats.temp_dir, sizeof s->stats.temp_dir, "%s", dir);
  fx_log(FX_LOG_CACHE, "%s: no writable cache file; weights in an unlinked temp file there%s", dir,
         s->stats.temp_tmpfs ? " (tmpfs: in RAM)" : "");
  return 0;
}

size_t fx_store_pending(const fx_store *s) { return s->n_pending; }

int fx_store_settling(const fx_store *s) {
  return s->job && (atomic_load(&s->job->done) || s->job->pid != getpid());
}

void fx_store_settle(fx_store *s, int wait) {
  commit_job *j = s->job;
  if (!j || (!wait && !atomic_load(&j->done) && j->pid == getpid())) return;
  s->job = NULL;
  if (j->pid == getpid()) { /* else: the parent's writer; this process keeps its copies */
    pthread_join(j->thread, NULL);
    install(s, j, 1);
  }
  free_job(j);
}

/* Parts per piece when a budgeted load writes a blob: FX_READ_CHUNK of packed bytes and of
 * model bytes read (the write buffer and the staging buffer hold one piece each), and at
 * least one part. */
static size_t write_chunk_parts(const fx_wref *w) {
  const size_t packed = w->size / w->desc.n_parts, read = w->desc.src_part;
  const size_t part = packed > read ? packed : read;
  return part && FX_READ_CHUNK / part > 1 ? FX_READ_CHUNK / part : 1;
}

/* The model record this load writes: its identity, fingerprint and key count. */
static fx_cache_model commit_record(fx_store *s) {
  uint64_t fp[2];
  fx_hasher_final(&s->model, fp);
  fx_cache_model rec = s->id;
  rec.fingerprint = fp[0];
  rec.n_keys = (uint32_t)s->n_keys;
  if (racy(&rec)) { /* which file, but not which version of it */
    rec.size = 0;
    rec.mtime_ns = rec.ctime_ns = 0;
  }
  return rec;
}

/* A writer job for the pending blobs (packed here first when in the background), or NULL when
 * out of memory; *packs holds their packing callbacks' arguments until the job ran, *missing
 * tells whether a memory copy could not be made (the writer packs that one itself). */
static commit_job *make_job(fx_store *s, const fx_cache_model *rec, int background, pack_job **packs_out,
                            int *missing) {
  commit_job *j = calloc(1, sizeof *j);
  fx_cache_blob *blobs = calloc(s->n_pending + 1, sizeof *blobs);
  pack_job *packs = calloc(s->n_pending + 1, sizeof *packs);
  fx_wref **refs = calloc(s->n_pending + 1, sizeof *refs);
  fx_cache_keyref *keys = malloc((s->n_keys + 1) * sizeof *keys);
  char *path = strdup(s->path ? s->path : "(temp)");
  if (!j || !blobs || !packs || !refs || !keys || !path) {
    free(j); free(blobs); free(packs); free(refs); free(keys); free(path);
    return NULL;
  }
  if (s->n_keys) memcpy(keys, s->keys, s->n_keys * sizeof *keys); /* s->keys is NULL before any */
  *missing = 0;
  for (size_t i = 0; i < s->n_pending; i++) {
    fx_wref *w = s->pending[i];
    if (background) pack_into_memory(s, w); /* the thread writes these bytes */
    else w->verified = 0; /* stays 0 if another process stored it first */
    *missing |= !w->data;
    packs[i] = (pack_job){s, w};
    blobs[i] = (fx_cache_blob){w->key_hi, w->key_lo, w->algo, w->version, w->data, w->size,
                               w->data ? NULL : pack_pending, &packs[i], w->desc.n_parts,
                               w->desc.whole ? w->desc.n_parts : write_chunk_parts(w)};
    refs[i] = w;
    w->refs++;
  }
  *j = (commit_job){.path = path, .blobs = blobs, .refs = refs, .n = s->n_pending, .rec = *rec, .keys = keys,
                    .model_path = s->model_path ? strdup(s->model_path) : NULL, /* NULL: recorded as unknown */
                    .dedup_bytes = s->stats.bytes_mapped + s->stats.bytes_deduped};
  *packs_out = packs;
  return j;
}

/* Runs the job on a writer thread; 0 if no thread could be started (the caller runs it). */
static int start_writer(commit_job *j) {
  pthread_mutex_lock(&g_jobs_mu);
  if (!g_hooks_set) g_hooks_set = !atexit(wait_for_writers) && !pthread_atfork(NULL, NULL, forked_child);
  j->pid = getpid();
  const int threaded = g_hooks_set && !pthread_create(&j->thread, NULL, job_main, j);
  if (threaded) g_jobs_running++;
  pthread_mutex_unlock(&g_jobs_mu);
  return threaded;
}

void fx_store_commit(fx_store *s, int background) {
  fx_store_settle(s, 1);
  const fx_cache_model rec = commit_record(s);
  /* No file for a load that asked for no weights (nothing delegated, or nothing to pack). A
   * budget needs a file to stream from: without one we may write, a private temp file. */
  const int private = !fx_store_writable(s) && !background && s->n_pending;
  /* A warm load of a model seen at a new path is not "nothing to add": its record is written
   * again with the path (once per move; FORMAT.md "Model record"). */
  const int nothing_new = !s->n_pending && fx_cache_has_record(s->map, &rec, s->model_path);
  if (!s->n_keys || (!fx_store_writable(s) && !private) || nothing_new) {
    if (s->path && s->map && !s->writable && s->n_pending) /* a read-only cache lacking weights */
      fprintf(stderr, "flexdelegate: warning: cache %s is read-only and lacks %zu weights (%zu bytes): packed in memory\n",
              s->path, s->n_pending, s->stats.bytes_packed);
    finish_pending(s);
    free_staging(s);
    if (!background) release_touched(s);
    return;
  }
  pack_job *packs = NULL;
  int missing = 0; /* a memory copy that could not be made: the writer packs it, here */
  commit_job *j = make_job(s, &rec, background, &packs, &missing);
  if (!j) {
    finish_pending(s);
    return;
  }
  const int threaded = background && !missing && start_writer(j);
  if (threaded) {
    s->job = j;
    fx_log(FX_LOG_CACHE, "%s: writing %zu blobs in the background", s->path, j->n);
  } else {
    if (!private) run_job(j);
    if (!background && !j->result) {
      if (!private)
        fprintf(stderr, "flexdelegate: warning: cannot write cache %s (%s); trying an unlinked temp file "
                        "instead\n", j->path, j->why);
      commit_private(s, j);
    }
    install(s, j, background);
    free_job(j);
  }
  free(packs); /* the packing callbacks ran (or will not) by now */
  finish_pending(s);
  free_staging(s);
  if (!background) release_touched(s);
}

void fx_store_get_stats(const fx_store *s, fx_store_stats *out) {
  *out = s->stats;
  out->writable = fx_store_writable(s);
}
const char *fx_store_path(const fx_store *s) { return s->path; }
int fx_store_writable(const fx_store *s) { return s->path && s->writable; }
