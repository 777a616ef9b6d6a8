/* Delegate options: the one parser, used by the plugin entry and by Python's validation. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "conv/conv.h"
#include "delegate.h"
#include "flex_api.h"
#include "runtime/log.h"

const char *fx_parse_option(fx_options *o, const char *key, const char *value) {
  if (!key || !value) return "option key and value must be strings";
  char *end;
  errno = 0;
  if (!strcmp(key, "num_threads")) {
    long v = strtol(value, &end, 10);
    if (errno || end == value || *end || v < -1 || v == 0 || v > 256)
      return "invalid num_threads: expected an integer from 1 to 256, or -1 for the interpreter's";
    o->num_threads = (int)v;
  } else if (!strcmp(key, "budget")) {
    double v = strtod(value, &end);
    if (end == value || *end || errno) return flex_check_budget(NAN); /* ERANGE: past a double */
    const char *why = flex_check_budget(v);
    if (why) return why;
    o->budget_mb = v;
  } else if (!strcmp(key, "cache_path")) {
    free(o->cache_path);
    o->cache_path = strdup(value);
    if (!o->cache_path) return "out of memory";
  } else if (!strcmp(key, "log")) {
    unsigned m;
    if (fx_log_parse(value, &m))
      return "invalid log: expected a comma list of partition, plan, cache, exec, all, none";
    o->log = m;
  } else if (!strcmp(key, "profile")) {
    if (strcmp(value, "0") && strcmp(value, "1")) return "invalid profile: expected 0 or 1";
    o->profile = value[0] == '1';
  } else if (!strcmp(key, "winograd")) {
    static const char *const modes[] = {[FX_WINO_AUTO] = "auto", [FX_WINO_ALL] = "all", [FX_WINO_OFF] = "off"};
    int m = -1;
    for (int i = 0; i < 3 && m < 0; i++)
      if (!strcmp(value, modes[i])) m = i;
    if (m < 0) return "invalid winograd: expected auto, all or off";
    o->winograd = m;
  } else {
    return "unknown option: accepted options are budget, cache_path, num_threads, log, profile, winograd";
  }
  return NULL;
}

const char *flex_check_budget(double mb) {
  if (!(mb >= 0 && mb <= FLEX_BUDGET_MAX_MB)) /* also NaN and infinities */
    return "invalid budget: expected megabytes as a number from 0 (unlimited) to 10000000";
  return NULL;
}

const char *flex_check_option(const char *key, const char *value) {
  fx_options o = {0};
  const char *err = fx_parse_option(&o, key, value);
  free(o.cache_path);
  return err;
}
