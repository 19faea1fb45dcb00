/* kb_util: small helpers shared by the services (see kb_util.h). */
#include "kb_util.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <sodium.h>

/* Length of the well-formed UTF-8 sequence starting at p (n bytes left), or
 * 0 if the bytes there are not one. The ranges are those of RFC 3629's
 * table, which excludes overlongs (C0, C1, E0 80..9F, F0 80..8F), surrogates
 * (ED A0..BF) and code points above U+10FFFF (F4 90.., F5..FF). NUL counts
 * as invalid (see kb_utf8_valid). */
static size_t utf8_seq(const unsigned char *p, size_t n)
{
	unsigned char c = p[0];
	unsigned char lo = 0x80, hi = 0xBF;
	size_t need;

	if (c == 0)
		return 0;
	if (c < 0x80)
		return 1;
	if (c >= 0xC2 && c <= 0xDF) {
		need = 2;
	} else if (c >= 0xE0 && c <= 0xEF) {
		need = 3;
		if (c == 0xE0)
			lo = 0xA0;
		else if (c == 0xED)
			hi = 0x9F;
	} else if (c >= 0xF0 && c <= 0xF4) {
		need = 4;
		if (c == 0xF0)
			lo = 0x90;
		else if (c == 0xF4)
			hi = 0x8F;
	} else {
		return 0;
	}
	if (n < need)
		return 0;
	if (p[1] < lo || p[1] > hi)
		return 0;
	for (size_t i = 2; i < need; i++)
		if ((p[i] & 0xC0) != 0x80)
			return 0;
	return need;
}

int kb_utf8_valid(const void *buf, size_t len)
{
	const unsigned char *p = buf;
	size_t i = 0;

	while (i < len) {
		size_t k = utf8_seq(p + i, len - i);
		if (k == 0)
			return 0;
		i += k;
	}
	return 1;
}

void kb_sha256_hex(const void *buf, size_t len, char out[65])
{
	unsigned char h[crypto_hash_sha256_BYTES];

	crypto_hash_sha256(h, buf ? buf : (const void *)"", len);
	sodium_bin2hex(out, 65, h, sizeof(h));
}

int kb_util_init(void)
{
	return sodium_init() < 0 ? -EIO : 0;
}

void kb_random_hex(char *out, size_t nbytes)
{
	unsigned char chunk[32];

	out[0] = '\0';
	while (nbytes > 0) {
		size_t k = nbytes < sizeof(chunk) ? nbytes : sizeof(chunk);
		randombytes_buf(chunk, k);
		sodium_bin2hex(out, 2 * k + 1, chunk, k);
		out += 2 * k;
		nbytes -= k;
	}
	sodium_memzero(chunk, sizeof(chunk));
}

int kb_secure_streq(const char *a, const char *b)
{
	unsigned char ha[crypto_hash_sha256_BYTES];
	unsigned char hb[crypto_hash_sha256_BYTES];

	if (!a || !b)
		return 0;
	/* Comparing digests of equal size keeps the lengths out of the timing;
	 * SHA-256's collision resistance makes digest equality string
	 * equality. */
	crypto_hash_sha256(ha, (const unsigned char *)a, strlen(a));
	crypto_hash_sha256(hb, (const unsigned char *)b, strlen(b));
	return sodium_memcmp(ha, hb, sizeof(ha)) == 0;
}

int64_t kb_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

double kb_mono_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

void kb_close_fd(int *fd)
{
	if (*fd >= 0)
		close(*fd);
	*fd = -1;
}

int kb_read_file(const char *path, size_t max, char **out, size_t *len)
{
	int fd;

	*out = NULL;
	if (len)
		*len = 0;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	return kb_read_fd(fd, max, out, len);
}

