/* kb_task_yaml: see kb_task_yaml.h. */
#include "kb_task_yaml.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>

#include "kb_util.h"

/* ---------------------------------------------------------------- errors */

/* Prepends "prefix: " to an error message already in errstr. */
void kb__prefix_err(char *errstr, size_t size, const char *prefix)
{
	char tmp[512];

	if (!errstr || size == 0)
		return;
	snprintf(tmp, sizeof(tmp), "%s", errstr);
	kb_seterr(errstr, size, "%s: %s", prefix, tmp);
}

int kb__yfail(struct kb__yctx *c, const yaml_node_t *n, const char *fmt, ...)
{
	char msg[400];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (n)
		kb_seterr(c->errstr, c->errstr_size, "line %lu: %s",
			  (unsigned long)n->start_mark.line + 1, msg);
	else
		kb_seterr(c->errstr, c->errstr_size, "%s", msg);
	return -EINVAL;
}

int kb__yoom(struct kb__yctx *c)
{
	kb_seterr(c->errstr, c->errstr_size, "out of memory");
	return -ENOMEM;
}

/* ------------------------------------------------------------ yaml nodes */

yaml_node_t *kb__ynode(struct kb__yctx *c, int id)
{
	return yaml_document_get_node(c->doc, id);
}

const char *kb__sval(const yaml_node_t *n)
{
	return (const char *)n->data.scalar.value;
}

int kb__is_plain(const yaml_node_t *n)
{
	return n->type == YAML_SCALAR_NODE &&
	       n->data.scalar.style == YAML_PLAIN_SCALAR_STYLE;
}

int kb__is_null(const yaml_node_t *n)
{
	static const char *const nulls[] = {"", "~", "null", "Null", "NULL"};

	if (!kb__is_plain(n))
		return 0;
	for (size_t i = 0; i < sizeof(nulls) / sizeof(nulls[0]); i++)
		if (strcmp(kb__sval(n), nulls[i]) == 0)
			return 1;
	return 0;
}

/* Plain YAML 1.1 booleans: -1 if n is not one, else 0/1. */
int kb__plain_bool(const yaml_node_t *n)
{
	static const char *const t[] = {"true", "True", "TRUE", "yes", "Yes",
					"YES",  "on",   "On",   "ON"};
	static const char *const f[] = {"false", "False", "FALSE", "no", "No",
					"NO",    "off",   "Off",   "OFF"};

	if (!kb__is_plain(n))
		return -1;
	for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		if (strcmp(kb__sval(n), t[i]) == 0)
			return 1;
		if (strcmp(kb__sval(n), f[i]) == 0)
			return 0;
	}
	return -1;
}

const char *kb__ykind(const yaml_node_t *n)
{
	switch (n->type) {
	case YAML_SCALAR_NODE:
		return kb__is_null(n) ? "null" : "a scalar";
	case YAML_SEQUENCE_NODE:
		return "a list";
	case YAML_MAPPING_NODE:
		return "a map";
	default:
		return "empty";
	}
}

/* A non-null scalar without embedded NUL bytes. */
int kb__want_scalar(struct kb__yctx *c, const yaml_node_t *n, const char *what)
{
	if (n->type != YAML_SCALAR_NODE || kb__is_null(n))
		return kb__yfail(c, n, "%s must be a string, not %s", what,
				 kb__ykind(n));
	if (strlen(kb__sval(n)) != n->data.scalar.length)
		return kb__yfail(c, n, "%s contains a NUL byte", what);
	return 0;
}

/* The scalar's text, duplicated. */
int kb__get_str(struct kb__yctx *c, const yaml_node_t *n, const char *what,
		char **out)
{
	int rc = kb__want_scalar(c, n, what);

	if (rc < 0)
		return rc;
	*out = strdup(kb__sval(n));
	return *out ? 0 : kb__yoom(c);
}

/* The scalar as Python would print the loaded value: booleans become
 * "True"/"False", everything else stays as written. */
int kb__get_text(struct kb__yctx *c, const yaml_node_t *n, const char *what,
		 char **out)
{
	int rc = kb__want_scalar(c, n, what), b;

	if (rc < 0)
		return rc;
	b = kb__plain_bool(n);
	*out = strdup(b < 0 ? kb__sval(n) : b ? "True" : "False");
	return *out ? 0 : kb__yoom(c);
}

