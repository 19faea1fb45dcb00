/* kb_util: small pure helpers shared by the services.
 * All functions are thread-safe unless noted.
 */
#ifndef KB_UTIL_H
#define KB_UTIL_H

#include <stddef.h>
#include <stdint.h>

/* 1 if buf[0..len) is well-formed UTF-8 (no overlongs, no surrogates). */
int kb_utf8_valid(const void *buf, size_t len);

/* Lowercase hex SHA-256 of buf into out[65]. */
void kb_sha256_hex(const void *buf, size_t len, char out[65]);

/* Random lowercase hex string of 2*nbytes chars into out (out holds
 * 2*nbytes+1). Uses libsodium; call kb_util_init() first. */
int kb_util_init(void);
void kb_random_hex(char *out, size_t nbytes);

/* Constant-time string equality (for tokens). */
int kb_secure_streq(const char *a, const char *b);

/* Milliseconds since the epoch, and a monotonic clock in seconds. */
int64_t kb_now_ms(void);
double kb_mono_s(void);

/* Reads a whole file (NUL-terminated; *len excludes the NUL). Returns 0 or
 * -errno. Caller frees *out. max: refuse files larger than this (-EFBIG). */
int kb_read_file(const char *path, size_t max, char **out, size_t *len);

/* Writes a whole file with the given mode, creating or truncating it.
 * Returns 0 or -errno. */
int kb_write_file(const char *path, const void *buf, size_t len, int mode);

/* A growable byte buffer, always NUL-terminated. */
struct kb_buf {
	char *data;
	size_t len, cap;
};
int kb_buf_append(struct kb_buf *b, const void *data, size_t len);
int kb_buf_printf(struct kb_buf *b, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
void kb_buf_free(struct kb_buf *b);

/* Copies at most max bytes of s, cut at a UTF-8 boundary, appending a note
 * "\n[... N bytes truncated]" when cut. Returns malloc'd string. */
char *kb_truncate(const char *s, size_t len, size_t max);

#endif