int kb_read_fd(int fd, size_t max, char **out, size_t *len)
{
	char *data = NULL;
	size_t n = 0, cap = 0;
	int err = 0;

	*out = NULL;
	if (len)
		*len = 0;
	for (;;) {
		ssize_t r;
		if (n == cap) {
			/* Grow by doubling; the cap check keeps a huge file
			 * from being read in full before it is refused. */
			size_t ncap = cap ? cap * 2 : 4096;
			char *nd;
			if (cap > max) {
				err = -EFBIG;
				break;
			}
			if (ncap < cap || ncap == SIZE_MAX) {
				err = -ENOMEM;
				break;
			}
			nd = realloc(data, ncap + 1);
			if (!nd) {
				err = -ENOMEM;
				break;
			}
			data = nd;
			cap = ncap;
		}
		r = read(fd, data + n, cap - n);
		if (r < 0) {
			if (errno == EINTR)
				continue;
			err = -errno;
			break;
		}
		if (r == 0)
			break;
		n += (size_t)r;
		if (n > max) {
			err = -EFBIG;
			break;
		}
	}
	close(fd);
	if (err == 0 && !data) {
		data = malloc(1);
		if (!data)
			err = -ENOMEM;
	}
	if (err < 0) {
		free(data);
		return err;
	}
	data[n] = '\0';
	*out = data;
	if (len)
		*len = n;
	return 0;
}

int kb_write_file(const char *path, const void *buf, size_t len, int mode)
{
	const char *p = buf;
	int fd, err = 0;

	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode & 07777);
	if (fd < 0)
		return -errno;
	if (fchmod(fd, (mode_t)(mode & 07777)) < 0)
		err = -errno;
	while (err == 0 && len > 0) {
		ssize_t w = write(fd, p, len);
		if (w < 0) {
			if (errno == EINTR)
				continue;
			err = -errno;
			break;
		}
		p += w;
		len -= (size_t)w;
	}
	if (close(fd) < 0 && err == 0)
		err = -errno;
	return err;
}

static int buf_reserve(struct kb_buf *b, size_t extra)
{
	size_t need, ncap;
	char *nd;

	if (extra > SIZE_MAX - 1 - b->len)
		return -ENOMEM;
	need = b->len + extra + 1;
	if (b->data && need <= b->cap)
		return 0;
	ncap = b->cap ? b->cap : 64;
	while (ncap < need) {
		if (ncap > SIZE_MAX / 2) {
			ncap = need;
			break;
		}
		ncap *= 2;
	}
	nd = realloc(b->data, ncap);
	if (!nd)
		return -ENOMEM;
	b->data = nd;
	b->cap = ncap;
	return 0;
}

int kb_buf_append(struct kb_buf *b, const void *data, size_t len)
{
	if (buf_reserve(b, len) < 0)
		return -ENOMEM;
	if (len)
		memcpy(b->data + b->len, data, len);
	b->len += len;
	b->data[b->len] = '\0';
	return 0;
}

void kb_vseterr(char *errstr, size_t size, const char *fmt, va_list ap)
{
	if (errstr && size)
		vsnprintf(errstr, size, fmt, ap);
}

static int parse_u64(const char *s, int leading_zeros, uint64_t *out)
{
	uint64_t v = 0;

	if (!s || !*s || (!leading_zeros && s[0] == '0' && s[1] != '\0'))
		return -EINVAL;
	for (; *s; s++) {
		if (*s < '0' || *s > '9')
			return -EINVAL;
		unsigned d = (unsigned)(*s - '0');
		if (v > (UINT64_MAX - d) / 10)
			return -ERANGE;
		v = v * 10 + d;
	}
	*out = v;
	return 0;
}

int kb_parse_u64(const char *s, uint64_t *out)
{
	return parse_u64(s, 0, out);
}

int kb_parse_u64_digits(const char *s, uint64_t *out)
{
	return parse_u64(s, 1, out);
}

void kb_seterr(char *errstr, size_t size, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	kb_vseterr(errstr, size, fmt, ap);
	va_end(ap);
}

int kb_buf_printf(struct kb_buf *b, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (buf_reserve(b, 0) < 0)
		return -ENOMEM;
	va_start(ap, fmt);
	n = vsnprintf(b->data + b->len, b->cap - b->len, fmt, ap);
	va_end(ap);
	if (n < 0) {
		b->data[b->len] = '\0';
		return -EINVAL;
	}
	if ((size_t)n >= b->cap - b->len) {
		if (buf_reserve(b, (size_t)n) < 0) {
			b->data[b->len] = '\0';
			return -ENOMEM;
		}
		va_start(ap, fmt);
		vsnprintf(b->data + b->len, b->cap - b->len, fmt, ap);
		va_end(ap);
	}
	b->len += (size_t)n;
	return 0;
}

