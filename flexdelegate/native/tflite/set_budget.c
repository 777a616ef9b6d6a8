/* flex_set_budget (flex_api.h): every partition planned again for a new memory budget
 * between invokes; an infeasible budget leaves the old one in force. */
#include <stdio.h>
#include "delegate.h"
#include "flex_api.h"
#include "store/store.h"

/* Lays out every partition again for d's current budget; the first failure, or NULL. With
 * keep_going the others are still re-planned (restoring the old budget must reach them all). */
static const char *replan_all(fx_delegate *d, int keep_going, char *msg, size_t msg_len) {
  const char *first = NULL;
  for (int i = 0; i < d->n_subgraphs; i++)
    for (int j = 0; j < d->subgraphs[i].n_parts; j++) {
      const char *why = fx_partition_replan(d->subgraphs[i].parts[j], msg, msg_len);
      if (why && !first) first = why;
      if (why && !keep_going) return first;
    }
  return first;
}

/* Going under a budget: the GEMM forms a load under a budget packs (delegate.c), written
 * to the cache file now, so the plan can stream them. 0 ok, -1 out of memory. */
static int add_gemm_forms(fx_delegate *d) {
  if (!fx_store_path(d->store)) return 0;
  for (int i = 0; i < d->n_subgraphs; i++)
    for (int j = 0; j < d->subgraphs[i].n_parts; j++)
      if (fx_partition_add_gemm_forms(d->subgraphs[i].parts[j]) < 0) return -1;
  /* Only blobs the file lacks are worth a write (it copies the whole file). */
  if (fx_store_pending(d->store)) fx_store_commit(d->store, 0);
  return 0;
}

static int set_budget_locked(fx_delegate *d, double mb, char *msg, size_t msg_len);

int flex_set_budget(void *delegate, double mb, char *msg, size_t msg_len) {
  fx_delegate *d = delegate;
  const char *invalid = d ? flex_check_budget(mb) : "no delegate";
  if (invalid) {
    snprintf(msg, msg_len, "%s", invalid);
    return -1;
  }
  pthread_mutex_lock(&d->state_lock);
  fx_delegate_settle(d, 1); /* a budget plan streams weights from the file */
  pthread_rwlock_wrlock(&d->weights_lock); /* no invoke runs a plan being replaced */
  int rc = set_budget_locked(d, mb, msg, msg_len);
  pthread_rwlock_unlock(&d->weights_lock);
  pthread_mutex_unlock(&d->state_lock);
  return rc;
}

static int set_budget_locked(fx_delegate *d, double mb, char *msg, size_t msg_len) {
  if (mb > 0 && add_gemm_forms(d)) {
    snprintf(msg, msg_len, "out of memory packing the GEMM form of Winograd convolutions");
    return -1;
  }
  double old = d->opts.budget_mb;
  d->opts.budget_mb = mb;
  const char *why = replan_all(d, 0, msg, msg_len);
  if (!why) return 0;
  if (why != msg) snprintf(msg, msg_len, "%s", why);
  /* Keep the delegate runnable: back to the old budget (its plan is feasible). */
  d->opts.budget_mb = old;
  char ignored[512];
  replan_all(d, 1, ignored, sizeof ignored);
  return -1;
}
