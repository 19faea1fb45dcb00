/* kb_util: small pure helpers shared by the services.
 * All functions are thread-safe unless noted.
 */
#ifndef KB_UTIL_H
#define KB_UTIL_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

/* 1 if buf[0..len) is well-formed UTF-8 (no overlongs, no surrogates, nothing
 * above U+10FFFF), else 0. NUL bytes are rejected too: a "text" holding NUL
 * (a source file, a report) is not text, and would be cut short by every C
 * string function downstream. len 0 is valid. */
int kb_utf8_valid(const void *buf, size_t len);

/* Lowercase hex SHA-256 of buf into out[65]. */
void kb_sha256_hex(const void *buf, size_t len, char out[65]);

/* Initialises libsodium. Returns 0 (also when already done) or -EIO. Call
 * once from main() before threads and before kb_random_hex(). */
int kb_util_init(void);

/* Random lowercase hex string of 2*nbytes chars into out (out holds
 * 2*nbytes+1). Uses libsodium; call kb_util_init() first. */
void kb_random_hex(char *out, size_t nbytes);

/* Constant-time string equality (for tokens): 1 if equal, 0 if not or if
 * either is NULL. Both strings are hashed (SHA-256) and the digests compared
 * with sodium_memcmp, so the time taken reveals neither the position of the
 * first difference nor whether the lengths differ. */
int kb_secure_streq(const char *a, const char *b);

/* Milliseconds since the epoch, and a monotonic clock in seconds. */
int64_t kb_now_ms(void);
double kb_mono_s(void);

/* Closes *fd when it is open (>= 0) and sets it to -1. */
void kb_close_fd(int *fd);

/* Reads a whole file (NUL-terminated; *len excludes the NUL). Returns 0 or
 * -errno. Caller frees *out. max: refuse files larger than this (-EFBIG);
 * pass SIZE_MAX for no limit. Works on files whose st_size is unreliable
 * (pipes, /proc). On error *out is NULL. */
int kb_read_file(const char *path, size_t max, char **out, size_t *len);

/* As kb_read_file, from an open descriptor, which it closes (also on
 * error). */
int kb_read_fd(int fd, size_t max, char **out, size_t *len);

/* Paths from an untrusted source (a problem archive): where a relative
 * path leads without leaving the directory it is relative to.
 *
 * kb_path_beneath() joins rel onto base (both relative to the same root,
 * base "" for the root itself) and folds ".", empty components and ".."
 * lexically, writing the result into out ("" for the root, else "a/b",
 * no leading, trailing or doubled '/'). Returns 0; -EINVAL when rel is
 * empty or absolute (or base is absolute); -EXDEV when ".." would climb
 * above the root; -ENAMETOOLONG when out is too small. Pure.
 *
 * kb_open_beneath() opens root/rel, rel as kb_path_beneath("", rel)
 * folds it, walking it one component at a time so that no symbolic link
 * is followed anywhere below root (root itself is trusted and may be
 * one): a regular file opened for reading, or with want_dir a directory.
 * Returns the descriptor (O_CLOEXEC), or -ELOOP (a link on the way),
 * -EXDEV/-EINVAL (as above, or not a regular file / directory: devices,
 * FIFOs and sockets are never opened for reading), -ENOENT, ... */
int kb_path_beneath(const char *base, const char *rel, char *out, size_t size);
int kb_open_beneath(const char *root, const char *rel, int want_dir);

/* Writes a whole file, creating or truncating it, and sets its permission
 * bits to exactly mode (fchmod: the umask does not apply, and an existing
 * file gets the new mode). Returns 0 or -errno; on error the file may be
 * partly written. Not atomic: write to a temporary name and rename(2) where
 * readers may race. */
int kb_write_file(const char *path, const void *buf, size_t len, int mode);

/* Strict unsigned decimals: digits only (no sign, space or prefix), at
 * most UINT64_MAX. kb_parse_u64 takes the canonical form only (a leading
 * zero only in "0": ids, counts and limits in requests and keys);
 * kb_parse_u64_digits also takes leading zeros (case seeds, as upstream's
 * int() reads them). Return 0 and set *out, or -EINVAL (NULL, empty, not
 * a digit, a leading zero) or -ERANGE (too large), leaving *out alone. */
int kb_parse_u64(const char *s, uint64_t *out);
int kb_parse_u64_digits(const char *s, uint64_t *out);

/* Formats an error message into errstr, truncated to size (nothing when
 * errstr is NULL or size is 0): the one helper behind every
 * "errstr, errstr_size" out-parameter of the services. */
void kb_seterr(char *errstr, size_t size, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
void kb_vseterr(char *errstr, size_t size, const char *fmt, va_list ap);

/* A growable byte buffer, always NUL-terminated once anything was appended.
 * Start from {0}. Functions return 0 or -ENOMEM (the buffer is unchanged on
 * failure). Not thread-safe per buffer. */
struct kb_buf {
	char *data;
	size_t len, cap;
};
int kb_buf_append(struct kb_buf *b, const void *data, size_t len);
int kb_buf_printf(struct kb_buf *b, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
/* Frees the data and resets *b to {0}; b NULL is a no-op. */
void kb_buf_free(struct kb_buf *b);

/* Copies at most max bytes of s[0..len), cut at a UTF-8 boundary (the cut
 * moves back over at most 3 continuation bytes so no code point is split),
 * appending a note "\n[... N bytes truncated]" when cut, N = bytes dropped.
 * The note comes on top of max. Returns a malloc'd NUL-terminated string
 * (NULL only on allocation failure); s may be NULL when len is 0. */
char *kb_truncate(const char *s, size_t len, size_t max);

#endif