void kb_buf_free(struct kb_buf *b)
{
	if (!b)
		return;
	free(b->data);
	b->data = NULL;
	b->len = b->cap = 0;
}

char *kb_truncate(const char *s, size_t len, size_t max)
{
	struct kb_buf b = {0};
	size_t cut = len;

	if (len > max) {
		cut = max;
		/* Back over continuation bytes (10xxxxxx) so the cut lands
		 * before a lead byte; a longest sequence has 3 of them, and
		 * looking further back would only matter for invalid input. */
		for (int i = 0;
		     i < 3 && cut > 0 && ((unsigned char)s[cut] & 0xC0) == 0x80;
		     i++)
			cut--;
	}
	if (kb_buf_append(&b, s, cut) < 0)
		return NULL;
	if (cut < len &&
	    kb_buf_printf(&b, "\n[... %zu bytes truncated]", len - cut) < 0) {
		kb_buf_free(&b);
		return NULL;
	}
	return b.data;
}

int kb_path_beneath(const char *base, const char *rel, char *out, size_t size)
{
	const char *parts[2] = {base ? base : "", rel};
	size_t n = 0;

	if (!rel || !*rel || rel[0] == '/' || (base && base[0] == '/'))
		return -EINVAL;
	if (size == 0)
		return -ENAMETOOLONG;
	out[0] = '\0';
	for (int k = 0; k < 2; k++) {
		for (const char *p = parts[k]; *p;) {
			size_t len = strcspn(p, "/");
			if (len == 2 && p[0] == '.' && p[1] == '.') {
				/* Up one level: never above the root. */
				if (n == 0)
					return -EXDEV;
				while (n > 0 && out[n - 1] != '/')
					n--;
				if (n > 0)
					n--; /* the separator */
				out[n] = '\0';
			} else if (len > 0 && !(len == 1 && p[0] == '.')) {
				if (n + (n > 0) + len + 1 > size)
					return -ENAMETOOLONG;
				if (n > 0)
					out[n++] = '/';
				memcpy(out + n, p, len);
				n += len;
				out[n] = '\0';
			}
			p += len;
			while (*p == '/')
				p++;
		}
	}
	return 0;
}

int kb_open_beneath(const char *root, const char *rel, int want_dir)
{
	char norm[4096];
	int dfd, rc;

	rc = *rel ? kb_path_beneath("", rel, norm, sizeof(norm)) : 0;
	if (rc < 0)
		return rc;
	if (!*rel)
		norm[0] = '\0';
	dfd = open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0)
		return -errno;
	/* One component at a time, none of them followed when it is a
	 * link: O_NOFOLLOW makes openat fail with ELOOP on a symbolic link
	 * at the end of each step, and each step is the end of one. */
	for (char *p = norm; *p;) {
		size_t len = strcspn(p, "/");
		int last = p[len] == '\0', fd;
		char save = p[len];
		struct stat st;

		p[len] = '\0';
		fd = openat(dfd, p,
			    O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK |
				    (last && !want_dir ? 0 : O_DIRECTORY));
		rc = fd < 0 ? -errno : 0;
		p[len] = save;
		close(dfd);
		if (rc < 0)
			return rc;
		dfd = fd;
		if (last) {
			if (fstat(fd, &st) < 0 ||
			    !(want_dir ? S_ISDIR(st.st_mode)
				       : S_ISREG(st.st_mode))) {
				close(fd);
				return -EINVAL;
			}
			if (!want_dir) {
				/* Reads block from here on, as any file's. */
				int fl = fcntl(fd, F_GETFL);
				if (fl >= 0)
					fcntl(fd, F_SETFL, fl & ~O_NONBLOCK);
			}
			return fd;
		}
		p += len + 1;
	}
	/* rel named the root itself. */
	if (!want_dir) {
		close(dfd);
		return -EINVAL;
	}
	return dfd;
}
