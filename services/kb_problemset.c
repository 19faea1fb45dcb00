/* kb_problemset: problem sets (see kb_task.h): a list of task
 * directories and competition files, loaded into one sorted table. */
#include "kb_task.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <yaml.h>

#include "kb_task_yaml.h"
#include "kb_time.h"
#include "kb_util.h"

static int is_dir(const char *path)
{
	struct stat st;

	return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
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
		kb_seterr(errstr, errstr_size, "out of memory");
		return -ENOMEM;
	}
	return 0;
}

/* An optional deadline value: "" or null mean none. */
static int get_deadline(struct kb__yctx *c, yaml_node_t *v, char **out)
{
	char *s;
	int rc;

	*out = NULL;
	if (kb__is_null(v))
		return 0;
	rc = kb__get_str(c, v, "deadline", &s);
	if (rc < 0)
		return rc;
	if (!*s) {
		free(s);
		return 0;
	}
	int64_t ms;
	if (kb_time_parse_iso8601(s, &ms) < 0) {
		rc = kb__yfail(c, v,
			       "deadline '%s' is not an ISO 8601 date "
			       "(YYYY-MM-DD[Thh:mm[:ss]][Z|+hh:mm])",
			       s);
		free(s);
		return rc;
	}
	*out = s;
	return 0;
}

/* One entry of a competition. basedir is the set file's directory: a
 * path, or with root (an untrusted source) one relative to root. */
static int comp_entry(struct kb__yctx *c, struct psbuild *b, yaml_node_t *e,
		      const char *root, const char *basedir,
		      const char *default_deadline)
{
	yaml_node_t *dir = NULL, *name = NULL, *deadline = NULL, *gpus = NULL;
	char *dirs = NULL, *names = NULL, *dl = NULL, *path = NULL;
	char **gv = NULL;
	size_t ngv = 0;
	struct kb_task t;
	int rc = kb__want_map(c, e, "a competition entry");

	if (rc < 0)
		return rc;
	KB__MAP_EACH(c, e, p)
	{
		yaml_node_t *k = kb__ynode(c, p->key);
		if (strcmp(kb__sval(k), "directory") == 0)
			dir = kb__ynode(c, p->value);
		else if (strcmp(kb__sval(k), "name") == 0)
			name = kb__ynode(c, p->value);
		else if (strcmp(kb__sval(k), "deadline") == 0)
			deadline = kb__ynode(c, p->value);
		else if (strcmp(kb__sval(k), "gpus") == 0)
			gpus = kb__ynode(c, p->value);
		else
			return kb__yfail(
				c, k,
				"unknown key '%s' in a competition entry "
				"(want directory, name, deadline, gpus)",
				kb__sval(k));
	}
	if (!dir)
		return kb__yfail(c, e, "a competition entry needs a directory");
	rc = kb__get_str(c, dir, "directory", &dirs);
	if (rc == 0 && name && !kb__is_null(name)) {
		rc = kb__get_str(c, name, "name", &names);
		if (rc == 0 && !kb__valid_name(names))
			rc = kb__yfail(
				c, name,
				"leaderboard name '%s' must be "
				"[A-Za-z0-9_.-]+ (at most 64, not starting "
				"with '.' or '-')",
				names);
	}
	if (rc == 0 && deadline)
		rc = get_deadline(c, deadline, &dl);
	if (rc == 0 && !dl && default_deadline &&
	    !(dl = strdup(default_deadline)))
		rc = kb__yoom(c);
	if (rc == 0 && gpus && !kb__is_null(gpus))
		rc = kb__parse_gpus(c, gpus, &gv, &ngv);
	if (rc < 0)
		goto out;
	if (root) {
		char norm[4096];
		int prc = kb_path_beneath(basedir, dirs, norm, sizeof(norm));
		if (prc < 0) {
			rc = kb__yfail(c, dir, "directory '%s' %s", dirs,
				       prc == -ENAMETOOLONG
					       ? "is too long"
					       : "leaves the problem source "
						 "(it must be a relative path "
						 "inside it)");
			goto out;
		}
		rc = kb_task_load_confined(root, norm, names, &t, c->errstr,
					   c->errstr_size);
	} else {
		path = dirs[0] == '/' ? strdup(dirs)
				      : kb__path_join(basedir, dirs);
		if (!path) {
			rc = kb__yoom(c);
			goto out;
		}
		rc = kb_task_load_dir(path, names, &t, c->errstr,
				      c->errstr_size);
	}
	if (rc < 0) {
		char pre[64];
		snprintf(pre, sizeof(pre), "line %lu",
			 (unsigned long)e->start_mark.line + 1);
		kb__prefix_err(c->errstr, c->errstr_size, pre);
		goto out;
	}
	t.deadline = dl;
	dl = NULL;
	if (gv) {
		kb__free_strs(t.gpus, t.ngpus);
		t.gpus = gv;
		t.ngpus = ngv;
		gv = NULL;
		ngv = 0;
	}
	if (ps_push(b, &t) < 0) {
		kb_task_clear(&t);
		rc = kb__yoom(c);
	}
out:
	free(dirs);
	free(names);
	free(dl);
	free(path);
	kb__free_strs(gv, ngv);
	return rc;
}

