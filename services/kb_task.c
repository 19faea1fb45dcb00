/* kb_task: task.yml and problem sets (see kb_task.h).
 *
 * The YAML is loaded with libyaml's document API (a node tree with line
 * marks), then walked strictly: every key is known, every value has the
 * type the upstream Python loader (yaml.safe_load + dataclasses) would give
 * it, and every error names its line. Scalars are typed the way PyYAML's
 * YAML 1.1 resolver would type them where it matters: a plain (unquoted)
 * null/~ or empty value is null, plain true/false/yes/no/on/off are
 * booleans and render as Python prints them ("True"/"False") in case lines
 * and config values, and integers must be plain decimal.
 */
#include "kb_task.h"

#include <dirent.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>

#include <yaml.h>

#include "kb_cases.h"
#include "kb_util.h"

#define KB_TASK_MAX_YAML (1u << 20)
#define KB_TIMEOUT_MAX 86400u
#define KB_DEFAULT_TIMEOUT 180u
#define KB_SUBMISSION "@SUBMISSION@"

/* ---------------------------------------------------------------- errors */

static void seterr(char *errstr, size_t size, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static void seterr(char *errstr, size_t size, const char *fmt, ...)
{
	va_list ap;

	if (!errstr || size == 0)
		return;
	va_start(ap, fmt);
	vsnprintf(errstr, size, fmt, ap);
	va_end(ap);
}

/* Prepends "prefix: " to an error message already in errstr. */
static void prefix_err(char *errstr, size_t size, const char *prefix)
{
	char tmp[512];

	if (!errstr || size == 0)
		return;
	snprintf(tmp, sizeof(tmp), "%s", errstr);
	seterr(errstr, size, "%s: %s", prefix, tmp);
}

struct yctx {
	yaml_document_t *doc;
	char *errstr;
	size_t errstr_size;
};

static int yfail(struct yctx *c, const yaml_node_t *n, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static int yfail(struct yctx *c, const yaml_node_t *n, const char *fmt, ...)
{
	char msg[400];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (n)
		seterr(c->errstr, c->errstr_size, "line %lu: %s",
		       (unsigned long)n->start_mark.line + 1, msg);
	else
		seterr(c->errstr, c->errstr_size, "%s", msg);
	return -EINVAL;
}

static int oom(struct yctx *c)
{
	seterr(c->errstr, c->errstr_size, "out of memory");
	return -ENOMEM;
}

/* ------------------------------------------------------------ yaml nodes */

static yaml_node_t *ynode(struct yctx *c, int id)
{
	return yaml_document_get_node(c->doc, id);
}

static const char *sval(const yaml_node_t *n)
{
	return (const char *)n->data.scalar.value;
}

static int is_plain(const yaml_node_t *n)
{
	return n->type == YAML_SCALAR_NODE &&
	       n->data.scalar.style == YAML_PLAIN_SCALAR_STYLE;
}

static int is_null(const yaml_node_t *n)
{
	static const char *const nulls[] = {"", "~", "null", "Null", "NULL"};

	if (!is_plain(n))
		return 0;
	for (size_t i = 0; i < sizeof(nulls) / sizeof(nulls[0]); i++)
		if (strcmp(sval(n), nulls[i]) == 0)
			return 1;
	return 0;
}

/* Plain YAML 1.1 booleans: -1 if n is not one, else 0/1. */
static int plain_bool(const yaml_node_t *n)
{
	static const char *const t[] = {"true", "True", "TRUE", "yes", "Yes",
					"YES",  "on",   "On",   "ON"};
	static const char *const f[] = {"false", "False", "FALSE", "no", "No",
					"NO",    "off",   "Off",   "OFF"};

	if (!is_plain(n))
		return -1;
	for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		if (strcmp(sval(n), t[i]) == 0)
			return 1;
		if (strcmp(sval(n), f[i]) == 0)
			return 0;
	}
	return -1;
}

static const char *kind(const yaml_node_t *n)
{
	switch (n->type) {
	case YAML_SCALAR_NODE:
		return is_null(n) ? "null" : "a scalar";
	case YAML_SEQUENCE_NODE:
		return "a list";
	case YAML_MAPPING_NODE:
		return "a map";
	default:
		return "empty";
	}
}

/* A non-null scalar without embedded NUL bytes. */
static int want_scalar(struct yctx *c, const yaml_node_t *n, const char *what)
{
	if (n->type != YAML_SCALAR_NODE || is_null(n))
		return yfail(c, n, "%s must be a string, not %s", what,
			     kind(n));
	if (strlen(sval(n)) != n->data.scalar.length)
		return yfail(c, n, "%s contains a NUL byte", what);
	return 0;
}

/* The scalar's text, duplicated. */
static int get_str(struct yctx *c, const yaml_node_t *n, const char *what,
		   char **out)
{
	int rc = want_scalar(c, n, what);

	if (rc < 0)
		return rc;
	*out = strdup(sval(n));
	return *out ? 0 : oom(c);
}

/* The scalar as Python would print the loaded value: booleans become
 * "True"/"False", everything else stays as written. */
static int get_text(struct yctx *c, const yaml_node_t *n, const char *what,
		    char **out)
{
	int rc = want_scalar(c, n, what), b;

	if (rc < 0)
		return rc;
	b = plain_bool(n);
	*out = strdup(b < 0 ? sval(n) : b ? "True" : "False");
	return *out ? 0 : oom(c);
}

/* A plain decimal integer in [lo, hi]. */
static int get_uint(struct yctx *c, const yaml_node_t *n, const char *what,
		    uint64_t lo, uint64_t hi, uint64_t *out)
{
	const char *s;
	uint64_t v = 0;

	if (n->type != YAML_SCALAR_NODE || !is_plain(n) || is_null(n))
		return yfail(c, n, "%s must be an integer, not %s%s", what,
			     kind(n),
			     n->type == YAML_SCALAR_NODE && !is_plain(n) ?
				     " (quoted)" :
				     "");
	s = sval(n);
	if (*s == '+')
		s++;
	if (*s == '-' && s[1] >= '0' && s[1] <= '9')
		return yfail(c, n, "%s must not be negative (%s)", what,
			     sval(n));
	if (!*s)
		return yfail(c, n, "%s must be an integer, not '%s'", what,
			     sval(n));
	for (; *s; s++) {
		unsigned d;
		if (*s < '0' || *s > '9')
			return yfail(c, n, "%s must be a decimal integer, not "
					   "'%s'",
				     what, sval(n));
		d = (unsigned)(*s - '0');
		if (v > (UINT64_MAX - d) / 10)
			return yfail(c, n, "%s is too large (%s)", what,
				     sval(n));
		v = v * 10 + d;
	}
	if (v < lo || v > hi)
		return yfail(c, n, "%s must be between %llu and %llu, not %llu",
			     what, (unsigned long long)lo,
			     (unsigned long long)hi, (unsigned long long)v);
	*out = v;
	return 0;
}

/* A mapping whose keys are distinct non-null scalars. */
static int want_map(struct yctx *c, const yaml_node_t *n, const char *what)
{
	yaml_node_pair_t *p, *q;

	if (n->type != YAML_MAPPING_NODE)
		return yfail(c, n, "%s must be a map, not %s", what, kind(n));
	for (p = n->data.mapping.pairs.start; p < n->data.mapping.pairs.top;
	     p++) {
		yaml_node_t *k = ynode(c, p->key);
		int rc = want_scalar(c, k, "a key");
		if (rc < 0)
			return rc;
		for (q = n->data.mapping.pairs.start; q < p; q++)
			if (strcmp(sval(ynode(c, q->key)), sval(k)) == 0)
				return yfail(c, k, "key '%s' given twice in %s",
					     sval(k), what);
	}
	return 0;
}

static int want_seq(struct yctx *c, const yaml_node_t *n, const char *what)
{
	if (n->type != YAML_SEQUENCE_NODE)
		return yfail(c, n, "%s must be a list, not %s", what, kind(n));
	return 0;
}

#define SEQ_EACH(c, n, it)                                                     \
	for (yaml_node_item_t *it = (n)->data.sequence.items.start;            \
	     it < (n)->data.sequence.items.top; it++)
#define MAP_EACH(c, n, it)                                                     \
	for (yaml_node_pair_t *it = (n)->data.mapping.pairs.start;             \
	     it < (n)->data.mapping.pairs.top; it++)

/* -------------------------------------------------------------- arrays */

static int push_str(char ***v, size_t *n, char *s)
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

/* Takes ownership of key and value (freed on failure). */
static int push_kv(struct kb_kv **v, size_t *n, char *key, char *value)
{
	struct kb_kv *nv = realloc(*v, (*n + 1) * sizeof(*nv));

	if (!nv) {
		free(key);
		free(value);
		return -ENOMEM;
	}
	nv[*n].key = key;
	nv[*n].value = value;
	(*n)++;
	*v = nv;
	return 0;
}

static void free_strs(char **v, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(v[i]);
	free(v);
}

static void free_kvs(struct kb_kv *v, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		free(v[i].key);
		free(v[i].value);
	}
	free(v);
}

