/* kb_task_yaml: what the task.yml parser (kb_task.c) and the problem-set
 * loader (kb_problemset.c) share: walking libyaml's node tree strictly,
 * with every error naming its line, the string arrays they build, and the
 * paths they read. Not an interface of the services: kb_task.h is.
 */
#ifndef KB_TASK_YAML_H
#define KB_TASK_YAML_H

#include <stddef.h>
#include <stdint.h>

#include <yaml.h>

/* The most YAML one file may hold. */
#define KB__TASK_MAX_YAML (1u << 20)
/* An upstream eval.py, read to decide whether to seal (kb_seal.h). */
#define KB__TASK_MAX_EVAL (1u << 20)
/* What a document may amount to with its aliases expanded (each node
 * counts one, each scalar its bytes besides), and how deep it may nest:
 * aliases share a node in libyaml's tree, but every walk of the tree, and
 * every value built from it, pays for each use. An honest file expands
 * to about its own size. */
#define KB__TASK_MAX_EXPANDED (2u << 20)
#define KB__TASK_MAX_DEPTH 64

/* ---- errors ---------------------------------------------------------- */

/* Prepends "prefix: " to an error message already in errstr. */
void kb__prefix_err(char *errstr, size_t size, const char *prefix);

/* One document being walked, and where its error goes. */
struct kb__yctx {
	yaml_document_t *doc;
	char *errstr;
	size_t errstr_size;
};

/* "line N: <message>" of node n (no line when n is NULL); -EINVAL. */
int kb__yfail(struct kb__yctx *c, const yaml_node_t *n, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/* "out of memory"; -ENOMEM. */
int kb__yoom(struct kb__yctx *c);

/* ---- nodes ----------------------------------------------------------- */

yaml_node_t *kb__ynode(struct kb__yctx *c, int id);
/* A scalar's text ("" for other nodes). */
const char *kb__sval(const yaml_node_t *n);
/* A plain (unquoted) scalar; one that is null (null, ~, empty) as
 * PyYAML's resolver types it; a plain boolean's value (1, 0), or -1. */
int kb__is_plain(const yaml_node_t *n);
int kb__is_null(const yaml_node_t *n);
int kb__plain_bool(const yaml_node_t *n);
/* "a map", "a list", "a string", ... for messages. */
const char *kb__ykind(const yaml_node_t *n);
/* Each returns 0 or the error of kb__yfail/kb__yoom, what naming the
 * value in the message: a scalar; its text (a string: not null, not a
 * plain boolean or number); any scalar as text; a plain decimal integer
 * within [lo, hi]; a map whose keys are strings, each once; a list. */
int kb__want_scalar(struct kb__yctx *c, const yaml_node_t *n, const char *what);
int kb__get_str(struct kb__yctx *c, const yaml_node_t *n, const char *what,
		char **out);
int kb__get_text(struct kb__yctx *c, const yaml_node_t *n, const char *what,
		 char **out);
int kb__get_uint(struct kb__yctx *c, const yaml_node_t *n, const char *what,
		 uint64_t lo, uint64_t hi, uint64_t *out);
int kb__want_map(struct kb__yctx *c, const yaml_node_t *n, const char *what);
int kb__want_seq(struct kb__yctx *c, const yaml_node_t *n, const char *what);

#define KB__SEQ_EACH(c, n, it)                                                 \
	for (yaml_node_item_t *it = (n)->data.sequence.items.start;            \
	     it < (n)->data.sequence.items.top; it++)
#define KB__MAP_EACH(c, n, it)                                                 \
	for (yaml_node_pair_t *it = (n)->data.mapping.pairs.start;             \
	     it < (n)->data.mapping.pairs.top; it++)

/* Loads exactly one YAML document within the budgets above (an alias of
 * its own enclosing node is refused too); the caller deletes *doc when
 * 0. */
int kb__yload(const char *yaml, size_t len, yaml_document_t *doc,
	      struct kb__yctx *c);
/* A task's or a competition entry's gpus: a list of distinct names,
 * appended to *out. */
int kb__parse_gpus(struct kb__yctx *c, yaml_node_t *n, char ***out,
		   size_t *nout);

/* ---- arrays and names -------------------------------------------------- */

/* Appends s (taken); -ENOMEM (not taken). */
int kb__push_str(char ***v, size_t *n, char *s);
void kb__free_strs(char **v, size_t n);
/* Names that end up in URLs, Redis keys and Kafka topics. */
int kb__valid_name(const char *s);
/* A file name the worker can create in its run directory. */
int kb__valid_file_name(const char *s);

/* ---- paths ------------------------------------------------------------- */

/* "a/b" (malloc'd, NULL on OOM); whether path is a regular file. */
char *kb__path_join(const char *a, const char *b);
int kb__is_regular(const char *path);

#endif
