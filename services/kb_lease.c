/* kb_lease: the submission lease (see kb_lease.h and lease.lua). */
#include "kb_lease.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "kb_keys.h"
#include "kb_redis.h"
#include "kb_util.h"

extern const char kb_lease_lua[];

/* One script object per process: its SHA is the same for every caller,
 * so threads that load it concurrently write the same bytes. */
static struct kb_redis_script script;

/* Runs lease.lua with op and up to four more arguments. */
static redisReply *run(redisContext *c, uint64_t id, const char *const *args,
		       int nargs, char *errstr, size_t errstr_size)
{
	char key[64], ids[24];
	const char *argv[6];
	size_t argvlen[6];
	redisReply *r;

	if (!c) {
		kb_seterr(errstr, errstr_size, "no connection to Redis");
		return NULL;
	}
	script.src = kb_lease_lua;
	snprintf(ids, sizeof(ids), "%" PRIu64, id);
	snprintf(key, sizeof(key), KB_KEY_LEASE, ids);
	argv[0] = key;
	for (int i = 0; i < nargs; i++)
		argv[1 + i] = args[i];
	for (int i = 0; i <= nargs; i++)
		argvlen[i] = strlen(argv[i]);
	r = kb_redis_eval(c, &script, 1, 1 + nargs, argv, argvlen, errstr,
			  errstr_size);
	if (r && r->type == REDIS_REPLY_ERROR) {
		kb_seterr(errstr, errstr_size, "lease: %s", r->str);
		freeReplyObject(r);
		return NULL;
	}
	return r;
}

/* An integer reply's value, or -EPROTO/-EIO. */
static int int_reply(redisReply *r, char *errstr, size_t errstr_size)
{
	int rc;

	if (!r)
		return -EIO;
	if (r->type == REDIS_REPLY_INTEGER) {
		rc = (int)r->integer;
	} else {
		kb_seterr(errstr, errstr_size, "lease: unexpected reply");
		rc = -EPROTO;
	}
	freeReplyObject(r);
	return rc;
}

int kb_lease_take(redisContext *c, uint64_t id, const char *worker, long ttl_ms,
		  int max_attempts, struct kb_lease_take *out, char *errstr,
		  size_t errstr_size)
{
	static const char *const verdicts[] = {"ok", "busy", "done", "giveup"};
	char ttl[32], max[32];
	const char *args[] = {"take", worker, ttl, max};
	redisReply *r;
	int rc = -EPROTO;

	memset(out, 0, sizeof(*out));
	snprintf(ttl, sizeof(ttl), "%ld", ttl_ms);
	snprintf(max, sizeof(max), "%d", max_attempts);
	r = run(c, id, args, 4, errstr, errstr_size);
	if (!r)
		return -EIO;
	if (r->type == REDIS_REPLY_ARRAY && r->elements == 3 &&
	    r->element[0]->type == REDIS_REPLY_STRING &&
	    r->element[1]->type == REDIS_REPLY_INTEGER &&
	    r->element[2]->type == REDIS_REPLY_STRING) {
		for (size_t i = 0; i < sizeof(verdicts) / sizeof(verdicts[0]);
		     i++)
			if (strcmp(r->element[0]->str, verdicts[i]) == 0) {
				out->verdict = (enum kb_lease_verdict)i;
				rc = 0;
			}
		out->attempts = (int)r->element[1]->integer;
		snprintf(out->owner, sizeof(out->owner), "%s",
			 r->element[2]->str);
	}
	if (rc < 0)
		kb_seterr(errstr, errstr_size,
			  "lease: unexpected reply to take");
	freeReplyObject(r);
	return rc;
}

int kb_lease_renew(redisContext *c, uint64_t id, const char *worker,
		   long ttl_ms, char *errstr, size_t errstr_size)
{
	char ttl[32];
	const char *args[] = {"renew", worker, ttl};

	snprintf(ttl, sizeof(ttl), "%ld", ttl_ms);
	return int_reply(run(c, id, args, 3, errstr, errstr_size), errstr,
			 errstr_size);
}

int kb_lease_finish(redisContext *c, uint64_t id, const char *worker,
		    long keep_s, char *errstr, size_t errstr_size)
{
	char keep[32];
	const char *args[] = {"finish", worker, keep};

	snprintf(keep, sizeof(keep), "%ld", keep_s);
	return int_reply(run(c, id, args, 3, errstr, errstr_size), errstr,
			 errstr_size);
}

int kb_lease_release(redisContext *c, uint64_t id, const char *worker,
		     char *errstr, size_t errstr_size)
{
	const char *args[] = {"release", worker};

	return int_reply(run(c, id, args, 2, errstr, errstr_size), errstr,
			 errstr_size);
}

int kb_lease_active(redisContext *c, uint64_t id, char *errstr,
		    size_t errstr_size)
{
	const char *args[] = {"peek"};

	return int_reply(run(c, id, args, 1, errstr, errstr_size), errstr,
			 errstr_size);
}