/* Names that end up in URLs, Redis keys and Kafka topics. */
static int valid_name(const char *s)
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
static int valid_file_name(const char *s)
{
	return *s && strcmp(s, ".") != 0 && strcmp(s, "..") != 0 &&
	       !strchr(s, '/') && !strchr(s, '\n');
}

/* ------------------------------------------------------------ task.yml */

/* Config keys per language; see kb_task.h. */
static const char *const py_config_keys[] = {"main", NULL};
static const char *const compiled_config_keys[] = {
	"sources", "include_dirs", "defines", "compile_flags",
	"flags",   "libraries",    "loader",  NULL};


static int in_list(const char *const *list, const char *s)
{
	for (; *list; list++)
		if (strcmp(*list, s) == 0)
			return 1;
	return 0;
}

/* Strict unsigned decimal that fits 64 bits. */
static int is_u64(const char *s)
{
	uint64_t v = 0;

	if (!*s)
		return 0;
	for (; *s; s++) {
		unsigned d = (unsigned)(*s - '0');
		if (*s < '0' || *s > '9' || v > (UINT64_MAX - d) / 10)
			return 0;
		v = v * 10 + d;
	}
	return 1;
}

static int parse_files(struct yctx *c, yaml_node_t *n, struct kb_task *t)
{
	int rc = want_seq(c, n, "files");

	if (rc < 0)
		return rc;
	SEQ_EACH(c, n, it)
	{
		yaml_node_t *e = ynode(c, *it);
		yaml_node_t *name = NULL, *source = NULL;
		struct kb_task_file *nf;

		rc = want_map(c, e, "a files entry");
		if (rc < 0)
			return rc;
		MAP_EACH(c, e, p)
		{
			yaml_node_t *k = ynode(c, p->key);
			if (strcmp(sval(k), "name") == 0)
				name = ynode(c, p->value);
			else if (strcmp(sval(k), "source") == 0)
				source = ynode(c, p->value);
			else
				return yfail(c, k,
					     "unknown key '%s' in a files entry "
					     "(want name, source)",
					     sval(k));
		}
		if (!name || !source)
			return yfail(c, e, "a files entry needs name and "
					   "source");
		nf = realloc(t->files, (t->nfiles + 1) * sizeof(*nf));
		if (!nf)
			return oom(c);
		t->files = nf;
		nf = &t->files[t->nfiles++];
		nf->name = nf->source = NULL;
		rc = get_str(c, name, "files name", &nf->name);
		if (rc == 0)
			rc = get_str(c, source, "files source", &nf->source);
		if (rc < 0)
			return rc;
		if (!valid_file_name(nf->name))
			return yfail(c, name,
				     "file name '%s' must be a plain file name",
				     nf->name);
		if (nf->source[0] == '\0' || nf->source[0] == '/')
			return yfail(c, source,
				     "file source '%s' must be a relative path",
				     nf->source);
		for (size_t i = 0; i + 1 < t->nfiles; i++)
			if (strcmp(t->files[i].name, nf->name) == 0)
				return yfail(c, name, "file '%s' listed twice",
					     nf->name);
	}
	return 0;
}

