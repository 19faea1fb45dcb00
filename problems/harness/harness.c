/* harness.c: the device-independent half of the harness (see harness.h).
 *
 * Why pointers into libc: the harness and the submission are linked into
 * one executable, and a function the executable defines wins over libc's
 * for every reference in the executable. A submission that defines
 * clock_gettime (returning a fake time) or memcpy would otherwise sit inside
 * the measurement. dlopen("libc.so.6", RTLD_NOLOAD) returns the handle of
 * the libc already mapped, and dlsym on that handle searches libc itself,
 * so the pointers below are libc's own implementations (clock_gettime goes
 * on to the vDSO as usual, at the usual cost). This does not make the
 * process a security boundary -- code running in-process can patch
 * anything -- it removes the cheap, accidental and symbol-level ways of
 * touching the measurement; the worker's sandbox and its wall-clock
 * cross-check cover the rest.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE 1
#endif

#include "harness.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <math.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#pragma GCC visibility push(hidden)

/* ---- modes -------------------------------------------------------------- */

static const char *const kbh__mode_names[KBH_MODE_COUNT] = {
	"test", "benchmark", "profile", "leaderboard"};

int kbh_mode_parse(const char *s, enum kbh_mode *out)
{
	for (int m = 0; m < KBH_MODE_COUNT; m++) {
		if (s && strcmp(s, kbh__mode_names[m]) == 0) {
			*out = (enum kbh_mode)m;
			return 0;
		}
	}
	return -EINVAL;
}

const char *kbh_mode_name(enum kbh_mode m)
{
	return (m >= 0 && m < KBH_MODE_COUNT) ? kbh__mode_names[m] : "?";
}

/* ---- trusted libc ------------------------------------------------------- */

typedef int (*kbh__clock_fn)(clockid_t, struct timespec *);
typedef void *(*kbh__memcpy_fn)(void *, const void *, size_t);
typedef void *(*kbh__memset_fn)(void *, int, size_t);
typedef ssize_t (*kbh__write_fn)(int, const void *, size_t);

static struct {
	kbh__clock_fn clock_gettime;
	kbh__memcpy_fn memcpy;
	kbh__memset_fn memset;
	kbh__write_fn write;
	int direct;
} kbh__libc;

static void kbh__errf(char *err, size_t err_size, const char *fmt, ...)
	KBH_PRINTF(3, 4);
static void kbh__errf(char *err, size_t err_size, const char *fmt, ...)
{
	if (!err || err_size == 0)
		return;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(err, err_size, fmt, ap);
	va_end(ap);
}

static void kbh__resolve_direct(void)
{
	kbh__libc.clock_gettime = clock_gettime;
	kbh__libc.memcpy = memcpy;
	kbh__libc.memset = memset;
	kbh__libc.write = write;
	kbh__libc.direct = 1;
}

int kbh_trusted_init(char *err, size_t err_size)
{
	/* Try the names glibc and musl use; RTLD_NOLOAD never maps anything
	 * new, it only finds the libc this process already runs on. */
	static const char *const names[] = {"libc.so.6", "libc.so", NULL};
	void *h = NULL;
	for (int i = 0; names[i] && !h; i++)
		h = dlopen(names[i], RTLD_LAZY | RTLD_NOLOAD);
	if (h) {
		/* POSIX allows storing dlsym's void * into a function
		 * pointer this way (the dlsym(3) idiom); ISO C does not
		 * define a direct cast. */
		void *c = dlsym(h, "clock_gettime");
		void *mc = dlsym(h, "memcpy");
		void *ms = dlsym(h, "memset");
		void *w = dlsym(h, "write");
		if (c && mc && ms && w) {
			*(void **)&kbh__libc.clock_gettime = c;
			*(void **)&kbh__libc.memcpy = mc;
			*(void **)&kbh__libc.memset = ms;
			*(void **)&kbh__libc.write = w;
			kbh__libc.direct = 0;
		} else {
			kbh__resolve_direct();
		}
		/* The handle stays open: libc is never unloaded anyway. */
	} else {
		kbh__resolve_direct();
	}
	struct timespec ts;
	if (kbh__libc.clock_gettime(CLOCK_MONOTONIC, &ts) != 0) {
		kbh__errf(err, err_size, "clock_gettime(CLOCK_MONOTONIC): %s",
			  strerror(errno));
		return -ENOSYS;
	}
	return 0;
}

