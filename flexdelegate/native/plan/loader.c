#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include "loader.h"

struct fx_budget {
  fx_step *steps;
  int n_steps;
  fx_load_unit *units;
  int n_units;
  int *deps, deps_start;
  char *arena;
  pthread_t loader;
  int started;
  pthread_mutex_t mu;
  /* Separate conditions, signalled only when someone waits for exactly that: a wake-up per
   * step costs a context switch, which on a 60-layer MobileNet is most of the overhead. */
  pthread_cond_t loader_cv, compute_cv;
  int loader_waits_for; /* step the loader needs done (-2: not waiting on steps) */
  int compute_waits;    /* the compute thread sleeps until a unit arrives */
  unsigned long run;    /* bumped per invoke */
  int done_step;        /* last step computed in this run (-1: none yet) */
  int loaded;           /* units [0, loaded) are in place for this run */
  int failed, stop;
};

static int copy_unit(fx_budget *b, const fx_load_unit *u) {
  char *dst = b->arena + u->slot;
  if (u->fd < 0) {
    memcpy(dst, u->mem, u->bytes);
    return 0;
  }
  size_t got = 0;
  while (got < u->bytes) {
    ssize_t r = pread(u->fd, dst + got, u->bytes - got, u->file_off + (off_t)got);
    if (r <= 0) {
      if (r < 0 && errno == EINTR) continue;
      return -1;
    }
    got += (size_t)r;
  }
  return 0;
}

static int allowed_step(const fx_budget *b) {
  return b->done_step < 0 ? b->deps_start : b->deps[b->done_step];
}

static void wake_compute(fx_budget *b) {
  if (b->compute_waits) pthread_cond_signal(&b->compute_cv);
}

static void *loader_main(void *arg) {
  fx_budget *b = arg;
  unsigned long seen = 0;
  pthread_mutex_lock(&b->mu);
  for (;;) {
    while (!b->stop && b->run == seen) pthread_cond_wait(&b->loader_cv, &b->mu);
    if (b->stop) break;
    seen = b->run;
    for (int u = b->loaded; u < b->n_units && b->run == seen && !b->stop; u = b->loaded) {
      if (b->units[u].pinned) { /* loaded once at setup */
        b->loaded = u + 1;
        wake_compute(b);
        continue;
      }
      while (!b->stop && b->run == seen && b->units[u].step > allowed_step(b)) {
        b->loader_waits_for = b->units[u].step;
        pthread_cond_wait(&b->loader_cv, &b->mu);
      }
      b->loader_waits_for = -2;
      if (b->stop || b->run != seen) break;
      pthread_mutex_unlock(&b->mu);
      int rc = copy_unit(b, &b->units[u]);
      pthread_mutex_lock(&b->mu);
      if (rc) b->failed = 1;
      b->loaded = u + 1;
      wake_compute(b);
    }
  }
  pthread_mutex_unlock(&b->mu);
  return NULL;
}

fx_budget *fx_budget_new(fx_step *steps, int n_steps, fx_load_unit *units, int n_units, int *deps,
                         int deps_start, char *arena) {
  fx_budget *b = calloc(1, sizeof *b);
  if (!b) return NULL;
  *b = (fx_budget){.steps = steps, .n_steps = n_steps, .units = units, .n_units = n_units, .deps = deps,
                   .deps_start = deps_start, .arena = arena, .done_step = -1, .loader_waits_for = -2};
  pthread_mutex_init(&b->mu, NULL);
  pthread_cond_init(&b->loader_cv, NULL);
  pthread_cond_init(&b->compute_cv, NULL);
  b->loaded = n_units; /* nothing to do until the first run */
  if (pthread_create(&b->loader, NULL, loader_main, b)) {
    b->steps = NULL; /* still the caller's */
    b->units = NULL;
    b->deps = NULL;
    fx_budget_free(b);
    return NULL;
  }
  b->started = 1;
  return b;
}

void fx_budget_free(fx_budget *b) {
  if (!b) return;
  if (b->started) {
    pthread_mutex_lock(&b->mu);
    b->stop = 1;
    pthread_cond_broadcast(&b->loader_cv);
    pthread_mutex_unlock(&b->mu);
    pthread_join(b->loader, NULL);
  }
  pthread_mutex_destroy(&b->mu);
  pthread_cond_destroy(&b->loader_cv);
  pthread_cond_destroy(&b->compute_cv);
  free(b->steps);
  free(b->units);
  free(b->deps);
  free(b);
}

int fx_budget_load_pinned(fx_budget *b) {
  for (int u = 0; u < b->n_units; u++)
    if (b->units[u].pinned && copy_unit(b, &b->units[u])) return -1;
  return 0;
}

const fx_step *fx_budget_steps(const fx_budget *b, int *n) {
  *n = b->n_steps;
  return b->steps;
}

void fx_budget_start(fx_budget *b) {
  pthread_mutex_lock(&b->mu);
  b->run++;
  b->done_step = -1;
  b->loaded = 0;
  b->failed = 0;
  pthread_cond_signal(&b->loader_cv);
  pthread_mutex_unlock(&b->mu);
}

int fx_budget_wait(fx_budget *b, int step) {
  int u = b->steps[step].unit;
  if (u < 0) return 0;
  pthread_mutex_lock(&b->mu);
  while (b->loaded <= u && !b->failed) {
    b->compute_waits = 1;
    pthread_cond_wait(&b->compute_cv, &b->mu);
  }
  b->compute_waits = 0;
  int failed = b->failed;
  pthread_mutex_unlock(&b->mu);
  return failed ? -1 : 0;
}

void fx_budget_done(fx_budget *b, int step) {
  pthread_mutex_lock(&b->mu);
  b->done_step = step;
  if (b->loader_waits_for != -2 && allowed_step(b) >= b->loader_waits_for) pthread_cond_signal(&b->loader_cv);
  pthread_mutex_unlock(&b->mu);
}