/* A config value: scalar, list (joined by '\n') or map ("K=V" lines). */
static int config_value(struct yctx *c, yaml_node_t *v, const char *key,
			char **out)
{
	struct kb_buf b = {0};
	char what[96];
	int rc = 0;

	snprintf(what, sizeof(what), "config.%s", key);
	*out = NULL;
	if (is_null(v))
		return (*out = strdup("")) ? 0 : oom(c);
	if (v->type == YAML_SCALAR_NODE)
		return get_text(c, v, what, out);
	if (kb_buf_append(&b, "", 0) < 0)
		return oom(c);
	if (v->type == YAML_SEQUENCE_NODE) {
		SEQ_EACH(c, v, it)
		{
			yaml_node_t *e = ynode(c, *it);
			char *s;
			rc = get_text(c, e, what, &s);
			if (rc < 0)
				goto out;
			if (strchr(s, '\n')) {
				free(s);
				rc = yfail(c, e, "%s items must be one line",
					   what);
				goto out;
			}
			if ((b.len && kb_buf_append(&b, "\n", 1) < 0) ||
			    kb_buf_append(&b, s, strlen(s)) < 0) {
				free(s);
				rc = oom(c);
				goto out;
			}
			free(s);
		}
	} else {
		rc = want_map(c, v, what);
		if (rc < 0)
			goto out;
		MAP_EACH(c, v, p)
		{
			yaml_node_t *k = ynode(c, p->key);
			char *s;
			if (sval(k)[0] == '\0' || strchr(sval(k), '=') ||
			    strchr(sval(k), '\n')) {
				rc = yfail(c, k, "bad %s key '%s'", what,
					   sval(k));
				goto out;
			}
			rc = get_text(c, ynode(c, p->value), what, &s);
			if (rc < 0)
				goto out;
			if (strchr(s, '\n')) {
				free(s);
				rc = yfail(c, ynode(c, p->value),
					   "%s values must be one line", what);
				goto out;
			}
			if (kb_buf_printf(&b, "%s%s=%s", b.len ? "\n" : "",
					  sval(k), s) < 0) {
				free(s);
				rc = oom(c);
				goto out;
			}
			free(s);
		}
	}
	*out = b.data;
	return 0;
out:
	kb_buf_free(&b);
	return rc;
}

static int add_config(struct yctx *c, struct kb_task *t, yaml_node_t *k,
		      const char *key, yaml_node_t *v)
{
	char *val, *kd;
	int rc;

	if (kb_task_config(t, key))
		return yfail(c, k, "config key '%s' given twice", key);
	rc = config_value(c, v, key, &val);
	if (rc < 0)
		return rc;
	kd = strdup(key);
	if (!kd) {
		free(val);
		return oom(c);
	}
	return push_kv(&t->config, &t->nconfig, kd, val) < 0 ? oom(c) : 0;
}

static int parse_templates(struct yctx *c, yaml_node_t *n, struct kb_task *t)
{
	int rc = want_map(c, n, "templates");

	if (rc < 0)
		return rc;
	MAP_EACH(c, n, p)
	{
		char *k = NULL, *v = NULL;
		rc = get_str(c, ynode(c, p->key), "a templates key", &k);
		if (rc == 0)
			rc = get_str(c, ynode(c, p->value), "a template", &v);
		if (rc == 0 && (v[0] == '\0' || v[0] == '/'))
			rc = yfail(c, ynode(c, p->value),
				   "template '%s' must be a relative path", v);
		if (rc < 0) {
			free(k);
			free(v);
			return rc;
		}
		if (push_kv(&t->templates, &t->ntemplates, k, v) < 0)
			return oom(c);
	}
	return 0;
}

/* tests/benchmarks: a list of maps, each rendered as a case line. */
static int parse_cases(struct yctx *c, yaml_node_t *n, const char *what,
		       char ***out, size_t *nout)
{
	int rc = want_seq(c, n, what);

	if (rc < 0)
		return rc;
	SEQ_EACH(c, n, it)
	{
		yaml_node_t *e = ynode(c, *it);
		struct kb_buf b = {0};
		struct kb_case kc;
		char err[256];
		size_t i = 0;

		rc = want_map(c, e, "a case");
		if (rc < 0)
			return rc;
		if (e->data.mapping.pairs.top == e->data.mapping.pairs.start)
			return yfail(c, e, "a %s case is empty", what);
		MAP_EACH(c, e, p)
		{
			char *v;
			rc = get_text(c, ynode(c, p->value), "a case value", &v);
			if (rc < 0) {
				kb_buf_free(&b);
				return rc;
			}
			rc = kb_buf_printf(&b, "%s%s: %s", b.len ? "; " : "",
					   sval(ynode(c, p->key)), v);
			free(v);
			if (rc < 0) {
				kb_buf_free(&b);
				return oom(c);
			}
		}
		/* The line must read back as exactly these pairs, so a value
		 * holding ';', blanks at either end or a line break, or a key
		 * outside [A-Za-z0-9_], is caught here and not in the
		 * sandbox. */
		if (kb_case_parse(b.data, &kc, err, sizeof(err)) < 0) {
			kb_buf_free(&b);
			return yfail(c, e, "bad %s case: %s", what, err);
		}
		MAP_EACH(c, e, p)
		{
			yaml_node_t *v = ynode(c, p->value);
			int b1 = plain_bool(v);
			const char *want = b1 < 0 ? sval(v) :
					   b1	   ? "True" :
						     "False";
			const char *key = sval(ynode(c, p->key));
			if (i >= kc.n || strcmp(kc.kv[i].key, key) != 0 ||
			    strcmp(kc.kv[i].value, want) != 0) {
				kb_case_clear(&kc);
				kb_buf_free(&b);
				return yfail(c, v,
					     "case '%s: %s' must not hold ';' "
					     "or blanks at either end",
					     key, sval(v));
			}
			/* The worker combines seeds with the secret; a seed
			 * it cannot read must fail here, not in a ranked
			 * run. */
			if (strcmp(key, "seed") == 0 && !is_u64(want)) {
				kb_case_clear(&kc);
				kb_buf_free(&b);
				return yfail(c, v,
					     "case seed '%s' is not an unsigned "
					     "64-bit integer",
					     want);
			}
			i++;
		}
		if (i != kc.n) {
			kb_case_clear(&kc);
			kb_buf_free(&b);
			return yfail(c, e, "case value must not hold ';'");
		}
		kb_case_clear(&kc);
		if (push_str(out, nout, b.data) < 0)
			return oom(c);
	}
	return 0;
}

static int parse_gpus(struct yctx *c, yaml_node_t *n, char ***out,
		      size_t *nout)
{
	int rc = want_seq(c, n, "gpus");

	if (rc < 0)
		return rc;
	SEQ_EACH(c, n, it)
	{
		yaml_node_t *e = ynode(c, *it);
		char *s;
		rc = get_str(c, e, "a gpu", &s);
		if (rc < 0)
			return rc;
		if (!valid_name(s)) {
			free(s);
			return yfail(c, e, "gpu name must be [A-Za-z0-9_.-]+");
		}
		for (size_t i = 0; i < *nout; i++) {
			if (strcmp((*out)[i], s) == 0) {
				rc = yfail(c, e, "gpu '%s' listed twice", s);
				free(s);
				return rc;
			}
		}
		if (push_str(out, nout, s) < 0)
			return oom(c);
	}
	return 0;
}