/* A plain decimal integer in [lo, hi]. */
int kb__get_uint(struct kb__yctx *c, const yaml_node_t *n, const char *what,
		 uint64_t lo, uint64_t hi, uint64_t *out)
{
	const char *s;
	uint64_t v = 0;

	if (n->type != YAML_SCALAR_NODE || !kb__is_plain(n) || kb__is_null(n))
		return kb__yfail(c, n, "%s must be an integer, not %s%s", what,
				 kb__ykind(n),
				 n->type == YAML_SCALAR_NODE && !kb__is_plain(n)
					 ? " (quoted)"
					 : "");
	s = kb__sval(n);
	if (*s == '+')
		s++;
	if (*s == '-' && s[1] >= '0' && s[1] <= '9')
		return kb__yfail(c, n, "%s must not be negative (%s)", what,
				 kb__sval(n));
	if (!*s)
		return kb__yfail(c, n, "%s must be an integer, not '%s'", what,
				 kb__sval(n));
	for (; *s; s++) {
		unsigned d;
		if (*s < '0' || *s > '9')
			return kb__yfail(c, n,
					 "%s must be a decimal integer, not "
					 "'%s'",
					 what, kb__sval(n));
		d = (unsigned)(*s - '0');
		if (v > (UINT64_MAX - d) / 10)
			return kb__yfail(c, n, "%s is too large (%s)", what,
					 kb__sval(n));
		v = v * 10 + d;
	}
	if (v < lo || v > hi)
		return kb__yfail(c, n,
				 "%s must be between %llu and %llu, not %llu",
				 what, (unsigned long long)lo,
				 (unsigned long long)hi, (unsigned long long)v);
	*out = v;
	return 0;
}

/* A mapping whose keys are distinct non-null scalars. */
int kb__want_map(struct kb__yctx *c, const yaml_node_t *n, const char *what)
{
	yaml_node_pair_t *p, *q;

	if (n->type != YAML_MAPPING_NODE)
		return kb__yfail(c, n, "%s must be a map, not %s", what,
				 kb__ykind(n));
	for (p = n->data.mapping.pairs.start; p < n->data.mapping.pairs.top;
	     p++) {
		yaml_node_t *k = kb__ynode(c, p->key);
		int rc = kb__want_scalar(c, k, "a key");
		if (rc < 0)
			return rc;
		for (q = n->data.mapping.pairs.start; q < p; q++)
			if (strcmp(kb__sval(kb__ynode(c, q->key)),
				   kb__sval(k)) == 0)
				return kb__yfail(c, k,
						 "key '%s' given twice in %s",
						 kb__sval(k), what);
	}
	return 0;
}

int kb__want_seq(struct kb__yctx *c, const yaml_node_t *n, const char *what)
{
	if (n->type != YAML_SEQUENCE_NODE)
		return kb__yfail(c, n, "%s must be a list, not %s", what,
				 kb__ykind(n));
	return 0;
}

/* -------------------------------------------------------------- arrays */

int kb__push_str(char ***v, size_t *n, char *s)
{
	char **nv = realloc(*v, (*n + 1) * sizeof(*nv));

	if (!nv) {
		free(s);
		return -ENOMEM;
	}
	nv[(*n)++] = s;
	*v = nv;
	return 0;
}

void kb__free_strs(char **v, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(v[i]);
	free(v);
}

/* Names that end up in URLs, Redis keys and Kafka topics. */
int kb__valid_name(const char *s)
{
	size_t n = strlen(s);

	if (n == 0 || n > 64 || s[0] == '.' || s[0] == '-')
		return 0;
	for (; *s; s++) {
		char ch = *s;
		if (!((ch >= 'A' && ch <= 'Z') || (ch >= 'a' && ch <= 'z') ||
		      (ch >= '0' && ch <= '9') || ch == '_' || ch == '-' ||
		      ch == '.'))
			return 0;
	}
	return 1;
}

/* A file name the worker can create in its run directory. */
int kb__valid_file_name(const char *s)
{
	return *s && strcmp(s, ".") != 0 && strcmp(s, "..") != 0 &&
	       !strchr(s, '/') && !strchr(s, '\n');
}

char *kb__path_join(const char *a, const char *b)
{
	size_t na = strlen(a);
	char *p;

	while (na > 1 && a[na - 1] == '/')
		na--;
	p = malloc(na + 1 + strlen(b) + 1);
	if (p)
		sprintf(p, "%.*s/%s", (int)na, a, b);
	return p;
}

