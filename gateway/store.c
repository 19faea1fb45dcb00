/* kb_gw_store: see store.h. */
#include "store.h"

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kb_log.h"
#include "kb_redis.h"
#include "kb_util.h"
#include "rules.h"

#define REDIS_TIMEOUT_MS 2000
#define RECONNECT_BACKOFF_S 0.25

static pthread_key_t conn_key;
static pthread_once_t conn_once = PTHREAD_ONCE_INIT;
static _Thread_local redisContext *tl_conn;
static _Thread_local double tl_retry_at;

static void conn_destructor(void *p)
{
	redisFree(p);
}

static void conn_key_init(void)
{
	pthread_key_create(&conn_key, conn_destructor);
}

redisContext *kb_gw_redis(const struct kb_gw *g, char *errstr,
			  size_t errstr_size)
{
	double now;

	if (tl_conn)
		return tl_conn;
	now = kb_mono_s();
	if (now < tl_retry_at) {
		snprintf(errstr, errstr_size, "redis unavailable (backing off)");
		return NULL;
	}
	pthread_once(&conn_once, conn_key_init);
	tl_conn = kb_redis_connect(g->cfg.redis_url, REDIS_TIMEOUT_MS, errstr,
				   errstr_size);
	if (!tl_conn) {
		tl_retry_at = now + RECONNECT_BACKOFF_S;
		kb_warn("redis connect failed: %s", errstr);
		return NULL;
	}
	pthread_setspecific(conn_key, tl_conn);
	return tl_conn;
}

void kb_gw_redis_drop(void)
{
	if (!tl_conn)
		return;
	pthread_once(&conn_once, conn_key_init);
	pthread_setspecific(conn_key, NULL);
	redisFree(tl_conn);
	tl_conn = NULL;
}

/* Reads n pipelined replies. On an I/O error frees what it read, drops
 * the connection and returns -EIO. */
static int read_replies(redisContext *c, redisReply **r, int n)
{
	for (int i = 0; i < n; i++) {
		void *p = NULL;
		if (redisGetReply(c, &p) != REDIS_OK || !p) {
			kb_warn("redis: %s", c->errstr[0] ? c->errstr : "no reply");
			for (int k = 0; k < i; k++)
				freeReplyObject(r[k]);
			kb_gw_redis_drop();
			return -EIO;
		}
		r[i] = p;
	}
	return 0;
}

static void free_replies(redisReply **r, int n)
{
	for (int i = 0; i < n; i++)
		if (r[i])
			freeReplyObject(r[i]);
}

/* One command; NULL (connection dropped) on an I/O error. */
static redisReply *cmd(const struct kb_gw *g, int *rc, const char *fmt, ...)
{
	char err[256];
	redisContext *c = kb_gw_redis(g, err, sizeof(err));
	va_list ap;
	redisReply *r;

	if (!c) {
		*rc = -EIO;
		return NULL;
	}
	va_start(ap, fmt);
	r = redisvCommand(c, fmt, ap);
	va_end(ap);
	if (!r) {
		kb_warn("redis: %s", c->errstr);
		kb_gw_redis_drop();
		*rc = -EIO;
		return NULL;
	}
	if (r->type == REDIS_REPLY_ERROR) {
		kb_error("redis error reply: %s", r->str);
		freeReplyObject(r);
		*rc = -EPROTO;
		return NULL;
	}
	*rc = 0;
	return r;
}

int kb_gw_store_init_boards(struct kb_gw *g, char *errstr, size_t errstr_size)
{
	redisContext *c = kb_gw_redis(g, errstr, errstr_size);

	if (!c)
		return -EIO;
	for (size_t i = 0; i < g->nlbs; i++) {
		struct kb_gw_lb *lb = &g->lbs[i];
		const char *name = lb->task->name;
		redisReply *r[4] = {0};
		uint64_t seed = 0;

		while (seed == 0)
			randombytes_buf(&seed, sizeof(seed));
		redisAppendCommand(c, "HSETNX kb:lb:%s secret_seed %" PRIu64, name, seed);
		redisAppendCommand(c, "HSET kb:lb:%s deadline %s", name,
				   lb->task->deadline ? lb->task->deadline : "");
		redisAppendCommand(c, "HSETNX kb:lb:%s visibility public", name);
		redisAppendCommand(c, "HGET kb:lb:%s secret_seed", name);
		seed = 0;
		if (read_replies(c, r, 4) < 0) {
			snprintf(errstr, errstr_size, "redis: I/O error");
			return -EIO;
		}
		int ok = 1;
		for (int k = 0; k < 4; k++)
			if (r[k]->type == REDIS_REPLY_ERROR)
				ok = 0;
		/* Parse without echoing the value anywhere. */
		if (ok && (r[3]->type != REDIS_REPLY_STRING ||
			   kb_parse_u64(r[3]->str, &lb->secret_seed) != 0))
			ok = 0;
		free_replies(r, 4);
		if (!ok) {
			snprintf(errstr, errstr_size,
				 "kb:lb:%s: cannot set or read secret_seed "
				 "(wrong key type or not a decimal)", name);
			return -EPROTO;
		}
	}
	return 0;
}

