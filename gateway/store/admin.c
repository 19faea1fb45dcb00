/* kb_gw_store, second half: policy and administration (see store.h). */
#include <errno.h>
#include <jansson.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "kb_config.h"
#include "kb_keys.h"
#include "kb_log.h"
#include "kb_mode.h"
#include "kb_util.h"
#include "store.h"

static int simple(const struct kb_gw *g, redisReply *r, int rc)
{
	(void)g;
	if (r)
		freeReplyObject(r);
	return rc;
}

int kb_gw_set_accepting(const struct kb_gw *g, int accepting)
{
	int rc;
	redisReply *r = kb__gw_cmd(g, &rc, "HSET " KB_KEY_ADMIN " accepting %s",
				   accepting ? "1" : "0");
	return simple(g, r, rc);
}

int kb_gw_get_accepting(const struct kb_gw *g, int *accepting)
{
	int rc;
	redisReply *r = kb__gw_cmd(g, &rc, "HGET " KB_KEY_ADMIN " accepting");

	*accepting = 1;
	if (!r)
		return rc;
	/* As submit.lua reads it: only "0" stops. */
	if (r->type == REDIS_REPLY_STRING && strcmp(r->str, "0") == 0)
		*accepting = 0;
	freeReplyObject(r);
	return 0;
}

int kb_gw_set_visibility(const struct kb_gw *g, const char *lb,
			 const char *visibility)
{
	int rc;
	redisReply *r = kb__gw_cmd(
		g, &rc, "HSET " KB_KEY_BOARD " visibility %s", lb, visibility);
	return simple(g, r, rc);
}

int kb_gw_has_access(const struct kb_gw *g, const char *lb, const char *user_id,
		     int *allowed)
{
	int rc;
	redisReply *r = kb__gw_cmd(
		g, &rc, "SISMEMBER " KB_KEY_BOARD_ACCESS " %s", lb, user_id);

	*allowed = 0;
	if (!r)
		return rc;
	*allowed = r->type == REDIS_REPLY_INTEGER && r->integer == 1;
	freeReplyObject(r);
	return 0;
}

int kb_gw_rate_set(const struct kb_gw *g, const char *lb, const char *cat,
		   long max)
{
	int rc;
	redisReply *r =
		max > 0 ? kb__gw_cmd(g, &rc,
				     "HSET " KB_KEY_BOARD_RATES " %s %ld", lb,
				     cat, max)
			: kb__gw_cmd(g, &rc, "HDEL " KB_KEY_BOARD_RATES " %s",
				     lb, cat);
	return simple(g, r, rc);
}

int kb_gw_rate_get(const struct kb_gw *g, const char *lb, long max[2])
{
	int rc;
	redisReply *r = kb__gw_cmd(
		g, &rc, "HMGET " KB_KEY_BOARD_RATES " test leaderboard", lb);

	max[0] = max[1] = 0;
	if (!r)
		return rc;
	for (size_t i = 0;
	     i < 2 && r->type == REDIS_REPLY_ARRAY && i < r->elements; i++)
		if (r->element[i]->type == REDIS_REPLY_STRING)
			max[i] = strtol(r->element[i]->str, NULL, 10);
	freeReplyObject(r);
	return 0;
}

