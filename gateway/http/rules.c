/* kb_rules: see rules.h. */
#include "rules.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "kb_util.h"

int kb_rules_code(const char *code, size_t len, size_t max, const char **why)
{
	if (len == 0) {
		*why = "empty file";
		return 400;
	}
	if (len > max) {
		*why = "file too large";
		return 413;
	}
	if (memchr(code, '\0', len)) {
		*why = "file contains NUL bytes";
		return 400;
	}
	if (!kb_utf8_valid(code, len)) {
		*why = "file is not valid UTF-8";
		return 400;
	}
	return 0;
}

int kb_rules_content_length(const char *value, uint64_t cap, const char **why)
{
	uint64_t n;

	if (!value)
		return 0;
	/* A number with leading zeros is still a length; strip them so the
	 * strict parser does not call "007" malformed. */
	while (value[0] == '0' && value[1] >= '0' && value[1] <= '9')
		value++;
	if (kb_parse_u64(value, &n) != 0) {
		*why = "malformed Content-Length";
		return 400;
	}
	if (n > cap) {
		*why = "request body too large";
		return 413;
	}
	return 0;
}

int kb_rules_page(const char *limit_s, const char *offset_s, long def_limit,
		  long max_limit, long *limit, long *offset, const char **why)
{
	uint64_t v;

	*limit = def_limit;
	*offset = 0;
	if (limit_s) {
		if (kb_parse_u64(limit_s, &v) != 0 || v == 0) {
			*why = "limit must be a positive integer";
			return 400;
		}
		*limit = v > (uint64_t)max_limit ? max_limit : (long)v;
	}
	if (offset_s) {
		if (kb_parse_u64(offset_s, &v) != 0 || v > 1000000000u) {
			*why = "offset must be an integer between 0 and 10^9";
			return 400;
		}
		*offset = (long)v;
	}
	return 0;
}

int kb_rules_cli_id_ok(const char *s)
{
	size_t n;

	if (!s)
		return 0;
	n = strlen(s);
	if (n == 0 || n > 128)
		return 0;
	for (size_t i = 0; i < n; i++)
		if (s[i] <= 0x20 || s[i] >= 0x7f)
			return 0;
	return 1;
}

int kb_rules_user_name_ok(const char *s)
{
	size_t n;
	int visible = 0;

	if (!s)
		return 0;
	n = strlen(s);
	if (n == 0 || n > 64 || !kb_utf8_valid(s, n))
		return 0;
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)s[i];
		if (c < 0x20 || c == 0x7f)
			return 0;
		if (c != ' ')
			visible = 1;
	}
	return visible;
}

int kb_rules_admin(const char *authorization, const char *token,
		   const char **why)
{
	if (!token || !*token) {
		*why = "admin API disabled";
		return 403;
	}
	if (!authorization || strncasecmp(authorization, "Bearer ", 7) != 0) {
		*why = "missing bearer token";
		return 401;
	}
	const char *given = authorization + 7;
	while (*given == ' ')
		given++;
	if (!kb_secure_streq(given, token)) {
		*why = "invalid admin token";
		return 401;
	}
	return 0;
}

/* Length of the valid UTF-8 sequence at p (n bytes available), or 0. */
static size_t utf8_seq(const unsigned char *p, size_t n)
{
	unsigned c = p[0];
	size_t len;
	unsigned cp;

	if (c < 0x80)
		return 1;
	if (c >= 0xc2 && c <= 0xdf) {
		len = 2;
		cp = c & 0x1f;
	} else if (c >= 0xe0 && c <= 0xef) {
		len = 3;
		cp = c & 0x0f;
	} else if (c >= 0xf0 && c <= 0xf4) {
		len = 4;
		cp = c & 0x07;
	} else {
		return 0;
	}
	if (n < len)
		return 0;
	for (size_t i = 1; i < len; i++) {
		if ((p[i] & 0xc0) != 0x80)
			return 0;
		cp = (cp << 6) | (p[i] & 0x3f);
	}
	if ((len == 3 && (cp < 0x800 || (cp >= 0xd800 && cp <= 0xdfff))) ||
	    (len == 4 && (cp < 0x10000 || cp > 0x10ffff)))
		return 0;
	return len;
}

char *kb_gw_utf8_sanitize(const char *buf, size_t len, size_t *out_len)
{
	const unsigned char *p = (const unsigned char *)buf;
	/* Worst case every byte becomes a 3-byte replacement character. */
	char *out = malloc(len * 3 + 1);
	size_t o = 0;

	if (!out)
		return NULL;
	for (size_t i = 0; i < len;) {
		size_t n = utf8_seq(p + i, len - i);
		if (n == 0) {
			memcpy(out + o, "\xef\xbf\xbd", 3);
			o += 3;
			i++;
		} else {
			memcpy(out + o, p + i, n);
			o += n;
			i += n;
		}
	}
	out[o] = '\0';
	if (out_len)
		*out_len = o;
	return out;
}

void kb_rules_file_name(const char *in, char *out, size_t size)
{
	const char *base = in ? in : "";
	size_t o = 0, limit = size - 1 < 255 ? size - 1 : 255;

	for (const char *s = base; *s; s++)
		if (*s == '/' || *s == '\\')
			base = s + 1;
	for (const unsigned char *s = (const unsigned char *)base; *s;) {
		size_t n = utf8_seq(s, strlen((const char *)s));
		if (n == 0) { /* caller promised UTF-8; be safe anyway */
			s++;
			continue;
		}
		if (n == 1 && (*s < 0x20 || *s == 0x7f)) {
			s++;
			continue;
		}
		if (o + n > limit)
			break;
		memcpy(out + o, s, n);
		o += n;
		s += n;
	}
	out[o] = '\0';
	if (o == 0 || strcmp(out, ".") == 0 || strcmp(out, "..") == 0)
		snprintf(out, size, "submission");
}

const char *kb_rules_category(enum kb_mode m)
{
	return m == KB_MODE_LEADERBOARD ? "leaderboard" : "test";
}

int kb_rules_category_ok(const char *s)
{
	return s && (strcmp(s, "test") == 0 || strcmp(s, "leaderboard") == 0);
}

int kb_rules_provider_ok(const char *s)
{
	return s && (strcmp(s, "discord") == 0 || strcmp(s, "github") == 0);
}

int kb_rules_name_ok(const char *s, size_t max)
{
	size_t n;

	if (!s)
		return 0;
	n = strlen(s);
	if (n == 0 || n > max || s[0] == '.' || s[0] == '-')
		return 0;
	for (size_t i = 0; i < n; i++) {
		char c = s[i];
		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
		      (c >= '0' && c <= '9') || c == '_' || c == '.' ||
		      c == '-'))
			return 0;
	}
	return 1;
}

int kb_rules_user_id_ok(const char *s)
{
	return kb_rules_name_ok(s, 95);
}

int kb_rules_bool(const char *s, int def)
{
	static const char *const yes[] = {"true", "1", "yes", "on"};
	static const char *const no[] = {"false", "0", "no", "off"};

	if (!s)
		return def;
	for (int i = 0; i < 4; i++) {
		if (strcasecmp(s, yes[i]) == 0)
			return 1;
		if (strcasecmp(s, no[i]) == 0)
			return 0;
	}
	return -1;
}