int kb__is_regular(const char *path)
{
	struct stat st;

	return stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

static int kb__yaml_problem(struct kb__yctx *c, yaml_parser_t *parser)
{
	const char *ctx = parser->context ? parser->context : "";

	if (parser->error == YAML_MEMORY_ERROR)
		return kb__yoom(c);
	kb_seterr(c->errstr, c->errstr_size, "line %lu: %s%s%s",
		  (unsigned long)parser->problem_mark.line + 1,
		  parser->problem ? parser->problem : "YAML error",
		  *ctx ? " " : "", ctx);
	return -EINVAL;
}

/* The expanded weight of node id (see KB__TASK_MAX_EXPANDED), memoised
 * in w[] (0: not yet; SIZE_MAX: being walked, so reaching it again is a
 * cycle). Returns the weight, or SIZE_MAX with errstr set. */
static size_t yweight(struct kb__yctx *c, int id, size_t *w, int depth)
{
	yaml_node_t *n = kb__ynode(c, id);
	size_t sum = 1;

	if (!n)
		return 1;
	if (w[id] == SIZE_MAX) {
		kb__yfail(c, n, "an alias refers to a node that holds it");
		return SIZE_MAX;
	}
	if (w[id])
		return w[id];
	if (depth > KB__TASK_MAX_DEPTH) {
		kb__yfail(c, n, "nested more than %d levels deep",
			  KB__TASK_MAX_DEPTH);
		return SIZE_MAX;
	}
	w[id] = SIZE_MAX;
	if (n->type == YAML_SCALAR_NODE) {
		sum += n->data.scalar.length;
	} else if (n->type == YAML_SEQUENCE_NODE) {
		KB__SEQ_EACH(c, n, it)
		{
			size_t x = yweight(c, *it, w, depth + 1);
			if (x == SIZE_MAX)
				return SIZE_MAX;
			sum += x;
			if (sum > KB__TASK_MAX_EXPANDED)
				break;
		}
	} else if (n->type == YAML_MAPPING_NODE) {
		KB__MAP_EACH(c, n, p)
		{
			size_t k = yweight(c, p->key, w, depth + 1), v;
			if (k == SIZE_MAX)
				return SIZE_MAX;
			v = yweight(c, p->value, w, depth + 1);
			if (v == SIZE_MAX)
				return SIZE_MAX;
			sum += k + v;
			if (sum > KB__TASK_MAX_EXPANDED)
				break;
		}
	}
	if (sum > KB__TASK_MAX_EXPANDED) {
		kb__yfail(c, n,
			  "the YAML is too large with its aliases expanded "
			  "(more than %u bytes)",
			  KB__TASK_MAX_EXPANDED);
		return SIZE_MAX;
	}
	return w[id] = sum;
}

/* Refuses a document over the budgets (kb_task_yaml.h). */
static int ybudget(struct kb__yctx *c)
{
	size_t n = (size_t)(c->doc->nodes.top - c->doc->nodes.start);
	size_t *w = calloc(n + 1, sizeof(*w));
	size_t total;

	if (!w)
		return kb__yoom(c);
	total = yweight(c, 1, w, 0);
	free(w);
	return total == SIZE_MAX ? -EINVAL : 0;
}

/* Loads exactly one YAML document; the caller deletes *doc when 0. */
int kb__yload(const char *yaml, size_t len, yaml_document_t *doc,
	      struct kb__yctx *c)
{
	yaml_parser_t parser;
	yaml_document_t extra;
	int rc = 0;

	if (!yaml_parser_initialize(&parser))
		return kb__yoom(c);
	yaml_parser_set_input_string(&parser, (const unsigned char *)yaml, len);
	if (!yaml_parser_load(&parser, doc)) {
		rc = kb__yaml_problem(c, &parser);
		yaml_parser_delete(&parser);
		return rc;
	}
	if (!yaml_document_get_root_node(doc)) {
		yaml_document_delete(doc);
		yaml_parser_delete(&parser);
		kb_seterr(c->errstr, c->errstr_size, "the YAML is empty");
		return -EINVAL;
	}
	if (!yaml_parser_load(&parser, &extra)) {
		rc = kb__yaml_problem(c, &parser);
	} else {
		if (yaml_document_get_root_node(&extra)) {
			yaml_node_t *r = yaml_document_get_root_node(&extra);
			kb_seterr(c->errstr, c->errstr_size,
				  "line %lu: a second YAML document",
				  (unsigned long)r->start_mark.line + 1);
			rc = -EINVAL;
		}
		yaml_document_delete(&extra);
	}
	yaml_parser_delete(&parser);
	if (rc == 0)
		rc = ybudget(c);
	if (rc < 0)
		yaml_document_delete(doc);
	return rc;
}

int kb__parse_gpus(struct kb__yctx *c, yaml_node_t *n, char ***out,
		   size_t *nout)
{
	int rc = kb__want_seq(c, n, "gpus");

	if (rc < 0)
		return rc;
	KB__SEQ_EACH(c, n, it)
	{
		yaml_node_t *e = kb__ynode(c, *it);
		char *s;
		rc = kb__get_str(c, e, "a gpu", &s);
		if (rc < 0)
			return rc;
		if (!kb__valid_name(s)) {
			free(s);
			return kb__yfail(c, e,
					 "gpu name must be [A-Za-z0-9_.-]+");
		}
		for (size_t i = 0; i < *nout; i++) {
			if (strcmp((*out)[i], s) == 0) {
				rc = kb__yfail(c, e, "gpu '%s' listed twice",
					       s);
				free(s);
				return rc;
			}
		}
		if (kb__push_str(out, nout, s) < 0)
			return kb__yoom(c);
	}
	return 0;
}
