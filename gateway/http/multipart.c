/* kb_multipart: see multipart.h.
 *
 * The body is scanned for the delimiter D = CRLF "--" boundary. Because a
 * boundary cannot contain CR, CR occurs in D only at position 0, so a
 * failed partial match never hides the start of another one: on a
 * mismatch the matched prefix is plain data and scanning restarts at the
 * current byte. That makes the scan linear, lets it run across feed()
 * calls with nothing but the match length as state, and lets the common
 * case skip to the next CR with memchr(). The body's first delimiter has
 * no CRLF before it, so scanning starts as if CRLF had just been matched.
 */
#include "multipart.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define HEADER_LINE_MAX 8192   /* one part header line */
#define HEADER_TOTAL_MAX 16384 /* all header lines of one part */
#define PARAM_MAX 4096         /* one parameter value */

enum state {
	ST_PREAMBLE, /* before the first delimiter */
	ST_AFTER_DELIM,
	ST_CLOSE_DASH, /* saw "-" after a delimiter, need the second */
	ST_PADDING,    /* spaces/tabs after a delimiter */
	ST_DELIM_LF,   /* saw CR after a delimiter */
	ST_HEADER,
	ST_HEADER_LF,
	ST_BODY,
	ST_EPILOGUE,
};

struct kb_multipart {
	enum state state;
	char delim[4 + KB_MULTIPART_BOUNDARY_MAX + 1];
	size_t dlen;
	size_t match; /* bytes of delim matched so far */
	char *field;
	size_t max;

	/* the part being read */
	char line[HEADER_LINE_MAX];
	size_t line_len;
	size_t header_total;
	int has_disposition;
	int in_target;

	/* small text fields kept beside it (kb_multipart_keep_text) */
	struct {
		char name[64];
		char val[KB_MULTIPART_TEXT_MAX + 1];
		size_t len;
		int seen, found;
	} texts[KB_MULTIPART_TEXTS];
	size_t ntexts;
	int cur_text; /* index into texts of the part being read, or -1 */

	/* the field */
	int found;
	char *data;
	size_t len, cap;
	char *filename;

	int err;
	const char *why;
};

static int fail(kb_multipart *m, int code, const char *why)
{
	m->err = code;
	m->why = why;
	return code;
}