int kb_gw_invites_create(const struct kb_gw *g, const char *const *lbs,
			 size_t nlbs, long count, char (*codes)[33])
{
	char err[256], list[16 * 66] = "", ms[32];
	redisContext *c = kb_gw_redis(g, err, sizeof(err));
	const char **argv;
	size_t used = 0;
	int rc = 0;

	if (!c)
		return -EIO;
	for (size_t i = 0; i < nlbs; i++)
		used += (size_t)snprintf(list + used, sizeof(list) - used,
					 "%s%s", i ? "," : "", lbs[i]);
	snprintf(ms, sizeof(ms), "%" PRId64, kb_now_ms());
	for (long k = 0; k < count; k++)
		kb_random_hex(codes[k], 16);
	/* The codes first (batches of one transaction each), then the
	 * per-board indexes: a code missing from an index is harmless, an
	 * index entry without its code would list a phantom. */
	for (long done = 0; done < count && rc == 0;) {
		long batch = count - done > 14 ? 14 : count - done;
		redisAppendCommand(c, "MULTI");
		for (long k = 0; k < batch; k++)
			redisAppendCommand(c,
					   "HSET " KB_KEY_INVITE
					   " leaderboards %s "
					   "created_ms %s",
					   codes[done + k], list, ms);
		rc = kb__gw_finish_multi(c, (int)batch);
		done += batch;
	}
	argv = calloc((size_t)count + 2, sizeof(*argv));
	if (!argv)
		return -ENOMEM;
	for (size_t i = 0; i < nlbs && rc == 0; i++) {
		char key[128];
		snprintf(key, sizeof(key), KB_KEY_BOARD_INVITES, lbs[i]);
		argv[0] = "SADD";
		argv[1] = key;
		for (long k = 0; k < count; k++)
			argv[2 + k] = codes[k];
		redisReply *r = redisCommandArgv(c, (int)count + 2, argv, NULL);
		if (!r) {
			kb_gw_redis_drop();
			rc = -EIO;
		} else {
			if (r->type == REDIS_REPLY_ERROR)
				rc = -EPROTO;
			freeReplyObject(r);
		}
	}
	free(argv);
	return rc;
}

int kb_gw_invites_list(const struct kb_gw *g, const char *lb,
		       struct kb_gw_invite **out, size_t *n)
{
	char err[256];
	int rc;
	redisReply *m =
		kb__gw_cmd(g, &rc, "SMEMBERS " KB_KEY_BOARD_INVITES, lb);
	redisContext *c;

	*out = NULL;
	*n = 0;
	if (!m)
		return rc;
	if (m->type != REDIS_REPLY_ARRAY || m->elements == 0) {
		freeReplyObject(m);
		return 0;
	}
	c = kb_gw_redis(g, err, sizeof(err));
	*out = calloc(m->elements, sizeof(**out));
	if (!c || !*out) {
		free(*out);
		*out = NULL;
		freeReplyObject(m);
		return c ? -ENOMEM : -EIO;
	}
	for (size_t i = 0; i < m->elements; i++)
		redisAppendCommand(c,
				   "HMGET " KB_KEY_INVITE
				   " user_id user_name created_ms "
				   "claimed_ms",
				   m->element[i]->str);
	for (size_t i = 0; i < m->elements; i++) {
		redisReply *h;
		if ((rc = kb__gw_read_replies(c, &h, 1)) < 0)
			break;
		if (h->type == REDIS_REPLY_ARRAY && h->elements == 4 &&
		    h->element[2]->type ==
			    REDIS_REPLY_STRING) { /* revoked: skip */
			struct kb_gw_invite *iv = &(*out)[(*n)++];
			snprintf(iv->code, sizeof(iv->code), "%s",
				 m->element[i]->str);
			if (h->element[0]->type == REDIS_REPLY_STRING)
				snprintf(iv->user_id, sizeof(iv->user_id), "%s",
					 h->element[0]->str);
			if (h->element[1]->type == REDIS_REPLY_STRING)
				snprintf(iv->user_name, sizeof(iv->user_name),
					 "%s", h->element[1]->str);
			iv->created_ms = strtoll(h->element[2]->str, NULL, 10);
			if (h->element[3]->type == REDIS_REPLY_STRING)
				iv->claimed_ms =
					strtoll(h->element[3]->str, NULL, 10);
		}
		freeReplyObject(h);
	}
	freeReplyObject(m);
	if (rc < 0) {
		free(*out);
		*out = NULL;
		*n = 0;
	}
	return rc;
}