/* A competition file: a path, or with src (an untrusted source's root)
 * one relative to it, read confined to it. */
static int ps_add_competition(struct psbuild *b, const char *src,
			      const char *file, char *errstr,
			      size_t errstr_size)
{
	yaml_document_t doc;
	struct kb__yctx c = {&doc, errstr, errstr_size};
	yaml_node_t *root, *list = NULL;
	char *text = NULL, *basedir = NULL, *deadline = NULL;
	size_t len;
	int rc;

	if (src) {
		rc = kb_open_beneath(src, file, 0);
		if (rc >= 0)
			rc = kb_read_fd(rc, KB__TASK_MAX_YAML, &text, &len);
	} else {
		rc = kb_read_file(file, KB__TASK_MAX_YAML, &text, &len);
	}
	if (rc < 0) {
		kb_seterr(errstr, errstr_size, "%s: %s", file,
			  rc == -ELOOP ? "a symbolic link" : strerror(-rc));
		return rc;
	}
	if (memchr(text, '\0', len)) {
		free(text);
		kb_seterr(errstr, errstr_size, "%s: holds a NUL byte", file);
		return -EINVAL;
	}
	rc = kb__yload(text, len, &doc, &c);
	free(text);
	if (rc < 0) {
		kb__prefix_err(errstr, errstr_size, file);
		return rc;
	}
	root = yaml_document_get_root_node(&doc);
	if (root->type == YAML_SEQUENCE_NODE) {
		list = root;
	} else if (root->type == YAML_MAPPING_NODE) {
		/* Upstream's form: name, deadline, description, problems. */
		rc = kb__want_map(&c, root, "a competition");
		KB__MAP_EACH(&c, root, p)
		{
			yaml_node_t *k = kb__ynode(&c, p->key);
			yaml_node_t *v = kb__ynode(&c, p->value);
			if (rc < 0)
				break;
			if (strcmp(kb__sval(k), "problems") == 0)
				list = v;
			else if (strcmp(kb__sval(k), "deadline") == 0)
				rc = get_deadline(&c, v, &deadline);
			else if (strcmp(kb__sval(k), "name") == 0 ||
				 strcmp(kb__sval(k), "description") == 0)
				rc = kb__is_null(v)
					     ? 0
					     : kb__want_scalar(&c, v,
							       kb__sval(k));
			else
				rc = kb__yfail(
					&c, k,
					"unknown key '%s' in a competition "
					"(want name, deadline, description, "
					"problems)",
					kb__sval(k));
		}
		if (rc == 0 && !list)
			rc = kb__yfail(&c, root,
				       "the competition has no problems "
				       "list");
	} else {
		rc = kb__yfail(
			&c, root,
			"a competition must be a list of problems or a map "
			"with a problems list");
	}
	if (rc == 0)
		rc = kb__want_seq(&c, list, "problems");
	if (rc == 0) {
		char *slash = strrchr(file, '/');
		basedir = slash ? strndup(file, (size_t)(slash - file + 1))
			  : src ? strdup("")
				: strdup(".");
		if (!basedir)
			rc = kb__yoom(&c);
	}
	if (rc == 0) {
		KB__SEQ_EACH(&c, list, it)
		{
			rc = comp_entry(&c, b, kb__ynode(&c, *it), src, basedir,
					deadline);
			if (rc < 0)
				break;
		}
	}
	if (rc < 0)
		kb__prefix_err(errstr, errstr_size, file);
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
		kb_seterr(errstr, errstr_size, "%s: %s", dir, strerror(-rc));
		return rc;
	}
	while ((de = readdir(d)) != NULL) {
		char *s;
		if (de->d_name[0] == '.')
			continue;
		s = strdup(de->d_name);
		if (!s || kb__push_str(&names, &n, s) < 0) {
			rc = -ENOMEM;
			break;
		}
	}
	closedir(d);
	if (rc < 0) {
		kb__free_strs(names, n);
		kb_seterr(errstr, errstr_size, "out of memory");
		return rc;
	}
	/* readdir's order is the file system's; sort so that errors and
	 * loading are the same on every machine. */
	qsort(names, n, sizeof(*names), cmp_str);
	for (size_t i = 0; i < n && rc == 0; i++) {
		char *sub = kb__path_join(dir, names[i]);
		char *yml = sub ? kb__path_join(sub, "task.yml") : NULL;
		if (!yml) {
			rc = -ENOMEM;
			kb_seterr(errstr, errstr_size, "out of memory");
		} else if (is_dir(sub) && kb__is_regular(yml)) {
			rc = ps_add_dir(b, sub, errstr, errstr_size);
			found++;
		}
		free(sub);
		free(yml);
	}
	kb__free_strs(names, n);
	if (rc == 0 && found == 0) {
		kb_seterr(errstr, errstr_size,
			  "%s: no task.yml, and no subdirectory holding one",
			  dir);
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
		kb_seterr(errstr, errstr_size, "KB_PROBLEMS entry %s: %s",
			  entry, strerror(-rc));
		return rc;
	}
	if (S_ISREG(st.st_mode))
		return ps_add_competition(b, NULL, entry, errstr, errstr_size);
	if (!S_ISDIR(st.st_mode)) {
		kb_seterr(errstr, errstr_size,
			  "KB_PROBLEMS entry %s: not a file or directory",
			  entry);
		return -EINVAL;
	}
	yml = kb__path_join(entry, "task.yml");
	if (!yml) {
		kb_seterr(errstr, errstr_size, "out of memory");
		return -ENOMEM;
	}
	has = kb__is_regular(yml);
	free(yml);
	return has ? ps_add_dir(b, entry, errstr, errstr_size)
		   : ps_scan(b, entry, errstr, errstr_size);
}