static int is_bchar(int c)
{
	if ((c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') ||
	    (c >= 'A' && c <= 'Z'))
		return 1;
	return c != '\0' && strchr("'()+_,-./:=? ", c) != NULL;
}

static int boundary_valid(const char *b)
{
	size_t n = strlen(b);

	if (n == 0 || n > KB_MULTIPART_BOUNDARY_MAX || b[n - 1] == ' ')
		return 0;
	for (size_t i = 0; i < n; i++)
		if (!is_bchar((unsigned char)b[i]))
			return 0;
	return 1;
}

static int is_tspecial_or_ws(int c)
{
	return c == ' ' || c == '\t' || c == ';' || c == '=' || c == '"' ||
	       c == ',' || c < 0x20 || c == 0x7f;
}

static const char *skip_ws(const char *s)
{
	while (*s == ' ' || *s == '\t')
		s++;
	return s;
}

/* Reads a token into buf. Returns the position after it, or NULL when it
 * is empty or longer than size - 1. */
static const char *read_token(const char *s, char *buf, size_t size)
{
	size_t n = 0;

	while (*s && !is_tspecial_or_ws((unsigned char)*s)) {
		if (n + 1 >= size)
			return NULL;
		buf[n++] = *s++;
	}
	buf[n] = '\0';
	return n ? s : NULL;
}

/* Reads a quoted-string (s at the opening quote) into buf, undoing
 * backslash escapes of '"' and '\'. Returns the position after the closing
 * quote, or NULL when unterminated or too long. */
static const char *read_quoted(const char *s, char *buf, size_t size)
{
	size_t n = 0;

	for (s++; *s && *s != '"'; s++) {
		if (*s == '\\' && (s[1] == '"' || s[1] == '\\'))
			s++;
		if (n + 1 >= size)
			return NULL;
		buf[n++] = *s;
	}
	if (*s != '"')
		return NULL;
	buf[n] = '\0';
	return s + 1;
}

/* Iterates the "; key=value" parameters after a media or disposition
 * type. Returns 1 with key and value filled, 0 at the end, -1 on a syntax
 * error. */
static int next_param(const char **sp, char *key, size_t ksize, char *val,
		      size_t vsize)
{
	const char *s = skip_ws(*sp);

	if (*s == '\0')
		return 0;
	if (*s != ';')
		return -1;
	s = skip_ws(s + 1);
	if (*s == '\0') /* a trailing ';' is common and harmless */
		return 0;
	s = read_token(s, key, ksize);
	if (!s)
		return -1;
	s = skip_ws(s);
	if (*s != '=')
		return -1;
	s = skip_ws(s + 1);
	s = *s == '"' ? read_quoted(s, val, vsize) : read_token(s, val, vsize);
	if (!s)
		return -1;
	*sp = s;
	return 1;
}

int kb_multipart_boundary(const char *content_type, char *buf, size_t size)
{
	char type[64], key[64], val[PARAM_MAX];
	const char *s;
	int found = 0, r;

	if (!content_type || size < KB_MULTIPART_BOUNDARY_MAX + 1)
		return -EINVAL;
	s = read_token(skip_ws(content_type), type, sizeof(type));
	if (!s || strcasecmp(type, "multipart/form-data") != 0)
		return -EINVAL;
	while ((r = next_param(&s, key, sizeof(key), val, sizeof(val))) == 1) {
		if (strcasecmp(key, "boundary") != 0)
			continue;
		if (found || !boundary_valid(val))
			return -EINVAL;
		strcpy(buf, val); /* length checked by boundary_valid */
		found = 1;
	}
	return r == 0 && found ? 0 : -EINVAL;
}

kb_multipart *kb_multipart_new(const char *boundary, const char *field,
			       size_t max_bytes)
{
	kb_multipart *m;

	if (!boundary || !field || !boundary_valid(boundary))
		return NULL;
	m = calloc(1, sizeof(*m));
	if (!m)
		return NULL;
	m->field = strdup(field);
	if (!m->field) {
		free(m);
		return NULL;
	}
	m->dlen = (size_t)snprintf(m->delim, sizeof(m->delim), "\r\n--%s",
				   boundary);
	m->match = 2; /* the first delimiter may open the body */
	m->cur_text = -1;
	m->max = max_bytes;
	m->state = ST_PREAMBLE;
	m->why = "";
	return m;
}

static int append(kb_multipart *m, const void *p, size_t n)
{
	if (n > m->max - m->len)
		return fail(m, -EFBIG, "file too large");
	if (m->len + n + 1 > m->cap) {
		size_t cap = m->cap ? m->cap : 4096;
		while (cap < m->len + n + 1)
			cap *= 2;
		if (cap > m->max + 1)
			cap = m->max + 1;
		char *d = realloc(m->data, cap);
		if (!d)
			return fail(m, -ENOMEM, "out of memory");
		m->data = d;
		m->cap = cap;
	}
	memcpy(m->data + m->len, p, n);
	m->len += n;
	m->data[m->len] = '\0';
	return 0;
}

/* Body or preamble bytes; only the target part's body and the kept text
 * fields are kept. */
static int emit(kb_multipart *m, const void *p, size_t n)
{
	if (m->state == ST_BODY && m->cur_text >= 0 && n > 0) {
		size_t t = (size_t)m->cur_text;
		if (m->texts[t].len + n > KB_MULTIPART_TEXT_MAX)
			return fail(m, -EINVAL, "a form field is too long");
		memcpy(m->texts[t].val + m->texts[t].len, p, n);
		m->texts[t].len += n;
		m->texts[t].val[m->texts[t].len] = '\0';
		return 0;
	}
	if (m->state != ST_BODY || !m->in_target || n == 0)
		return 0;
	return append(m, p, n);
}

/* Scans for the delimiter. Returns the bytes consumed; stops right after
 * a complete delimiter (state becomes ST_AFTER_DELIM) or on an error. */
static size_t scan(kb_multipart *m, const unsigned char *p, size_t n)
{
	size_t i = 0;

	while (i < n) {
		if (m->match == 0) {
			const unsigned char *cr = memchr(p + i, '\r', n - i);
			size_t run = cr ? (size_t)(cr - (p + i)) : n - i;
			if (emit(m, p + i, run) < 0)
				return n;
			i += run;
			if (!cr)
				break;
			m->match = 1;
			i++;
			continue;
		}
		if (p[i] == (unsigned char)m->delim[m->match]) {
			i++;
			if (++m->match == m->dlen) {
				m->match = 0;
				if (m->state == ST_BODY && m->in_target)
					m->found = 1;
				if (m->state == ST_BODY && m->cur_text >= 0)
					m->texts[m->cur_text].found = 1;
				m->state = ST_AFTER_DELIM;
				return i;
			}
			continue;
		}
		/* Mismatch: the matched prefix was data. In the preamble the
		 * prefix may include the virtual leading CRLF, which emit()
		 * drops anyway. Re-examine p[i] from a clean state. */
		if (emit(m, m->delim, m->match) < 0)
			return n;
		m->match = 0;
	}
	return i;
}

static int parse_disposition(kb_multipart *m, const char *value)
{
	char type[32], key[64], val[PARAM_MAX], fname[PARAM_MAX], name[64] = "";
	const char *s = read_token(skip_ws(value), type, sizeof(type));
	int have_name = 0, have_filename = 0, r, target = 0;

	if (!s || strcasecmp(type, "form-data") != 0)
		return fail(m, -EINVAL, "part is not form-data");
	while ((r = next_param(&s, key, sizeof(key), val, sizeof(val))) == 1) {
		if (strcasecmp(key, "name") == 0) {
			if (have_name++)
				return fail(m, -EINVAL, "part has two names");
			target = strcmp(val, m->field) == 0;
			snprintf(name, sizeof(name), "%s", val);
		} else if (strcasecmp(key, "filename") == 0) {
			if (have_filename++)
				return fail(m, -EINVAL,
					    "part has two filenames");
			memcpy(fname, val, strlen(val) + 1);
		}
	}
	if (r < 0)
		return fail(m, -EINVAL, "malformed Content-Disposition");
	if (!have_name)
		return fail(m, -EINVAL, "part without a name");
	for (size_t t = 0; !target && t < m->ntexts; t++) {
		if (strcmp(name, m->texts[t].name) != 0)
			continue;
		if (m->texts[t].seen++)
			return fail(m, -EINVAL, "a form field is given twice");
		m->cur_text = (int)t;
	}
	if (!target)
		return 0;
	if (m->found)
		return fail(m, -EINVAL, "file field given twice");
	m->in_target = 1;
	if (have_filename) {
		m->filename = strdup(fname);
		if (!m->filename)
			return fail(m, -ENOMEM, "out of memory");
	}
	return 0;
}

static int header_line(kb_multipart *m)
{
	char *line = m->line, *colon;

	line[m->line_len] = '\0';
	if (line[0] == ' ' || line[0] == '\t')
		return fail(m, -EINVAL, "folded part header");
	colon = strchr(line, ':');
	if (!colon || colon == line)
		return fail(m, -EINVAL, "malformed part header");
	*colon = '\0';
	for (char *c = line; *c; c++)
		if (is_tspecial_or_ws((unsigned char)*c))
			return fail(m, -EINVAL, "malformed part header");
	if (strcasecmp(line, "Content-Disposition") == 0) {
		if (m->has_disposition++)
			return fail(m, -EINVAL,
				    "two Content-Disposition headers");
		return parse_disposition(m, colon + 1);
	}
	if (strcasecmp(line, "Content-Transfer-Encoding") == 0) {
		const char *v = skip_ws(colon + 1);
		size_t n = strcspn(v, " \t");
		if (!(n == 4 && strncasecmp(v, "7bit", 4) == 0) &&
		    !(n == 4 && strncasecmp(v, "8bit", 4) == 0) &&
		    !(n == 6 && strncasecmp(v, "binary", 6) == 0))
			return fail(m, -EINVAL,
				    "unsupported transfer encoding");
	}
	return 0; /* Content-Type and others: not needed */
}

static void start_part(kb_multipart *m)
{
	m->line_len = 0;
	m->header_total = 0;
	m->has_disposition = 0;
	m->in_target = 0;
	m->cur_text = -1;
	m->state = ST_HEADER;
}

static int end_headers(kb_multipart *m)
{
	if (!m->has_disposition)
		return fail(m, -EINVAL, "part without Content-Disposition");
	m->state = ST_BODY;
	m->match = 0;
	return 0;
}

static int header_byte(kb_multipart *m, unsigned char c)
{
	if (m->state == ST_HEADER_LF) {
		if (c != '\n')
			return fail(m, -EINVAL,
				    "CR without LF in part headers");
		if (m->line_len == 0)
			return end_headers(m);
		int r = header_line(m);
		m->line_len = 0;
		m->state = ST_HEADER;
		return r;
	}
	if (c == '\r') {
		m->state = ST_HEADER_LF;
		return 0;
	}
	if (c == '\n')
		return fail(m, -EINVAL, "bare LF in part headers");
	if ((c < 0x20 && c != '\t') || c == 0x7f)
		return fail(m, -EINVAL, "control character in part headers");
	if (m->line_len + 1 >= sizeof(m->line) ||
	    ++m->header_total > HEADER_TOTAL_MAX)
		return fail(m, -EINVAL, "part headers too long");
	m->line[m->line_len++] = (char)c;
	return 0;
}

int kb_multipart_feed(kb_multipart *m, const void *data, size_t len)
{
	const unsigned char *p = data;
	size_t i = 0;

	if (m->err)
		return m->err;
	while (i < len && !m->err) {
		unsigned char c;
		switch (m->state) {
		case ST_PREAMBLE:
		case ST_BODY:
			i += scan(m, p + i, len - i);
			break;
		case ST_AFTER_DELIM:
			c = p[i++];
			if (c == '-')
				m->state = ST_CLOSE_DASH;
			else if (c == ' ' || c == '\t')
				m->state = ST_PADDING;
			else if (c == '\r')
				m->state = ST_DELIM_LF;
			else
				fail(m, -EINVAL, "boundary followed by data");
			break;
		case ST_CLOSE_DASH:
			if (p[i++] != '-')
				fail(m, -EINVAL, "boundary followed by data");
			else
				m->state = ST_EPILOGUE;
			break;
		case ST_PADDING:
			c = p[i++];
			if (c == '\r')
				m->state = ST_DELIM_LF;
			else if (c != ' ' && c != '\t')
				fail(m, -EINVAL, "boundary followed by data");
			break;
		case ST_DELIM_LF:
			if (p[i++] != '\n')
				fail(m, -EINVAL,
				     "boundary line not ended by CRLF");
			else
				start_part(m);
			break;
		case ST_HEADER:
		case ST_HEADER_LF:
			header_byte(m, p[i++]);
			break;
		case ST_EPILOGUE:
			i = len;
			break;
		}
	}
	return m->err;
}

int kb_multipart_finish(kb_multipart *m)
{
	if (m->err)
		return m->err;
	if (m->state != ST_EPILOGUE)
		return fail(m, -EINVAL,
			    "body ends before the closing boundary");
	return 0;
}

int kb_multipart_found(const kb_multipart *m)
{
	return m->found;
}

const char *kb_multipart_data(const kb_multipart *m, size_t *len)
{
	if (len)
		*len = m->len;
	return m->data ? m->data : "";
}

const char *kb_multipart_filename(const kb_multipart *m)
{
	return m->found ? m->filename : NULL;
}

char *kb_multipart_take(kb_multipart *m, size_t *len)
{
	char *d = m->data;

	if (len)
		*len = m->len;
	m->data = NULL;
	m->len = m->cap = 0;
	return d;
}

int kb_multipart_keep_text(kb_multipart *m, const char *name)
{
	if (!name || strlen(name) >= sizeof(m->texts[0].name) ||
	    m->ntexts == KB_MULTIPART_TEXTS || strcmp(name, m->field) == 0)
		return -EINVAL;
	snprintf(m->texts[m->ntexts++].name, sizeof(m->texts[0].name), "%s",
		 name);
	return 0;
}

const char *kb_multipart_text(const kb_multipart *m, const char *name)
{
	for (size_t t = 0; name && t < m->ntexts; t++)
		if (strcmp(m->texts[t].name, name) == 0)
			return m->texts[t].found ? m->texts[t].val : NULL;
	return NULL;
}

const char *kb_multipart_error(const kb_multipart *m)
{
	return m->why;
}

void kb_multipart_destroy(kb_multipart *m)
{
	if (!m)
		return;
	free(m->field);
	free(m->data);
	free(m->filename);
	free(m);
}