int kbh_trusted_direct(void)
{
	return kbh__libc.direct;
}

/* Before kbh_trusted_init (only in unit tests that forget it) fall back to
 * the direct functions rather than crash. */
static void kbh__ensure_libc(void)
{
	if (!kbh__libc.clock_gettime)
		kbh__resolve_direct();
}

uint64_t kbh_now_ns(void)
{
	struct timespec ts;
	kbh__ensure_libc();
	kbh__libc.clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

void kbh_copy(void *dst, const void *src, size_t n)
{
	kbh__ensure_libc();
	if (n)
		kbh__libc.memcpy(dst, src, n);
}

void kbh_fill(void *dst, int byte, size_t n)
{
	kbh__ensure_libc();
	if (n)
		kbh__libc.memset(dst, byte, n);
}

void kbh_poison(void *dst, size_t n)
{
	kbh_fill(dst, 0xFF, n);
}

size_t kbh_first_diff(const void *a, const void *b, size_t n)
{
	const unsigned char *x = a, *y = b;
	size_t i = 0;
	/* Word-at-a-time for speed; memcpy into locals is a builtin load at
	 * -O1 and above (a fixed-size copy never becomes a libc call). */
	for (; i + 8 <= n; i += 8) {
		uint64_t u, v;
		__builtin_memcpy(&u, x + i, 8);
		__builtin_memcpy(&v, y + i, 8);
		if (u != v)
			break;
	}
	for (; i < n; i++)
		if (x[i] != y[i])
			return i;
	return n;
}

double kbh_sqrt(double x)
{
	if (x != x || x < 0)
		return NAN;
	if (x == 0 || x == INFINITY)
		return x;
	/* Scale into [1, 4) by even powers of two so the first guess is good
	 * for subnormals too. */
	double scale = 1.0;
	while (x >= 4.0) {
		x *= 0.25;
		scale *= 2.0;
	}
	while (x < 1.0) {
		x *= 4.0;
		scale *= 0.5;
	}
	double y = 0.5 + 0.5 * x * 0.5 + 0.25; /* within 25% on [1, 4) */
	for (int i = 0; i < 6; i++)
		y = 0.5 * (y + x / y);
	return y * scale;
}

/* ---- watchdog ----------------------------------------------------------- */

static void kbh__on_alarm(int sig)
{
	(void)sig;
	static const char msg[] = "harness: watchdog expired, exiting 114\n";
	ssize_t rc = write(2, msg, sizeof msg - 1);
	(void)rc;
	_exit(KBH_EXIT_TIMEOUT);
}

void kbh_watchdog_arm(unsigned seconds)
{
	struct sigaction sa;
	kbh_fill(&sa, 0, sizeof sa);
	sa.sa_handler = seconds ? kbh__on_alarm : SIG_DFL;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGALRM, &sa, NULL);
	alarm(seconds);
}

/* ---- cases -------------------------------------------------------------- */

static int kbh__is_blank(char c)
{
	return c == ' ' || c == '\t' || c == '\r' || c == '\n';
}

/* Copies s[0..n) trimmed into dst (size dsz); -ERANGE when too long. */
static int kbh__trim_copy(char *dst, size_t dsz, const char *s, size_t n)
{
	while (n && kbh__is_blank(*s)) {
		s++;
		n--;
	}
	while (n && kbh__is_blank(s[n - 1]))
		n--;
	if (n >= dsz)
		return -ERANGE;
	for (size_t i = 0; i < n; i++)
		dst[i] = s[i];
	dst[n] = '\0';
	return 0;
}

static int kbh__key_ok(const char *k)
{
	if (!*k)
		return 0;
	for (; *k; k++) {
		char c = *k;
		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
		      (c >= '0' && c <= '9') || c == '_'))
			return 0;
	}
	return 1;
}