static int cmp_task(const void *a, const void *b)
{
	return strcmp(((const struct kb_task *)a)->name,
		      ((const struct kb_task *)b)->name);
}

/* Sorts the set and refuses duplicate names; on error frees it. */
static int ps_finish(struct psbuild *b, int rc, struct kb_problemset *out,
		     char *errstr, size_t errstr_size)
{
	if (rc == 0) {
		qsort(b->v, b->n, sizeof(*b->v), cmp_task);
		for (size_t i = 1; i < b->n; i++) {
			if (strcmp(b->v[i - 1].name, b->v[i].name) == 0) {
				kb_seterr(errstr, errstr_size,
					  "duplicate leaderboard name '%s' (%s "
					  "and %s)",
					  b->v[i].name, b->v[i - 1].dir,
					  b->v[i].dir);
				rc = -EINVAL;
				break;
			}
		}
	}
	if (rc < 0) {
		struct kb_problemset ps = {b->v, b->n};
		kb_problemset_clear(&ps);
		return rc;
	}
	out->tasks = b->v;
	out->n = b->n;
	return 0;
}

int kb_problemset_load_confined(const char *root, const char *setrel,
				struct kb_problemset *out, char *errstr,
				size_t errstr_size)
{
	struct psbuild b = {0};
	char norm[4096];
	int rc;

	out->tasks = NULL;
	out->n = 0;
	rc = kb_path_beneath("", setrel, norm, sizeof(norm));
	if (rc < 0) {
		kb_seterr(errstr, errstr_size,
			  "problem set '%s' is not inside the problem source",
			  setrel);
		return rc;
	}
	rc = ps_add_competition(&b, root, norm, errstr, errstr_size);
	return ps_finish(&b, rc, out, errstr, errstr_size);
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
		kb_seterr(errstr, errstr_size, "no problem set given");
		return -EINVAL;
	}
	copy = strdup(spec);
	if (!copy) {
		kb_seterr(errstr, errstr_size, "out of memory");
		return -ENOMEM;
	}
	for (entry = strtok_r(copy, ":", &save); entry && rc == 0;
	     entry = strtok_r(NULL, ":", &save))
		rc = ps_add_entry(&b, entry, errstr, errstr_size);
	free(copy);
	if (rc == 0 && b.n == 0) {
		kb_seterr(errstr, errstr_size, "the problem set '%s' is empty",
			  spec);
		rc = -EINVAL;
	}
	return ps_finish(&b, rc, out, errstr, errstr_size);
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
