#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include "cache_file.h"
#include "flex_api.h"
#include "hash.h"
#include "sigbus.h"

#define HEADER_SIZE 256
#define FORMAT_VERSION 3
static const char k_magic[8] = {'F', 'L', 'X', 'C', 'A', 'C', 'H', 'E'};

typedef struct {
  char magic[8];
  uint32_t format_version, header_size;
  uint64_t file_size, index_offset, index_count, index_checksum;
  uint64_t models_offset, models_count, models_checksum;
  uint64_t blob_bytes, dedup_saved;
  char producer[64];
  uint64_t keys_offset, keys_count;
  uint64_t paths_offset, paths_bytes;
  uint8_t zero[64];
  uint64_t header_checksum;
} fx_cache_header;
_Static_assert(sizeof(fx_cache_header) == HEADER_SIZE, "header layout");
_Static_assert(sizeof(fx_cache_entry) == 64, "entry layout");
_Static_assert(sizeof(fx_cache_model) == 80, "model record layout");
_Static_assert(sizeof(fx_cache_keyref) == 32, "key record layout");

/* What a map owns besides the public fields. */
typedef struct {
  fx_cache_map pub;
  fx_cache_entry *entries;
  fx_cache_model *models;
  fx_cache_keyref *keys;
  char *path; /* as opened: fx_cache_drop_blob rewrites the file found there */
} map_impl;

static void say(char *msg, size_t len, const char *fmt, const char *detail) {
  if (msg && len) snprintf(msg, len, fmt, detail ? detail : "");
}

static int pread_all(int fd, void *buf, size_t len, uint64_t off) {
  uint8_t *p = buf;
  while (len) {
    ssize_t r = pread(fd, p, len, (off_t)off);
    if (r <= 0) {
      if (r < 0 && errno == EINTR) continue;
      return -1;
    }
    p += r;
    len -= (size_t)r;
    off += (uint64_t)r;
  }
  return 0;
}

static int pwrite_all(int fd, const void *buf, size_t len, uint64_t off) {
  const uint8_t *p = buf;
  while (len) {
    ssize_t r = pwrite(fd, p, len, (off_t)off);
    if (r < 0) {
      if (errno == EINTR) continue;
      return -1;
    }
    p += r;
    len -= (size_t)r;
    off += (uint64_t)r;
  }
  return 0;
}

static int key_cmp(const fx_cache_entry *a, const fx_cache_entry *b) {
  if (a->key_hi != b->key_hi) return a->key_hi < b->key_hi ? -1 : 1;
  if (a->key_lo != b->key_lo) return a->key_lo < b->key_lo ? -1 : 1;
  if (a->algo != b->algo) return a->algo < b->algo ? -1 : 1;
  if (a->layout_version != b->layout_version) return a->layout_version < b->layout_version ? -1 : 1;
  return 0;
}

static int qsort_key_cmp(const void *a, const void *b) { return key_cmp(a, b); }

/* By offset, then size (qsort is not stable: ties must not depend on the C library). */
static int by_offset(const void *a, const void *b) {
  const fx_cache_entry *x = *(fx_cache_entry *const *)a, *y = *(fx_cache_entry *const *)b;
  if (x->offset != y->offset) return x->offset < y->offset ? -1 : 1;
  return x->size < y->size ? -1 : x->size > y->size;
}

static int model_cmp(const void *a, const void *b) {
  const fx_cache_model *x = a, *y = b;
  if (x->fingerprint != y->fingerprint) return x->fingerprint < y->fingerprint ? -1 : 1;
  if (x->dev != y->dev) return x->dev < y->dev ? -1 : 1;
  if (x->ino != y->ino) return x->ino < y->ino ? -1 : 1;
  return 0;
}

/* A path a record may hold: absolute, shorter than FLEX_CACHE_PATH_MAX; anything else is
 * recorded as no path (""). */
static const char *recordable(const char *path) {
  return path && path[0] == '/' && strlen(path) < FLEX_CACHE_PATH_MAX ? path : "";
}

/* NULL if record r's path reference is sound (FORMAT.md "Validity"), else why not. */
static const char *check_path(const fx_cache_model *r, const char *paths, uint64_t paths_bytes) {
  if (!r->path_len) return r->path_offset ? "model path offset without a path" : NULL;
  if (r->path_len >= FLEX_CACHE_PATH_MAX) return "model path too long";
  if (r->path_offset >= paths_bytes || r->path_len >= paths_bytes - r->path_offset) return "model path out of bounds";
  const char *p = paths + r->path_offset;
  if (p[r->path_len] != 0) return "model path not NUL-terminated";
  if (memchr(p, 0, r->path_len)) return "model path holds a NUL";
  if (p[0] != '/') return "model path not absolute";
  return NULL;
}

