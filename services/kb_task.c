/* kb_task: task.yml and task directories (see kb_task.h; problem sets
 * are kb_problemset.c, the YAML walking both share kb_task_yaml.c).
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
#include <unistd.h>

#include <yaml.h>

#include "kb_cases.h"
#include "kb_lang.h"
#include "kb_seal.h"
#include "kb_task_yaml.h"
#include "kb_util.h"

#define KB_TIMEOUT_MAX 86400u
#define KB_DEFAULT_TIMEOUT 180u
#define KB_SUBMISSION "@SUBMISSION@"

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

static void free_kvs(struct kb_kv *v, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		free(v[i].key);
		free(v[i].value);
	}
	free(v);
}

/* ------------------------------------------------------------ task.yml */

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

/* A files list; includes: whether {"include": PATH} entries may appear
 * (task.yml's, not a manifest's). */
static int parse_files(struct kb__yctx *c, yaml_node_t *n, struct kb_task *t,
		       int includes)
{
	int rc = kb__want_seq(c, n, "files");

	if (rc < 0)
		return rc;
	KB__SEQ_EACH(c, n, it)
	{
		yaml_node_t *e = kb__ynode(c, *it);
		yaml_node_t *name = NULL, *source = NULL, *inc = NULL;
		struct kb_task_file *nf;

		rc = kb__want_map(c, e, "a files entry");
		if (rc < 0)
			return rc;
		KB__MAP_EACH(c, e, p)
		{
			yaml_node_t *k = kb__ynode(c, p->key);
			if (strcmp(kb__sval(k), "name") == 0)
				name = kb__ynode(c, p->value);
			else if (strcmp(kb__sval(k), "source") == 0)
				source = kb__ynode(c, p->value);
			else if (strcmp(kb__sval(k), "include") == 0 &&
				 includes)
				inc = kb__ynode(c, p->value);
			else
				return kb__yfail(
					c, k,
					"unknown key '%s' in a files entry "
					"(want name, source%s)",
					kb__sval(k),
					includes ? "; or include alone" : "");
		}
		if (inc && (name || source))
			return kb__yfail(c, e,
					 "an include entry has no name or "
					 "source");
		if (!inc && (!name || !source))
			return kb__yfail(c, e,
					 "a files entry needs name and "
					 "source");
		nf = realloc(t->files, (t->nfiles + 1) * sizeof(*nf));
		if (!nf)
			return kb__yoom(c);
		t->files = nf;
		nf = &t->files[t->nfiles++];
		memset(nf, 0, sizeof(*nf));
		if (inc) {
			nf->include = 1;
			rc = kb__get_str(c, inc, "files include", &nf->source);
			if (rc < 0)
				return rc;
			if (nf->source[0] == '\0' || nf->source[0] == '/')
				return kb__yfail(c, inc,
						 "include '%s' must be a "
						 "relative path",
						 nf->source);
			continue;
		}
		rc = kb__get_str(c, name, "files name", &nf->name);
		if (rc == 0)
			rc = kb__get_str(c, source, "files source",
					 &nf->source);
		if (rc < 0)
			return rc;
		if (!kb__valid_file_name(nf->name))
			return kb__yfail(
				c, name,
				"file name '%s' must be a plain file name",
				nf->name);
		if (nf->source[0] == '\0' || nf->source[0] == '/')
			return kb__yfail(
				c, source,
				"file source '%s' must be a relative path",
				nf->source);
		for (size_t i = 0; i + 1 < t->nfiles; i++)
			if (t->files[i].name &&
			    strcmp(t->files[i].name, nf->name) == 0)
				return kb__yfail(c, name,
						 "file '%s' listed twice",
						 nf->name);
	}
	return 0;
}

