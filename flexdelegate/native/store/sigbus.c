#define _GNU_SOURCE
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include "sigbus.h"

/* Fixed-size table read by the signal handler without locks. A cache mapping per
 * interpreter and file: 256 live at once is far beyond real use; more simply go unwatched. */
#define MAX_RANGES 256

typedef struct {
  _Atomic uintptr_t lo, hi;
  atomic_int damaged;
  /* Not read by the signal handler; under g_files_lock. */
  int fd;
  struct stat id;
} range;

/* Serialises watch / unwatch (which close the fd after) with fx_mapping_check_files. */
static pthread_mutex_t g_files_lock = PTHREAD_MUTEX_INITIALIZER;

static range g_ranges[MAX_RANGES];
static atomic_int g_any_damage;
static struct sigaction g_prev;
static atomic_int g_installed;

static void on_sigbus(int sig, siginfo_t *info, void *uctx) {
  uintptr_t a = (uintptr_t)info->si_addr;
  for (int i = 0; i < MAX_RANGES; i++) {
    uintptr_t lo = atomic_load(&g_ranges[i].lo), hi = atomic_load(&g_ranges[i].hi);
    if (lo && a >= lo && a < hi) {
      uintptr_t page = a & ~(uintptr_t)(sysconf(_SC_PAGESIZE) - 1);
      mmap((void *)page, (size_t)sysconf(_SC_PAGESIZE), PROT_READ,
           MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
      if (!atomic_exchange(&g_ranges[i].damaged, 1)) atomic_fetch_add(&g_any_damage, 1);
      return; /* the load retries and reads zeros; the kernel reports the damage */
    }
  }
  if (g_prev.sa_flags & SA_SIGINFO) {
    g_prev.sa_sigaction(sig, info, uctx);
  } else if (g_prev.sa_handler != SIG_IGN && g_prev.sa_handler != SIG_DFL) {
    g_prev.sa_handler(sig);
  } else {
    signal(sig, SIG_DFL);
    raise(sig);
  }
}

static void install(void) {
  int expected = 0;
  if (!atomic_compare_exchange_strong(&g_installed, &expected, 1)) return;
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_sigaction = on_sigbus;
  sa.sa_flags = SA_SIGINFO | SA_NODEFER;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGBUS, &sa, &g_prev);
}

void fx_sigbus_watch(const void *base, size_t size, int fd) {
  install();
  pthread_mutex_lock(&g_files_lock);
  for (int i = 0; i < MAX_RANGES; i++) {
    uintptr_t zero = 0;
    if (atomic_compare_exchange_strong(&g_ranges[i].lo, &zero, (uintptr_t)base)) {
      g_ranges[i].fd = fstat(fd, &g_ranges[i].id) ? -1 : fd;
      atomic_store(&g_ranges[i].damaged, 0);
      atomic_store(&g_ranges[i].hi, (uintptr_t)base + size);
      break;
    }
  }
  pthread_mutex_unlock(&g_files_lock);
}

static range *find(const void *base) {
  for (int i = 0; i < MAX_RANGES; i++)
    if (atomic_load(&g_ranges[i].lo) == (uintptr_t)base) return &g_ranges[i];
  return NULL;
}

void fx_sigbus_unwatch(const void *base) {
  pthread_mutex_lock(&g_files_lock);
  range *r = find(base);
  if (r) {
    r->fd = -1;
    atomic_store(&r->hi, 0);
    atomic_store(&r->lo, 0);
  }
  pthread_mutex_unlock(&g_files_lock);
}

static int same_time(struct timespec a, struct timespec b) { return a.tv_sec == b.tv_sec && a.tv_nsec == b.tv_nsec; }

int fx_mapping_check_files(void) {
  int changed = 0;
  pthread_mutex_lock(&g_files_lock);
  for (int i = 0; i < MAX_RANGES; i++) {
    range *r = &g_ranges[i];
    if (!atomic_load(&r->hi) || r->fd < 0 || atomic_load(&r->damaged)) continue;
    struct stat now;
    /* A write in place moves mtime, truncation the size; our own files are never written once
     * published. Not ctime: unlinking the file (a newer version renamed over the path, a
     * prune) moves it, and leaves the bytes we map intact. */
    if (!fstat(r->fd, &now) && now.st_size == r->id.st_size && same_time(now.st_mtim, r->id.st_mtim)) continue;
    if (!atomic_exchange(&r->damaged, 1)) atomic_fetch_add(&g_any_damage, 1);
    changed++;
  }
  pthread_mutex_unlock(&g_files_lock);
  return changed;
}

int fx_sigbus_any(void) { return atomic_load_explicit(&g_any_damage, memory_order_relaxed); }

int fx_sigbus_damaged(const void *base) {
  range *r = find(base);
  return r ? atomic_load(&r->damaged) : 0;
}