int kb_gw_user_by_cli(const struct kb_gw *g, const char *cli_id,
		      struct kb_gw_user *out)
{
	int rc;
	redisReply *r = cmd(g, &rc, "GET kb:cli:%s", cli_id);

	if (!r)
		return rc;
	if (r->type != REDIS_REPLY_STRING || r->len == 0 ||
	    r->len >= sizeof(out->id)) {
		freeReplyObject(r);
		return -ENOENT;
	}
	memset(out, 0, sizeof(*out));
	memcpy(out->id, r->str, r->len);
	freeReplyObject(r);

	r = cmd(g, &rc, "HMGET kb:user:%s name banned", out->id);
	if (!r)
		return rc;
	if (r->type != REDIS_REPLY_ARRAY || r->elements != 2 ||
	    r->element[0]->type != REDIS_REPLY_STRING) {
		freeReplyObject(r); /* a CLI id whose user is gone */
		return -ENOENT;
	}
	snprintf(out->name, sizeof(out->name), "%s", r->element[0]->str);
	out->banned = r->element[1]->type == REDIS_REPLY_STRING &&
		      strcmp(r->element[1]->str, "0") != 0 &&
		      r->element[1]->str[0] != '\0';
	freeReplyObject(r);
	return 0;
}

/* Runs MULTI, the n appended commands, EXEC; checks that EXEC ran them
 * all without error. The caller has appended the commands after MULTI. */
static int finish_multi(redisContext *c, int n)
{
	redisReply *r[16] = {0};
	int total = n + 2, rc = 0;

	if (total > 16)
		return -EINVAL;
	redisAppendCommand(c, "EXEC");
	rc = read_replies(c, r, total);
	if (rc < 0)
		return rc;
	redisReply *exec = r[total - 1];
	if (exec->type != REDIS_REPLY_ARRAY || exec->elements != (size_t)n) {
		kb_error("redis: transaction not executed");
		rc = -EPROTO;
	} else {
		for (size_t i = 0; i < exec->elements; i++)
			if (exec->element[i]->type == REDIS_REPLY_ERROR) {
				kb_error("redis: %s", exec->element[i]->str);
				rc = -EPROTO;
			}
	}
	free_replies(r, total);
	return rc;
}

int kb_gw_user_create(const struct kb_gw *g, const char *name,
		      char user_id[33], char cli_id[65])
{
	char err[256], ms[32];
	redisContext *c = kb_gw_redis(g, err, sizeof(err));

	if (!c)
		return -EIO;
	kb_random_hex(user_id, 8);
	kb_random_hex(cli_id, 32);
	snprintf(ms, sizeof(ms), "%" PRId64, kb_now_ms());
	redisAppendCommand(c, "MULTI");
	redisAppendCommand(c, "HSET kb:user:%s name %s cli_id %s created_ms %s banned 0",
			   user_id, name, cli_id, ms);
	redisAppendCommand(c, "SET kb:cli:%s %s", cli_id, user_id);
	return finish_multi(c, 2);
}

int kb_gw_sub_next_id(const struct kb_gw *g, uint64_t *id)
{
	int rc;
	redisReply *r = cmd(g, &rc, "INCR kb:next_sub_id");

	if (!r)
		return rc;
	if (r->type != REDIS_REPLY_INTEGER || r->integer <= 0) {
		freeReplyObject(r);
		return -EPROTO;
	}
	*id = (uint64_t)r->integer;
	freeReplyObject(r);
	return 0;
}

int kb_gw_sub_record(const struct kb_gw *g, const struct kb_gw_sub *s)
{
	char err[256], id[32], ms[32], key[64];
	redisContext *c = kb_gw_redis(g, err, sizeof(err));

	if (!c)
		return -EIO;
	snprintf(id, sizeof(id), "%" PRIu64, s->id);
	snprintf(ms, sizeof(ms), "%" PRId64, s->submitted_ms);
	snprintf(key, sizeof(key), "kb:sub:%s", id);
	const char *argv[] = {
		"HSET", key,
		"user_id", s->user_id, "user_name", s->user_name,
		"lb", s->lb, "gpu", s->gpu, "mode", s->mode,
		"file_name", s->file_name, "code_sha", s->code_sha,
		"submitted_ms", ms, "status", "queued",
		"stage", "queued", "stage_ms", ms,
	};
	redisAppendCommand(c, "MULTI");
	redisAppendCommand(c, "SET kb:code:%s %b NX", s->code_sha, s->code,
			   s->code_len);
	redisAppendCommandArgv(c, (int)(sizeof(argv) / sizeof(argv[0])), argv,
			       NULL);
	redisAppendCommand(c, "ZADD kb:subs:user:%s %s %s", s->user_id, ms, id);
	return finish_multi(c, 3);
}

