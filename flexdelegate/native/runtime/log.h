/* Logging by category to stderr: the `log` option and FLEXDELEGATE_LOG choose the categories. */
#ifndef FLEX_LOG_H
#define FLEX_LOG_H

enum fx_log_cat { FX_LOG_PARTITION = 1, FX_LOG_PLAN = 2, FX_LOG_CACHE = 4, FX_LOG_EXEC = 8 };
/* The categories being logged (set at delegate creation). */
extern unsigned fx_log_mask;
void fx_log(unsigned cat, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* A comma list of partition, plan, cache, exec, all, none into a mask: 0, or -1 for a name
 * not in the list. */
int fx_log_parse(const char *list, unsigned *mask);
/* The categories FLEXDELEGATE_LOG asks for (a bad value is reported and ignored). */
unsigned fx_log_env_mask(void);
#endif