/* A config value: scalar, list (joined by '\n') or map ("K=V" lines). */
static int config_value(struct kb__yctx *c, yaml_node_t *v, const char *key,
			char **out)
{
	struct kb_buf b = {0};
	char what[96];
	int rc = 0;

	snprintf(what, sizeof(what), "config.%s", key);
	*out = NULL;
	if (kb__is_null(v))
		return (*out = strdup("")) ? 0 : kb__yoom(c);
	if (v->type == YAML_SCALAR_NODE)
		return kb__get_text(c, v, what, out);
	if (kb_buf_append(&b, "", 0) < 0)
		return kb__yoom(c);
	if (v->type == YAML_SEQUENCE_NODE) {
		KB__SEQ_EACH(c, v, it)
		{
			yaml_node_t *e = kb__ynode(c, *it);
			char *s;
			rc = kb__get_text(c, e, what, &s);
			if (rc < 0)
				goto out;
			if (strchr(s, '\n')) {
				free(s);
				rc = kb__yfail(c, e,
					       "%s items must be one line",
					       what);
				goto out;
			}
			if ((b.len && kb_buf_append(&b, "\n", 1) < 0) ||
			    kb_buf_append(&b, s, strlen(s)) < 0) {
				free(s);
				rc = kb__yoom(c);
				goto out;
			}
			free(s);
		}
	} else {
		rc = kb__want_map(c, v, what);
		if (rc < 0)
			goto out;
		KB__MAP_EACH(c, v, p)
		{
			yaml_node_t *k = kb__ynode(c, p->key);
			char *s;
			if (kb__sval(k)[0] == '\0' ||
			    strchr(kb__sval(k), '=') ||
			    strchr(kb__sval(k), '\n')) {
				rc = kb__yfail(c, k, "bad %s key '%s'", what,
					       kb__sval(k));
				goto out;
			}
			rc = kb__get_text(c, kb__ynode(c, p->value), what, &s);
			if (rc < 0)
				goto out;
			if (strchr(s, '\n')) {
				free(s);
				rc = kb__yfail(c, kb__ynode(c, p->value),
					       "%s values must be one line",
					       what);
				goto out;
			}
			if (kb_buf_printf(&b, "%s%s=%s", b.len ? "\n" : "",
					  kb__sval(k), s) < 0) {
				free(s);
				rc = kb__yoom(c);
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

static int add_config(struct kb__yctx *c, struct kb_task *t, yaml_node_t *k,
		      const char *key, yaml_node_t *v)
{
	char *val, *kd;
	int rc;

	if (kb_task_config(t, key))
		return kb__yfail(c, k, "config key '%s' given twice", key);
	rc = config_value(c, v, key, &val);
	if (rc < 0)
		return rc;
	kd = strdup(key);
	if (!kd) {
		free(val);
		return kb__yoom(c);
	}
	return push_kv(&t->config, &t->nconfig, kd, val) < 0 ? kb__yoom(c) : 0;
}

static int parse_templates(struct kb__yctx *c, yaml_node_t *n,
			   struct kb_task *t)
{
	int rc = kb__want_map(c, n, "templates");

	if (rc < 0)
		return rc;
	KB__MAP_EACH(c, n, p)
	{
		char *k = NULL, *v = NULL;
		rc = kb__get_str(c, kb__ynode(c, p->key), "a templates key",
				 &k);
		if (rc == 0)
			rc = kb__get_str(c, kb__ynode(c, p->value),
					 "a template", &v);
		if (rc == 0 && (v[0] == '\0' || v[0] == '/'))
			rc = kb__yfail(c, kb__ynode(c, p->value),
				       "template '%s' must be a relative path",
				       v);
		if (rc < 0) {
			free(k);
			free(v);
			return rc;
		}
		if (push_kv(&t->templates, &t->ntemplates, k, v) < 0)
			return kb__yoom(c);
	}
	return 0;
}

/* A plain scalar that Python's str() of a list prints as written: an
 * integer or a decimal number. */
static int plain_number(const yaml_node_t *n)
{
	const char *s = kb__sval(n);
	int digits = 0;

	if (!kb__is_plain(n))
		return 0;
	if (*s == '+' || *s == '-')
		s++;
	for (; (*s >= '0' && *s <= '9') || *s == '.'; s++)
		digits += *s != '.';
	if (digits && (*s == 'e' || *s == 'E')) {
		s++;
		if (*s == '+' || *s == '-')
			s++;
		if (!(*s >= '0' && *s <= '9'))
			return 0;
		while (*s >= '0' && *s <= '9')
			s++;
	}
	return digits > 0 && *s == '\0';
}

/* A case value as upstream's tests file has it: a scalar as its text
 * (plain booleans as Python's True/False), a list of scalars as Python's
 * str() of it ("[96, 128]": upstream's nvfp4 problems give each group's
 * sizes so, and their eval.py reads them back). Strings in a list are
 * quoted as Python quotes them; one holding a quote, a backslash, ';' or
 * a line break is refused. */
static int case_value(struct kb__yctx *c, yaml_node_t *v, char **out)
{
	struct kb_buf b = {0};

	if (v->type != YAML_SEQUENCE_NODE)
		return kb__get_text(c, v, "a case value", out);
	kb_buf_append(&b, "[", 1);
	KB__SEQ_EACH(c, v, it)
	{
		yaml_node_t *e = kb__ynode(c, *it);
		int b1 = kb__plain_bool(e), rc;
		const char *s;

		if (e->type != YAML_SCALAR_NODE) {
			kb_buf_free(&b);
			return kb__yfail(c, e,
					 "a list in a case may hold "
					 "scalars only, not %s",
					 kb__ykind(e));
		}
		s = kb__sval(e);
		if (b.len > 1)
			kb_buf_append(&b, ", ", 2);
		if (b1 >= 0 || plain_number(e)) {
			rc = kb_buf_printf(&b, "%s",
					   b1 < 0 ? s
					   : b1   ? "True"
						  : "False");
		} else if (strpbrk(s, "'\\;\n\r")) {
			kb_buf_free(&b);
			return kb__yfail(c, e,
					 "a string in a case's list must "
					 "not hold a quote, a backslash, "
					 "';' or a line break");
		} else {
			rc = kb_buf_printf(&b, "'%s'", s);
		}
		if (rc < 0) {
			kb_buf_free(&b);
			return kb__yoom(c);
		}
	}
	if (kb_buf_append(&b, "]", 1) < 0 || !b.data) {
		kb_buf_free(&b);
		return kb__yoom(c);
	}
	*out = b.data;
	return 0;
}

/* tests/benchmarks: a list of maps, each rendered as a case line. */
static int parse_cases(struct kb__yctx *c, yaml_node_t *n, const char *what,
		       char ***out, size_t *nout)
{
	int rc = kb__want_seq(c, n, what);

	if (rc < 0)
		return rc;
	KB__SEQ_EACH(c, n, it)
	{
		yaml_node_t *e = kb__ynode(c, *it);
		struct kb_buf b = {0};
		struct kb_case kc;
		char err[256];
		size_t i = 0;

		rc = kb__want_map(c, e, "a case");
		if (rc < 0)
			return rc;
		if (e->data.mapping.pairs.top == e->data.mapping.pairs.start)
			return kb__yfail(c, e, "a %s case is empty", what);
		KB__MAP_EACH(c, e, p)
		{
			char *v;
			rc = case_value(c, kb__ynode(c, p->value), &v);
			if (rc < 0) {
				kb_buf_free(&b);
				return rc;
			}
			rc = kb_buf_printf(&b, "%s%s: %s", b.len ? "; " : "",
					   kb__sval(kb__ynode(c, p->key)), v);
			free(v);
			if (rc < 0) {
				kb_buf_free(&b);
				return kb__yoom(c);
			}
		}
		/* The line must read back as exactly these pairs, so a value
		 * holding ';', blanks at either end or a line break, or a key
		 * outside [A-Za-z0-9_], is caught here and not in the
		 * sandbox. */
		if (kb_case_parse(b.data, &kc, err, sizeof(err)) < 0) {
			kb_buf_free(&b);
			return kb__yfail(c, e, "bad %s case: %s", what, err);
		}
		KB__MAP_EACH(c, e, p)
		{
			yaml_node_t *v = kb__ynode(c, p->value);
			const char *key = kb__sval(kb__ynode(c, p->key));
			char *want = NULL;
			if (case_value(c, v, &want) < 0 || i >= kc.n ||
			    strcmp(kc.kv[i].key, key) != 0 ||
			    strcmp(kc.kv[i].value, want) != 0) {
				kb_case_clear(&kc);
				kb_buf_free(&b);
				rc = kb__yfail(
					c, v,
					"case '%s: %s' must not hold ';' "
					"or blanks at either end",
					key, want ? want : "");
				free(want);
				return rc;
			}
			/* The worker combines seeds with the secret; a seed
			 * it cannot read must fail here, not in a ranked
			 * run. */
			if (strcmp(key, "seed") == 0 && !is_u64(want)) {
				kb_case_clear(&kc);
				kb_buf_free(&b);
				rc = kb__yfail(
					c, v,
					"case seed '%s' is not an unsigned "
					"64-bit integer",
					want);
				free(want);
				return rc;
			}
			free(want);
			i++;
		}
		if (i != kc.n) {
			kb_case_clear(&kc);
			kb_buf_free(&b);
			return kb__yfail(c, e, "case value must not hold ';'");
		}
		kb_case_clear(&kc);
		if (kb__push_str(out, nout, b.data) < 0)
			return kb__yoom(c);
	}
	return 0;
}

static int parse_timeout(struct kb__yctx *c, yaml_node_t *v, const char *what,
			 unsigned *out)
{
	uint64_t x;
	int rc = kb__get_uint(c, v, what, 1, KB_TIMEOUT_MAX, &x);

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
	int (*parse)(struct kb__yctx *c, yaml_node_t *k, yaml_node_t *v,
		     struct kb_task *t, struct root *r);
};

static int rk_files(struct kb__yctx *c, yaml_node_t *k, yaml_node_t *v,
		    struct kb_task *t, struct root *r)
{
	(void)k;
	r->files = v;
	return parse_files(c, v, t, 1);
}

static int rk_lang(struct kb__yctx *c, yaml_node_t *k, yaml_node_t *v,
		   struct kb_task *t, struct root *r)
{
	char names[64];
	int rc = kb__get_str(c, v, "lang", &t->lang);

	(void)k;
	r->lang = v;
	if (rc == 0 && !kb_lang_find(t->lang))
		rc = kb__yfail(c, v, "lang '%s' is not %s", t->lang,
			       kb_lang_list(names, sizeof(names)));
	return rc;
}

static int rk_description(struct kb__yctx *c, yaml_node_t *k, yaml_node_t *v,
			  struct kb_task *t, struct root *r)
{
	(void)k;
	(void)r;
	return kb__get_str(c, v, "description", &t->description);
}

static int rk_config(struct kb__yctx *c, yaml_node_t *k, yaml_node_t *v,
		     struct kb_task *t, struct root *r)
{
	(void)k;
	(void)t;
	r->config = v;
	return kb__want_map(c, v, "config");
}

static int rk_libraries(struct kb__yctx *c, yaml_node_t *k, yaml_node_t *v,
			struct kb_task *t, struct root *r)
{
	(void)k;
	(void)t;
	r->libraries = v;
	return kb__want_seq(c, v, "libraries");
}

static int rk_templates(struct kb__yctx *c, yaml_node_t *k, yaml_node_t *v,
			struct kb_task *t, struct root *r)
{
	(void)k;
	(void)r;
	return parse_templates(c, v, t);
}

static int rk_tests(struct kb__yctx *c, yaml_node_t *k, yaml_node_t *v,
		    struct kb_task *t, struct root *r)
{
	(void)k;
	(void)r;
	return parse_cases(c, v, "tests", &t->tests, &t->ntests);
}

static int rk_benchmarks(struct kb__yctx *c, yaml_node_t *k, yaml_node_t *v,
			 struct kb_task *t, struct root *r)
{
	(void)k;
	(void)r;
	return parse_cases(c, v, "benchmarks", &t->benchmarks, &t->nbenchmarks);
}

static int rk_timeout(struct kb__yctx *c, yaml_node_t *k, yaml_node_t *v,
		      struct kb_task *t, struct root *r)
{
	const char *key = kb__sval(k);
	unsigned *out = strcmp(key, "test_timeout") == 0 ? &t->test_timeout
			: strcmp(key, "benchmark_timeout") == 0
				? &t->benchmark_timeout
				: &t->ranked_timeout;

	(void)r;
	return parse_timeout(c, v, key, out);
}

static int rk_ranking_by(struct kb__yctx *c, yaml_node_t *k, yaml_node_t *v,
			 struct kb_task *t, struct root *r)
{
	static const char *const ways[] = {"last", "mean", "geom", NULL};
	int rc = kb__get_str(c, v, "ranking_by", &t->ranking_by);

	(void)k;
	(void)r;
	if (rc == 0 && !in_list(ways, t->ranking_by))
		rc = kb__yfail(c, v,
			       "ranking_by '%s' is not last, mean or geom",
			       t->ranking_by);
	return rc;
}

static int rk_seed(struct kb__yctx *c, yaml_node_t *k, yaml_node_t *v,
		   struct kb_task *t, struct root *r)
{
	int rc = kb__get_uint(c, v, "seed", 0, UINT64_MAX, &t->seed);

	(void)k;
	(void)r;
	t->has_seed = rc == 0;
	return rc;
}

static int rk_multi_gpu(struct kb__yctx *c, yaml_node_t *k, yaml_node_t *v,
			struct kb_task *t, struct root *r)
{
	(void)k;
	(void)r;
	t->multi_gpu = kb__plain_bool(v);
	if (t->multi_gpu >= 0)
		return 0;
	t->multi_gpu = 0;
	return kb__yfail(c, v, "multi_gpu must be true or false");
}

static int rk_gpus(struct kb__yctx *c, yaml_node_t *k, yaml_node_t *v,
		   struct kb_task *t, struct root *r)
{
	(void)k;
	(void)r;
	return kb__parse_gpus(c, v, &t->gpus, &t->ngpus);
}

static int rk_validation(struct kb__yctx *c, yaml_node_t *k, yaml_node_t *v,
			 struct kb_task *t, struct root *r)
{
	(void)v;
	(void)t;
	(void)r;
	return kb__yfail(c, k,
			 "validation (application validation) is not "
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
static int check_files(struct kb__yctx *c, const struct kb_task *t,
		       yaml_node_t *files)
{
	size_t nsub = 0;

	for (size_t i = 0; i < t->nfiles; i++)
		nsub += !t->files[i].include &&
			strcmp(t->files[i].source, KB_SUBMISSION) == 0;
	if (nsub == 1)
		return 0;
	return kb__yfail(c, files,
			 "files must have exactly one " KB_SUBMISSION
			 " entry, not %zu",
			 nsub);
}

/* Config: the keys the language knows, and the required one. */
static int take_config(struct kb__yctx *c, struct kb_task *t,
		       const struct root *r)
{
	const struct kb_lang *l = kb_lang_find(t->lang);
	const char *const *allowed = l->config_keys;
	const char *need = l->config_required;
	int rc;

	KB__MAP_EACH(c, r->config, p)
	{
		yaml_node_t *k = kb__ynode(c, p->key);

		if (!in_list(allowed, kb__sval(k)))
			return kb__yfail(c, k,
					 "unknown config key '%s' for lang %s",
					 kb__sval(k), t->lang);
		rc = add_config(c, t, k, kb__sval(k), kb__ynode(c, p->value));
		if (rc < 0)
			return rc;
	}
	/* Upstream keeps libraries at the top level; the wire contract
	 * carries it as config "libraries". */
	if (r->libraries && (rc = add_config(c, t, r->libraries, "libraries",
					     r->libraries)) < 0)
		return rc;
	if (!kb_task_config(t, need) || !*kb_task_config(t, need))
		return kb__yfail(c, r->config, "config.%s is missing", need);
	return 0;
}

/* Every case of a multi-GPU task says its world_size. */
static int check_multi_gpu(struct kb__yctx *c, const struct kb_task *t,
			   yaml_node_t *root)
{
	for (size_t i = 0; t->multi_gpu && i < t->ntests + t->nbenchmarks;
	     i++) {
		const char *line = i < t->ntests ? t->tests[i]
						 : t->benchmarks[i - t->ntests];
		struct kb_case kc;
		int has;

		if (kb_case_parse(line, &kc, NULL, 0) < 0)
			return kb__yfail(c, root, "bad case '%s'", line);
		has = kb_case_get(&kc, "world_size") != NULL;
		kb_case_clear(&kc);
		if (!has)
			return kb__yfail(c, root,
					 "multi_gpu case '%s' does not specify "
					 "world_size",
					 line);
	}
	return 0;
}

static int parse_root(struct kb__yctx *c, yaml_node_t *root, struct kb_task *t)
{
	struct root r = {0};
	int rc;

	if (root->type != YAML_MAPPING_NODE)
		return kb__yfail(c, root, "task.yml must be a map, not %s",
				 kb__ykind(root));
	rc = kb__want_map(c, root, "task.yml");
	if (rc < 0)
		return rc;
	t->test_timeout = t->benchmark_timeout = t->ranked_timeout =
		KB_DEFAULT_TIMEOUT;

	KB__MAP_EACH(c, root, p)
	{
		yaml_node_t *k = kb__ynode(c, p->key),
			    *v = kb__ynode(c, p->value);
		const struct root_key *rk = root_key(kb__sval(k));

		if (!rk)
			return kb__yfail(c, k, "unknown key '%s'", kb__sval(k));
		/* A plain null is the key's default, as in upstream's
		 * dataclass; required keys are checked after the loop. */
		if (kb__is_null(v)) {
			if (rk->required)
				return kb__yfail(c, v, "%s must not be empty",
						 rk->key);
			continue;
		}
		rc = rk->parse(c, k, v, t, &r);
		if (rc < 0)
			return rc;
	}

	if (!r.lang)
		return kb__yfail(c, root, "lang is missing");
	if (!r.files)
		return kb__yfail(c, root, "files is missing");
	if (!r.config)
		return kb__yfail(c, root, "config is missing");
	if ((rc = check_files(c, t, r.files)) < 0 ||
	    (rc = take_config(c, t, &r)) < 0 ||
	    (rc = check_multi_gpu(c, t, root)) < 0)
		return rc;
	if (!t->description && !(t->description = strdup("")))
		return kb__yoom(c);
	if (!t->ranking_by && !(t->ranking_by = strdup("last")))
		return kb__yoom(c);
	return 0;
}

int kb_task_parse(const char *yaml, size_t len, struct kb_task *out,
		  char *errstr, size_t errstr_size)
{
	yaml_document_t doc;
	struct kb__yctx c = {&doc, errstr, errstr_size};
	int rc;

	memset(out, 0, sizeof(*out));
	if (!yaml) {
		yaml = "";
		len = 0;
	}
	if (memchr(yaml, '\0', len)) {
		kb_seterr(errstr, errstr_size, "task.yml holds a NUL byte");
		return -EINVAL;
	}
	rc = kb__yload(yaml, len, &doc, &c);
	if (rc < 0)
		return rc;
	rc = parse_root(&c, yaml_document_get_root_node(&doc), out);
	yaml_document_delete(&doc);
	if (rc < 0)
		kb_task_clear(out);
	return rc;
}

/* ------------------------------------------------------------ task dirs */

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

/* Why a path of an untrusted source was refused, for messages. */
static const char *confine_why(int rc)
{
	switch (rc) {
	case -EXDEV:
		return "leaves the problem source";
	case -ELOOP:
		return "is or passes through a symbolic link";
	case -EINVAL:
		return "is not a regular file";
	case -ENAMETOOLONG:
		return "is too long";
	default:
		return strerror(-rc);
	}
}

/* Opens file rel of t (see kb_task_read); -errno. */
static int open_confined(const struct kb_task *t, const char *rel)
{
	char path[4096];
	int rc = kb_path_beneath(kb_task_rel_dir(t), rel, path, sizeof(path));

	return rc < 0 ? rc : kb_open_beneath(t->root, path, 0);
}

int kb_task_read(const struct kb_task *t, const char *rel, size_t max,
		 char **out, size_t *len, char *errstr, size_t errstr_size)
{
	int rc;

	*out = NULL;
	if (kb_seal_is_harness_file(t, rel)) {
		rc = kb_read_file(rel, max, out, len);
		if (rc < 0)
			kb_seterr(errstr, errstr_size, "%s: cannot read %s: %s",
				  t->name, rel, strerror(-rc));
		return rc < 0 ? rc : 0;
	}
	if (!t->root) {
		char *p = kb__path_join(t->dir, rel);
		if (!p) {
			kb_seterr(errstr, errstr_size, "out of memory");
			return -ENOMEM;
		}
		rc = kb_read_file(p, max, out, len);
		if (rc < 0)
			kb_seterr(errstr, errstr_size, "%s: cannot read %s: %s",
				  t->name, p, strerror(-rc));
		free(p);
		return rc;
	}
	rc = open_confined(t, rel);
	if (rc >= 0)
		rc = kb_read_fd(rc, max, out, len);
	if (rc < 0)
		kb_seterr(errstr, errstr_size, "%s: cannot read '%s': it %s",
			  t->name, rel,
			  rc == -EFBIG ? "is too large" : confine_why(rc));
	return rc < 0 ? rc : 0;
}

const char *kb_task_rel_dir(const struct kb_task *t)
{
	size_t n;

	if (!t->root)
		return NULL;
	n = strlen(t->root);
	return t->dir[n] == '/' ? t->dir + n + 1 : t->dir + n;
}

/* Every file and template the task names must exist in its directory. */
static int check_sources(const struct kb_task *t, const char *dir, char *errstr,
			 size_t errstr_size)
{
	for (size_t i = 0; i < t->nfiles + t->ntemplates; i++) {
		const char *src = i < t->nfiles
					  ? t->files[i].source
					  : t->templates[i - t->nfiles].value;
		char *p;
		int ok;
		if (i < t->nfiles && strcmp(src, KB_SUBMISSION) == 0)
			continue;
		if (kb_seal_is_harness_file(t, src)) {
			if (!kb__is_regular(src)) {
				kb_seterr(errstr, errstr_size,
					  "%s/task.yml: harness source '%s' is "
					  "not a file (KB_HARNESS_DIR)",
					  dir, src);
				return -ENOENT;
			}
			continue;
		}
		if (t->root) {
			int fd = open_confined(t, src);
			if (fd < 0) {
				kb_seterr(errstr, errstr_size,
					  "%s/task.yml: %s '%s' %s", dir,
					  i < t->nfiles ? "source" : "template",
					  src, confine_why(fd));
				return fd;
			}
			close(fd);
			continue;
		}
		p = kb__path_join(dir, src);
		if (!p) {
			kb_seterr(errstr, errstr_size, "out of memory");
			return -ENOMEM;
		}
		ok = kb__is_regular(p);
		free(p);
		if (!ok) {
			kb_seterr(errstr, errstr_size,
				  "%s/task.yml: %s '%s' is not a file in %s",
				  dir, i < t->nfiles ? "source" : "template",
				  src, dir);
			return -ENOENT;
		}
	}
	return 0;
}

/* ------------------------------------------------------------ manifests */

/* A manifest's files (kb_task.h): a map whose one key is files, entries
 * without includes or the submission. 0 or negative with errstr. */
static int parse_manifest(const char *text, size_t len, struct kb_task *m,
			  char *errstr, size_t errstr_size)
{
	yaml_document_t doc;
	struct kb__yctx c = {&doc, errstr, errstr_size};
	yaml_node_t *root, *files = NULL;
	int rc;

	if (memchr(text, '\0', len)) {
		kb_seterr(errstr, errstr_size, "the manifest holds a NUL byte");
		return -EINVAL;
	}
	rc = kb__yload(text, len, &doc, &c);
	if (rc < 0)
		return rc;
	root = yaml_document_get_root_node(&doc);
	if (!root || root->type != YAML_MAPPING_NODE)
		rc = kb__yfail(&c, root, "a manifest must be a map");
	else
		rc = kb__want_map(&c, root, "a manifest");
	if (rc == 0) {
		KB__MAP_EACH(&c, root, p)
		{
			yaml_node_t *k = kb__ynode(&c, p->key);
			if (strcmp(kb__sval(k), "files") != 0) {
				rc = kb__yfail(&c, k,
					       "unknown key '%s' in a manifest "
					       "(want files)",
					       kb__sval(k));
				break;
			}
			files = kb__ynode(&c, p->value);
		}
	}
	if (rc == 0 && !files)
		rc = kb__yfail(&c, root, "a manifest needs files");
	if (rc == 0)
		rc = parse_files(&c, files, m, 0);
	for (size_t i = 0; rc == 0 && i < m->nfiles; i++)
		if (strcmp(m->files[i].source, KB_SUBMISSION) == 0)
			rc = kb__yfail(&c, files,
				       "a manifest lists no " KB_SUBMISSION);
	yaml_document_delete(&doc);
	return rc;
}

/* Puts manifest entry i's files in its place in t->files, their sources
 * prefixed with the manifest's directory. 0 or negative with errstr. */
static int expand_one(struct kb_task *t, size_t i, char *errstr,
		      size_t errstr_size, size_t *added)
{
	const char *src = t->files[i].source, *slash = strrchr(src, '/');
	const size_t dlen = slash ? (size_t)(slash - src + 1) : 0;
	struct kb_task m = {0};
	struct kb_task_file *nf = NULL;
	char *text = NULL, err[256];
	size_t len, n;
	int rc = kb_task_read(t, src, KB__TASK_MAX_YAML, &text, &len, errstr,
			      errstr_size);

	if (rc < 0)
		return rc;
	rc = parse_manifest(text, len, &m, err, sizeof(err));
	free(text);
	if (rc < 0) {
		kb_seterr(errstr, errstr_size, "%s/task.yml: include '%s': %s",
			  t->dir, src, err);
		goto out;
	}
	for (size_t j = 0; j < m.nfiles; j++) {
		size_t sl = strlen(m.files[j].source);
		char *p = malloc(dlen + sl + 1);
		if (!p) {
			rc = -ENOMEM;
			goto oom;
		}
		memcpy(p, src, dlen);
		memcpy(p + dlen, m.files[j].source, sl + 1);
		free(m.files[j].source);
		m.files[j].source = p;
	}
	n = t->nfiles - 1 + m.nfiles;
	if (n && !(nf = malloc(n * sizeof(*nf)))) {
		rc = -ENOMEM;
		goto oom;
	}
	if (n) {
		memcpy(nf, t->files, i * sizeof(*nf));
		memcpy(nf + i, m.files, m.nfiles * sizeof(*nf));
		memcpy(nf + i + m.nfiles, t->files + i + 1,
		       (t->nfiles - i - 1) * sizeof(*nf));
	}
	free(t->files[i].source);
	free(t->files);
	t->files = nf;
	t->nfiles = n;
	*added = m.nfiles;
	free(m.files); /* its strings are t's now */
	m.files = NULL;
	m.nfiles = 0;
	goto out;
oom:
	kb_seterr(errstr, errstr_size, "out of memory");
out:
	kb_task_clear(&m);
	return rc;
}

/* Every include of t expanded; then file names must still be unique. */
static int expand_includes(struct kb_task *t, char *errstr, size_t errstr_size)
{
	size_t i = 0, added;

	while (i < t->nfiles) {
		if (!t->files[i].include) {
			i++;
			continue;
		}
		int rc = expand_one(t, i, errstr, errstr_size, &added);
		if (rc < 0)
			return rc;
		i += added;
	}
	for (i = 0; i < t->nfiles; i++)
		for (size_t j = i + 1; j < t->nfiles; j++)
			if (strcmp(t->files[i].name, t->files[j].name) == 0) {
				kb_seterr(errstr, errstr_size,
					  "%s/task.yml: file '%s' listed "
					  "twice (with its includes)",
					  t->dir, t->files[i].name);
				return -EINVAL;
			}
	return 0;
}

/* Seals an upstream Python task whose eval.py is a known version
 * (kb_seal.h), before its includes are expanded (the harness comes as
 * one). An upstream-shaped task left unsealed keeps the reason. */
static int seal(struct kb_task *t, char *errstr, size_t errstr_size)
{
	const char *off = getenv("KB_SEAL_UPSTREAM");
	const char *hdir = getenv("KB_HARNESS_DIR");
	const struct kb_seal_version *v;
	char reason[256], *eval;
	size_t len;
	long e = kb_seal_eval_index(t);
	int rc;

	if (e < 0)
		return 0;
	/* As kb_config's booleans, which the services check at startup. */
	if (off &&
	    (strcmp(off, "0") == 0 || strcasecmp(off, "false") == 0 ||
	     strcasecmp(off, "no") == 0 || strcasecmp(off, "off") == 0)) {
		snprintf(reason, sizeof(reason),
			 "sealing is off (KB_SEAL_UPSTREAM)");
	} else {
		/* An eval.py that cannot be read is check_sources' to
		 * report, in its words. */
		if (kb_task_read(t, t->files[e].source, KB__TASK_MAX_EVAL,
				 &eval, &len, reason, sizeof(reason)) < 0)
			return 0;
		rc = kb_seal_decide(t, eval, len, &v, reason, sizeof(reason));
		free(eval);
		if (rc == 1)
			return kb_seal_rewrite(
				t, v,
				hdir && *hdir ? hdir : KB_DEFAULT_HARNESS_DIR,
				errstr, errstr_size);
	}
	if (!(t->seal_reason = strdup(reason))) {
		kb_seterr(errstr, errstr_size, "out of memory");
		return -ENOMEM;
	}
	return 0;
}

/* Loads dir/task.yml; with root, dir is root/rel and everything is read
 * confined to root (kb_task_load_confined). */
static int load_dir(const char *root, const char *rel, const char *dir,
		    const char *name, struct kb_task *out, char *errstr,
		    size_t errstr_size)
{
	char *path, *text = NULL;
	size_t len;
	int rc;

	memset(out, 0, sizeof(*out));
	path = kb__path_join(dir, "task.yml");
	if (!path) {
		kb_seterr(errstr, errstr_size, "out of memory");
		return -ENOMEM;
	}
	if (root) {
		char yml[4096];
		rc = kb_path_beneath(rel, "task.yml", yml, sizeof(yml));
		if (rc >= 0)
			rc = kb_open_beneath(root, yml, 0);
		if (rc >= 0)
			rc = kb_read_fd(rc, KB__TASK_MAX_YAML, &text, &len);
	} else {
		rc = kb_read_file(path, KB__TASK_MAX_YAML, &text, &len);
	}
	if (rc < 0) {
		kb_seterr(errstr, errstr_size, "%s: %s", path,
			  root && rc != -ENOENT && rc != -EFBIG
				  ? confine_why(rc)
				  : strerror(-rc));
		free(path);
		return rc;
	}
	rc = kb_task_parse(text, len, out, errstr, errstr_size);
	free(text);
	if (rc < 0) {
		kb__prefix_err(errstr, errstr_size, path);
		free(path);
		return rc;
	}
	free(path);
	out->dir = strdup(dir);
	out->name = name ? strdup(name) : base_name(dir);
	if (root && !(out->root = strdup(root))) {
		kb_task_clear(out);
		kb_seterr(errstr, errstr_size, "out of memory");
		return -ENOMEM;
	}
	if (!out->dir || !out->name) {
		kb_task_clear(out);
		kb_seterr(errstr, errstr_size, "out of memory");
		return -ENOMEM;
	}
	if (!kb__valid_name(out->name)) {
		kb_seterr(errstr, errstr_size,
			  "%s: leaderboard name '%s' must be [A-Za-z0-9_.-]+ "
			  "(at most 64, not starting with '.' or '-')",
			  dir, out->name);
		kb_task_clear(out);
		return -EINVAL;
	}
	rc = seal(out, errstr, errstr_size);
	if (rc == 0)
		rc = expand_includes(out, errstr, errstr_size);
	if (rc == 0)
		rc = check_sources(out, dir, errstr, errstr_size);
	if (rc < 0)
		kb_task_clear(out);
	return rc;
}

int kb_task_load_dir(const char *dir, const char *name, struct kb_task *out,
		     char *errstr, size_t errstr_size)
{
	return load_dir(NULL, NULL, dir, name, out, errstr, errstr_size);
}

int kb_task_load_confined(const char *root, const char *rel, const char *name,
			  struct kb_task *out, char *errstr, size_t errstr_size)
{
	char norm[4096], top[4096], *dir;
	size_t n = strlen(root);
	int rc;

	memset(out, 0, sizeof(*out));
	/* Without trailing slashes, so that dir is "<root>/<rel>" exactly
	 * (kb_task_rel_dir). */
	while (n > 1 && root[n - 1] == '/')
		n--;
	if (n >= sizeof(top)) {
		kb_seterr(errstr, errstr_size, "problem source path too long");
		return -ENAMETOOLONG;
	}
	memcpy(top, root, n);
	top[n] = '\0';
	root = top;
	rc = kb_path_beneath("", rel && *rel ? rel : ".", norm, sizeof(norm));
	if (rc < 0) {
		kb_seterr(errstr, errstr_size, "problem directory '%s' %s",
			  rel ? rel : "", confine_why(rc));
		return rc;
	}
	dir = *norm ? kb__path_join(root, norm) : strdup(root);
	if (!dir) {
		kb_seterr(errstr, errstr_size, "out of memory");
		return -ENOMEM;
	}
	/* A name defaults to the directory's, which is root's for "". */
	rc = load_dir(root, norm, dir, name, out, errstr, errstr_size);
	free(dir);
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
	free(t->root);
	free(t->lang);
	free(t->description);
	for (size_t i = 0; i < t->nfiles; i++) {
		free(t->files[i].name);
		free(t->files[i].source);
	}
	free(t->files);
	free_kvs(t->config, t->nconfig);
	free_kvs(t->templates, t->ntemplates);
	kb__free_strs(t->tests, t->ntests);
	kb__free_strs(t->benchmarks, t->nbenchmarks);
	free(t->ranking_by);
	kb__free_strs(t->gpus, t->ngpus);
	free(t->deadline);
	free(t->harness_dir);
	free(t->upstream_eval);
	free(t->seal_reason);
	memset(t, 0, sizeof(*t));
}