int kbh_case_parse(const char *line, struct kbh_case *out, char *err,
		   size_t err_size)
{
	kbh_fill(out, 0, sizeof *out);
	if (kbh__trim_copy(out->spec, sizeof out->spec, line, strlen(line))) {
		kbh__errf(err, err_size, "case line longer than %d bytes",
			  KBH_SPEC_MAX - 1);
		return -EINVAL;
	}
	if (!out->spec[0]) {
		kbh__errf(err, err_size, "empty case");
		return -EINVAL;
	}
	if (strchr(out->spec, '\n')) {
		kbh__errf(err, err_size, "newline inside a case");
		return -EINVAL;
	}
	const char *p = out->spec;
	for (;;) {
		const char *end = strchr(p, ';');
		size_t len = end ? (size_t)(end - p) : strlen(p);
		/* a trailing ';' (nothing but blanks after it) is tolerated */
		int only_blank = 1;
		for (size_t i = 0; i < len; i++)
			if (!kbh__is_blank(p[i]))
				only_blank = 0;
		if (only_blank && !end && out->n > 0)
			break;
		const char *colon = memchr(p, ':', len);
		if (!colon) {
			kbh__errf(err, err_size, "'%.*s' is not 'key: value'",
				  (int)len, p);
			return -EINVAL;
		}
		if (out->n == KBH_CASE_KEYS) {
			kbh__errf(err, err_size, "more than %d keys",
				  KBH_CASE_KEYS);
			return -EINVAL;
		}
		struct kbh_kv *kv = &out->kv[out->n];
		if (kbh__trim_copy(kv->key, sizeof kv->key, p,
				   (size_t)(colon - p)) ||
		    !kbh__key_ok(kv->key)) {
			kbh__errf(err, err_size, "bad key '%.*s'",
				  (int)(colon - p), p);
			return -EINVAL;
		}
		if (kbh__trim_copy(kv->value, sizeof kv->value, colon + 1,
				   len - (size_t)(colon + 1 - p)) ||
		    !kv->value[0] || strchr(kv->value, ':')) {
			kbh__errf(err, err_size, "bad value for '%s'", kv->key);
			return -EINVAL;
		}
		for (size_t i = 0; i < out->n; i++) {
			if (strcmp(out->kv[i].key, kv->key) == 0) {
				kbh__errf(err, err_size, "key '%s' given twice",
					  kv->key);
				return -EINVAL;
			}
		}
		out->n++;
		if (!end)
			break;
		p = end + 1;
	}
	return 0;
}

const char *kbh_case_get(const struct kbh_case *c, const char *key)
{
	for (size_t i = 0; i < c->n; i++)
		if (strcmp(c->kv[i].key, key) == 0)
			return c->kv[i].value;
	return NULL;
}

int kbh_case_u64(const struct kbh_case *c, const char *key, uint64_t lo,
		 uint64_t hi, uint64_t *out, char *err, size_t err_size)
{
	const char *v = kbh_case_get(c, key);
	if (!v) {
		kbh__errf(err, err_size, "missing key '%s'", key);
		return -ENOENT;
	}
	if (*v < '0' || *v > '9') {
		kbh__errf(err, err_size, "'%s: %s' is not an unsigned integer",
			  key, v);
		return -EINVAL;
	}
	uint64_t x = 0;
	for (const char *p = v; *p; p++) {
		if (*p < '0' || *p > '9') {
			kbh__errf(err, err_size,
				  "'%s: %s' is not an unsigned integer", key,
				  v);
			return -EINVAL;
		}
		unsigned d = (unsigned)(*p - '0');
		if (x > (UINT64_MAX - d) / 10) {
			kbh__errf(err, err_size, "'%s: %s' overflows 64 bits",
				  key, v);
			return -ERANGE;
		}
		x = x * 10 + d;
	}
	if (x < lo || x > hi) {
		kbh__errf(err, err_size,
			  "'%s: %s' is outside [%" PRIu64 ", %" PRIu64 "]", key,
			  v, lo, hi);
		return -ERANGE;
	}
	*out = x;
	return 0;
}

int kbh_case_keys_only(const struct kbh_case *c, const char *const *allowed,
		       char *err, size_t err_size)
{
	for (size_t i = 0; i < c->n; i++) {
		int ok = 0;
		for (const char *const *a = allowed; *a && !ok; a++)
			ok = strcmp(*a, c->kv[i].key) == 0;
		if (!ok) {
			kbh__errf(err, err_size, "unknown key '%s'",
				  c->kv[i].key);
			return -EINVAL;
		}
	}
	return 0;
}

