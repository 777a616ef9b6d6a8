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
#include "hash.h"
#include "sigbus.h"

#define HEADER_SIZE 256
#define FORMAT_VERSION 1
static const char k_magic[8] = {'F', 'L', 'X', 'C', 'A', 'C', 'H', 'E'};

typedef struct {
  char magic[8];
  uint32_t format_version, header_size;
  uint64_t file_size, index_offset, index_count, index_checksum;
  uint64_t models_offset, models_count, models_checksum;
  uint64_t blob_bytes, dedup_saved;
  char producer[64];
  uint8_t zero[96];
  uint64_t header_checksum;
} fx_cache_header;
_Static_assert(sizeof(fx_cache_header) == HEADER_SIZE, "header layout");
_Static_assert(sizeof(fx_cache_entry) == 64, "entry layout");

/* What a map owns besides the public fields. */
typedef struct {
  fx_cache_map pub;
  fx_cache_entry *entries;
  uint64_t *models;
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

static int by_offset(const void *a, const void *b) {
  const fx_cache_entry *x = *(fx_cache_entry *const *)a, *y = *(fx_cache_entry *const *)b;
  return x->offset < y->offset ? -1 : x->offset > y->offset;
}

static int u64_cmp(const void *a, const void *b) {
  uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return x < y ? -1 : x > y;
}

/* Header, index and model table are read with pread and checked before anything trusts the
 * mapping: a hostile file cannot make us read out of bounds. */
static const char *validate(int fd, uint64_t file_size, fx_cache_header *h, fx_cache_entry **entries,
                            uint64_t **models) {
  *entries = NULL;
  *models = NULL;
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
      h->models_count > (file_size - h->models_offset) / 8 ||
      h->models_offset + 8 * h->models_count != file_size)
    return "model table out of bounds";
  size_t ib = (size_t)h->index_count * 64, mb = (size_t)h->models_count * 8;
  *entries = malloc(ib ? ib : 1);
  *models = malloc(mb ? mb : 1);
  if (!*entries || !*models) return "out of memory";
  if (pread_all(fd, *entries, ib, h->index_offset) || pread_all(fd, *models, mb, h->models_offset))
    return "unreadable index";
  if (fx_hash64(*entries, ib, 0) != h->index_checksum) return "index checksum mismatch";
  if (fx_hash64(*models, mb, 0) != h->models_checksum) return "model table checksum mismatch";
  for (uint64_t i = 1; i < h->index_count; i++)
    if (key_cmp(&(*entries)[i - 1], &(*entries)[i]) >= 0) return "index not sorted";
  for (uint64_t i = 1; i < h->models_count; i++)
    if ((*models)[i - 1] >= (*models)[i]) return "model table not sorted";
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

fx_cache_map *fx_cache_open(const char *path, char *msg, size_t msg_len) {
  say(msg, msg_len, "%s", "");
  int fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) {
    if (errno != ENOENT) say(msg, msg_len, "cannot open: %s", errno == ELOOP ? "is a symlink" : strerror(errno));
    return NULL;
  }
  struct stat st;
  fx_cache_header h;
  fx_cache_entry *entries = NULL;
  uint64_t *models = NULL;
  const char *why = NULL;
  void *base = MAP_FAILED;
  if (fstat(fd, &st)) why = "cannot stat";
  else if (!S_ISREG(st.st_mode)) why = "not a regular file";
  else why = validate(fd, (uint64_t)st.st_size, &h, &entries, &models);
  if (!why) {
    base = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_SHARED, fd, 0);
    if (base == MAP_FAILED) why = "mmap failed";
  }
  close(fd);
  map_impl *m = why ? NULL : calloc(1, sizeof *m);
  if (!m) {
    if (!why) why = "out of memory";
    if (base != MAP_FAILED) munmap(base, (size_t)st.st_size);
    free(entries);
    free(models);
    say(msg, msg_len, "%s", why);
    return NULL;
  }
  m->pub.refs = 1;
  m->pub.base = base;
  m->pub.size = (size_t)st.st_size;
  m->pub.entries = m->entries = entries;
  m->pub.n_entries = h.index_count;
  m->pub.models = m->models = models;
  m->pub.n_models = h.models_count;
  m->pub.blob_bytes = h.blob_bytes;
  m->pub.dedup_saved = h.dedup_saved;
  fx_sigbus_watch(base, m->pub.size);
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
  free(impl->entries);
  free(impl->models);
  free(impl);
}