/* Header, index and model table are read with pread and checked before anything trusts the
 * mapping: a hostile file cannot make us read out of bounds. */
static const char *validate(int fd, uint64_t file_size, fx_cache_header *h, fx_cache_entry **entries,
                            fx_cache_model **models, fx_cache_keyref **keys, const char **paths) {
  *entries = NULL;
  *models = NULL;
  *keys = NULL;
  *paths = NULL;
  if (file_size < FX_CACHE_PAGE) return "too small (truncated or not a cache file)";
  if (pread_all(fd, h, sizeof *h, 0)) return "unreadable header";
  if (memcmp(h->magic, k_magic, 8)) return "bad magic (not a flexdelegate cache)";
  if (h->format_version != FORMAT_VERSION) return "written by another format version";
  if (h->header_size != HEADER_SIZE) return "bad header size";
  if (fx_hash64(h, offsetof(fx_cache_header, header_checksum), 0) != h->header_checksum)
    return "header checksum mismatch";
  if (h->file_size != file_size) return "file size differs from the header (truncated or extended)";
  if (h->index_offset < FX_CACHE_PAGE || h->index_offset % 64 || h->index_offset > file_size ||
      h->index_count > (file_size - h->index_offset) / 64)
    return "index out of bounds";
  if (h->models_offset != h->index_offset + 64 * h->index_count ||
      h->models_count > (file_size - h->models_offset) / sizeof(fx_cache_model) ||
      h->keys_offset != h->models_offset + sizeof(fx_cache_model) * h->models_count ||
      h->keys_count > (file_size - h->keys_offset) / 32 ||
      h->paths_offset != h->keys_offset + 32 * h->keys_count || h->paths_bytes != file_size - h->paths_offset)
    return "model table out of bounds";
  const size_t ib = (size_t)h->index_count * 64, mb = (size_t)h->models_count * sizeof(fx_cache_model);
  const size_t kb = (size_t)h->keys_count * 32, pb = (size_t)h->paths_bytes;
  *entries = malloc(ib ? ib : 1);
  *models = malloc(mb + kb + pb ? mb + kb + pb : 1); /* records, key lists and paths share one checksum */
  if (!*entries || !*models) return "out of memory";
  *keys = (fx_cache_keyref *)((uint8_t *)*models + mb);
  *paths = (const char *)*models + mb + kb;
  if (pread_all(fd, *entries, ib, h->index_offset) || pread_all(fd, *models, mb + kb + pb, h->models_offset))
    return "unreadable index";
  if (fx_hash64(*entries, ib, 0) != h->index_checksum) return "index checksum mismatch";
  if (fx_hash64(*models, mb + kb + pb, 0) != h->models_checksum) return "model table checksum mismatch";
  for (uint64_t i = 1; i < h->index_count; i++)
    if (key_cmp(&(*entries)[i - 1], &(*entries)[i]) >= 0) return "index not sorted";
  for (uint64_t i = 0; i < h->models_count; i++) {
    const fx_cache_model *r = &(*models)[i];
    if (i && model_cmp(&(*models)[i - 1], r) >= 0) return "model table not sorted";
    if (r->first_key > h->keys_count || r->n_keys > h->keys_count - r->first_key) return "model keys out of bounds";
    const char *bad_path = check_path(r, *paths, h->paths_bytes);
    if (bad_path) return bad_path;
  }
  const fx_cache_entry **order = malloc(sizeof *order * (size_t)(h->index_count ? h->index_count : 1));
  if (!order) return "out of memory";
  for (uint64_t i = 0; i < h->index_count; i++) {
    const fx_cache_entry *e = &(*entries)[i];
    order[i] = e;
    if (e->offset < FX_CACHE_PAGE || e->offset % FX_CACHE_PAGE || e->offset > h->index_offset ||
        e->size > h->index_offset - e->offset) {
      free(order);
      return "blob out of bounds";
    }
  }
  qsort(order, (size_t)h->index_count, sizeof *order, by_offset);
  for (uint64_t i = 1; i < h->index_count; i++)
    if (order[i - 1]->offset + order[i - 1]->size > order[i]->offset) {
      free(order);
      return "blobs overlap";
    }
  free(order);
  return NULL;
}