int kb_gw_invite_revoke(const struct kb_gw *g, const char *code,
			int *was_claimed)
{
	int rc;
	redisReply *r = kb__gw_cmd(
		g, &rc, "HMGET " KB_KEY_INVITE " leaderboards user_id", code);
	char lbs[16 * 66];

	*was_claimed = 0;
	if (!r)
		return rc;
	if (r->type != REDIS_REPLY_ARRAY || r->elements != 2 ||
	    r->element[0]->type != REDIS_REPLY_STRING) {
		freeReplyObject(r);
		return -ENOENT;
	}
	snprintf(lbs, sizeof(lbs), "%s", r->element[0]->str);
	*was_claimed = r->element[1]->type == REDIS_REPLY_STRING;
	freeReplyObject(r);
	r = kb__gw_cmd(g, &rc, "DEL " KB_KEY_INVITE, code);
	if (r)
		freeReplyObject(r);
	char *save = NULL;
	for (char *lb = strtok_r(lbs, ",", &save); lb && rc == 0;
	     lb = strtok_r(NULL, ",", &save)) {
		r = kb__gw_cmd(g, &rc, "SREM " KB_KEY_BOARD_INVITES " %s", lb,
			       code);
		if (r)
			freeReplyObject(r);
	}
	return rc;
}

int kb_gw_invite_claim(const struct kb_gw *g, const char *code,
		       const char *user_id, const char *user_name, char *lbs,
		       size_t lbs_size, char *why, size_t why_size)
{
	char key[128], ms[32];
	const char *argv[4] = {key, user_id, user_name, ms};
	int rc;
	redisReply *r;

	snprintf(key, sizeof(key), KB_KEY_INVITE, code);
	snprintf(ms, sizeof(ms), "%" PRId64, kb_now_ms());
	r = kb__gw_eval(g, &rc, KB__GW_JOIN, 1, 4, argv, NULL);
	if (!r)
		return rc;
	rc = -EPROTO;
	if (r->type == REDIS_REPLY_ARRAY && r->elements == 2 &&
	    r->element[0]->type == REDIS_REPLY_INTEGER &&
	    r->element[1]->type == REDIS_REPLY_STRING) {
		if (r->element[0]->integer == 1) {
			snprintf(lbs, lbs_size, "%s", r->element[1]->str);
			rc = 0;
		} else {
			snprintf(why, why_size, "%s", r->element[1]->str);
			rc = 1;
		}
	}
	freeReplyObject(r);
	return rc;
}

static const char *field(const redisReply *r)
{
	return r->type == REDIS_REPLY_STRING ? r->str : NULL;
}

/* One submission's HMGET status gpu mode verdict score code_sha; codes
 * is the set of code hashes seen (a JSON object's keys). */
static void count_submission(struct kb_gw_stats *out, redisReply **f,
			     json_t *codes)
{
	static const char *const statuses[5] = {"queued", "running", "done",
						"failed", "deleted"};
	const char *status = field(f[0]), *gpu = field(f[1]),
		   *mode = field(f[2]);
	const char *verdict = field(f[3]), *score = field(f[4]),
		   *sha = field(f[5]);
	struct kb_gw_runner_stats *rs = NULL;

	for (int k = 0; status && k < 5; k++)
		if (strcmp(status, statuses[k]) == 0)
			out->by_status[k]++;
	if (status && (strcmp(status, "failed") == 0 ||
		       (strcmp(status, "done") == 0 &&
			(!verdict || strcmp(verdict, "passed") != 0))))
		out->not_passed++;
	/* Out of memory only makes the count a little low. */
	if (sha && codes)
		json_object_set_new(codes, sha, json_true());
	/* Only a submission with a result ran ("failed" ones never reached
	 * a worker, or were given up). */
	if (!status || !gpu || strcmp(status, "done") != 0)
		return;
	for (size_t i = 0; i < out->nrunners && !rs; i++)
		if (strcmp(out->runners[i].gpu, gpu) == 0)
			rs = &out->runners[i];
	if (!rs && out->nrunners < KB_GW_STATS_RUNNERS &&
	    strlen(gpu) < sizeof(rs->gpu)) {
		rs = &out->runners[out->nrunners++];
		snprintf(rs->gpu, sizeof(rs->gpu), "%s", gpu);
	}
	if (!rs)
		return;
	rs->runs++;
	rs->passed += verdict && strcmp(verdict, "passed") == 0;
	rs->scored += score && score[0];
	rs->secret += kb_mode_parse(mode) == KB_MODE_LEADERBOARD;
}

