/* kb_builder: what build.h offers every caller: argument vectors, the
 * task's config, the submission's file. The language table is builders.c;
 * what the builders share, build_int.c. */
#include "build.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pbutil.h"

void kb_argv_push(struct kb_argv *a, const char *arg)
{
	a->v = kb__xrealloc(a->v, (a->n + 2) * sizeof(char *));
	a->v[a->n++] = kb__xstrdup(arg);
	a->v[a->n] = NULL;
}

void kb_argv_free(struct kb_argv *a)
{
	for (size_t i = 0; i < a->n; i++)
		free(a->v[i]);
	free(a->v);
	a->v = NULL;
	a->n = 0;
}

static int shell_safe(const char *s)
{
	if (!*s)
		return 0;
	for (; *s; s++)
		if (!strchr("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
			    "0123456789_./=:,+@%^-",
			    *s))
			return 0;
	return 1;
}

char *kb_argv_render(const struct kb_argv *a)
{
	size_t cap = 1;
	char *out, *p;

	for (size_t i = 0; i < a->n; i++)
		cap += 4 * strlen(a->v[i]) + 3;
	p = out = kb__xcalloc(1, cap);
	for (size_t i = 0; i < a->n; i++) {
		const char *s = a->v[i];

		if (i)
			*p++ = ' ';
		if (shell_safe(s)) {
			p = stpcpy(p, s);
			continue;
		}
		*p++ = '\'';
		for (; *s; s++)
			p = *s == '\'' ? stpcpy(p, "'\\''") : (*p = *s, p + 1);
		*p++ = '\'';
	}
	*p = '\0';
	return out;
}

const char *kb_builder_config(const Kb__Task *t, const char *key)
{
	for (size_t i = 0; i < t->n_config; i++)
		if (strcmp(t->config[i]->key, key) == 0)
			return t->config[i]->value;
	return NULL;
}

static int content_is(const ProtobufCBinaryData *d, const void *p, size_t n)
{
	return d->len == n && (n == 0 || memcmp(d->data, p, n) == 0);
}

long kb_builder_submission_file(const Kb__Task *t,
				const ProtobufCBinaryData *code)
{
	const size_t mark = strlen(KB_SUBMISSION_MARK);
	long found = -1;

	for (size_t i = 0; i < t->n_files; i++) {
		const ProtobufCBinaryData *d = &t->files[i]->content;

		if (!content_is(d, KB_SUBMISSION_MARK, mark) &&
		    !(code && content_is(d, code->data, code->len)))
			continue;
		if (found >= 0)
			return -2;
		found = (long)i;
	}
	return found;
}
