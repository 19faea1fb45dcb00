#include "pbutil.h"

#include <protobuf-c/protobuf-c.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kb_util.h"

static void oom(void)
{
	static const char msg[] = "kb-worker: out of memory\n";

	fwrite(msg, 1, sizeof(msg) - 1, stderr);
	abort();
}

void *kb__xcalloc(size_t n, size_t size)
{
	void *p = calloc(n ? n : 1, size ? size : 1);

	if (!p)
		oom();
	return p;
}

void *kb__xrealloc(void *p, size_t size)
{
	void *q = realloc(p, size ? size : 1);

	if (!q)
		oom();
	return q;
}

char *kb__xstrdup(const char *s)
{
	char *d = strdup(s ? s : "");

	if (!d)
		oom();
	return d;
}

char *kb__xstrndup(const char *s, size_t n)
{
	char *d = strndup(s ? s : "", n);

	if (!d)
		oom();
	return d;
}

char *kb__xasprintf(const char *fmt, ...)
{
	va_list ap;
	char *s;
	int rc;

	va_start(ap, fmt);
	rc = vasprintf(&s, fmt, ap);
	va_end(ap);
	if (rc < 0)
		oom();
	return s;
}

void kb__pb_append(void *arr, size_t *n, void *item)
{
	void ***a = arr;

	*a = kb__xrealloc(*a, (*n + 1) * sizeof(void *));
	(*a)[(*n)++] = item;
}

void kb__pb_take_str(char **field, char *s)
{
	if (*field && *field != (char *)protobuf_c_empty_string)
		free(*field);
	*field = s;
}

void kb__pb_set_str(char **field, const char *s)
{
	kb__pb_take_str(field, kb__xstrdup(s));
}

char *kb__pb_output(const char *s, size_t len, size_t dropped, size_t max)
{
	char *t = kb_truncate(s ? s : "", s ? len : 0, max);
	char *out;

	if (!t)
		oom();
	if (!dropped)
		return t;
	out = kb__xasprintf("%s\n[... %zu more bytes not captured]", t,
			    dropped);
	free(t);
	return out;
}