static int parse_timeout(struct yctx *c, yaml_node_t *v, const char *what,
			 unsigned *out)
{
	uint64_t x;
	int rc = get_uint(c, v, what, 1, KB_TIMEOUT_MAX, &x);

	if (rc == 0)
		*out = (unsigned)x;
	return rc;
}

/* ---------------------------------------------------------------- root */

/* The nodes the checks after the keys need. */
struct root {
	yaml_node_t *files, *lang, *config, *libraries;
};

/* One top-level key: its parser, given the key's and the value's node. */
struct root_key {
	const char *key;
	int required; /* may not be missing nor null */
	int (*parse)(struct yctx *c, yaml_node_t *k, yaml_node_t *v,
		     struct kb_task *t, struct root *r);
};

static int rk_files(struct yctx *c, yaml_node_t *k, yaml_node_t *v,
		    struct kb_task *t, struct root *r)
{
	(void)k;
	r->files = v;
	return parse_files(c, v, t);
}

static int rk_lang(struct yctx *c, yaml_node_t *k, yaml_node_t *v,
		   struct kb_task *t, struct root *r)
{
	static const char *const langs[] = {"c", "cu", "hip", "py", NULL};
	int rc = get_str(c, v, "lang", &t->lang);

	(void)k;
	r->lang = v;
	if (rc == 0 && !in_list(langs, t->lang))
		rc = yfail(c, v, "lang '%s' is not c, cu, hip or py", t->lang);
	return rc;
}

static int rk_description(struct yctx *c, yaml_node_t *k, yaml_node_t *v,
			  struct kb_task *t, struct root *r)
{
	(void)k;
	(void)r;
	return get_str(c, v, "description", &t->description);
}

static int rk_config(struct yctx *c, yaml_node_t *k, yaml_node_t *v,
		     struct kb_task *t, struct root *r)
{
	(void)k;
	(void)t;
	r->config = v;
	return want_map(c, v, "config");
}

static int rk_libraries(struct yctx *c, yaml_node_t *k, yaml_node_t *v,
			struct kb_task *t, struct root *r)
{
	(void)k;
	(void)t;
	r->libraries = v;
	return want_seq(c, v, "libraries");
}

static int rk_templates(struct yctx *c, yaml_node_t *k, yaml_node_t *v,
			struct kb_task *t, struct root *r)
{
	(void)k;
	(void)r;
	return parse_templates(c, v, t);
}

static int rk_tests(struct yctx *c, yaml_node_t *k, yaml_node_t *v,
		    struct kb_task *t, struct root *r)
{
	(void)k;
	(void)r;
	return parse_cases(c, v, "tests", &t->tests, &t->ntests);
}

static int rk_benchmarks(struct yctx *c, yaml_node_t *k, yaml_node_t *v,
			 struct kb_task *t, struct root *r)
{
	(void)k;
	(void)r;
	return parse_cases(c, v, "benchmarks", &t->benchmarks,
			   &t->nbenchmarks);
}

static int rk_timeout(struct yctx *c, yaml_node_t *k, yaml_node_t *v,
		      struct kb_task *t, struct root *r)
{
	const char *key = sval(k);
	unsigned *out = strcmp(key, "test_timeout") == 0 ? &t->test_timeout
			: strcmp(key, "benchmark_timeout") == 0
				? &t->benchmark_timeout
				: &t->ranked_timeout;

	(void)r;
	return parse_timeout(c, v, key, out);
}

static int rk_ranking_by(struct yctx *c, yaml_node_t *k, yaml_node_t *v,
			 struct kb_task *t, struct root *r)
{
	static const char *const ways[] = {"last", "mean", "geom", NULL};
	int rc = get_str(c, v, "ranking_by", &t->ranking_by);

	(void)k;
	(void)r;
	if (rc == 0 && !in_list(ways, t->ranking_by))
		rc = yfail(c, v, "ranking_by '%s' is not last, mean or geom",
			   t->ranking_by);
	return rc;
}

static int rk_seed(struct yctx *c, yaml_node_t *k, yaml_node_t *v,
		   struct kb_task *t, struct root *r)
{
	int rc = get_uint(c, v, "seed", 0, UINT64_MAX, &t->seed);

	(void)k;
	(void)r;
	t->has_seed = rc == 0;
	return rc;
}

static int rk_multi_gpu(struct yctx *c, yaml_node_t *k, yaml_node_t *v,
			struct kb_task *t, struct root *r)
{
	(void)k;
	(void)r;
	t->multi_gpu = plain_bool(v);
	if (t->multi_gpu >= 0)
		return 0;
	t->multi_gpu = 0;
	return yfail(c, v, "multi_gpu must be true or false");
}

static int rk_gpus(struct yctx *c, yaml_node_t *k, yaml_node_t *v,
		   struct kb_task *t, struct root *r)
{
	(void)k;
	(void)r;
	return parse_gpus(c, v, &t->gpus, &t->ngpus);
}

static int rk_validation(struct yctx *c, yaml_node_t *k, yaml_node_t *v,
			 struct kb_task *t, struct root *r)
{
	(void)v;
	(void)t;
	(void)r;
	return yfail(c, k, "validation (application validation) is not "
			   "supported");
}

/* Every key upstream's task.yml may have. */
static const struct root_key root_keys[] = {
	{"files", 1, rk_files},
	{"lang", 1, rk_lang},
	{"description", 0, rk_description},
	{"config", 1, rk_config},
	{"templates", 0, rk_templates},
	{"tests", 0, rk_tests},
	{"benchmarks", 0, rk_benchmarks},
	{"test_timeout", 0, rk_timeout},
	{"benchmark_timeout", 0, rk_timeout},
	{"ranked_timeout", 0, rk_timeout},
	{"ranking_by", 0, rk_ranking_by},
	{"seed", 0, rk_seed},
	{"multi_gpu", 0, rk_multi_gpu},
	{"gpus", 0, rk_gpus},
	{"libraries", 0, rk_libraries},
	{"validation", 0, rk_validation},
};

static const struct root_key *root_key(const char *key)
{
	for (size_t i = 0; i < sizeof(root_keys) / sizeof(root_keys[0]); i++)
		if (strcmp(root_keys[i].key, key) == 0)
			return &root_keys[i];
	return NULL;
}