int kb_gw_stats(const struct kb_gw *g, const char *lb, int64_t since_ms,
		struct kb_gw_stats *out)
{
	char err[256], index[256], lo[32];
	redisContext *c = kb_gw_redis(g, err, sizeof(err));
	redisReply *r[2] = {0}, *ids;
	int rc;

	memset(out, 0, sizeof(*out));
	if (!c)
		return -EIO;
	if (lb)
		snprintf(index, sizeof(index), KB_KEY_SUBS_BOARD, lb);
	else
		snprintf(index, sizeof(index), KB_KEY_SUBS_ALL);
	snprintf(lo, sizeof(lo), "%" PRId64, since_ms > 0 ? since_ms : 0);
	redisAppendCommand(c, "ZCOUNT %s %s +inf", index, lo);
	redisAppendCommand(c, "SCARD " KB_KEY_USERS);
	if ((rc = kb__gw_read_replies(c, r, 2)) < 0)
		return rc;
	out->submissions =
		r[0]->type == REDIS_REPLY_INTEGER ? (long)r[0]->integer : 0;
	out->users = r[1]->type == REDIS_REPLY_INTEGER ? (long)r[1]->integer
						       : 0;
	kb__gw_free_replies(r, 2);

	/* Status counts over (at most) the 10000 newest submissions. */
	ids = kb__gw_cmd(g, &rc, "ZREVRANGEBYSCORE %s +inf %s LIMIT 0 10000",
			 index, lo);
	if (!ids)
		return rc;
	for (size_t i = 0; ids->type == REDIS_REPLY_ARRAY && i < ids->elements;
	     i++)
		redisAppendCommand(c,
				   "HMGET " KB_KEY_SUB
				   " status gpu mode verdict score code_sha",
				   ids->element[i]->str);
	json_t *codes = json_object();
	for (size_t i = 0; ids->type == REDIS_REPLY_ARRAY && i < ids->elements;
	     i++) {
		redisReply *s;
		if ((rc = kb__gw_read_replies(c, &s, 1)) < 0)
			break;
		if (s->type == REDIS_REPLY_ARRAY && s->elements == 6)
			count_submission(out, s->element, codes);
		freeReplyObject(s);
	}
	out->unique_codes = codes ? (long)json_object_size(codes) : 0;
	json_decref(codes);
	freeReplyObject(ids);
	if (rc < 0)
		return rc;

	/* Ranked entries over the boards asked for. */
	for (size_t i = 0; i < kb_gw_lb_count(g); i++) {
		const struct kb_gw_lb *b = kb_gw_lb_at(g, i);
		if (atomic_load(&b->deleted) ||
		    (lb && strcmp(b->task->name, lb) != 0))
			continue;
		for (size_t k = 0; k < b->task->ngpus; k++) {
			redisReply *z = kb__gw_cmd(g, &rc, "ZCARD " KB_KEY_RANK,
						   b->task->name,
						   b->task->gpus[k]);
			if (!z)
				return rc;
			if (z->type == REDIS_REPLY_INTEGER)
				out->ranked_entries += (long)z->integer;
			freeReplyObject(z);
		}
	}
	return 0;
}

