/* kb_taskstore: tasks by content hash (see kb_taskstore.h). */
#include "kb_taskstore.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "kb_keys.h"
#include "kb_util.h"

/* A task is a few files of a problem: well under this. */
#define TASK_MAX (64u << 20)
/* Tasks kept in memory: the boards a worker serves at once, roughly. */
#define MEM_SLOTS 8

void kb_taskstore_ref(const uint8_t *packed, size_t len, char ref[65])
{
	kb_sha256_hex(packed, len, ref);
}

int kb_taskstore_ref_ok(const char *ref)
{
	size_t n = 0;

	if (!ref)
		return 0;
	for (; ref[n]; n++)
		if (!((ref[n] >= '0' && ref[n] <= '9') ||
		      (ref[n] >= 'a' && ref[n] <= 'f')))
			return 0;
	return n == KB_TASKREF_LEN;
}

int kb_taskstore_attach(Kb__Submission *sub, const uint8_t *packed, size_t len,
			char *errstr, size_t errstr_size)
{
	char ref[65];
	Kb__Task *t;
	Kb__TaskFile *code = NULL;

	if (sub->task) {
		kb_seterr(errstr, errstr_size,
			  "the submission has a task already");
		return -EINVAL;
	}
	kb_taskstore_ref(packed, len, ref);
	if (!sub->task_ref || strcmp(ref, sub->task_ref) != 0) {
		kb_seterr(errstr, errstr_size,
			  "stored task %.12s has other content (%.12s)",
			  sub->task_ref ? sub->task_ref : "", ref);
		return -EBADMSG;
	}
	t = kb__task__unpack(NULL, len, packed);
	if (!t) {
		kb_seterr(errstr, errstr_size,
			  "stored task %.12s is not a Task", ref);
		return -EBADMSG;
	}
	for (size_t i = 0; i < t->n_files && t->submission_file[0]; i++)
		if (strcmp(t->files[i]->name, t->submission_file) == 0)
			code = t->files[i];
	if (!code) {
		kb_seterr(errstr, errstr_size,
			  "stored task %.12s has no submission file", ref);
		kb__task__free_unpacked(t, NULL);
		return -EINVAL;
	}
	/* Unpacked with the system allocator, as kb__task__free_unpacked()
	 * frees: the stored (empty) content is replaced by the code. */
	free(code->content.data);
	code->content.data = calloc(1, sub->code.len + 1);
	if (!code->content.data) {
		code->content.len = 0;
		kb__task__free_unpacked(t, NULL);
		kb_seterr(errstr, errstr_size, "out of memory");
		return -ENOMEM;
	}
	memcpy(code->content.data, sub->code.data, sub->code.len);
	code->content.len = sub->code.len;
	sub->task = t;
	return 0;
}

int kb_taskstore_put(redisContext *c, const uint8_t *packed, size_t len,
		     const char *ref, char *errstr, size_t errstr_size)
{
	char key[96];
	redisReply *r;
	int rc = 0;

	snprintf(key, sizeof(key), KB_KEY_TASK, ref);
	r = redisCommand(c, "SET %s %b NX", key, packed, len);
	if (!r || r->type == REDIS_REPLY_ERROR) {
		kb_seterr(errstr, errstr_size, "storing task %.12s: %s", ref,
			  r ? r->str : c->errstr);
		rc = -EIO;
	}
	if (r)
		freeReplyObject(r);
	return rc;
}

struct slot {
	char ref[65];
	uint8_t *data;
	size_t len;
	unsigned long used;
};

struct kb_taskstore {
	char *dir;
	struct slot mem[MEM_SLOTS];
	unsigned long clock;
};

kb_taskstore *kb_taskstore_new(const char *cache_dir)
{
	kb_taskstore *ts = calloc(1, sizeof(*ts));

	if (!ts)
		return NULL;
	if (cache_dir && *cache_dir) {
		ts->dir = strdup(cache_dir);
		if (!ts->dir) {
			free(ts);
			return NULL;
		}
		mkdir(cache_dir, 0700); /* a failure shows at the first write */
	}
	return ts;
}

void kb_taskstore_destroy(kb_taskstore *ts)
{
	if (!ts)
		return;
	for (int i = 0; i < MEM_SLOTS; i++)
		free(ts->mem[i].data);
	free(ts->dir);
	free(ts);
}

static struct slot *mem_find(kb_taskstore *ts, const char *ref)
{
	for (int i = 0; i < MEM_SLOTS; i++)
		if (ts->mem[i].data && strcmp(ts->mem[i].ref, ref) == 0) {
			ts->mem[i].used = ++ts->clock;
			return &ts->mem[i];
		}
	return NULL;
}