int kbh_cases_load(const char *path, struct kbh_cases *out, char *err,
		   size_t err_size)
{
	out->v = NULL;
	out->n = 0;
	FILE *f = fopen(path, "r");
	if (!f) {
		int e = errno;
		kbh__errf(err, err_size, "%s: %s", path, strerror(e));
		return e == ENOENT ? -ENOENT : -EIO;
	}
	size_t cap = 0;
	char line[KBH_SPEC_MAX + 2];
	int rc = 0;
	unsigned lineno = 0;
	while (fgets(line, sizeof line, f)) {
		lineno++;
		size_t len = strlen(line);
		if (len == sizeof line - 1 && line[len - 1] != '\n') {
			kbh__errf(err, err_size, "%s:%u: line too long", path,
				  lineno);
			rc = -EINVAL;
			break;
		}
		const char *p = line;
		while (kbh__is_blank(*p))
			p++;
		if (!*p || *p == '#')
			continue;
		if (out->n == cap) {
			size_t ncap = cap ? cap * 2 : 16;
			struct kbh_case *nv =
				realloc(out->v, ncap * sizeof *nv);
			if (!nv) {
				rc = -ENOMEM;
				kbh__errf(err, err_size, "out of memory");
				break;
			}
			out->v = nv;
			cap = ncap;
		}
		char sub[256];
		if (kbh_case_parse(line, &out->v[out->n], sub, sizeof sub)) {
			kbh__errf(err, err_size, "%s:%u: %s", path, lineno,
				  sub);
			rc = -EINVAL;
			break;
		}
		out->n++;
	}
	if (!rc && ferror(f)) {
		kbh__errf(err, err_size, "%s: read error", path);
		rc = -EIO;
	}
	fclose(f);
	if (!rc && out->n == 0) {
		kbh__errf(err, err_size, "%s: no cases", path);
		rc = -EINVAL;
	}
	if (rc)
		kbh_cases_free(out);
	return rc;
}

int kbh_cases_consume(const char *path)
{
	const char *v = getenv(KBH_CASES_UNLINK_ENV);
	int want = v && strcmp(v, "1") == 0;

	unsetenv(KBH_CASES_UNLINK_ENV);
	if (!want)
		return 0;
	if (unlink(path) != 0)
		return -errno;
	return 1;
}

void kbh_cases_free(struct kbh_cases *cs)
{
	if (!cs)
		return;
	free(cs->v);
	cs->v = NULL;
	cs->n = 0;
}

/* ---- pseudo-random numbers ---------------------------------------------- */