int kb_gw_board_record(const struct kb_gw *g, const char *name,
		       const char *directory)
{
	char err[256];
	redisContext *c = kb_gw_redis(g, err, sizeof(err));

	if (!c)
		return -EIO;
	redisAppendCommand(c, "MULTI");
	redisAppendCommand(c, "HSET " KB_KEY_BOARDS_DYNAMIC " %s %s", name,
			   directory);
	redisAppendCommand(c, "SREM " KB_KEY_BOARDS_DELETED " %s", name);
	return kb__gw_finish_multi(c, 2);
}

int kb_gw_board_mark_deleted(const struct kb_gw *g, const char *name,
			     int purge_rankings)
{
	char keys[4][160];
	/* kb__gw_eval() takes 32 arguments: 24 gpus, far more than a board
	 * lists. */
	const char *argv[32] = {keys[0],
				keys[1],
				keys[2],
				keys[3],
				KB_KEY_BOARDS_DYNAMIC,
				KB_KEY_BOARDS_DELETED,
				name,
				purge_rankings ? "1" : "0"};
	const struct kb_gw_lb *lb = kb_gw_lb_find(g, name);
	redisReply *r;
	int argc = 8, rc;

	snprintf(keys[0], sizeof(keys[0]), KB_KEY_BOARD, name);
	snprintf(keys[1], sizeof(keys[1]), KB_KEY_BOARD_ACCESS, name);
	snprintf(keys[2], sizeof(keys[2]), KB_KEY_BOARD_INVITES, name);
	snprintf(keys[3], sizeof(keys[3]), KB_KEY_BOARD_RATES, name);
	for (size_t k = 0;
	     lb && k < lb->task->ngpus && argc < (int)KB_ARRAY_LEN(argv); k++)
		argv[argc++] = lb->task->gpus[k];
	r = kb__gw_eval(g, &rc, KB__GW_FORGET_BOARD, 6, argc, argv, NULL);
	if (r)
		freeReplyObject(r);
	return rc;
}

int kb_gw_board_has_submissions(const struct kb_gw *g, const char *name,
				int *has)
{
	int rc;
	redisReply *r = kb__gw_cmd(g, &rc, "ZCARD " KB_KEY_SUBS_BOARD, name);

	*has = 0;
	if (!r)
		return rc;
	*has = r->type == REDIS_REPLY_INTEGER && r->integer > 0;
	freeReplyObject(r);
	return 0;
}

int kb_gw_board_sync(const struct kb_gw *g, redisReply **dyn,
		     redisReply **deleted, const char *const *names, size_t n,
		     int *closed, uint64_t *secrets)
{
	char err[256];
	redisContext *c = kb_gw_redis(g, err, sizeof(err));
	redisReply *r[2] = {0};
	int rc;

	*dyn = *deleted = NULL;
	if (!c)
		return -EIO;
	redisAppendCommand(c, "HGETALL " KB_KEY_BOARDS_DYNAMIC);
	redisAppendCommand(c, "SMEMBERS " KB_KEY_BOARDS_DELETED);
	for (size_t i = 0; i < n; i++)
		redisAppendCommand(c,
				   "HMGET " KB_KEY_BOARD
				   " visibility secret_seed",
				   names[i]);
	if ((rc = kb__gw_read_replies(c, r, 2)) < 0)
		return rc;
	for (size_t i = 0; i < n; i++) {
		redisReply *v;
		if ((rc = kb__gw_read_replies(c, &v, 1)) < 0) {
			kb__gw_free_replies(r, 2);
			return rc;
		}
		closed[i] = 0;
		secrets[i] = 0;
		if (v->type == REDIS_REPLY_ARRAY && v->elements == 2) {
			const redisReply *vis = v->element[0],
					 *sec = v->element[1];
			closed[i] = vis->type == REDIS_REPLY_STRING &&
				    strcmp(vis->str, "closed") == 0;
			if (sec->type != REDIS_REPLY_STRING ||
			    kb_parse_u64(sec->str, &secrets[i]) != 0)
				secrets[i] = 0;
		}
		freeReplyObject(v);
	}
	*dyn = r[0];
	*deleted = r[1];
	return 0;
}
