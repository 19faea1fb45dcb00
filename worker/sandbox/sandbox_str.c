/* sandbox_str: the async-signal-safe string helpers of the child side
 * (sandbox_child.c, sandbox_mount.c): no malloc, no stdio, no locale.
 */
#include "sandbox_internal.h"

#include <string.h>

size_t kb__sb_strlcpy(char *dst, const char *src, size_t n)
{
	size_t l = strlen(src);

	if (n) {
		size_t c = l < n - 1 ? l : n - 1;
		memcpy(dst, src, c);
		dst[c] = '\0';
	}
	return l;
}

size_t kb__sb_strlcat(char *dst, const char *src, size_t n)
{
	size_t d = strnlen(dst, n);

	if (d == n)
		return d + strlen(src);
	return d + kb__sb_strlcpy(dst + d, src, n - d);
}

/* Formats a non-negative integer without stdio. */
static void kb__sb_utoa(char *buf, size_t n, unsigned long v)
{
	char tmp[24];
	size_t i = 0;

	do {
		tmp[i++] = (char)('0' + v % 10);
		v /= 10;
	} while (v && i < sizeof(tmp));
	size_t j = 0;
	for (; j < i && j + 1 < n; j++)
		buf[j] = tmp[i - 1 - j];
	if (n)
		buf[j < n ? j : n - 1] = '\0';
}

void kb__sb_fmt_err(char *msg, size_t n, const char *what, const char *arg,
		    int err)
{
	char num[24];

	kb__sb_strlcpy(msg, what, n);
	if (arg) {
		kb__sb_strlcat(msg, " ", n);
		kb__sb_strlcat(msg, arg, n);
	}
	if (err) {
		kb__sb_strlcat(msg, ": ", n);
		/* strerrordesc_np returns a constant string: no locale, no malloc. */
		const char *d = strerrordesc_np(err);
		if (d) {
			kb__sb_strlcat(msg, d, n);
		} else {
			kb__sb_utoa(num, sizeof(num), (unsigned long)err);
			kb__sb_strlcat(msg, "errno ", n);
			kb__sb_strlcat(msg, num, n);
		}
	}
}
