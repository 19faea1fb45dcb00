/* The queue's records: where a Submission's message is, and what the
 * reconciler reads and changes (store.h, "queue"). */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "kb_keys.h"
#include "kb_lease.h"
#include "kb_log.h"
#include "kb_util.h"
#include "store.h"

/* Notes the message's place, only on a record still queued (one a worker
 * reported, or that was deleted, keeps its fields as they are). */
static const char published_lua[] =
	"if redis.call('HGET', KEYS[1], 'status') ~= 'queued' then return 0 end\n"
	"redis.call('HSET', KEYS[1], 'kcluster', ARGV[1], 'kpart', ARGV[2], "
	"'koff', ARGV[3], 'published_ms', ARGV[4])\n"
	"if ARGV[5] ~= '' then redis.call('HSET', KEYS[1], 'profile', ARGV[5]) end\n"
	"return 1\n";

int kb_gw_sub_published(const struct kb_gw *g, uint64_t id, int32_t partition,
			int64_t offset, const char *cluster,
			const Kb__ProfileRequest *profile)
{
	char key[64], ids[24], part[16], off[32], ms[32];
	uint8_t pbuf[2048];
	size_t plen = 0;
	int rc;
	redisReply *r;

	snprintf(ids, sizeof(ids), "%" PRIu64, id);
	snprintf(key, sizeof(key), KB_KEY_SUB, ids);
	snprintf(part, sizeof(part), "%" PRId32, partition);
	snprintf(off, sizeof(off), "%" PRId64, offset);
	snprintf(ms, sizeof(ms), "%" PRId64, kb_now_ms());
	if (profile &&
	    kb__profile_request__get_packed_size(profile) <= sizeof(pbuf))
		plen = kb__profile_request__pack(profile, pbuf);
	r = kb__gw_cmd(g, &rc, "EVAL %s 1 %s %s %s %s %s %b", published_lua,
		       key, cluster, part, off, ms, pbuf, plen);
	if (r)
		freeReplyObject(r);
	return rc;
}

/* Reads one record's queue fields into q. */
static void parse_queued(const redisReply *h, struct kb_gw_queued *q)
{
	const redisReply *const *f = (const redisReply *const *)h->element;
	const char *v[8] = {0};

	for (size_t i = 0; i < 8 && i < h->elements; i++)
		v[i] = f[i]->type == REDIS_REPLY_STRING ? f[i]->str : NULL;
	q->queued = v[0] && strcmp(v[0], "queued") == 0;
	q->published_ms = v[1]   ? strtoll(v[1], NULL, 10)
			  : v[2] ? strtoll(v[2], NULL, 10)
				 : 0;
	q->placed = v[3] && v[4] && v[5];
	snprintf(q->cluster, sizeof(q->cluster), "%s", v[3] ? v[3] : "");
	q->partition = v[4] ? (int32_t)strtol(v[4], NULL, 10) : -1;
	q->offset = v[5] ? strtoll(v[5], NULL, 10) : -1;
	q->republished = v[6] ? strtol(v[6], NULL, 10) : 0;
}

int kb_gw_queued_list(const struct kb_gw *g, const char *gpu, long max,
		      struct kb_gw_queued **out, size_t *n)
{
	char err[256], key[256];
	redisContext *c;
	redisReply *ids;
	int rc;

	*out = NULL;
	*n = 0;
	snprintf(key, sizeof(key), KB_KEY_QUEUED, gpu);
	ids = kb__gw_cmd(g, &rc, "ZRANGE %s 0 %ld", key, max - 1);
	if (!ids)
		return rc;
	if (ids->type != REDIS_REPLY_ARRAY || ids->elements == 0) {
		freeReplyObject(ids);
		return 0;
	}
	c = kb_gw_redis(g, err, sizeof(err));
	*out = calloc(ids->elements, sizeof(**out));
	if (!c || !*out) {
		freeReplyObject(ids);
		free(*out);
		*out = NULL;
		return c ? -ENOMEM : -EIO;
	}
	for (size_t i = 0; i < ids->elements; i++) {
		snprintf(key, sizeof(key), KB_KEY_SUB, ids->element[i]->str);
		redisAppendCommand(c,
				   "HMGET %s status published_ms submitted_ms "
				   "kcluster kpart koff republished",
				   key);
	}
	for (size_t i = 0; i < ids->elements; i++) {
		redisReply *h;

		if ((rc = kb__gw_read_replies(c, &h, 1)) < 0)
			break;
		(*out)[i].id = strtoull(ids->element[i]->str, NULL, 10);
		if (h->type == REDIS_REPLY_ARRAY)
			parse_queued(h, &(*out)[i]);
		freeReplyObject(h);
	}
	if (rc == 0) {
		*n = ids->elements;
		/* Whether a worker holds each: one script call apiece. */
		for (size_t i = 0; i < *n && rc == 0; i++) {
			int a;

			if (!(*out)[i].queued)
				continue;
			a = kb_lease_active(c, (*out)[i].id, err, sizeof(err));
			if (a < 0) {
				kb_warn("reconcile: %s", err);
				kb_gw_redis_drop();
				rc = -EIO;
			}
			(*out)[i].lease_active = a > 0;
		}
	}
	freeReplyObject(ids);
	if (rc < 0) {
		free(*out);
		*out = NULL;
		*n = 0;
	}
	return rc;
}

int kb_gw_queued_forget(const struct kb_gw *g, const char *gpu, uint64_t id)
{
	char key[256];
	int rc;
	redisReply *r;

	snprintf(key, sizeof(key), KB_KEY_QUEUED, gpu);
	r = kb__gw_cmd(g, &rc, "ZREM %s %" PRIu64, key, id);
	if (r)
		freeReplyObject(r);
	return rc;
}

/* Counts a re-publish of a record still queued at the place the caller
 * saw (so two reconcilers, or a worker's report in between, make it a
 * no-op): returns the new count, or 0. */
static const char republish_lua[] =
	"local f = redis.call('HMGET', KEYS[1], 'status', 'koff')\n"
	"if f[1] ~= 'queued' or (f[2] or '') ~= ARGV[1] then return 0 end\n"
	"return redis.call('HINCRBY', KEYS[1], 'republished', 1)\n";

int kb_gw_sub_republish_begin(const struct kb_gw *g,
			      const struct kb_gw_queued *q, long *count)
{
	char key[64], ids[24], off[32];
	int rc;
	redisReply *r;

	snprintf(ids, sizeof(ids), "%" PRIu64, q->id);
	snprintf(key, sizeof(key), KB_KEY_SUB, ids);
	if (q->placed)
		snprintf(off, sizeof(off), "%" PRId64, q->offset);
	else
		off[0] = '\0';
	r = kb__gw_cmd(g, &rc, "EVAL %s 1 %s %s", republish_lua, key, off);
	*count = 0;
	if (!r)
		return rc;
	if (r->type == REDIS_REPLY_INTEGER)
		*count = (long)r->integer;
	freeReplyObject(r);
	return 0;
}

int kb_gw_reconcile_lock(const struct kb_gw *g, const char *owner, long ttl_ms)
{
	int rc;
	redisReply *r = kb__gw_cmd(g, &rc, "SET %s %s NX PX %ld",
				   KB_KEY_RECONCILE, owner, ttl_ms);

	if (!r)
		return rc;
	rc = r->type == REDIS_REPLY_STATUS ? 1 : 0;
	freeReplyObject(r);
	return rc;
}
