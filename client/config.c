/* kb_cfg: see config.h.
 *
 * Both the reader and the rewriter walk libyaml's event stream rather than
 * build a document tree: the reader needs two scalars, and the rewriter
 * passes every event it does not change straight to the emitter, which is
 * what keeps foreign keys (and their styles) intact.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <yaml.h>

#define CFG_FILE_MAX (1u << 20)

int kb_cfg_default_path(char *out, size_t out_size, char *errstr,
			size_t errstr_size)
{
	const char *home = getenv("HOME");

	if (!home || !*home) {
		struct passwd *pw = getpwuid(getuid());
		home = pw ? pw->pw_dir : NULL;
	}
	if (!home || !*home) {
		snprintf(errstr, errstr_size,
			 "cannot find the home directory (HOME is not set)");
		return -ENOENT;
	}
	if ((size_t)snprintf(out, out_size, "%s/.popcorn.yaml", home) >=
	    out_size) {
		snprintf(errstr, errstr_size, "home directory path too long");
		return -ENAMETOOLONG;
	}
	return 0;
}

void kb_cfg_clear(struct kb_cfg *c)
{
	if (!c)
		return;
	free(c->cli_id);
	free(c->api_url);
	c->cli_id = NULL;
	c->api_url = NULL;
}

static void parse_error(const yaml_parser_t *p, char *errstr,
			size_t errstr_size)
{
	snprintf(errstr, errstr_size, "not valid YAML: %s at line %lu",
		 p->problem ? p->problem : "syntax error",
		 (unsigned long)p->problem_mark.line + 1);
}

/* Called for each complete node of the root mapping (a key or a value);
 * scalar is NULL for a nested node or an alias. */
struct walk {
	int is_key;
	char *key;
	struct kb_cfg *cfg;
};

static int node(struct walk *w, const char *scalar, size_t len)
{
	if (w->is_key) {
		w->is_key = 0;
		free(w->key);
		w->key = scalar ? strndup(scalar, len) : NULL;
		return scalar && !w->key ? -ENOMEM : 0;
	}
	w->is_key = 1;
	if (!w->key || !scalar)
		return 0;
	char **slot = strcmp(w->key, "cli_id") == 0    ? &w->cfg->cli_id
		      : strcmp(w->key, "api_url") == 0 ? &w->cfg->api_url
						       : NULL;
	if (slot) {
		free(*slot);
		*slot = strndup(scalar, len);
		if (!*slot)
			return -ENOMEM;
	}
	return 0;
}

int kb_cfg_parse(const char *buf, size_t len, struct kb_cfg *out, char *errstr,
		 size_t errstr_size)
{
	yaml_parser_t p;
	yaml_event_t ev;
	struct walk w = {.is_key = 1, .cfg = out};
	int depth = 0, docs = 0, rc = 0, end = 0;

	memset(out, 0, sizeof(*out));
	if (!yaml_parser_initialize(&p)) {
		snprintf(errstr, errstr_size, "out of memory");
		return -ENOMEM;
	}
	yaml_parser_set_input_string(
		&p, (const unsigned char *)(buf ? buf : ""), len);
	while (!end && rc == 0) {
		if (!yaml_parser_parse(&p, &ev)) {
			parse_error(&p, errstr, errstr_size);
			rc = -EINVAL;
			break;
		}
		switch (ev.type) {
		case YAML_STREAM_END_EVENT:
			end = 1;
			break;
		case YAML_DOCUMENT_START_EVENT:
			docs++;
			break;
		case YAML_DOCUMENT_END_EVENT:
			end = 1; /* only the first document counts */
			break;
		case YAML_SCALAR_EVENT:
			if (depth == 0 && ev.data.scalar.length > 0) {
				snprintf(
					errstr, errstr_size,
					"the top level is not a mapping of keys");
				rc = -EINVAL;
			} else if (depth == 1) {
				rc = node(&w,
					  (const char *)ev.data.scalar.value,
					  ev.data.scalar.length);
			}
			break;
		case YAML_ALIAS_EVENT:
			if (depth == 1)
				rc = node(&w, NULL, 0);
			break;
		case YAML_SEQUENCE_START_EVENT:
		case YAML_MAPPING_START_EVENT:
			if (depth == 0 &&
			    ev.type == YAML_SEQUENCE_START_EVENT) {
				snprintf(
					errstr, errstr_size,
					"the top level is a list, not a mapping of keys");
				rc = -EINVAL;
			}
			depth++;
			break;
		case YAML_SEQUENCE_END_EVENT:
		case YAML_MAPPING_END_EVENT:
			depth--;
			if (depth == 1)
				rc = node(&w, NULL, 0);
			break;
		default:
			break;
		}
		yaml_event_delete(&ev);
	}
	(void)docs;
	free(w.key);
	yaml_parser_delete(&p);
	if (rc < 0) {
		if (rc == -ENOMEM)
			snprintf(errstr, errstr_size, "out of memory");
		kb_cfg_clear(out);
	}
	return rc;
}