/* Files: exactly one submission slot. */
static int check_files(struct yctx *c, const struct kb_task *t,
		       yaml_node_t *files)
{
	size_t nsub = 0;

	for (size_t i = 0; i < t->nfiles; i++)
		nsub += strcmp(t->files[i].source, KB_SUBMISSION) == 0;
	if (nsub == 1)
		return 0;
	return yfail(c, files,
		     "files must have exactly one " KB_SUBMISSION
		     " entry, not %zu",
		     nsub);
}

/* Config: the keys the language knows, and the required one. */
static int take_config(struct yctx *c, struct kb_task *t,
		       const struct root *r)
{
	const int py = strcmp(t->lang, "py") == 0;
	const char *const *allowed = py ? py_config_keys : compiled_config_keys;
	const char *need = py ? "main" : "sources";
	int rc;

	MAP_EACH(c, r->config, p)
	{
		yaml_node_t *k = ynode(c, p->key);

		if (!in_list(allowed, sval(k)))
			return yfail(c, k,
				     "unknown config key '%s' for lang %s",
				     sval(k), t->lang);
		rc = add_config(c, t, k, sval(k), ynode(c, p->value));
		if (rc < 0)
			return rc;
	}
	/* Upstream keeps libraries at the top level; the wire contract
	 * carries it as config "libraries". */
	if (r->libraries &&
	    (rc = add_config(c, t, r->libraries, "libraries", r->libraries)) <
		    0)
		return rc;
	if (!kb_task_config(t, need) || !*kb_task_config(t, need))
		return yfail(c, r->config, "config.%s is missing", need);
	return 0;
}

/* Every case of a multi-GPU task says its world_size. */
static int check_multi_gpu(struct yctx *c, const struct kb_task *t,
			   yaml_node_t *root)
{
	for (size_t i = 0; t->multi_gpu && i < t->ntests + t->nbenchmarks;
	     i++) {
		const char *line = i < t->ntests ? t->tests[i]
						 : t->benchmarks[i - t->ntests];
		struct kb_case kc;
		int has;

		if (kb_case_parse(line, &kc, NULL, 0) < 0)
			return yfail(c, root, "bad case '%s'", line);
		has = kb_case_get(&kc, "world_size") != NULL;
		kb_case_clear(&kc);
		if (!has)
			return yfail(c, root,
				     "multi_gpu case '%s' does not specify "
				     "world_size",
				     line);
	}
	return 0;
}

static int parse_root(struct yctx *c, yaml_node_t *root, struct kb_task *t)
{
	struct root r = {0};
	int rc;

	if (root->type != YAML_MAPPING_NODE)
		return yfail(c, root, "task.yml must be a map, not %s",
			     kind(root));
	rc = want_map(c, root, "task.yml");
	if (rc < 0)
		return rc;
	t->test_timeout = t->benchmark_timeout = t->ranked_timeout =
		KB_DEFAULT_TIMEOUT;

	MAP_EACH(c, root, p)
	{
		yaml_node_t *k = ynode(c, p->key), *v = ynode(c, p->value);
		const struct root_key *rk = root_key(sval(k));

		if (!rk)
			return yfail(c, k, "unknown key '%s'", sval(k));
		/* A plain null is the key's default, as in upstream's
		 * dataclass; required keys are checked after the loop. */
		if (is_null(v)) {
			if (rk->required)
				return yfail(c, v, "%s must not be empty",
					     rk->key);
			continue;
		}
		rc = rk->parse(c, k, v, t, &r);
		if (rc < 0)
			return rc;
	}

	if (!r.lang)
		return yfail(c, root, "lang is missing");
	if (!r.files)
		return yfail(c, root, "files is missing");
	if (!r.config)
		return yfail(c, root, "config is missing");
	if ((rc = check_files(c, t, r.files)) < 0 ||
	    (rc = take_config(c, t, &r)) < 0 ||
	    (rc = check_multi_gpu(c, t, root)) < 0)
		return rc;
	if (!t->description && !(t->description = strdup("")))
		return oom(c);
	if (!t->ranking_by && !(t->ranking_by = strdup("last")))
		return oom(c);
	return 0;
}

static int yaml_problem(struct yctx *c, yaml_parser_t *parser)
{
	const char *ctx = parser->context ? parser->context : "";

	if (parser->error == YAML_MEMORY_ERROR)
		return oom(c);
	seterr(c->errstr, c->errstr_size, "line %lu: %s%s%s",
	       (unsigned long)parser->problem_mark.line + 1,
	       parser->problem ? parser->problem : "YAML error",
	       *ctx ? " " : "", ctx);
	return -EINVAL;
}

/* Loads exactly one YAML document; the caller deletes *doc when 0. */
static int load_one(const char *yaml, size_t len, yaml_document_t *doc,
		    struct yctx *c)
{
	yaml_parser_t parser;
	yaml_document_t extra;
	int rc = 0;

	if (!yaml_parser_initialize(&parser))
		return oom(c);
	yaml_parser_set_input_string(&parser, (const unsigned char *)yaml, len);
	if (!yaml_parser_load(&parser, doc)) {
		rc = yaml_problem(c, &parser);
		yaml_parser_delete(&parser);
		return rc;
	}
	if (!yaml_document_get_root_node(doc)) {
		yaml_document_delete(doc);
		yaml_parser_delete(&parser);
		seterr(c->errstr, c->errstr_size, "the YAML is empty");
		return -EINVAL;
	}
	if (!yaml_parser_load(&parser, &extra)) {
		rc = yaml_problem(c, &parser);
	} else {
		if (yaml_document_get_root_node(&extra)) {
			yaml_node_t *r = yaml_document_get_root_node(&extra);
			seterr(c->errstr, c->errstr_size,
			       "line %lu: a second YAML document",
			       (unsigned long)r->start_mark.line + 1);
			rc = -EINVAL;
		}
		yaml_document_delete(&extra);
	}
	yaml_parser_delete(&parser);
	if (rc < 0)
		yaml_document_delete(doc);
	return rc;
}

int kb_task_parse(const char *yaml, size_t len, struct kb_task *out,
		  char *errstr, size_t errstr_size)
{
	yaml_document_t doc;
	struct yctx c = {&doc, errstr, errstr_size};
	int rc;

	memset(out, 0, sizeof(*out));
	if (!yaml) {
		yaml = "";
		len = 0;
	}
	if (memchr(yaml, '\0', len)) {
		seterr(errstr, errstr_size, "task.yml holds a NUL byte");
		return -EINVAL;
	}
	rc = load_one(yaml, len, &doc, &c);
	if (rc < 0)
		return rc;
	rc = parse_root(&c, yaml_document_get_root_node(&doc), out);
	yaml_document_delete(&doc);
	if (rc < 0)
		kb_task_clear(out);
	return rc;
}