uint64_t kbh_splitmix64(uint64_t *state)
{
	uint64_t z = (*state += 0x9e3779b97f4a7c15ull);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

void kbh_rng_seed(struct kbh_rng *r, uint64_t seed)
{
	uint64_t st = seed;
	for (int i = 0; i < 4; i++)
		r->s[i] = kbh_splitmix64(&st);
	/* splitmix64 is a bijection of a counter, so four consecutive
	 * outputs are never all zero; no all-zero check needed. */
}

static inline uint64_t kbh__rotl(uint64_t x, int k)
{
	return (x << k) | (x >> (64 - k));
}

uint64_t kbh_rng_u64(struct kbh_rng *r)
{
	uint64_t *s = r->s;
	uint64_t result = kbh__rotl(s[1] * 5, 7) * 9;
	uint64_t t = s[1] << 17;
	s[2] ^= s[0];
	s[3] ^= s[1];
	s[1] ^= s[2];
	s[0] ^= s[3];
	s[2] ^= t;
	s[3] = kbh__rotl(s[3], 45);
	return result;
}

uint64_t kbh_rng_below(struct kbh_rng *r, uint64_t n)
{
	/* Lemire, "Fast Random Integer Generation in an Interval" (2019). */
	unsigned __int128 m = (unsigned __int128)kbh_rng_u64(r) * n;
	uint64_t low = (uint64_t)m;
	if (low < n) {
		uint64_t thresh = (0 - n) % n;
		while (low < thresh) {
			m = (unsigned __int128)kbh_rng_u64(r) * n;
			low = (uint64_t)m;
		}
	}
	return (uint64_t)(m >> 64);
}

double kbh_rng_unit(struct kbh_rng *r)
{
	return (double)(kbh_rng_u64(r) >> 11) * 0x1.0p-53;
}

float kbh_rng_unitf(struct kbh_rng *r)
{
	return (float)(kbh_rng_u64(r) >> 40) * 0x1.0p-24f;
}

float kbh_rng_uniformf(struct kbh_rng *r, float lo, float hi)
{
	float x = lo + (hi - lo) * kbh_rng_unitf(r);
	/* rounding can land exactly on hi; keep the interval half-open */
	return x < hi ? x : lo;
}

uint64_t kbh_seed_derive(uint64_t seed, uint64_t stream, uint64_t index)
{
	uint64_t st = seed ^ kbh_hash_u64(stream, 0x5eedull);
	uint64_t a = kbh_splitmix64(&st);
	return kbh_hash_u64(a, index);
}

int kbh_seed_random(uint64_t *out)
{
	unsigned char b[8];
	size_t got = 0;

#ifdef SYS_getrandom
	while (got < sizeof b) {
		long n = syscall(SYS_getrandom, b + got, sizeof b - got, 0);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		got += (size_t)n;
	}
#endif
	if (got < sizeof b) {
		int fd = open("/dev/urandom", O_RDONLY | O_CLOEXEC);
		if (fd < 0)
			return -errno;
		got = 0;
		while (got < sizeof b) {
			ssize_t n = read(fd, b + got, sizeof b - got);
			if (n < 0 && errno == EINTR)
				continue;
			if (n <= 0) {
				close(fd);
				return n < 0 ? -errno : -EIO;
			}
			got += (size_t)n;
		}
		close(fd);
	}
	uint64_t v = 0;
	for (size_t i = 0; i < sizeof b; i++)
		v = v << 8 | b[i];
	*out = v;
	return 0;
}

/* ---- report writer ------------------------------------------------------ */

#define KBH__SUBS_MAX 48

struct kbh__section {
	long count; /* -1 until the count is written */
	long index; /* current index, -1 before the first */
	size_t nsubs;
	char subs[KBH__SUBS_MAX][24]; /* sub-keys written at this index */
};

/* system.* keys (up to 14 in the CUDA driver), the counts, check,
 * user-code and room to grow. */
#define KBH__TOP_MAX 32

struct kbh_report {
	int fd;
	int broken;
	kbh_report_sink_fn sink; /* instead of fd when set */
	void *sink_ctx;
	struct kbh__section test, bench;
	size_t ntop;
	char top[KBH__TOP_MAX][32];
};

static int kbh__report_new(struct kbh_report **out, int fd)
{
	struct kbh_report *r = calloc(1, sizeof *r);
	if (!r)
		return -ENOMEM;
	r->fd = fd;
	r->test.count = r->bench.count = -1;
	r->test.index = r->bench.index = -1;
	*out = r;
	return 0;
}

int kbh_report_open_fd(struct kbh_report **out, int fd)
{
	return kbh__report_new(out, fd);
}

int kbh_report_open_sink(struct kbh_report **out, kbh_report_sink_fn fn,
			 void *ctx)
{
	int rc = kbh__report_new(out, -1);
	if (rc == 0) {
		(*out)->sink = fn;
		(*out)->sink_ctx = ctx;
	}
	return rc;
}

int kbh_report_open_env(struct kbh_report **out, char *err, size_t err_size)
{
	*out = NULL;
	const char *s = getenv("POPCORN_FD");
	if (!s || !*s) {
		kbh__errf(err, err_size, "POPCORN_FD is not set");
		return -ENOENT;
	}
	char *end;
	errno = 0;
	long fd = strtol(s, &end, 10);
	if (errno || *end || fd < 0 || fd > 65535) {
		kbh__errf(err, err_size, "POPCORN_FD='%s' is not an fd", s);
		return -EBADF;
	}
	int fl = fcntl((int)fd, F_GETFL);
	if (fl < 0 || (fl & O_ACCMODE) == O_RDONLY) {
		kbh__errf(err, err_size,
			  "POPCORN_FD=%ld is not open for writing", fd);
		return -EBADF;
	}
	int fdfl = fcntl((int)fd, F_GETFD);
	if (fdfl >= 0)
		fcntl((int)fd, F_SETFD, fdfl | FD_CLOEXEC);
	unsetenv("POPCORN_FD");
	int rc = kbh__report_new(out, (int)fd);
	if (rc)
		kbh__errf(err, err_size, "out of memory");
	return rc;
}

void kbh_report_close(struct kbh_report *r)
{
	free(r);
}

int kbh_report_ok(const struct kbh_report *r)
{
	return r && !r->broken;
}

static int kbh__report_key_ok(const char *k)
{
	if (!*k)
		return 0;
	for (; *k; k++) {
		char c = *k;
		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
		      (c >= '0' && c <= '9') || c == '_' || c == '.' ||
		      c == '-'))
			return 0;
	}
	return 1;
}

