/* kb_sse: see sse.h. */
#include "sse.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "kb_util.h"

#define SSE_DEFAULT_MAX (1u << 20)

struct kb_sse {
	kb_sse_cb cb;
	void *opaque;
	size_t max;
	struct kb_buf line; /* the current, unterminated line */
	struct kb_buf type; /* event: of the event being built */
	struct kb_buf data; /* data: lines of the event being built */
	struct kb_buf id;   /* last event id (persists across events) */
	int data_seen;      /* a data: line arrived for this event */
	int pending;        /* any field arrived for this event */
	int last_cr;        /* the previous chunk ended in CR */
	int first_line;     /* BOM check still to do */
	int dead;           /* an error or a stop happened */
	unsigned long count;
};

static void buf_reset(struct kb_buf *b)
{
	b->len = 0;
	if (b->data)
		b->data[0] = '\0';
}

/* Appends, refusing to grow past max. Returns 0, -EMSGSIZE or -ENOMEM. */
static int buf_add(struct kb_buf *b, const char *s, size_t n, size_t max)
{
	if (b->len + n > max)
		return -EMSGSIZE;
	if (n == 0 && b->data)
		return 0;
	return kb_buf_append(b, s, n);
}

struct kb_sse *kb_sse_new(size_t max_event, kb_sse_cb cb, void *opaque)
{
	struct kb_sse *p = calloc(1, sizeof(*p));

	if (!p)
		return NULL;
	p->cb = cb;
	p->opaque = opaque;
	p->max = max_event ? max_event : SSE_DEFAULT_MAX;
	p->first_line = 1;
	return p;
}

void kb_sse_destroy(struct kb_sse *p)
{
	if (!p)
		return;
	kb_buf_free(&p->line);
	kb_buf_free(&p->type);
	kb_buf_free(&p->data);
	kb_buf_free(&p->id);
	free(p);
}

unsigned long kb_sse_count(const struct kb_sse *p)
{
	return p ? p->count : 0;
}

static int dispatch(struct kb_sse *p)
{
	int rc = 0;

	if (p->data_seen) {
		struct kb_sse_event ev = {
			.type = p->type.len ? p->type.data : "message",
			.data = p->data.data ? p->data.data : "",
			.data_len = p->data.len,
			.id = p->id.len ? p->id.data : "",
		};
		p->count++;
		rc = p->cb ? p->cb(&ev, p->opaque) : 0;
	}
	buf_reset(&p->type);
	buf_reset(&p->data);
	p->data_seen = 0;
	p->pending = 0;
	return rc;
}

static int field(struct kb_sse *p, const char *name, size_t nlen,
		 const char *val, size_t vlen)
{
	int rc = 0;

	p->pending = 1;
	if (nlen == 5 && memcmp(name, "event", 5) == 0) {
		buf_reset(&p->type);
		rc = buf_add(&p->type, val, vlen, p->max);
	} else if (nlen == 4 && memcmp(name, "data", 4) == 0) {
		if (p->data_seen)
			rc = buf_add(&p->data, "\n", 1, p->max);
		if (rc == 0)
			rc = buf_add(&p->data, val, vlen, p->max);
		p->data_seen = 1;
	} else if (nlen == 2 && memcmp(name, "id", 2) == 0) {
		if (!memchr(val, '\0', vlen)) {
			buf_reset(&p->id);
			rc = buf_add(&p->id, val, vlen, p->max);
		}
	}
	/* "retry" and unknown fields: ignored, as the standard says. */
	return rc;
}

static int process_line(struct kb_sse *p)
{
	const char *s = p->line.data ? p->line.data : "";
	size_t n = p->line.len;
	int rc;

	if (p->first_line) {
		p->first_line = 0;
		if (n >= 3 && memcmp(s, "\xEF\xBB\xBF", 3) == 0) {
			s += 3;
			n -= 3;
		}
	}
	if (n == 0) {
		rc = dispatch(p);
	} else if (s[0] == ':') {
		rc = 0; /* comment / keep-alive */
	} else {
		const char *colon = memchr(s, ':', n);
		if (colon) {
			const char *v = colon + 1;
			size_t vlen = n - (size_t)(v - s);
			if (vlen && *v == ' ') {
				v++;
				vlen--;
			}
			rc = field(p, s, (size_t)(colon - s), v, vlen);
		} else {
			rc = field(p, s, n, "", 0);
		}
	}
	buf_reset(&p->line);
	return rc;
}

int kb_sse_feed(struct kb_sse *p, const char *buf, size_t len)
{
	size_t i = 0;
	int rc;

	if (p->dead)
		return -EINVAL;
	if (len == 0)
		return 0;
	if (p->last_cr) {
		p->last_cr = 0;
		if (buf[0] == '\n')
			i = 1; /* the LF of a CRLF split across chunks */
	}
	while (i < len) {
		size_t j = i;
		while (j < len && buf[j] != '\r' && buf[j] != '\n')
			j++;
		rc = buf_add(&p->line, buf + i, j - i, p->max);
		if (rc < 0) {
			p->dead = 1;
			return rc;
		}
		if (j == len)
			break; /* the line continues in the next chunk */
		if (buf[j] == '\r') {
			if (j + 1 == len)
				p->last_cr = 1;
			else if (buf[j + 1] == '\n')
				j++;
		}
		i = j + 1;
		rc = process_line(p);
		if (rc != 0) {
			p->dead = 1;
			return rc;
		}
	}
	return 0;
}

int kb_sse_finish(struct kb_sse *p)
{
	int partial = p->line.len > 0 || p->pending;

	buf_reset(&p->line);
	buf_reset(&p->type);
	buf_reset(&p->data);
	p->data_seen = 0;
	p->pending = 0;
	return partial ? 1 : 0;
}