fx_cache_owner fx_cache_owner_of(const char *path, char *why, size_t why_len) {
  struct stat st;
  if (lstat(path, &st)) return FX_CACHE_ABSENT; /* nothing there (or no way to reach it: a write fails) */
  const char *what = S_ISLNK(st.st_mode) ? "a symlink" : S_ISDIR(st.st_mode) ? "a directory"
                     : !S_ISREG(st.st_mode) ? "not a regular file" : NULL;
  if (!what) {
    /* O_NONBLOCK: a FIFO swapped in since the lstat must not hang us. */
    int fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    char magic[sizeof k_magic];
    if (fd < 0) what = "unreadable";
    else if (pread_all(fd, magic, sizeof magic, 0) || memcmp(magic, k_magic, sizeof magic))
      what = "not a flexdelegate cache file";
    if (fd >= 0) close(fd);
  }
  if (!what) return FX_CACHE_OURS;
  say(why, why_len, "%s", what);
  return FX_CACHE_FOREIGN;
}

fx_cache_map *fx_cache_open(const char *path, char *msg, size_t msg_len) {
  say(msg, msg_len, "%s", "");
  /* O_NONBLOCK: opening a FIFO planted at the path would otherwise block until a writer
   * appears (a load hung forever); it does not change reads of a regular file. */
  int fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) {
    if (errno != ENOENT) say(msg, msg_len, "cannot open: %s", errno == ELOOP ? "is a symlink" : strerror(errno));
    return NULL;
  }
  struct stat st;
  fx_cache_header h;
  fx_cache_entry *entries = NULL;
  fx_cache_model *models = NULL;
  fx_cache_keyref *keys = NULL;
  const char *paths = NULL, *why = NULL;
  void *base = MAP_FAILED;
  if (fstat(fd, &st)) why = "cannot stat";
  else if (!S_ISREG(st.st_mode)) why = "not a regular file";
  else why = validate(fd, (uint64_t)st.st_size, &h, &entries, &models, &keys, &paths);
  if (!why) {
    base = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_SHARED, fd, 0);
    if (base == MAP_FAILED) why = "mmap failed";
  }
  map_impl *m = why ? NULL : calloc(1, sizeof *m);
  if (!m) {
    close(fd);
    if (!why) why = "out of memory";
    if (base != MAP_FAILED) munmap(base, (size_t)st.st_size);
    free(entries);
    free(models);
    say(msg, msg_len, "%s", why);
    return NULL;
  }
  m->pub.refs = 1;
  m->pub.fd = fd;
  m->pub.base = base;
  m->pub.size = (size_t)st.st_size;
  m->pub.entries = m->entries = entries;
  m->pub.n_entries = h.index_count;
  m->pub.models = m->models = models;
  m->pub.n_models = h.models_count;
  m->pub.keys = m->keys = keys;
  m->pub.n_keys = h.keys_count;
  m->pub.paths = paths;
  m->pub.paths_bytes = h.paths_bytes;
  m->pub.blob_bytes = h.blob_bytes;
  m->pub.dedup_saved = h.dedup_saved;
  m->path = strdup(path); /* NULL when out of memory: the blob is then not dropped, only repacked */
  fx_sigbus_watch(base, m->pub.size, fd);
  return &m->pub;
}

fx_cache_map *fx_cache_map_ref(fx_cache_map *m) {
  if (m) m->refs++;
  return m;
}

void fx_cache_map_unref(fx_cache_map *m) {
  if (!m || --m->refs) return;
  map_impl *impl = (map_impl *)m;
  fx_sigbus_unwatch(m->base);
  munmap((void *)m->base, m->size);
  close(m->fd);
  free(impl->entries);
  free(impl->models);
  free(impl->path);
  free(impl);
}

const fx_cache_entry *fx_cache_find(const fx_cache_map *m, uint64_t hi, uint64_t lo, uint32_t algo,
                                    uint32_t version) {
  if (!m) return NULL;
  fx_cache_entry probe = {.key_hi = hi, .key_lo = lo, .algo = algo, .layout_version = version};
  return bsearch(&probe, m->entries, (size_t)m->n_entries, sizeof probe, qsort_key_cmp);
}

static int same_file(const fx_cache_model *a, const fx_cache_model *b) {
  return a->dev == b->dev && a->ino == b->ino && a->size == b->size && a->mtime_ns == b->mtime_ns &&
         a->ctime_ns == b->ctime_ns && a->machine == b->machine;
}