/* ------------------------------------------------------------ task dirs */

static char *path_join(const char *a, const char *b)
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

/* The last path component of dir, ignoring trailing slashes; malloc'd. */
static char *base_name(const char *dir)
{
	size_t n = strlen(dir);
	const char *s;

	while (n > 1 && dir[n - 1] == '/')
		n--;
	s = dir + n;
	while (s > dir && s[-1] != '/')
		s--;
	return strndup(s, (size_t)(dir + n - s));
}

static int is_regular(const char *path)
{
	struct stat st;

	return stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

static int is_dir(const char *path)
{
	struct stat st;

	return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

/* Every file and template the task names must exist in its directory. */
static int check_sources(const struct kb_task *t, const char *dir,
			 char *errstr, size_t errstr_size)
{
	for (size_t i = 0; i < t->nfiles + t->ntemplates; i++) {
		const char *src = i < t->nfiles ?
					  t->files[i].source :
					  t->templates[i - t->nfiles].value;
		char *p;
		int ok;
		if (i < t->nfiles && strcmp(src, KB_SUBMISSION) == 0)
			continue;
		p = path_join(dir, src);
		if (!p) {
			seterr(errstr, errstr_size, "out of memory");
			return -ENOMEM;
		}
		ok = is_regular(p);
		free(p);
		if (!ok) {
			seterr(errstr, errstr_size,
			       "%s/task.yml: %s '%s' is not a file in %s", dir,
			       i < t->nfiles ? "source" : "template", src, dir);
			return -ENOENT;
		}
	}
	return 0;
}

int kb_task_load_dir(const char *dir, const char *name, struct kb_task *out,
		     char *errstr, size_t errstr_size)
{
	char *path, *text = NULL;
	size_t len;
	int rc;

	memset(out, 0, sizeof(*out));
	path = path_join(dir, "task.yml");
	if (!path) {
		seterr(errstr, errstr_size, "out of memory");
		return -ENOMEM;
	}
	rc = kb_read_file(path, KB_TASK_MAX_YAML, &text, &len);
	if (rc < 0) {
		seterr(errstr, errstr_size, "%s: %s", path, strerror(-rc));
		free(path);
		return rc;
	}
	rc = kb_task_parse(text, len, out, errstr, errstr_size);
	free(text);
	if (rc < 0) {
		prefix_err(errstr, errstr_size, path);
		free(path);
		return rc;
	}
	free(path);
	out->dir = strdup(dir);
	out->name = name ? strdup(name) : base_name(dir);
	if (!out->dir || !out->name) {
		kb_task_clear(out);
		seterr(errstr, errstr_size, "out of memory");
		return -ENOMEM;
	}
	if (!valid_name(out->name)) {
		seterr(errstr, errstr_size,
		       "%s: leaderboard name '%s' must be [A-Za-z0-9_.-]+ "
		       "(at most 64, not starting with '.' or '-')",
		       dir, out->name);
		kb_task_clear(out);
		return -EINVAL;
	}
	rc = check_sources(out, dir, errstr, errstr_size);
	if (rc < 0)
		kb_task_clear(out);
	return rc;
}

const char *kb_task_config(const struct kb_task *t, const char *key)
{
	for (size_t i = 0; i < t->nconfig; i++)
		if (strcmp(t->config[i].key, key) == 0)
			return t->config[i].value;
	return NULL;
}

int kb_task_has_gpu(const struct kb_task *t, const char *gpu)
{
	for (size_t i = 0; i < t->ngpus; i++)
		if (strcmp(t->gpus[i], gpu) == 0)
			return 1;
	return 0;
}

void kb_task_clear(struct kb_task *t)
{
	if (!t)
		return;
	free(t->name);
	free(t->dir);
	free(t->lang);
	free(t->description);
	for (size_t i = 0; i < t->nfiles; i++) {
		free(t->files[i].name);
		free(t->files[i].source);
	}
	free(t->files);
	free_kvs(t->config, t->nconfig);
	free_kvs(t->templates, t->ntemplates);
	free_strs(t->tests, t->ntests);
	free_strs(t->benchmarks, t->nbenchmarks);
	free(t->ranking_by);
	free_strs(t->gpus, t->ngpus);
	free(t->deadline);
	memset(t, 0, sizeof(*t));
}

/* ---------------------------------------------------------- problem sets */

struct psbuild {
	struct kb_task *v;
	size_t n, cap;
};

/* Moves *t into the set (t is left zeroed). */
static int ps_push(struct psbuild *b, struct kb_task *t)
{
	if (b->n == b->cap) {
		size_t ncap = b->cap ? b->cap * 2 : 8;
		struct kb_task *nv = realloc(b->v, ncap * sizeof(*nv));
		if (!nv)
			return -ENOMEM;
		b->v = nv;
		b->cap = ncap;
	}
	b->v[b->n++] = *t;
	memset(t, 0, sizeof(*t));
	return 0;
}

static int ps_add_dir(struct psbuild *b, const char *dir, char *errstr,
		      size_t errstr_size)
{
	struct kb_task t;
	int rc = kb_task_load_dir(dir, NULL, &t, errstr, errstr_size);

	if (rc < 0)
		return rc;
	if (ps_push(b, &t) < 0) {
		kb_task_clear(&t);
		seterr(errstr, errstr_size, "out of memory");
		return -ENOMEM;
	}
	return 0;
}

/* ISO 8601: YYYY-MM-DD, optionally followed by [T ]hh:mm[:ss[.f]] and a
 * zone (Z or +hh:mm / +hhmm). */
static int valid_deadline(const char *s)
{
	static const char date[] = "dddd-dd-dd";
	int mon, day;

	for (size_t i = 0; i < sizeof(date) - 1; i++) {
		if (date[i] == 'd' ? !(s[i] >= '0' && s[i] <= '9') :
				     s[i] != date[i])
			return 0;
	}
	mon = (s[5] - '0') * 10 + (s[6] - '0');
	day = (s[8] - '0') * 10 + (s[9] - '0');
	if (mon < 1 || mon > 12 || day < 1 || day > 31)
		return 0;
	s += 10;
	if (!*s)
		return 1;
	if (*s != 'T' && *s != ' ')
		return 0;
	s++;
#define D2(p) ((p)[0] >= '0' && (p)[0] <= '9' && (p)[1] >= '0' && (p)[1] <= '9')
	if (!D2(s) || s[2] != ':' || !D2(s + 3))
		return 0;
	if ((s[0] - '0') * 10 + (s[1] - '0') > 23 || s[3] > '5')
		return 0;
	s += 5;
	if (*s == ':') {
		if (!D2(s + 1) || s[1] > '5')
			return 0;
		s += 3;
		if (*s == '.') {
			s++;
			if (!(*s >= '0' && *s <= '9'))
				return 0;
			while (*s >= '0' && *s <= '9')
				s++;
		}
	}
	if (*s == 'Z')
		return s[1] == '\0';
	if (*s == '+' || *s == '-') {
		s++;
		if (!D2(s))
			return 0;
		s += 2;
		if (*s == ':')
			s++;
		if (!D2(s))
			return 0;
		s += 2;
	}
#undef D2
	return *s == '\0';
}

/* An optional deadline value: "" or null mean none. */
static int get_deadline(struct yctx *c, yaml_node_t *v, char **out)
{
	char *s;
	int rc;

	*out = NULL;
	if (is_null(v))
		return 0;
	rc = get_str(c, v, "deadline", &s);
	if (rc < 0)
		return rc;
	if (!*s) {
		free(s);
		return 0;
	}
	if (!valid_deadline(s)) {
		rc = yfail(c, v,
			   "deadline '%s' is not an ISO 8601 date "
			   "(YYYY-MM-DD[Thh:mm[:ss]][Z|+hh:mm])",
			   s);
		free(s);
		return rc;
	}
	*out = s;
	return 0;
}

static int comp_entry(struct yctx *c, struct psbuild *b, yaml_node_t *e,
		      const char *basedir, const char *default_deadline)
{
	yaml_node_t *dir = NULL, *name = NULL, *deadline = NULL, *gpus = NULL;
	char *dirs = NULL, *names = NULL, *dl = NULL, *path = NULL;
	char **gv = NULL;
	size_t ngv = 0;
	struct kb_task t;
	int rc = want_map(c, e, "a competition entry");

	if (rc < 0)
		return rc;
	MAP_EACH(c, e, p)
	{
		yaml_node_t *k = ynode(c, p->key);
		if (strcmp(sval(k), "directory") == 0)
			dir = ynode(c, p->value);
		else if (strcmp(sval(k), "name") == 0)
			name = ynode(c, p->value);
		else if (strcmp(sval(k), "deadline") == 0)
			deadline = ynode(c, p->value);
		else if (strcmp(sval(k), "gpus") == 0)
			gpus = ynode(c, p->value);
		else
			return yfail(c, k,
				     "unknown key '%s' in a competition entry "
				     "(want directory, name, deadline, gpus)",
				     sval(k));
	}
	if (!dir)
		return yfail(c, e, "a competition entry needs a directory");
	rc = get_str(c, dir, "directory", &dirs);
	if (rc == 0 && name && !is_null(name)) {
		rc = get_str(c, name, "name", &names);
		if (rc == 0 && !valid_name(names))
			rc = yfail(c, name,
				   "leaderboard name '%s' must be "
				   "[A-Za-z0-9_.-]+ (at most 64, not starting "
				   "with '.' or '-')",
				   names);
	}
	if (rc == 0 && deadline)
		rc = get_deadline(c, deadline, &dl);
	if (rc == 0 && !dl && default_deadline &&
	    !(dl = strdup(default_deadline)))
		rc = oom(c);
	if (rc == 0 && gpus && !is_null(gpus))
		rc = parse_gpus(c, gpus, &gv, &ngv);
	if (rc < 0)
		goto out;
	path = dirs[0] == '/' ? strdup(dirs) : path_join(basedir, dirs);
	if (!path) {
		rc = oom(c);
		goto out;
	}
	rc = kb_task_load_dir(path, names, &t, c->errstr, c->errstr_size);
	if (rc < 0) {
		char pre[64];
		snprintf(pre, sizeof(pre), "line %lu",
			 (unsigned long)e->start_mark.line + 1);
		prefix_err(c->errstr, c->errstr_size, pre);
		goto out;
	}
	t.deadline = dl;
	dl = NULL;
	if (gv) {
		free_strs(t.gpus, t.ngpus);
		t.gpus = gv;
		t.ngpus = ngv;
		gv = NULL;
		ngv = 0;
	}
	if (ps_push(b, &t) < 0) {
		kb_task_clear(&t);
		rc = oom(c);
	}
out:
	free(dirs);
	free(names);
	free(dl);
	free(path);
	free_strs(gv, ngv);
	return rc;
}

static int ps_add_competition(struct psbuild *b, const char *file,
			      char *errstr, size_t errstr_size)
{
	yaml_document_t doc;
	struct yctx c = {&doc, errstr, errstr_size};
	yaml_node_t *root, *list = NULL;
	char *text = NULL, *basedir = NULL, *deadline = NULL;
	size_t len;
	int rc;

	rc = kb_read_file(file, KB_TASK_MAX_YAML, &text, &len);
	if (rc < 0) {
		seterr(errstr, errstr_size, "%s: %s", file, strerror(-rc));
		return rc;
	}
	if (memchr(text, '\0', len)) {
		free(text);
		seterr(errstr, errstr_size, "%s: holds a NUL byte", file);
		return -EINVAL;
	}
	rc = load_one(text, len, &doc, &c);
	free(text);
	if (rc < 0) {
		prefix_err(errstr, errstr_size, file);
		return rc;
	}
	root = yaml_document_get_root_node(&doc);
	if (root->type == YAML_SEQUENCE_NODE) {
		list = root;
	} else if (root->type == YAML_MAPPING_NODE) {
		/* Upstream's form: name, deadline, description, problems. */
		rc = want_map(&c, root, "a competition");
		MAP_EACH(&c, root, p)
		{
			yaml_node_t *k = ynode(&c, p->key);
			yaml_node_t *v = ynode(&c, p->value);
			if (rc < 0)
				break;
			if (strcmp(sval(k), "problems") == 0)
				list = v;
			else if (strcmp(sval(k), "deadline") == 0)
				rc = get_deadline(&c, v, &deadline);
			else if (strcmp(sval(k), "name") == 0 ||
				 strcmp(sval(k), "description") == 0)
				rc = is_null(v) ? 0 :
						  want_scalar(&c, v, sval(k));
			else
				rc = yfail(&c, k,
					   "unknown key '%s' in a competition "
					   "(want name, deadline, description, "
					   "problems)",
					   sval(k));
		}
		if (rc == 0 && !list)
			rc = yfail(&c, root, "the competition has no problems "
					     "list");
	} else {
		rc = yfail(&c, root,
			   "a competition must be a list of problems or a map "
			   "with a problems list");
	}
	if (rc == 0)
		rc = want_seq(&c, list, "problems");
	if (rc == 0) {
		char *slash = strrchr(file, '/');
		basedir = slash ? strndup(file, (size_t)(slash - file + 1)) :
				  strdup(".");
		if (!basedir)
			rc = oom(&c);
	}
	if (rc == 0) {
		SEQ_EACH(&c, list, it)
		{
			rc = comp_entry(&c, b, ynode(&c, *it), basedir,
					deadline);
			if (rc < 0)
				break;
		}
	}
	if (rc < 0)
		prefix_err(errstr, errstr_size, file);
	yaml_document_delete(&doc);
	free(basedir);
	free(deadline);
	return rc;
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* A directory without task.yml: its subdirectories that have one. */
static int ps_scan(struct psbuild *b, const char *dir, char *errstr,
		   size_t errstr_size)
{
	DIR *d = opendir(dir);
	struct dirent *de;
	char **names = NULL;
	size_t n = 0, found = 0;
	int rc = 0;

	if (!d) {
		rc = -errno;
		seterr(errstr, errstr_size, "%s: %s", dir, strerror(-rc));
		return rc;
	}
	while ((de = readdir(d)) != NULL) {
		char *s;
		if (de->d_name[0] == '.')
			continue;
		s = strdup(de->d_name);
		if (!s || push_str(&names, &n, s) < 0) {
			rc = -ENOMEM;
			break;
		}
	}
	closedir(d);
	if (rc < 0) {
		free_strs(names, n);
		seterr(errstr, errstr_size, "out of memory");
		return rc;
	}
	/* readdir's order is the file system's; sort so that errors and
	 * loading are the same on every machine. */
	qsort(names, n, sizeof(*names), cmp_str);
	for (size_t i = 0; i < n && rc == 0; i++) {
		char *sub = path_join(dir, names[i]);
		char *yml = sub ? path_join(sub, "task.yml") : NULL;
		if (!yml) {
			rc = -ENOMEM;
			seterr(errstr, errstr_size, "out of memory");
		} else if (is_dir(sub) && is_regular(yml)) {
			rc = ps_add_dir(b, sub, errstr, errstr_size);
			found++;
		}
		free(sub);
		free(yml);
	}
	free_strs(names, n);
	if (rc == 0 && found == 0) {
		seterr(errstr, errstr_size,
		       "%s: no task.yml, and no subdirectory holding one", dir);
		rc = -ENOENT;
	}
	return rc;
}

static int ps_add_entry(struct psbuild *b, const char *entry, char *errstr,
			size_t errstr_size)
{
	struct stat st;
	char *yml;
	int rc, has;

	if (stat(entry, &st) < 0) {
		rc = -errno;
		seterr(errstr, errstr_size, "KB_PROBLEMS entry %s: %s", entry,
		       strerror(-rc));
		return rc;
	}
	if (S_ISREG(st.st_mode))
		return ps_add_competition(b, entry, errstr, errstr_size);
	if (!S_ISDIR(st.st_mode)) {
		seterr(errstr, errstr_size,
		       "KB_PROBLEMS entry %s: not a file or directory", entry);
		return -EINVAL;
	}
	yml = path_join(entry, "task.yml");
	if (!yml) {
		seterr(errstr, errstr_size, "out of memory");
		return -ENOMEM;
	}
	has = is_regular(yml);
	free(yml);
	return has ? ps_add_dir(b, entry, errstr, errstr_size) :
		     ps_scan(b, entry, errstr, errstr_size);
}

static int cmp_task(const void *a, const void *b)
{
	return strcmp(((const struct kb_task *)a)->name,
		      ((const struct kb_task *)b)->name);
}

int kb_problemset_load(const char *spec, struct kb_problemset *out,
		       char *errstr, size_t errstr_size)
{
	struct psbuild b = {0};
	char *copy, *save = NULL, *entry;
	int rc = 0;

	out->tasks = NULL;
	out->n = 0;
	if (!spec) {
		seterr(errstr, errstr_size, "no problem set given");
		return -EINVAL;
	}
	copy = strdup(spec);
	if (!copy) {
		seterr(errstr, errstr_size, "out of memory");
		return -ENOMEM;
	}
	for (entry = strtok_r(copy, ":", &save); entry && rc == 0;
	     entry = strtok_r(NULL, ":", &save))
		rc = ps_add_entry(&b, entry, errstr, errstr_size);
	free(copy);
	if (rc == 0 && b.n == 0) {
		seterr(errstr, errstr_size, "the problem set '%s' is empty",
		       spec);
		rc = -EINVAL;
	}
	if (rc == 0) {
		qsort(b.v, b.n, sizeof(*b.v), cmp_task);
		for (size_t i = 1; i < b.n; i++) {
			if (strcmp(b.v[i - 1].name, b.v[i].name) == 0) {
				seterr(errstr, errstr_size,
				       "duplicate leaderboard name '%s' (%s "
				       "and %s)",
				       b.v[i].name, b.v[i - 1].dir,
				       b.v[i].dir);
				rc = -EINVAL;
				break;
			}
		}
	}
	if (rc < 0) {
		struct kb_problemset ps = {b.v, b.n};
		kb_problemset_clear(&ps);
		return rc;
	}
	out->tasks = b.v;
	out->n = b.n;
	return 0;
}

static int cmp_find(const void *key, const void *elem)
{
	return strcmp(key, ((const struct kb_task *)elem)->name);
}

const struct kb_task *kb_problemset_find(const struct kb_problemset *ps,
					 const char *name)
{
	if (!ps->n || !name)
		return NULL;
	return bsearch(name, ps->tasks, ps->n, sizeof(*ps->tasks), cmp_find);
}

void kb_problemset_clear(struct kb_problemset *ps)
{
	if (!ps)
		return;
	for (size_t i = 0; i < ps->n; i++)
		kb_task_clear(&ps->tasks[i]);
	free(ps->tasks);
	ps->tasks = NULL;
	ps->n = 0;
}
