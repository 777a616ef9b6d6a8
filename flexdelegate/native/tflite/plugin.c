/* The TFLite external-delegate plugin entry points, and nothing else (the runtime finds them
 * with dlsym): options in, a delegate out (delegate.c). */
#include <stdio.h>
#include <stdlib.h>
#include "delegate.h"
#include "flex_api.h"

/* 1: this library can plan a budget (the CFFI module, Python's planner behind
 * flex_plan_callback); plain/no_python.c overrides it with 0 in the plain library. A weak
 * function, not a weak constant: the compiler may fold the constant's value into the caller. */
__attribute__((weak)) int fx_has_python_planner(void) { return 1; }

void *tflite_plugin_create_delegate(char **keys, char **values, size_t n,
                                    void (*report_error)(const char *)) {
  fx_options opts = {.num_threads = -1};
  /* Python's loader passes the count as a C int: only the low 32 bits are defined. */
  n = (size_t)(uint32_t)n;
  for (size_t i = 0; i < n; i++) {
    const char *err = fx_parse_option(&opts, keys ? keys[i] : NULL, values ? values[i] : NULL);
    if (err) {
      char msg[FLEX_MSG_LEN];
      snprintf(msg, sizeof msg, "flexdelegate: option '%s': %s", keys && keys[i] ? keys[i] : "?", err);
      if (report_error) report_error(msg);
      free(opts.cache_path);
      return NULL;
    }
  }
  if (opts.budget_mb > 0 && !fx_has_python_planner()) {
    if (report_error) report_error("flexdelegate: option 'budget': " FLEX_PLAIN_NO_BUDGET);
    free(opts.cache_path);
    return NULL;
  }
  fx_delegate *d = fx_delegate_new(&opts);
  if (!d) {
    if (report_error) report_error("flexdelegate: out of memory");
    return NULL;
  }
  return &d->base;
}

/* The runtime is done with the delegate; kernels of a live interpreter may still use it. */
void tflite_plugin_destroy_delegate(void *delegate) { fx_delegate_unref(delegate); }