const fx_cache_model *fx_cache_find_file(const fx_cache_map *m, const fx_cache_model *id) {
  if (!m || !id || (!id->dev && !id->ino)) return NULL;
  for (uint64_t i = 0; i < m->n_models; i++) /* no times: the file's version was not recorded */
    if ((m->models[i].mtime_ns || m->models[i].ctime_ns) && same_file(&m->models[i], id)) return &m->models[i];
  return NULL;
}

const char *fx_cache_model_path(const fx_cache_map *m, const fx_cache_model *r) {
  return r->path_len ? m->paths + r->path_offset : ""; /* validated: NUL-terminated in bounds */
}

int fx_cache_has_record(const fx_cache_map *m, const fx_cache_model *r, const char *model_path) {
  for (uint64_t i = 0; m && i < m->n_models; i++) {
    const fx_cache_model *o = &m->models[i];
    if (!model_cmp(o, r) && same_file(o, r) && o->n_keys == r->n_keys &&
        !strcmp(fx_cache_model_path(m, o), recordable(model_path)))
      return 1;
  }
  return 0;
}

/* Removes temp files of writers that died (kill -9 mid-write); called under the lock. */
static void remove_dead_temps(const char *path) {
  char dir[4096], prefix[512];
  const char *slash = strrchr(path, '/');
  size_t dlen = slash ? (size_t)(slash - path) : 0;
  if (dlen >= sizeof dir) return;
  memcpy(dir, path, dlen);
  dir[dlen] = 0;
  if (!slash) strcpy(dir, ".");
  else if (dlen == 0) strcpy(dir, "/");
  snprintf(prefix, sizeof prefix, "%s.tmp.", slash ? slash + 1 : path);
  DIR *d = opendir(dir);
  if (!d) return;
  struct dirent *e;
  size_t plen = strlen(prefix);
  while ((e = readdir(d))) {
    if (strncmp(e->d_name, prefix, plen)) continue;
    long pid = strtol(e->d_name + plen, NULL, 10);
    if (pid > 0 && kill((pid_t)pid, 0) && errno == ESRCH) unlinkat(dirfd(d), e->d_name, 0);
  }
  closedir(d);
}

/* Copies the old file's blob region [4096, end) into the new file. */
static int copy_region(const char *path, int out, uint64_t end) {
  int in = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC); /* as in fx_cache_open */
  if (in < 0) return -1;
  loff_t src = FX_CACHE_PAGE, dst = FX_CACHE_PAGE;
  int rc = 0;
  while ((uint64_t)src < end) {
    ssize_t r = copy_file_range(in, &src, out, &dst, (size_t)(end - (uint64_t)src), 0);
    if (r > 0) continue;
    if (r < 0 && errno == EINTR) continue;
    /* No in-kernel copy here (old kernel, cross-filesystem): plain read/write. */
    uint8_t buf[1 << 14];
    ssize_t n = pread(in, buf, sizeof buf < end - (uint64_t)src ? sizeof buf : (size_t)(end - (uint64_t)src), src);
    if (n <= 0 || pwrite_all(out, buf, (size_t)n, (uint64_t)dst)) { rc = -1; break; }
    src += n;
    dst += n;
  }
  close(in);
  return rc;
}

static uint64_t round_up(uint64_t v, uint64_t a) { return (v + a - 1) / a * a; }

static atomic_uint g_temp_counter;

/* The new file's model records, key lists and paths (the table the models checksum covers):
 * the old ones, but the record this load replaces (same fingerprint, dev, inode), plus this
 * load's (rec NULL: none) with rec_path. Returns the bytes, table->n_* set. */
typedef struct { size_t n_models, n_keys, paths_bytes, bytes; } table_size;