int kb_cfg_load(const char *path, struct kb_cfg *out, char *errstr,
		size_t errstr_size)
{
	char *buf = NULL;
	size_t len = 0;
	char why[256];
	int rc;

	memset(out, 0, sizeof(*out));
	rc = kb_read_file(path, CFG_FILE_MAX, &buf, &len);
	if (rc == -ENOENT) {
		snprintf(errstr, errstr_size, "%s does not exist", path);
		return rc;
	}
	if (rc < 0) {
		snprintf(errstr, errstr_size, "cannot read %s: %s", path,
			 strerror(-rc));
		return rc;
	}
	rc = kb_cfg_parse(buf, len, out, why, sizeof(why));
	free(buf);
	if (rc < 0)
		snprintf(errstr, errstr_size, "%s: %s", path, why);
	return rc;
}

/* ---- rewriting ---- */

static int write_handler(void *data, unsigned char *buffer, size_t size)
{
	return kb_buf_append(data, buffer, size) == 0;
}

struct rewriter {
	yaml_emitter_t e;
	const char *key, *value;
	int failed;
};

/* Emits ev (consumed either way). */
static void emit(struct rewriter *r, yaml_event_t *ev)
{
	if (r->failed) {
		yaml_event_delete(ev);
		return;
	}
	if (!yaml_emitter_emit(&r->e, ev))
		r->failed = 1;
}

static void emit_scalar(struct rewriter *r, const char *s, int quoted)
{
	yaml_event_t ev;

	if (!yaml_scalar_event_initialize(
		    &ev, NULL, NULL, (yaml_char_t *)s, (int)strlen(s), !quoted,
		    1,
		    quoted ? YAML_DOUBLE_QUOTED_SCALAR_STYLE
			   : YAML_PLAIN_SCALAR_STYLE)) {
		r->failed = 1;
		return;
	}
	emit(r, &ev);
}

static void emit_pair(struct rewriter *r)
{
	emit_scalar(r, r->key, 0);
	emit_scalar(r, r->value, 1);
}

static void emit_mapping(struct rewriter *r)
{
	yaml_event_t ev;

	if (!yaml_mapping_start_event_initialize(&ev, NULL, NULL, 1,
						 YAML_BLOCK_MAPPING_STYLE)) {
		r->failed = 1;
		return;
	}
	emit(r, &ev);
	emit_pair(r);
	if (!yaml_mapping_end_event_initialize(&ev)) {
		r->failed = 1;
		return;
	}
	emit(r, &ev);
}

static void emit_document(struct rewriter *r)
{
	yaml_event_t ev;

	if (!yaml_document_start_event_initialize(&ev, NULL, NULL, NULL, 1)) {
		r->failed = 1;
		return;
	}
	emit(r, &ev);
	emit_mapping(r);
	if (!yaml_document_end_event_initialize(&ev, 1)) {
		r->failed = 1;
		return;
	}
	emit(r, &ev);
}

static int is_key_event(const yaml_event_t *ev, const char *key)
{
	return ev->type == YAML_SCALAR_EVENT &&
	       ev->data.scalar.length == strlen(key) &&
	       memcmp(ev->data.scalar.value, key, ev->data.scalar.length) == 0;
}

