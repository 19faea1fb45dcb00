/* kb_time: ISO 8601 dates and times, one reading for every service
 * (board deadlines in task and set files, API bodies and answers).
 *
 * Pure and thread-safe.
 */
#ifndef KB_TIME_H
#define KB_TIME_H

#include <stddef.h>
#include <stdint.h>

/* Formats epoch milliseconds as "YYYY-MM-DDTHH:MM:SS.mmmZ" (out >= 32). */
void kb_time_iso8601(int64_t ms, char *out, size_t size);

/* Parses an ISO 8601 date or date-time: "YYYY-MM-DD", optionally followed
 * by "T" or " " and "HH:MM[:SS[.fraction]]" (the hour may be one digit,
 * as upstream KernelBot's sets write it), and a zone "Z" or "+HH:MM" /
 * "-HH:MM" (none means UTC). A date alone means its start. Returns 0 with
 * *ms (epoch milliseconds), or -EINVAL. */
int kb_time_parse_iso8601(const char *s, int64_t *ms);

#endif