static uint8_t *merge_models(const fx_cache_map *cur, const fx_cache_model *rec, const fx_cache_keyref *keys,
                             const char *rec_path, table_size *size) {
  size_t max_models = (cur ? (size_t)cur->n_models : 0) + 1;
  /* Room for every old record's keys: a valid file's key ranges may overlap (each only has to
   * lie within the key list), so their total can exceed the list's length. Paths likewise. */
  size_t max_keys = rec ? rec->n_keys : 0, max_paths = strlen(rec_path) + 1;
  for (uint64_t i = 0; cur && i < cur->n_models; i++) {
    max_keys += cur->models[i].n_keys;
    max_paths += cur->models[i].path_len + 1;
  }
  fx_cache_model *models = calloc(max_models, sizeof *models);
  fx_cache_keyref *all_keys = calloc(max_keys + 1, sizeof *all_keys);
  char *paths = calloc(max_paths, 1);
  uint8_t *out = NULL;
  if (!models || !all_keys || !paths) goto done;
  const uint64_t n_old = cur ? cur->n_models : 0;
  size_t nm = 0, nk = 0, np = 0;
  for (uint64_t i = 0; i <= n_old; i++) { /* the old records, then this load's */
    const int is_rec = i == n_old;
    if (is_rec ? !rec : rec && !model_cmp(&cur->models[i], rec)) continue;
    const fx_cache_model *from = is_rec ? rec : &cur->models[i];
    const char *path = is_rec ? rec_path : fx_cache_model_path(cur, from);
    models[nm] = *from;
    models[nm].first_key = nk;
    memcpy(all_keys + nk, is_rec ? keys : cur->keys + from->first_key, from->n_keys * sizeof *all_keys);
    nk += from->n_keys;
    models[nm].path_len = (uint32_t)strlen(path);
    models[nm].path_offset = *path ? np : 0;
    models[nm].zero = 0;
    if (*path) {
      memcpy(paths + np, path, models[nm].path_len + 1);
      np += models[nm].path_len + 1;
    }
    nm++;
  }
  qsort(models, nm, sizeof *models, model_cmp);
  size->bytes = nm * sizeof *models + nk * sizeof *all_keys + np;
  out = malloc(size->bytes ? size->bytes : 1);
  if (out) {
    memcpy(out, models, nm * sizeof *models);
    memcpy(out + nm * sizeof *models, all_keys, nk * sizeof *all_keys);
    memcpy(out + nm * sizeof *models + nk * sizeof *all_keys, paths, np);
    size->n_models = nm;
    size->n_keys = nk;
    size->paths_bytes = np;
  }
done:
  free(models);
  free(all_keys);
  free(paths);
  return out;
}

/* The blobs the current file lacks, each key once, into add; returns how many. */
static size_t missing_blobs(const fx_cache_map *cur, const fx_cache_blob *blobs, size_t n, const fx_cache_blob **add) {
  size_t n_new = 0;
  for (size_t i = 0; i < n; i++) {
    const fx_cache_blob *b = &blobs[i];
    if (fx_cache_find(cur, b->key_hi, b->key_lo, b->algo, b->layout_version)) continue;
    int dup = 0;
    for (size_t j = 0; j < n_new && !dup; j++)
      dup = add[j]->key_hi == b->key_hi && add[j]->key_lo == b->key_lo && add[j]->algo == b->algo &&
            add[j]->layout_version == b->layout_version;
    if (!dup) add[n_new++] = b;
  }
  return n_new;
}

/* Bytes of the largest piece a packed blob is produced in: `chunk` parts. */
static size_t piece_bytes(const fx_cache_blob *b) {
  const size_t parts = b->n_parts ? b->n_parts : 1, chunk = b->chunk && b->chunk < parts ? b->chunk : parts;
  return b->size / parts * chunk;
}

/* Appends the n new blobs to fd from *end on, page-aligned, filling their index entries; *end
 * then is the end of the last. A packed blob is produced a piece (b->chunk parts) at a time
 * into one reusable buffer and written with pwrite: cheaper than storing through a shared file
 * mapping, where every first store to a page is a filesystem fault, and no blob need ever be
 * whole in memory. Write-back of each starts at once, so the final fsync mostly waits for
 * nothing. 0, or -1 with msg set. */
