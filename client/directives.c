/* kb_directives: see directives.h. */
#include "directives.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

static int is_blank(char c)
{
	return c == ' ' || c == '\t';
}

/* Splits line[0..n) into at most max words (pointers into the line, with
 * lengths). Returns the number of words found, counting past max. */
static int split(const char *s, size_t n, const char **w, size_t *wl, int max)
{
	int count = 0;
	size_t i = 0;

	while (i < n) {
		while (i < n && is_blank(s[i]))
			i++;
		if (i == n)
			break;
		size_t start = i;
		while (i < n && !is_blank(s[i]))
			i++;
		if (count < max) {
			w[count] = s + start;
			wl[count] = i - start;
		}
		count++;
	}
	return count;
}

/* Stores one directive value in field (size KB_DIR_NAME_MAX), refusing an
 * empty, overlong or conflicting one. */
static int store(char *field, int *field_line, const char *what, const char *v,
		 size_t vlen, int line, char *errstr, size_t errstr_size)
{
	if (vlen >= KB_DIR_NAME_MAX) {
		snprintf(errstr, errstr_size,
			 "line %d: the %s name is longer than %d bytes", line,
			 what, KB_DIR_NAME_MAX - 1);
		return -EINVAL;
	}
	if (*field_line &&
	    (strlen(field) != vlen || memcmp(field, v, vlen) != 0)) {
		snprintf(errstr, errstr_size,
			 "line %d: %s '%.*s' conflicts with '%s' on line %d",
			 line, what, (int)vlen, v, field, *field_line);
		return -EINVAL;
	}
	if (!*field_line) {
		memcpy(field, v, vlen);
		field[vlen] = '\0';
		*field_line = line;
	}
	return 0;
}

static int directive(const char *s, size_t n, int line, struct kb_directives *d,
		     char *errstr, size_t errstr_size)
{
	const char *w[3];
	size_t wl[3];
	int count;

	if (n >= 10 && memcmp(s, "//!POPCORN", 10) == 0) {
		s += 10;
		n -= 10;
	} else if (n >= 9 && memcmp(s, "#!POPCORN", 9) == 0) {
		s += 9;
		n -= 9;
	} else {
		return 0;
	}
	if (n > 0 && !is_blank(s[0]))
		return 0; /* "#!POPCORNX": not our marker */
	count = split(s, n, w, wl, 3);
	if (count == 0)
		return 0;
	if (wl[0] == 11 && strncasecmp(w[0], "leaderboard", 11) == 0) {
		if (count < 2) {
			snprintf(
				errstr, errstr_size,
				"line %d: 'leaderboard' directive without a name",
				line);
			return -EINVAL;
		}
		return store(d->leaderboard, &d->leaderboard_line,
			     "leaderboard", w[1], wl[1], line, errstr,
			     errstr_size);
	}
	if ((wl[0] == 3 && strncasecmp(w[0], "gpu", 3) == 0) ||
	    (wl[0] == 4 && strncasecmp(w[0], "gpus", 4) == 0)) {
		if (count < 2) {
			snprintf(errstr, errstr_size,
				 "line %d: 'gpu' directive without a GPU name",
				 line);
			return -EINVAL;
		}
		int had = d->gpu_line != 0;
		int rc = store(d->gpu, &d->gpu_line, "gpu", w[1], wl[1], line,
			       errstr, errstr_size);
		if (rc == 0 && !had)
			d->gpu_count = count - 1;
		return rc;
	}
	return 0; /* an unknown directive: ignored for forward compatibility */
}

int kb_directives_parse(const char *buf, size_t len, struct kb_directives *out,
			char *errstr, size_t errstr_size)
{
	size_t i = 0;
	int line = 0;

	memset(out, 0, sizeof(*out));
	if (errstr_size)
		errstr[0] = '\0';
	if (len >= 3 && memcmp(buf, "\xEF\xBB\xBF", 3) == 0)
		i = 3;
	while (i < len) {
		const char *nl = memchr(buf + i, '\n', len - i);
		size_t end = nl ? (size_t)(nl - buf) : len;
		size_t n = end - i;

		line++;
		if (n > 0 && buf[i + n - 1] == '\r')
			n--;
		int rc = directive(buf + i, n, line, out, errstr, errstr_size);
		if (rc < 0) {
			memset(out, 0, sizeof(*out));
			return rc;
		}
		i = end + 1;
	}
	return 0;
}

__attribute__((format(printf, 3, 4))) static void
note(char *warn, size_t warn_size, const char *fmt, ...)
{
	va_list ap;
	size_t used;

	if (!warn || !warn_size)
		return;
	used = strlen(warn);
	if (used + 1 >= warn_size)
		return;
	va_start(ap, fmt);
	vsnprintf(warn + used, warn_size - used, fmt, ap);
	va_end(ap);
}

static int pick(char *dst, const char *flag, const char *dir, const char *what,
		const char *opt, const char *dirname, char *warn,
		size_t warn_size, char *errstr, size_t errstr_size)
{
	if (flag && *flag) {
		if (strlen(flag) >= KB_DIR_NAME_MAX) {
			snprintf(errstr, errstr_size,
				 "%s is longer than %d bytes", opt,
				 KB_DIR_NAME_MAX - 1);
			return -EINVAL;
		}
		if (dir && *dir && strcmp(dir, flag) != 0) {
			note(warn, warn_size,
			     "note: %s %s overrides the file's directive '%s'\n",
			     opt, flag, dir);
		}
		strcpy(dst, flag);
		return 0;
	}
	if (dir && *dir) {
		strcpy(dst, dir);
		return 0;
	}
	snprintf(errstr, errstr_size,
		 "no %s given: use %s or put '#!POPCORN %s NAME' (or "
		 "'//!POPCORN %s NAME') at the top of the file",
		 what, opt, dirname, dirname);
	return -EINVAL;
}

int kb_directives_resolve(const struct kb_directives *d, const char *flag_lb,
			  const char *flag_gpu, struct kb_target *out,
			  char *warn, size_t warn_size, char *errstr,
			  size_t errstr_size)
{
	int rc;

	memset(out, 0, sizeof(*out));
	if (warn && warn_size)
		warn[0] = '\0';
	if (errstr_size)
		errstr[0] = '\0';
	rc = pick(out->leaderboard, flag_lb, d ? d->leaderboard : NULL,
		  "leaderboard", "--leaderboard", "leaderboard", warn,
		  warn_size, errstr, errstr_size);
	if (rc == 0)
		rc = pick(out->gpu, flag_gpu, d ? d->gpu : NULL, "GPU", "--gpu",
			  "gpu", warn, warn_size, errstr, errstr_size);
	if (rc < 0) {
		memset(out, 0, sizeof(*out));
		return rc;
	}
	if (!(flag_gpu && *flag_gpu) && d && d->gpu_count > 1)
		note(warn, warn_size,
		     "note: the file lists %d GPUs; submitting to %s only (use "
		     "--gpu to choose another)\n",
		     d->gpu_count, d->gpu);
	return 0;
}