/* Formats "key: value\n" and writes it with one write() per attempt. */
static int kbh__report_line(struct kbh_report *r, const char *key,
			    const char *fmt, va_list ap) KBH_PRINTF(3, 0);
static int kbh__report_line(struct kbh_report *r, const char *key,
			    const char *fmt, va_list ap)
{
	char val[KBH_REPORT_VALUE_MAX + 1];
	char line[KBH_REPORT_VALUE_MAX + 128];
	vsnprintf(val, sizeof val, fmt, ap);
	for (char *p = val; *p; p++)
		if (*p == '\n' || *p == '\r')
			*p = ' ';
	int len = snprintf(line, sizeof line, "%s: %s\n", key, val);
	if (len < 0 || (size_t)len >= sizeof line)
		return -EPROTO;
	if (r->sink) {
		if (r->sink(r->sink_ctx, line, (size_t)len) != 0) {
			r->broken = 1;
			return -EIO;
		}
		return 0;
	}
	const char *p = line;
	size_t left = (size_t)len;
	kbh__ensure_libc();
	while (left) {
		ssize_t w = kbh__libc.write(r->fd, p, left);
		if (w < 0) {
			if (errno == EINTR)
				continue;
			r->broken = 1;
			return -EIO;
		}
		if (w == 0) {
			r->broken = 1;
			return -EIO;
		}
		p += w;
		left -= (size_t)w;
	}
	return 0;
}

static int kbh__top_seen(struct kbh_report *r, const char *key)
{
	for (size_t i = 0; i < r->ntop; i++)
		if (strcmp(r->top[i], key) == 0)
			return 1;
	return 0;
}

static int kbh__top_mark(struct kbh_report *r, const char *key)
{
	if (kbh__top_seen(r, key) || r->ntop == KBH__TOP_MAX ||
	    strlen(key) >= sizeof r->top[0])
		return -EPROTO;
	strcpy(r->top[r->ntop++], key);
	return 0;
}

static int kbh__report_top(struct kbh_report *r, const char *key,
			   const char *fmt, va_list ap) KBH_PRINTF(3, 0);
static int kbh__report_top(struct kbh_report *r, const char *key,
			   const char *fmt, va_list ap)
{
	if (!r || r->broken)
		return -EIO;
	if (!kbh__report_key_ok(key) || kbh__top_seen(r, key) ||
	    r->ntop == KBH__TOP_MAX || strlen(key) >= sizeof r->top[0])
		return -EPROTO;
	int rc = kbh__report_line(r, key, fmt, ap);
	if (rc == 0)
		kbh__top_mark(r, key);
	return rc;
}

int kbh_report_kv(struct kbh_report *r, const char *key, const char *fmt, ...)
{
	/* Section keys must go through their own calls so that the order
	 * checks apply. */
	if (strncmp(key, "test", 4) == 0 || strncmp(key, "benchmark", 9) == 0)
		return -EPROTO;
	va_list ap;
	va_start(ap, fmt);
	int rc = kbh__report_top(r, key, fmt, ap);
	va_end(ap);
	return rc;
}

int kbh_report_user_started(struct kbh_report *r)
{
	return kbh_report_kv(r, KBH_REPORT_USER_KEY, "%s",
			     KBH_REPORT_USER_STARTED);
}

static int kbh__report_top_f(struct kbh_report *r, const char *key,
			     const char *fmt, ...) KBH_PRINTF(3, 4);
static int kbh__report_top_f(struct kbh_report *r, const char *key,
			     const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	int rc = kbh__report_top(r, key, fmt, ap);
	va_end(ap);
	return rc;
}

static int kbh__report_count(struct kbh_report *r, struct kbh__section *s,
			     const char *key, size_t n)
{
	if (!r || r->broken)
		return -EIO;
	if (s->count >= 0 || n > 1000000)
		return -EPROTO;
	int rc = kbh__report_top_f(r, key, "%zu", n);
	if (rc == 0)
		s->count = (long)n;
	return rc;
}