static const char mark_failed_lua[] =
	"if redis.call('HGET', KEYS[1], 'status') ~= 'queued' then return 0 end\n"
	"redis.call('HSET', KEYS[1], 'status', 'failed', 'verdict', "
	"'infra_error', 'error', ARGV[1], 'done_ms', ARGV[2])\n"
	"return 1\n";

int kb_gw_sub_mark_failed(const struct kb_gw *g, uint64_t id, const char *why)
{
	int rc;
	redisReply *r = cmd(g, &rc, "EVAL %s 1 kb:sub:%" PRIu64 " %s %" PRId64,
			    mark_failed_lua, id, why, kb_now_ms());

	if (r)
		freeReplyObject(r);
	return rc;
}

const char *kb_gw_sub_field(const struct kb_gw_sub_rec *rec, const char *name)
{
	const redisReply *h = rec->hash;

	if (!h || h->type != REDIS_REPLY_ARRAY)
		return NULL;
	for (size_t i = 0; i + 1 < h->elements; i += 2)
		if (h->element[i]->type == REDIS_REPLY_STRING &&
		    strcmp(h->element[i]->str, name) == 0 &&
		    h->element[i + 1]->type == REDIS_REPLY_STRING)
			return h->element[i + 1]->str;
	return NULL;
}

void kb_gw_sub_rec_free(struct kb_gw_sub_rec *rec)
{
	if (rec->hash)
		freeReplyObject(rec->hash);
	if (rec->res)
		freeReplyObject(rec->res);
	if (rec->code)
		freeReplyObject(rec->code);
	memset(rec, 0, sizeof(*rec));
}

int kb_gw_sub_fetch(const struct kb_gw *g, uint64_t id,
		    struct kb_gw_sub_rec *out)
{
	int rc;
	char err[256];
	redisReply *r[2] = {0};

	memset(out, 0, sizeof(*out));
	out->hash = cmd(g, &rc, "HGETALL kb:sub:%" PRIu64, id);
	if (!out->hash)
		return rc;
	if (out->hash->type != REDIS_REPLY_ARRAY || out->hash->elements == 0) {
		kb_gw_sub_rec_free(out);
		return -ENOENT;
	}
	const char *gpu = kb_gw_sub_field(out, "gpu");
	const char *sha = kb_gw_sub_field(out, "code_sha");
	redisContext *c = kb_gw_redis(g, err, sizeof(err));
	if (!c) {
		kb_gw_sub_rec_free(out);
		return -EIO;
	}
	redisAppendCommand(c, "GET kb:res:%" PRIu64 ":%s", id, gpu ? gpu : "");
	redisAppendCommand(c, "GET kb:code:%s", sha ? sha : "");
	rc = read_replies(c, r, 2);
	if (rc < 0) {
		kb_gw_sub_rec_free(out);
		return rc;
	}
	out->res = r[0];
	out->code = r[1];
	return 0;
}

int kb_gw_rank_cmp(const void *pa, const void *pb)
{
	const struct kb_gw_rank_entry *a = pa, *b = pb;

	if (a->score != b->score)
		return a->score < b->score ? -1 : 1;
	if (a->submitted_ms != b->submitted_ms)
		return a->submitted_ms < b->submitted_ms ? -1 : 1;
	if (a->sub_id != b->sub_id)
		return a->sub_id < b->sub_id ? -1 : 1;
	return strcmp(a->user_id, b->user_id);
}

/* "<sub id>:<submitted_ms>" from kb:rankinfo. */
static void parse_rankinfo(const redisReply *v, struct kb_gw_rank_entry *e)
{
	char buf[64], *colon;
	uint64_t id;

	e->sub_id = 0;
	e->submitted_ms = INT64_MAX;
	if (!v || v->type != REDIS_REPLY_STRING || v->len >= sizeof(buf))
		return;
	memcpy(buf, v->str, v->len + 1);
	colon = strchr(buf, ':');
	if (!colon)
		return;
	*colon = '\0';
	if (kb_parse_u64(buf, &id) != 0)
		return;
	char *end;
	errno = 0;
	long long ms = strtoll(colon + 1, &end, 10);
	if (errno || *end || end == colon + 1)
		return;
	e->sub_id = id;
	e->submitted_ms = ms;
}

