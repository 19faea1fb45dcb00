/* kb_log: one logging macro for every service.
 *
 * A line per event: "ts=... lvl=info svc=worker msg" in text mode, or one JSON
 * object per line when KB_LOG_JSON is set. The level is checked before the
 * arguments are formatted, so a disabled debug line costs one comparison.
 * Callers put structured fields in the message as "sub=%llu gpu=%s ...".
 *
 * Thread-safety: kb_log_init() once at startup, before threads; logging
 * itself is thread-safe (one write(2) per line to stderr).
 */
#ifndef KB_LOG_H
#define KB_LOG_H

enum kb_log_level { KB_LOG_DEBUG = 0, KB_LOG_INFO, KB_LOG_WARN, KB_LOG_ERROR };

extern int kb_log_min_level;

/* Sets the service name, the minimum level and the format. */
void kb_log_init(const char *svc, int min_level, int json);

/* Parses "debug", "info", "warn" or "error"; returns the level or -1. */
int kb_log_level_parse(const char *s);

void kb__log(int level, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

#define KB_LOG(level, ...)                                                     \
	do {                                                                   \
		if ((level) >= kb_log_min_level)                               \
			kb__log((level), __VA_ARGS__);                         \
	} while (0)
#define kb_debug(...) KB_LOG(KB_LOG_DEBUG, __VA_ARGS__)
#define kb_info(...) KB_LOG(KB_LOG_INFO, __VA_ARGS__)
#define kb_warn(...) KB_LOG(KB_LOG_WARN, __VA_ARGS__)
#define kb_error(...) KB_LOG(KB_LOG_ERROR, __VA_ARGS__)

#endif