int kb_cfg_update(const char *in, size_t len, const char *key,
		  const char *value, struct kb_buf *out, char *errstr,
		  size_t errstr_size)
{
	struct rewriter r = {.key = key, .value = value};
	yaml_parser_t p;
	yaml_event_t ev;
	int depth = 0, is_key = 1, replace = 0, skipping = 0, found = 0;
	int docs = 0, end = 0, rc = 0;

	if (!yaml_parser_initialize(&p)) {
		snprintf(errstr, errstr_size, "out of memory");
		return -ENOMEM;
	}
	if (!yaml_emitter_initialize(&r.e)) {
		yaml_parser_delete(&p);
		snprintf(errstr, errstr_size, "out of memory");
		return -ENOMEM;
	}
	yaml_emitter_set_output(&r.e, write_handler, out);
	yaml_emitter_set_unicode(&r.e, 1);
	yaml_emitter_set_width(&r.e, -1);
	yaml_parser_set_input_string(&p, (const unsigned char *)(in ? in : ""),
				     len);

	while (!end && rc == 0 && !r.failed) {
		if (!yaml_parser_parse(&p, &ev)) {
			parse_error(&p, errstr, errstr_size);
			rc = -EINVAL;
			break;
		}
		/* Only the first document is ours to change; later ones, if
		 * any, pass through untouched (docs > 1). */
		int mine = docs == 1;

		switch (ev.type) {
		case YAML_STREAM_END_EVENT:
			if (docs == 0)
				emit_document(
					&r); /* empty or comment-only input */
			end = 1;
			break;
		case YAML_DOCUMENT_START_EVENT:
			docs++;
			break;
		case YAML_SCALAR_EVENT:
		case YAML_ALIAS_EVENT:
			if (!mine || skipping)
				break;
			if (depth == 0) {
				if (ev.type == YAML_SCALAR_EVENT &&
				    ev.data.scalar.length == 0) {
					/* An empty document: make it a mapping. */
					yaml_event_delete(&ev);
					emit_mapping(&r);
					found = 1;
					continue;
				}
				snprintf(
					errstr, errstr_size,
					"the top level is not a mapping of keys");
				rc = -EINVAL;
			} else if (depth == 1 && is_key) {
				replace = is_key_event(&ev, key);
				is_key = 0;
			} else if (depth == 1) {
				is_key = 1;
				if (replace) {
					yaml_event_delete(&ev);
					emit_scalar(&r, value, 1);
					replace = 0;
					found = 1;
					continue;
				}
			}
			break;
		case YAML_SEQUENCE_START_EVENT:
		case YAML_MAPPING_START_EVENT:
			if (!mine)
				break;
			if (depth == 0 &&
			    ev.type == YAML_SEQUENCE_START_EVENT) {
				snprintf(
					errstr, errstr_size,
					"the top level is a list, not a mapping of keys");
				rc = -EINVAL;
				break;
			}
			if (depth == 1 && !is_key && replace)
				skipping = 1; /* a nested value we replace */
			depth++;
			break;
		case YAML_SEQUENCE_END_EVENT:
		case YAML_MAPPING_END_EVENT:
			if (!mine)
				break;
			if (depth == 1 && !found) {
				emit_pair(&r); /* key absent: add it last */
				found = 1;
			}
			depth--;
			if (depth == 1) {
				is_key = !is_key;
				if (skipping) {
					yaml_event_delete(&ev);
					skipping = 0;
					replace = 0;
					found = 1;
					emit_scalar(&r, value, 1);
					continue;
				}
			}
			break;
		default:
			break;
		}
		if (rc < 0) {
			yaml_event_delete(&ev);
			break;
		}
		if (skipping) {
			yaml_event_delete(&ev);
			continue;
		}
		emit(&r, &ev);
	}
	if (rc == 0 && !r.failed && !yaml_emitter_flush(&r.e))
		r.failed = 1;
	if (rc == 0 && r.failed) {
		snprintf(errstr, errstr_size, "cannot write YAML: %s",
			 r.e.problem ? r.e.problem : "emitter error");
		rc = -EINVAL;
	}
	yaml_emitter_delete(&r.e);
	yaml_parser_delete(&p);
	return rc;
}

static int write_all(int fd, const char *buf, size_t len)
{
	while (len > 0) {
		ssize_t n = write(fd, buf, len);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		buf += n;
		len -= (size_t)n;
	}
	return 0;
}

int kb_cfg_store(const char *path, const char *key, const char *value,
		 char *errstr, size_t errstr_size)
{
	char target[PATH_MAX], tmp[PATH_MAX + 16], why[256];
	struct kb_buf out = {0};
	struct stat st;
	char *old = NULL;
	size_t old_len = 0;
	int fd, rc;

	/* Follow a symlink so that a dotfile manager's link survives. */
	if (lstat(path, &st) == 0 && S_ISLNK(st.st_mode) &&
	    realpath(path, target)) {
		/* target resolved */
	} else if (strlen(path) < sizeof(target)) {
		strcpy(target, path);
	} else {
		snprintf(errstr, errstr_size, "path too long: %s", path);
		return -ENAMETOOLONG;
	}
	rc = kb_read_file(target, CFG_FILE_MAX, &old, &old_len);
	if (rc < 0 && rc != -ENOENT) {
		snprintf(errstr, errstr_size, "cannot read %s: %s", target,
			 strerror(-rc));
		return rc;
	}
	rc = kb_cfg_update(old, old_len, key, value, &out, why, sizeof(why));
	free(old);
	if (rc < 0) {
		snprintf(errstr, errstr_size,
			 "%s: %s (not changed; fix or remove it)", target, why);
		kb_buf_free(&out);
		return rc;
	}
	snprintf(tmp, sizeof(tmp), "%s.XXXXXX", target);
	fd = mkstemp(tmp);
	if (fd < 0) {
		rc = -errno;
		snprintf(errstr, errstr_size,
			 "cannot create a file next to %s: %s", target,
			 strerror(errno));
		kb_buf_free(&out);
		return rc;
	}
	rc = fchmod(fd, 0600) < 0 ? -errno : 0;
	if (rc == 0)
		rc = write_all(fd, out.data ? out.data : "", out.len);
	if (rc == 0 && fsync(fd) < 0)
		rc = -errno;
	if (close(fd) < 0 && rc == 0)
		rc = -errno;
	if (rc == 0 && rename(tmp, target) < 0)
		rc = -errno;
	if (rc < 0) {
		snprintf(errstr, errstr_size, "cannot write %s: %s", target,
			 strerror(-rc));
		unlink(tmp);
	}
	kb_buf_free(&out);
	return rc;
}