/* Ranks are positions in (score, submitted_ms, ...) order, but Redis
 * orders members of equal score by name. So the window [offset, offset +
 * limit) is fetched by score first, widened to whole groups of equal score
 * at both ends (ZRANGEBYSCORE between the window's first and last score),
 * re-sorted with the tie-break, and cut. The work is proportional to the
 * window plus its tie groups, not to the board. */
int kb_gw_ranking(const struct kb_gw *g, const char *lb, const char *gpu,
		  long offset, long limit, struct kb_gw_rank_entry **out,
		  size_t *n)
{
	char err[256], rank_key[256], info_key[256], lo_ex[64];
	redisContext *c;
	redisReply *w = NULL, *r[2] = {0}, *info = NULL;
	struct kb_gw_rank_entry *all = NULL;
	size_t nall = 0;
	long base;
	int rc;

	*out = NULL;
	*n = 0;
	snprintf(rank_key, sizeof(rank_key), "kb:rank:%s:%s", lb, gpu);
	snprintf(info_key, sizeof(info_key), "kb:rankinfo:%s:%s", lb, gpu);
	w = cmd(g, &rc, "ZRANGE %s %ld %ld WITHSCORES", rank_key, offset,
		offset + limit - 1);
	if (!w)
		return rc;
	if (w->type != REDIS_REPLY_ARRAY || w->elements < 2) {
		freeReplyObject(w);
		return 0;
	}
	const char *lo = w->element[1]->str, *hi = w->element[w->elements - 1]->str;
	snprintf(lo_ex, sizeof(lo_ex), "(%s", lo);
	c = kb_gw_redis(g, err, sizeof(err));
	if (!c) {
		freeReplyObject(w);
		return -EIO;
	}
	redisAppendCommand(c, "ZCOUNT %s -inf %s", rank_key, lo_ex);
	redisAppendCommand(c, "ZRANGEBYSCORE %s %s %s WITHSCORES", rank_key, lo, hi);
	freeReplyObject(w);
	rc = read_replies(c, r, 2);
	if (rc < 0)
		return rc;
	if (r[0]->type != REDIS_REPLY_INTEGER || r[1]->type != REDIS_REPLY_ARRAY) {
		rc = -EPROTO;
		goto done;
	}
	base = (long)r[0]->integer;
	nall = r[1]->elements / 2;
	if (nall == 0)
		goto done;
	all = calloc(nall, sizeof(*all));
	const char **argv = calloc(nall + 2, sizeof(*argv));
	if (!all || !argv) {
		free(argv);
		rc = -ENOMEM;
		goto done;
	}
	argv[0] = "HMGET";
	argv[1] = info_key;
	for (size_t i = 0; i < nall; i++) {
		const redisReply *m = r[1]->element[2 * i];
		snprintf(all[i].user_id, sizeof(all[i].user_id), "%s", m->str);
		all[i].score = strtod(r[1]->element[2 * i + 1]->str, NULL);
		argv[i + 2] = all[i].user_id;
	}
	info = redisCommandArgv(c, (int)nall + 2, argv, NULL);
	free(argv);
	if (!info) {
		kb_gw_redis_drop();
		rc = -EIO;
		goto done;
	}
	for (size_t i = 0; i < nall; i++)
		parse_rankinfo(info->type == REDIS_REPLY_ARRAY && i < info->elements
				       ? info->element[i] : NULL,
			       &all[i]);
	qsort(all, nall, sizeof(*all), kb_gw_rank_cmp);

	/* all[k] holds global position base + k. */
	size_t first = offset > base ? (size_t)(offset - base) : 0;
	size_t count = 0;
	if (first < nall)
		count = nall - first < (size_t)limit ? nall - first : (size_t)limit;
	if (count == 0)
		goto done;
	memmove(all, all + first, count * sizeof(*all));
	for (size_t i = 0; i < count; i++) {
		all[i].rank = base + (long)(first + i) + 1;
		redisAppendCommand(c, "HGET kb:user:%s name", all[i].user_id);
		redisAppendCommand(c, "HGET kb:sub:%" PRIu64 " file_name", all[i].sub_id);
	}
	for (size_t i = 0; i < count; i++) {
		redisReply *nm[2];
		rc = read_replies(c, nm, 2);
		if (rc < 0) {
			/* read_replies dropped the connection: the rest of the
			 * pipeline is gone with it. */
			goto done;
		}
		if (nm[0]->type == REDIS_REPLY_STRING)
			snprintf(all[i].user_name, sizeof(all[i].user_name), "%s",
				 nm[0]->str);
		if (nm[1]->type == REDIS_REPLY_STRING)
			snprintf(all[i].file_name, sizeof(all[i].file_name), "%s",
				 nm[1]->str);
		free_replies(nm, 2);
	}
	*out = all;
	*n = count;
	all = NULL;
done:
	free(all);
	if (info)
		freeReplyObject(info);
	free_replies(r, 2);
	return rc;
}