/* Keeps a copy (taking data) in the least recently used slot. */
static void mem_keep(kb_taskstore *ts, const char *ref, uint8_t *data,
		     size_t len)
{
	struct slot *s = &ts->mem[0];

	for (int i = 1; i < MEM_SLOTS; i++)
		if (ts->mem[i].used < s->used)
			s = &ts->mem[i];
	free(s->data);
	snprintf(s->ref, sizeof(s->ref), "%s", ref);
	s->data = data;
	s->len = len;
	s->used = ++ts->clock;
}

/* The cached file's bytes if they are the task ref names. */
static uint8_t *disk_get(kb_taskstore *ts, const char *ref, size_t *len)
{
	char path[4200], got[65];
	char *data;

	if (!ts->dir)
		return NULL;
	snprintf(path, sizeof(path), "%s/%s.task", ts->dir, ref);
	if (kb_read_file(path, TASK_MAX, &data, len) < 0)
		return NULL;
	kb_taskstore_ref((uint8_t *)data, *len, got);
	if (strcmp(got, ref) != 0) {
		unlink(path); /* damaged: fetched again */
		free(data);
		return NULL;
	}
	return (uint8_t *)data;
}

/* Writes a copy under a temporary name, then renames it into place, so
 * a reader (another worker sharing the directory) sees all or nothing. */
static void disk_put(kb_taskstore *ts, const char *ref, const uint8_t *data,
		     size_t len)
{
	char path[4200], tmp[4300];

	if (!ts->dir)
		return;
	snprintf(path, sizeof(path), "%s/%s.task", ts->dir, ref);
	snprintf(tmp, sizeof(tmp), "%s.%ld.tmp", path, (long)getpid());
	if (kb_write_file(tmp, data, len, 0600) < 0 || rename(tmp, path) < 0)
		unlink(tmp);
}

/* GET from the store. Returns 0 with *out malloc'd, -ENOENT, -EIO. */
static int store_get(redisContext *c, const char *ref, uint8_t **out,
		     size_t *len, char *errstr, size_t errstr_size)
{
	char key[96];
	redisReply *r;
	int rc;

	if (!c) {
		kb_seterr(errstr, errstr_size,
			  "no connection to the task store");
		return -EIO;
	}
	snprintf(key, sizeof(key), KB_KEY_TASK, ref);
	r = redisCommand(c, "GET %s", key);
	if (!r || r->type == REDIS_REPLY_ERROR) {
		kb_seterr(errstr, errstr_size, "reading task %.12s: %s", ref,
			  r ? r->str : c->errstr);
		rc = -EIO;
	} else if (r->type != REDIS_REPLY_STRING) {
		kb_seterr(errstr, errstr_size,
			  "task %.12s is not in the task store", ref);
		rc = -ENOENT;
	} else {
		*out = malloc(r->len + 1);
		if (*out) {
			memcpy(*out, r->str, r->len);
			*len = r->len;
			rc = 0;
		} else {
			kb_seterr(errstr, errstr_size, "out of memory");
			rc = -ENOMEM;
		}
	}
	if (r)
		freeReplyObject(r);
	return rc;
}

int kb_taskstore_resolve(kb_taskstore *ts, redisContext *c, Kb__Submission *sub,
			 char *errstr, size_t errstr_size)
{
	const char *ref = sub->task_ref;
	struct slot *s;
	uint8_t *data;
	size_t len;
	char got[65];
	int rc;

	if (!kb_taskstore_ref_ok(ref)) {
		kb_seterr(errstr, errstr_size, "malformed task reference");
		return -EBADMSG;
	}
	s = mem_find(ts, ref);
	if (s)
		return kb_taskstore_attach(sub, s->data, s->len, errstr,
					   errstr_size);
	data = disk_get(ts, ref, &len);
	if (!data) {
		rc = store_get(c, ref, &data, &len, errstr, errstr_size);
		if (rc < 0)
			return rc;
		kb_taskstore_ref(data, len, got);
		if (strcmp(got, ref) != 0) {
			kb_seterr(errstr, errstr_size,
				  "task store has other content under %.12s",
				  ref);
			free(data);
			return -EBADMSG;
		}
		disk_put(ts, ref, data, len);
	}
	mem_keep(ts, ref, data, len);
	return kb_taskstore_attach(sub, data, len, errstr, errstr_size);
}