int kbh_report_test_count(struct kbh_report *r, size_t n)
{
	return kbh__report_count(r, &r->test, "test-count", n);
}

int kbh_report_bench_count(struct kbh_report *r, size_t n)
{
	return kbh__report_count(r, &r->bench, "benchmark-count", n);
}

/* Checks (and on success records) "<prefix>.<i>.<sub>". */
static int kbh__section_admit(struct kbh__section *s, size_t i, const char *sub)
{
	if (s->count < 0 || (long)i >= s->count)
		return -EPROTO;
	if (!kbh__report_key_ok(sub) || strlen(sub) >= sizeof s->subs[0])
		return -EPROTO;
	if ((long)i < s->index || (long)i > s->index + 1)
		return -EPROTO;
	if ((long)i == s->index) {
		for (size_t k = 0; k < s->nsubs; k++)
			if (strcmp(s->subs[k], sub) == 0)
				return -EPROTO;
		if (s->nsubs == KBH__SUBS_MAX)
			return -EPROTO;
	}
	return 0;
}

static void kbh__section_record(struct kbh__section *s, size_t i,
				const char *sub)
{
	if ((long)i != s->index) {
		s->index = (long)i;
		s->nsubs = 0;
	}
	strcpy(s->subs[s->nsubs++], sub);
}

static int kbh__report_indexed(struct kbh_report *r, struct kbh__section *s,
			       const char *prefix, size_t i, const char *sub,
			       const char *fmt, va_list ap) KBH_PRINTF(6, 0);
static int kbh__report_indexed(struct kbh_report *r, struct kbh__section *s,
			       const char *prefix, size_t i, const char *sub,
			       const char *fmt, va_list ap)
{
	if (!r || r->broken)
		return -EIO;
	int rc = kbh__section_admit(s, i, sub);
	if (rc)
		return rc;
	char key[96];
	snprintf(key, sizeof key, "%s.%zu.%s", prefix, i, sub);
	rc = kbh__report_line(r, key, fmt, ap);
	if (rc == 0)
		kbh__section_record(s, i, sub);
	return rc;
}

int kbh_report_test(struct kbh_report *r, size_t i, const char *sub,
		    const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	int rc = kbh__report_indexed(r, r ? &r->test : NULL, "test", i, sub,
				     fmt, ap);
	va_end(ap);
	return rc;
}

int kbh_report_bench(struct kbh_report *r, size_t i, const char *sub,
		     const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	int rc = kbh__report_indexed(r, r ? &r->bench : NULL, "benchmark", i,
				     sub, fmt, ap);
	va_end(ap);
	return rc;
}

/* ---- running statistics ------------------------------------------------- */

void kbh_stats_init(struct kbh_stats *s)
{
	s->n = 0;
	s->mean = s->m2 = s->best = s->worst = s->total = 0.0;
}

void kbh_stats_add(struct kbh_stats *s, double x)
{
	s->n++;
	double d = x - s->mean;
	s->mean += d / (double)s->n;
	s->m2 += d * (x - s->mean);
	if (s->n == 1 || x < s->best)
		s->best = x;
	if (s->n == 1 || x > s->worst)
		s->worst = x;
	s->total += x;
}

double kbh_stats_std(const struct kbh_stats *s)
{
	if (s->n < 2)
		return 0.0;
	double v = s->m2 / (double)(s->n - 1);
	return v > 0 ? kbh_sqrt(v) : 0.0;
}

double kbh_stats_err(const struct kbh_stats *s)
{
	if (s->n < 2)
		return 0.0;
	return kbh_stats_std(s) / kbh_sqrt((double)s->n);
}

double kbh_stats_rel_err(const struct kbh_stats *s)
{
	if (s->n < 2 || !(s->mean > 0))
		return INFINITY;
	return kbh_stats_err(s) / s->mean;
}

int kbh_report_stats(struct kbh_report *r, size_t i, const struct kbh_stats *s)
{
	int rc = 0;
	rc = rc ? rc : kbh_report_bench(r, i, "runs", "%" PRIu64, s->n);
	rc = rc ? rc : kbh_report_bench(r, i, "mean", "%.3f", s->mean);
	rc = rc ? rc : kbh_report_bench(r, i, "std", "%.3f", kbh_stats_std(s));
	rc = rc ? rc : kbh_report_bench(r, i, "err", "%.3f", kbh_stats_err(s));
	rc = rc ? rc : kbh_report_bench(r, i, "best", "%.3f", s->best);
	rc = rc ? rc : kbh_report_bench(r, i, "worst", "%.3f", s->worst);
	return rc;
}

