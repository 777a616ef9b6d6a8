/* flex_set_budget (flex_api.h): every partition planned again for a new memory budget
 * between invokes; an infeasible budget leaves the old one in force. Going under a budget needs
 * nothing packed: a Winograd conv's GEMM form, the plan's fallback, was stored with the cache
 * file at load (partition.c). */
#include <stdio.h>
#include <string.h>
#include "delegate.h"
#include "flex_api.h"
#include "store/store.h"

static void say(flex_error *err, const char *text) {
  *err = (flex_error){.node = -1};
  snprintf(err->message, sizeof err->message, "%s", text);
}

/* Lays out every partition again for d's current budget; the first failure, or NULL. With
 * keep_going the others are still re-planned (restoring the old budget must reach them all). */
static const char *replan_all(fx_delegate *d, int keep_going, flex_error *err) {
  const char *first = NULL;
  for (int i = 0; i < d->n_subgraphs; i++)
    for (int j = 0; j < d->subgraphs[i].n_parts; j++) {
      const char *why = fx_partition_replan(d->subgraphs[i].parts[j], err);
      if (why && !first) first = why;
      if (why && !keep_going) return first;
    }
  return first;
}

static int set_budget_locked(fx_delegate *d, double mb, flex_error *err) {
  fx_store_stats st;
  fx_store_get_stats(d->store, &st);
  if (mb > 0 && st.bytes_packed && st.backing == FX_BACKING_MEMORY) { /* never a budget in name only */
    say(err, "set_budget: the weights were packed in memory (loaded with no cache file and no budget); "
             "load with budget= or a writable cache_path= to stream them");
    return -1;
  }
  const double old = d->opts.budget_mb;
  d->opts.budget_mb = mb;
  const char *why = replan_all(d, 0, err);
  if (!why) return 0;
  if (why != err->message) say(err, why);
  /* Keep the delegate runnable: back to the old budget (its plan is feasible). */
  d->opts.budget_mb = old;
  flex_error ignored;
  replan_all(d, 1, &ignored);
  return -1;
}

void fx_delegate_plan_outcome(fx_delegate *d, const char *why, const flex_error *err) {
  if (!why) {
    say(&d->last_error, "");
    return;
  }
  d->last_error = *err;
  if (why != err->message) snprintf(d->last_error.message, sizeof d->last_error.message, "%s", why);
}

int flex_last_error(void *delegate, flex_error *err) {
  fx_delegate *d = delegate;
  say(err, "");
  if (!d) return 0;
  pthread_mutex_lock(&d->state_lock);
  *err = d->last_error;
  pthread_mutex_unlock(&d->state_lock);
  return err->message[0] != 0;
}

int flex_set_budget(void *delegate, double mb, flex_error *err) {
  fx_delegate *d = delegate;
  say(err, "");
  const char *invalid = d ? flex_check_budget(mb) : "no delegate";
  if (invalid) {
    say(err, invalid);
    return -1;
  }
  pthread_mutex_lock(&d->state_lock);
  fx_delegate_settle(d, 1); /* a budget plan streams weights from the file */
  pthread_rwlock_wrlock(&d->weights_lock); /* no invoke runs a plan being replaced */
  int rc = set_budget_locked(d, mb, err);
  fx_delegate_plan_outcome(d, rc ? err->message : NULL, err);
  pthread_rwlock_unlock(&d->weights_lock);
  pthread_mutex_unlock(&d->state_lock);
  return rc;
}