static int write_blobs(int fd, const fx_cache_blob *const *add, size_t n, uint64_t *end, fx_cache_entry *entries,
                       char *msg, size_t msg_len) {
  size_t biggest = 0;
  for (size_t i = 0; i < n; i++)
    if (add[i]->pack && piece_bytes(add[i]) > biggest) biggest = piece_bytes(add[i]);
  uint8_t *buf = biggest ? aligned_alloc(64, (biggest + 63) / 64 * 64) : NULL;
  if (biggest && !buf) {
    say(msg, msg_len, "%s", "out of memory");
    return -1;
  }
  int rc = 0;
  for (size_t i = 0; i < n && !rc; i++) {
    const fx_cache_blob *b = add[i];
    const uint64_t offset = round_up(*end, FX_CACHE_PAGE);
    const size_t parts = b->pack && b->n_parts ? b->n_parts : 1, step = b->pack ? piece_bytes(b) / (b->size / parts) : 1;
    const size_t part_bytes = b->size / parts;
    fx_hasher h;
    fx_hasher_init(&h, 0);
    for (size_t lo = 0; lo < parts && !rc; lo += step) {
      const size_t hi = lo + step < parts ? lo + step : parts, at = lo * part_bytes;
      const size_t len = hi == parts ? b->size - at : (hi - lo) * part_bytes;
      const uint8_t *src = b->data ? (const uint8_t *)b->data + at : buf;
      if (!b->data && b->pack(b->ctx, buf, lo, hi)) {
        say(msg, msg_len, "%s", "out of memory packing a blob");
        rc = -1;
      } else if (pwrite_all(fd, src, len, offset + at)) {
        say(msg, msg_len, "writing a blob failed: %s", strerror(errno));
        rc = -1;
      } else {
        fx_hasher_update(&h, src, len);
        sync_file_range(fd, (off64_t)(offset + at), (off64_t)len, SYNC_FILE_RANGE_WRITE);
      }
    }
    if (rc) break;
    uint64_t sum[2];
    fx_hasher_final(&h, sum);
    entries[i] = (fx_cache_entry){b->key_hi, b->key_lo, b->algo, b->layout_version, offset, b->size, sum[0], {0, 0}};
    *end = offset + b->size;
  }
  free(buf);
  return rc;
}

/* The index, the model records and, last, the header, behind the blobs ending at `end`: a
 * file cut short anywhere fails validation. 0, or -1 with msg set. */
static int write_index(int fd, const fx_cache_map *cur, fx_cache_entry *entries, size_t n_entries,
                       const fx_cache_model *model, const fx_cache_keyref *keys, const char *model_path, uint64_t end,
                       uint64_t blob_bytes, uint64_t dedup_bytes, char *msg, size_t msg_len) {
  table_size ts = {0};
  qsort(entries, n_entries, sizeof *entries, qsort_key_cmp);
  uint8_t *table = merge_models(cur, model, keys, recordable(model_path), &ts);
  if (!table) {
    say(msg, msg_len, "%s", "out of memory");
    return -1;
  }
  const size_t n_models = ts.n_models, n_keys = ts.n_keys, table_bytes = ts.bytes;
  fx_cache_header h = {0};
  memcpy(h.magic, k_magic, 8);
  h.format_version = FORMAT_VERSION;
  h.header_size = HEADER_SIZE;
  h.index_offset = round_up(end, 64);
  h.index_count = n_entries;
  h.index_checksum = fx_hash64(entries, n_entries * sizeof *entries, 0);
  h.models_offset = h.index_offset + 64 * n_entries;
  h.models_count = n_models;
  h.keys_offset = h.models_offset + sizeof(fx_cache_model) * n_models;
  h.keys_count = n_keys;
  h.paths_offset = h.keys_offset + sizeof(fx_cache_keyref) * n_keys;
  h.paths_bytes = ts.paths_bytes;
  h.models_checksum = fx_hash64(table, table_bytes, 0);
  h.file_size = h.models_offset + table_bytes;
  h.blob_bytes = blob_bytes;
  h.dedup_saved = (cur ? cur->dedup_saved : 0) + dedup_bytes;
#if defined(__x86_64__)
  snprintf(h.producer, sizeof h.producer, "flexdelegate 0.1.0 x86_64");
#elif defined(__aarch64__)
  snprintf(h.producer, sizeof h.producer, "flexdelegate 0.1.0 aarch64");
#else
  snprintf(h.producer, sizeof h.producer, "flexdelegate 0.1.0");
#endif
  h.header_checksum = fx_hash64(&h, offsetof(fx_cache_header, header_checksum), 0);
  const int failed = pwrite_all(fd, entries, n_entries * sizeof *entries, h.index_offset) ||
                     pwrite_all(fd, table, table_bytes, h.models_offset) || ftruncate(fd, (off_t)h.file_size) ||
                     pwrite_all(fd, &h, sizeof h, 0) || fsync(fd);
  if (failed) say(msg, msg_len, "writing the cache failed: %s", strerror(errno));
  free(table);
  return failed ? -1 : 0;
}

/* Renames the finished temp file over path, durably (the directory entry is synced too). */
static int publish(const char *tmp_path, const char *path, char *msg, size_t msg_len) {
  if (rename(tmp_path, path)) {
    say(msg, msg_len, "cannot replace the cache file: %s", strerror(errno));
    return -1;
  }
  char dir[4200];
  snprintf(dir, sizeof dir, "%s", path);
  char *slash = strrchr(dir, '/');
  if (slash) *(slash == dir ? slash + 1 : slash) = 0;
  int dfd = open(slash ? dir : ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd >= 0) { fsync(dfd); close(dfd); } /* the rename itself survives a power cut */
  return 0;
}