/* ---- stopping rule ------------------------------------------------------ */

enum kbh_stop kbh_stop_check(const struct kbh_stop_rule *rule,
			     const struct kbh_stats *s, uint64_t elapsed_ns)
{
	if (s->n >= rule->min_runs && s->n >= 2 &&
	    kbh_stats_rel_err(s) < rule->rel_err)
		return KBH_STOP_CONVERGED;
	if (rule->max_runs && s->n >= rule->max_runs)
		return KBH_STOP_MAX_RUNS;
	if (rule->max_ns && elapsed_ns >= rule->max_ns && s->n >= 2)
		return KBH_STOP_TIME;
	return KBH_STOP_CONTINUE;
}

const char *kbh_stop_name(enum kbh_stop st)
{
	switch (st) {
	case KBH_STOP_CONTINUE:
		return "continue";
	case KBH_STOP_CONVERGED:
		return "converged";
	case KBH_STOP_MAX_RUNS:
		return "max-runs";
	case KBH_STOP_TIME:
		return "time-cap";
	}
	return "?";
}

/* ---- cost model --------------------------------------------------------- */

static double kbh__max(double a, double b)
{
	return a > b ? a : b;
}

double kbh_cost_floor_ns(const struct kbh_cost *c, const struct kbh_peak *p)
{
	double t = 0.0;
	if (c->bytes > 0 && p->bytes_per_s > 0)
		t = kbh__max(t, c->bytes / p->bytes_per_s * 1e9);
	if (c->flops > 0 && p->flops_per_s > 0)
		t = kbh__max(t, c->flops / p->flops_per_s * 1e9);
	return t;
}

int kbh_cost_suspect(const struct kbh_cost *c, const struct kbh_peak *p,
		     double time_ns)
{
	double floor_ns = kbh_cost_floor_ns(c, p);
	return floor_ns > 0 && time_ns < floor_ns;
}

double kbh_cost_gbps(const struct kbh_cost *c, double time_ns)
{
	return time_ns > 0 ? c->bytes / time_ns : 0.0; /* bytes/ns == GB/s */
}

double kbh_cost_gflops(const struct kbh_cost *c, double time_ns)
{
	return time_ns > 0 ? c->flops / time_ns : 0.0;
}

int kbh_report_cost(struct kbh_report *r, size_t i, const struct kbh_cost *c,
		    const struct kbh_peak *p, double mean_ns)
{
	int rc = 0;
	if (c->bytes > 0) {
		rc = rc ? rc
			: kbh_report_bench(r, i, "bytes", "%.0f", c->bytes);
		rc = rc ? rc
			: kbh_report_bench(r, i, "gbps", "%.3f",
					   kbh_cost_gbps(c, mean_ns));
	}
	if (c->flops > 0) {
		rc = rc ? rc
			: kbh_report_bench(r, i, "flops", "%.0f", c->flops);
		rc = rc ? rc
			: kbh_report_bench(r, i, "gflops", "%.3f",
					   kbh_cost_gflops(c, mean_ns));
	}
	double floor_ns = kbh_cost_floor_ns(c, p);
	if (floor_ns > 0)
		rc = rc ? rc
			: kbh_report_bench(r, i, "floor_ns", "%.3f", floor_ns);
	return rc;
}

/* ---- comparisons -------------------------------------------------------- */

size_t kbh_compare_f32(const float *got, const float *want, size_t n,
		       double rtol, double atol, struct kbh_mismatch *m)
{
	size_t count = 0;
	for (size_t i = 0; i < n; i++) {
		double g = got[i], w = want[i];
		double tol = atol + rtol * fabs(w);
		if (!isfinite(g) || !(fabs(g - w) <= tol)) {
			if (count == 0 && m) {
				m->index = i;
				m->got = g;
				m->want = w;
				m->tol = tol;
			}
			count++;
		}
	}
	if (m)
		m->count = count;
	return count;
}

#pragma GCC visibility pop
