/* Delegate options: the one table (name, kind, help text, parser) behind the plugin entry,
 * Python's validation and Python's list of names (flex_option_at). */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "conv/conv.h"
#include "delegate.h"
#include "flex_api.h"
#include "runtime/log.h"

/* A parser's verdict on a value that does not parse: "invalid NAME: expected HELP". */
static const char k_invalid[] = "invalid";

static const char *parse_budget(fx_options *o, const char *value) {
  char *end;
  errno = 0;
  const double v = strtod(value, &end);
  if (end == value || *end || errno || flex_check_budget(v)) return k_invalid; /* ERANGE: past a double */
  o->budget_mb = v;
  return NULL;
}

static const char *parse_cache_path(fx_options *o, const char *value) {
  free(o->cache_path);
  o->cache_path = strdup(value);
  return o->cache_path ? NULL : "out of memory";
}

static const char *parse_num_threads(fx_options *o, const char *value) {
  char *end;
  errno = 0;
  const long v = strtol(value, &end, 10);
  if (errno || end == value || *end || v < -1 || v == 0 || v > FLEX_THREADS_MAX) return k_invalid;
  o->num_threads = (int)v;
  return NULL;
}

static const char *parse_log(fx_options *o, const char *value) {
  return fx_log_parse(value, &o->log) ? k_invalid : NULL;
}

static const char *parse_profile(fx_options *o, const char *value) {
  if (strcmp(value, "0") && strcmp(value, "1")) return k_invalid;
  o->profile = value[0] == '1';
  return NULL;
}

static const char *parse_winograd(fx_options *o, const char *value) {
  static const char *const modes[] = {[FX_WINO_AUTO] = "auto", [FX_WINO_ALL] = "all", [FX_WINO_OFF] = "off"};
  for (int i = 0; i < 3; i++)
    if (!strcmp(value, modes[i])) {
      o->winograd = i;
      return NULL;
    }
  return k_invalid;
}

/* The budget's help is also flex_check_budget's message; its number is FLEX_BUDGET_MAX_MB. */
#define BUDGET_HELP "megabytes as a number from 0 (unlimited) to 10000000"

static const struct {
  flex_option doc;
  const char *(*parse)(fx_options *o, const char *value); /* NULL ok, k_invalid, or another message */
} k_options[] = {
    {{"budget", FLEX_OPTION_NUMBER, BUDGET_HELP}, parse_budget},
    {{"cache_path", FLEX_OPTION_TEXT, "a file path, or \"\" to pack in memory without a file"}, parse_cache_path},
    {{"num_threads", FLEX_OPTION_NUMBER, "an integer from 1 to 256, or -1 for the interpreter's"}, parse_num_threads},
    {{"log", FLEX_OPTION_TEXT, "a comma list of partition, plan, cache, exec, all, none"}, parse_log},
    {{"profile", FLEX_OPTION_TEXT, "0 or 1"}, parse_profile},
    {{"winograd", FLEX_OPTION_TEXT, "auto, all or off"}, parse_winograd},
};
#define N_OPTIONS (int)(sizeof k_options / sizeof *k_options)

const flex_option *flex_option_at(int i) { return i >= 0 && i < N_OPTIONS ? &k_options[i].doc : NULL; }

const char *fx_parse_option(fx_options *o, const char *key, const char *value) {
  static _Thread_local char msg[FLEX_MSG_LEN]; /* read at once by both callers */
  if (!key || !value) return "option key and value must be strings";
  for (int i = 0; i < N_OPTIONS; i++) {
    if (strcmp(key, k_options[i].doc.name)) continue;
    const char *why = k_options[i].parse(o, value);
    if (why != k_invalid) return why;
    snprintf(msg, sizeof msg, "invalid %s: expected %s", key, k_options[i].doc.help);
    return msg;
  }
  size_t len = (size_t)snprintf(msg, sizeof msg, "unknown option: accepted options are ");
  for (int i = 0; i < N_OPTIONS && len < sizeof msg; i++)
    len += (size_t)snprintf(msg + len, sizeof msg - len, "%s%s", i ? ", " : "", k_options[i].doc.name);
  return msg;
}

const char *flex_check_budget(double mb) {
  if (!(mb >= 0 && mb <= FLEX_BUDGET_MAX_MB)) /* also NaN and infinities */
    return "invalid budget: expected " BUDGET_HELP;
  return NULL;
}

const char *flex_check_option(const char *key, const char *value) {
  fx_options o = {0};
  const char *err = fx_parse_option(&o, key, value);
  free(o.cache_path);
  return err;
}