/* Writes the new file (the old blobs copied, the missing ones appended, index and records
 * rewritten) into a temp file and publishes it; the new mapping, or NULL with msg set. */
static fx_cache_map *rewrite(const char *path, const fx_cache_map *cur, const fx_cache_blob **add, size_t n_new,
                             const fx_cache_model *model, const fx_cache_keyref *keys, const char *model_path,
                             uint64_t dedup_bytes,
                             const fx_cache_entry *drop, char *msg, size_t msg_len) {
  char tmp_path[4200];
  snprintf(tmp_path, sizeof tmp_path, "%s.tmp.%ld.%u", path, (long)getpid(), atomic_fetch_add(&g_temp_counter, 1));
  int fd = open(tmp_path, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
  if (fd < 0) {
    say(msg, msg_len, "cannot create a temp file: %s", strerror(errno));
    return NULL;
  }
  fchmod(fd, 0644); /* whatever the umask: other processes share the file */
  size_t n_old = cur ? (size_t)cur->n_entries : 0;
  fx_cache_entry *entries = calloc(n_old + n_new + 1, sizeof *entries);
  uint64_t end = cur ? ((const fx_cache_header *)cur->base)->index_offset : FX_CACHE_PAGE;
  int rc = entries ? 0 : -1;
  if (rc) say(msg, msg_len, "%s", "out of memory");
  uint64_t dropped_bytes = 0;
  if (!rc && cur) {
    memcpy(entries, cur->entries, n_old * sizeof *entries);
    if (drop) { /* its bytes stay behind as dead space, never indexed again */
      entries[drop - cur->entries] = entries[n_old - 1];
      dropped_bytes = drop->size;
      n_old--;
    }
    if ((rc = copy_region(path, fd, end))) say(msg, msg_len, "copying the old blobs failed: %s", strerror(errno));
  }
  if (!rc) rc = write_blobs(fd, add, n_new, &end, entries + n_old, msg, msg_len);
  if (!rc) {
    uint64_t blob_bytes = cur ? cur->blob_bytes - dropped_bytes : 0;
    for (size_t i = 0; i < n_new; i++) blob_bytes += add[i]->size;
    rc = write_index(fd, cur, entries, n_old + n_new, model, keys, model_path, end, blob_bytes, dedup_bytes, msg,
                     msg_len);
  }
  free(entries);
  struct stat written;
  if (!rc && fstat(fd, &written)) rc = -1;
  close(fd);
  if (!rc) rc = publish(tmp_path, path, msg, msg_len);
  if (rc) {
    unlink(tmp_path);
    return NULL;
  }
  char why_new[160];
  fx_cache_map *result = fx_cache_open(path, why_new, sizeof why_new);
  if (!result) say(msg, msg_len, "the file just written does not validate: %s", why_new);
  /* The blobs this writer packed count as verified: only if the file mapped is exactly the
   * one written (someone may rename another over the path, or write into it, in between). */
  struct stat now;
  if (result && (fstat(result->fd, &now) || now.st_dev != written.st_dev || now.st_ino != written.st_ino ||
                 now.st_size != written.st_size || now.st_mtim.tv_sec != written.st_mtim.tv_sec ||
                 now.st_mtim.tv_nsec != written.st_mtim.tv_nsec)) {
    fx_cache_map_unref(result);
    result = NULL;
    say(msg, msg_len, "%s", "the cache file changed right after it was written");
  }
  return result;
}

/* msg says why the file at path is not ours to replace; 0 when it is (or nothing is there). */
static int foreign(const char *path, char *msg, size_t msg_len) {
  char what[64];
  if (fx_cache_owner_of(path, what, sizeof what) != FX_CACHE_FOREIGN) return 0;
  say(msg, msg_len, "%s: left alone", what);
  return 1;
}

/* The lock file <path>.lock, held exclusively, or -1 with msg set. `cache prune` may remove an
 * orphan lock file (one whose cache is gone) while holding it: a writer that opened it just
 * before locks a removed inode, so it checks that it holds the file now at the name, and
 * opens again if not. */
static int take_lock(const char *lock_path, char *msg, size_t msg_len) {
  for (;;) {
    int lock = open(lock_path, O_RDWR | O_CREAT | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC, 0644);
    if (lock < 0) {
      say(msg, msg_len, "cannot create the lock file: %s", strerror(errno));
      return -1;
    }
    while (flock(lock, LOCK_EX) && errno == EINTR) {
    }
    struct stat held, named;
    if (!fstat(lock, &held) && !lstat(lock_path, &named) && held.st_ino == named.st_ino && held.st_dev == named.st_dev)
      return lock;
    close(lock); /* removed or replaced meanwhile */
  }
}

fx_cache_map *fx_cache_commit(const char *path, const fx_cache_blob *blobs, size_t n,
                              const fx_cache_model *model, const fx_cache_keyref *keys, const char *model_path,
                              uint64_t dedup_bytes, char *msg, size_t msg_len) {
  char lock_path[4200];
  if (snprintf(lock_path, sizeof lock_path, "%s.lock", path) >= (int)sizeof lock_path) {
    say(msg, msg_len, "%s", "path too long");
    return NULL;
  }
  if (foreign(path, msg, msg_len)) return NULL; /* not even a lock file beside it */
  int lock = take_lock(lock_path, msg, msg_len);
  if (lock < 0) return NULL;
  if (foreign(path, msg, msg_len)) { /* put there since the check above */
    close(lock);
    return NULL;
  }
  remove_dead_temps(path);
  char why_old[160];
  fx_cache_map *cur = fx_cache_open(path, why_old, sizeof why_old), *result = NULL;
  const fx_cache_blob **add = calloc(n + 1, sizeof *add);
  if (!add) {
    say(msg, msg_len, "%s", "out of memory");
  } else {
    const size_t n_new = missing_blobs(cur, blobs, n, add);
    if (!n_new && cur && fx_cache_has_record(cur, model, recordable(model_path)))
      result = fx_cache_map_ref(cur); /* nothing to add */
    else result = rewrite(path, cur, add, n_new, model, keys, model_path, dedup_bytes, NULL, msg, msg_len);
  }
  free(add);
  fx_cache_map_unref(cur);
  flock(lock, LOCK_UN);
  close(lock);
  return result;
}

int fx_cache_read_sum(const fx_cache_map *m, uint64_t offset, uint64_t size, uint64_t *sum) {
  enum { CHUNK = 1 << 16 }; /* small: it counts against the budget too */
  uint8_t *buf = malloc(CHUNK);
  if (!buf) return -1;
  fx_hasher h;
  uint64_t out[2];
  fx_hasher_init(&h, 0);
  for (uint64_t got = 0; got < size;) {
    const size_t want = size - got < CHUNK ? (size_t)(size - got) : CHUNK;
    const ssize_t r = pread(m->fd, buf, want, (off_t)(offset + got));
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) { free(buf); return -1; } /* cut short */
    fx_hasher_update(&h, buf, (size_t)r);
    got += (uint64_t)r;
  }
  free(buf);
  fx_hasher_final(&h, out);
  *sum = out[0];
  return 0;
}

