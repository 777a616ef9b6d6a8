/* Guards cache file mappings against files changed under them by someone other than us (our
 * writers never modify a file in place: they write a new file and rename it over the path).
 *  - Truncated: a SIGBUS inside a watched range maps a zero page there and marks the range
 *    damaged; the kernel that read it reports an error instead of a result.
 *  - Rewritten in place (same inode, new bytes): reads silently return the new bytes. The
 *    file's size and mtime is kept at watch time; fx_mapping_check_files() compares
 *    it with one fstat per live mapping (once per invoke) and marks a changed one damaged.
 * Either way the damaged weights are packed again in memory from the model (conv/conv.c).
 * Faults elsewhere go to the previous handler. */
#ifndef FLEX_SIGBUS_H
#define FLEX_SIGBUS_H
#include <stddef.h>

/* fd: the mapped file, open while watched (its identity is read now). */
void fx_sigbus_watch(const void *base, size_t size, int fd);
void fx_sigbus_unwatch(const void *base);
/* How many times a watched range was found damaged so far (cheap: read on every invoke; a
 * caller keeps the count it has handled). */
int fx_sigbus_any(void);
/* Nonzero once any fault hit [base, base+size) of a watched range, or its file changed. */
int fx_sigbus_damaged(const void *base);
/* fstat of every watched file: marks those changed since they were watched as damaged.
 * Returns how many are newly damaged. */
int fx_mapping_check_files(void);
#endif
