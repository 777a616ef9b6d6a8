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
#include "kernels/quant/requant.h"
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

/* "_rounding": comma-separated OP.TYPE=R or OP.TYPE=R:T entries (OP a TFLite builtin name,
 * TYPE int8 or uint8, R the rounding of every channel as requant.h's FLEX_RQ_* number, :T a tail
 * rounding for the last C % 8 channels; TYPE f32: a hybrid layer's input quantization, R the
 * FLEX_STOCK_* loops it runs); "" = none known. */
static const char *parse_rounding(fx_options *o, const char *value) {
  fx_roundings r = {0};
  for (const char *p = value; *p;) {
    const char *end = strchr(p, ','), *dot = strchr(p, '.');
    if (!end) end = p + strlen(p);
    if (!dot || dot > end || r.n == FX_MAX_ROUNDINGS) return k_invalid;
    fx_rounding_rule *rule = &r.rules[r.n];
    rule->builtin = -1;
    for (int b = 0; b < 256 && rule->builtin < 0; b++) {
      const char *name = fx_builtin_name(b);
      if (strlen(name) == (size_t)(dot - p) && !strncmp(name, p, (size_t)(dot - p))) rule->builtin = b;
    }
    char type[8];
    int used = 0, tail = -1;
    if (rule->builtin < 0 || sscanf(dot + 1, "%5[a-z0-9]=%d%n", type, &rule->rounding, &used) != 2) return k_invalid;
    const char *q = dot + 1 + used;
    if (*q == ':' && sscanf(q, ":%d%n", &tail, &used) == 1) q += used;
    const int f32 = !strcmp(type, "f32");
    if (q != end || (strcmp(type, "int8") && strcmp(type, "uint8") && !f32)) return k_invalid;
    rule->u8 = f32 ? FX_ROUNDING_F32 : !strcmp(type, "uint8");
    rule->split8 = tail >= 0;
    rule->tail_rounding = tail >= 0 ? tail : FLEX_RQ_AWAY;
    const fx_qs8_out check = {0, -128, 127, rule->rounding, rule->tail_rounding, rule->split8 ? 0 : INT32_MAX};
    if (f32 ? tail >= 0 || (rule->rounding != FLEX_STOCK_PORTABLE && rule->rounding != FLEX_STOCK_NEON)
            : fx_qs8_out_check(&check)) /* known rules only; a tail mixes AWAY and UP */
      return k_invalid;
    r.n++;
    p = *end ? end + 1 : end;
    if (*end && !*p) return k_invalid; /* a trailing comma */
  }
  o->rounding = r;
  return NULL;
}

const fx_rounding_rule *fx_rounding_find(const fx_roundings *r, int builtin, int u8) {
  for (int i = 0; r && i < r->n; i++)
    if (r->rules[i].builtin == builtin && r->rules[i].u8 == u8) return &r->rules[i];
  return NULL;
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
    /* internal (a leading underscore: set by load_flex, not listed to users) */
    {{"_rounding", FLEX_OPTION_TEXT, "OP.int8|uint8=RULE[:TAIL] entries, comma-separated"}, parse_rounding},
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
    if (k_options[i].doc.name[0] != '_')
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