const fx_cache_entry *fx_cache_find(const fx_cache_map *m, uint64_t hi, uint64_t lo, uint32_t algo,
                                    uint32_t version) {
  if (!m) return NULL;
  fx_cache_entry probe = {.key_hi = hi, .key_lo = lo, .algo = algo, .layout_version = version};
  return bsearch(&probe, m->entries, (size_t)m->n_entries, sizeof probe, qsort_key_cmp);
}

int fx_cache_has_model(const fx_cache_map *m, uint64_t fp) {
  return m && bsearch(&fp, m->models, (size_t)m->n_models, sizeof fp, u64_cmp) != NULL;
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
  int in = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
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

fx_cache_map *fx_cache_commit(const char *path, const fx_cache_blob *blobs, size_t n,
                              uint64_t model_fp, uint64_t dedup_bytes, char *msg, size_t msg_len) {
  char lock_path[4200], tmp_path[4200];
  if (snprintf(lock_path, sizeof lock_path, "%s.lock", path) >= (int)sizeof lock_path) {
    say(msg, msg_len, "%s", "path too long");
    return NULL;
  }
  int lock = open(lock_path, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0644);
  if (lock < 0) {
    say(msg, msg_len, "cannot create the lock file: %s", strerror(errno));
    return NULL;
  }
  while (flock(lock, LOCK_EX) && errno == EINTR) {
  }
  remove_dead_temps(path);
  char why_old[160];
  fx_cache_map *cur = fx_cache_open(path, why_old, sizeof why_old);
  fx_cache_map *result = NULL;
  fx_cache_entry *entries = NULL;
  uint64_t *models = NULL;
  int fd = -1;
  tmp_path[0] = 0;
  /* What is missing (each key once). */
  size_t n_old = cur ? (size_t)cur->n_entries : 0, n_new = 0;
  entries = calloc(n_old + n + 1, sizeof *entries);
  models = calloc((cur ? (size_t)cur->n_models : 0) + 1, sizeof *models);
  if (!entries || !models) { say(msg, msg_len, "%s", "out of memory"); goto out; }
  if (cur) memcpy(entries, cur->entries, n_old * sizeof *entries);
  const fx_cache_blob **add = calloc(n + 1, sizeof *add);
  if (!add) { say(msg, msg_len, "%s", "out of memory"); goto out; }
  for (size_t i = 0; i < n; i++) {
    const fx_cache_blob *b = &blobs[i];
    if (fx_cache_find(cur, b->key_hi, b->key_lo, b->algo, b->layout_version)) continue;
    int dup = 0;
    for (size_t j = 0; j < n_new && !dup; j++)
      dup = add[j]->key_hi == b->key_hi && add[j]->key_lo == b->key_lo && add[j]->algo == b->algo &&
            add[j]->layout_version == b->layout_version;
    if (!dup) add[n_new++] = b;
  }
  if (!n_new && cur && fx_cache_has_model(cur, model_fp)) {
    result = fx_cache_map_ref(cur);
    free(add);
    goto out;
  }
  snprintf(tmp_path, sizeof tmp_path, "%s.tmp.%ld.%u", path, (long)getpid(),
           atomic_fetch_add(&g_temp_counter, 1));
  fd = open(tmp_path, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
  if (fd < 0) {
    say(msg, msg_len, "cannot create a temp file: %s", strerror(errno));
    tmp_path[0] = 0;
    free(add);
    goto out;
  }
  fchmod(fd, 0644); /* whatever the umask: other processes share the file */
  fx_cache_header h = {0};
  memcpy(h.magic, k_magic, 8);
  uint64_t end = FX_CACHE_PAGE;
  if (cur) {
    const fx_cache_header *old = (const fx_cache_header *)cur->base;
    end = old->index_offset;
    if (copy_region(path, fd, end)) {
      say(msg, msg_len, "copying the old blobs failed: %s", strerror(errno));
      free(add);
      goto out;
    }
  }
  uint64_t blob_bytes = cur ? cur->blob_bytes : 0, new_start = round_up(end, FX_CACHE_PAGE);
  uint64_t *offsets = calloc(n_new + 1, sizeof *offsets);
  if (!offsets) { say(msg, msg_len, "%s", "out of memory"); free(add); goto out; }
  for (size_t i = 0; i < n_new; i++) {
    offsets[i] = round_up(end, FX_CACHE_PAGE);
    end = offsets[i] + add[i]->size;
  }
  /* New blobs are produced straight into the file's pages through a shared mapping; write-back
   * of each starts as soon as it is done, so the final fsync mostly waits for nothing. */
  uint8_t *rw = MAP_FAILED;
  if (end > new_start) {
    /* Reserve the blocks first: a full disk must fail here, not as a SIGBUS on a store. */
    int fe = posix_fallocate(fd, (off_t)new_start, (off_t)(end - new_start));
    if (!fe) rw = mmap(NULL, (size_t)(end - new_start), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE,
                       fd, (off_t)new_start);
    if (fe || rw == MAP_FAILED) {
      say(msg, msg_len, "cannot grow the cache file: %s", strerror(fe ? fe : errno));
      free(add);
      free(offsets);
      goto out;
    }
  }
  for (size_t i = 0; i < n_new; i++) {
    uint8_t *dst = rw + (offsets[i] - new_start);
    if (add[i]->pack) add[i]->pack(add[i]->ctx, dst);
    else memcpy(dst, add[i]->data, add[i]->size);
    entries[n_old + i] = (fx_cache_entry){add[i]->key_hi, add[i]->key_lo, add[i]->algo,
                                          add[i]->layout_version, offsets[i], add[i]->size,
                                          fx_hash64(dst, add[i]->size, 0), {0, 0}};
    sync_file_range(fd, (off64_t)offsets[i], (off64_t)add[i]->size, SYNC_FILE_RANGE_WRITE);
    blob_bytes += add[i]->size;
  }
  if (rw != MAP_FAILED) munmap(rw, (size_t)(end - new_start));
  free(offsets);
  free(add);
  size_t n_entries = n_old + n_new, n_models = cur ? (size_t)cur->n_models : 0;
  qsort(entries, n_entries, sizeof *entries, qsort_key_cmp);
  if (cur) memcpy(models, cur->models, n_models * sizeof *models);
  if (!fx_cache_has_model(cur, model_fp)) models[n_models++] = model_fp;
  qsort(models, n_models, sizeof *models, u64_cmp);
  h.format_version = FORMAT_VERSION;
  h.header_size = HEADER_SIZE;
  h.index_offset = round_up(end, 64);
  h.index_count = n_entries;
  h.index_checksum = fx_hash64(entries, n_entries * sizeof *entries, 0);
  h.models_offset = h.index_offset + 64 * n_entries;
  h.models_count = n_models;
  h.models_checksum = fx_hash64(models, n_models * sizeof *models, 0);
  h.file_size = h.models_offset + 8 * n_models;
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
  /* The header goes last: a file cut short anywhere fails validation. */
  if (pwrite_all(fd, entries, n_entries * sizeof *entries, h.index_offset) ||
      pwrite_all(fd, models, n_models * sizeof *models, h.models_offset) ||
      ftruncate(fd, (off_t)h.file_size) || pwrite_all(fd, &h, sizeof h, 0) || fsync(fd)) {
    say(msg, msg_len, "writing the cache failed: %s", strerror(errno));
    goto out;
  }
  close(fd);
  fd = -1;
  if (rename(tmp_path, path)) {
    say(msg, msg_len, "cannot replace the cache file: %s", strerror(errno));
    goto out;
  }
  tmp_path[0] = 0;
  char dir[4200];
  snprintf(dir, sizeof dir, "%s", path);
  char *slash = strrchr(dir, '/');
  if (slash) *(slash == dir ? slash + 1 : slash) = 0;
  int dfd = open(slash ? dir : ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd >= 0) { fsync(dfd); close(dfd); } /* the rename itself survives a power cut */
  char why_new[160];
  result = fx_cache_open(path, why_new, sizeof why_new);
  if (!result) say(msg, msg_len, "the file just written does not validate: %s", why_new);
out:
  if (fd >= 0) close(fd);
  if (tmp_path[0]) unlink(tmp_path);
  fx_cache_map_unref(cur);
  free(entries);
  free(models);
  flock(lock, LOCK_UN);
  close(lock);
  return result;
}