int fx_cache_drop_blob(const fx_cache_map *seen, uint64_t hi, uint64_t lo, uint32_t algo, uint32_t version) {
  const char *path = seen ? ((const map_impl *)seen)->path : NULL;
  char lock_path[4200];
  if (!path || snprintf(lock_path, sizeof lock_path, "%s.lock", path) >= (int)sizeof lock_path) return -1;
  char why[160], msg[160];
  int lock = take_lock(lock_path, msg, sizeof msg);
  if (lock < 0) return -1; /* read-only location: every load repacks it, as before */
  fx_cache_map *cur = fx_cache_open(path, why, sizeof why), *result = NULL;
  struct stat a, b;
  const int same = cur && !fstat(cur->fd, &a) && !fstat(seen->fd, &b) && a.st_dev == b.st_dev && a.st_ino == b.st_ino;
  const fx_cache_entry *e = cur ? fx_cache_find(cur, hi, lo, algo, version) : NULL;
  /* A newer version renamed over the path since is another writer's: its copy may be intact
   * (packed afresh) or the damaged bytes carried over, so it is judged by its own checksum. */
  uint64_t sum;
  if (e && !same && !fx_cache_read_sum(cur, e->offset, e->size, &sum) && sum == e->checksum) e = NULL;
  if (e) result = rewrite(path, cur, NULL, 0, NULL, NULL, NULL, 0, e, msg, sizeof msg);
  fx_cache_map_unref(result);
  fx_cache_map_unref(cur);
  flock(lock, LOCK_UN);
  close(lock);
  return result ? 0 : -1;
}
