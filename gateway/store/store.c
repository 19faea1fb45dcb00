/* kb_gw_store: see store.h. */
#include "store.h"

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <sodium.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "kb_keys.h"
#include "kb_log.h"
#include "kb_redis.h"
#include "kb_util.h"

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
		snprintf(errstr, errstr_size,
			 "redis unavailable (backing off)");
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
int kb__gw_read_replies(redisContext *c, redisReply **r, int n)
{
	for (int i = 0; i < n; i++) {
		void *p = NULL;
		if (redisGetReply(c, &p) != REDIS_OK || !p) {
			kb_warn("redis: %s",
				c->errstr[0] ? c->errstr : "no reply");
			for (int k = 0; k < i; k++)
				freeReplyObject(r[k]);
			kb_gw_redis_drop();
			return -EIO;
		}
		r[i] = p;
	}
	return 0;
}

void kb__gw_free_replies(redisReply **r, int n)
{
	for (int i = 0; i < n; i++)
		if (r[i])
			freeReplyObject(r[i]);
}

/* One command; NULL (connection dropped) on an I/O error. */
redisReply *kb__gw_cmd(const struct kb_gw *g, int *rc, const char *fmt, ...)
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

/* ---- scripts ---- */

extern const char kb_gw_auth_lua[], kb_gw_submit_lua[], kb_gw_delete_lua[],
	kb_gw_join_lua[], kb_gw_link_lua[], kb_gw_login_lua[],
	kb_gw_forget_board_lua[], kb_gw_rank_rebuild_lua[];

static const char *const script_src[KB__GW_NSCRIPTS] = {
	[KB__GW_AUTH] = kb_gw_auth_lua,
	[KB__GW_SUBMIT] = kb_gw_submit_lua,
	[KB__GW_DELETE] = kb_gw_delete_lua,
	[KB__GW_JOIN] = kb_gw_join_lua,
	[KB__GW_LINK] = kb_gw_link_lua,
	[KB__GW_LOGIN] = kb_gw_login_lua,
	[KB__GW_FORGET_BOARD] = kb_gw_forget_board_lua,
	[KB__GW_RANK_REBUILD] = kb_gw_rank_rebuild_lua,
};
/* Written once by kb_gw_store_init() before any thread starts. */
static char script_sha[KB__GW_NSCRIPTS][41];

redisReply *kb__gw_eval(const struct kb_gw *g, int *rc, enum kb__gw_script s,
			int nkeys, int argc, const char **argv,
			const size_t *argvlen)
{
	char err[256], nk[16];
	const char *av[36];
	size_t al[36];
	redisContext *c = kb_gw_redis(g, err, sizeof(err));
	redisReply *r;

	if (!c) {
		*rc = -EIO;
		return NULL;
	}
	if (argc > 32) {
		*rc = -EINVAL;
		return NULL;
	}
	snprintf(nk, sizeof(nk), "%d", nkeys);
	av[0] = "EVALSHA";
	av[1] = script_sha[s];
	av[2] = nk;
	for (int i = 0; i < 3; i++)
		al[i] = strlen(av[i]);
	for (int i = 0; i < argc; i++) {
		av[3 + i] = argv[i];
		al[3 + i] = argvlen ? argvlen[i] : strlen(argv[i]);
	}
	for (int attempt = 0;; attempt++) {
		r = redisCommandArgv(c, argc + 3, av, al);
		if (!r) {
			kb_warn("redis: %s", c->errstr);
			kb_gw_redis_drop();
			*rc = -EIO;
			return NULL;
		}
		/* After a restart or SCRIPT FLUSH the server forgot the
		 * script: send its text once (EVAL caches it again). */
		if (attempt == 0 && r->type == REDIS_REPLY_ERROR &&
		    strncmp(r->str, "NOSCRIPT", 8) == 0) {
			freeReplyObject(r);
			av[0] = "EVAL";
			av[1] = script_src[s];
			al[0] = 4;
			al[1] = strlen(script_src[s]);
			continue;
		}
		break;
	}
	if (r->type == REDIS_REPLY_ERROR) {
		kb_error("redis script error: %s", r->str);
		freeReplyObject(r);
		*rc = -EPROTO;
		return NULL;
	}
	*rc = 0;
	return r;
}

int kb__gw_finish_multi(redisContext *c, int n)
{
	redisReply *r[16] = {0};
	int total = n + 2, rc = 0;

	if (total > 16)
		return -EINVAL;
	redisAppendCommand(c, "EXEC");
	rc = kb__gw_read_replies(c, r, total);
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
	kb__gw_free_replies(r, total);
	return rc;
}

int kb_gw_store_init_board(const struct kb_gw *g, struct kb_gw_lb *lb,
			   const char *visibility, char *errstr,
			   size_t errstr_size)
{
	redisContext *c = kb_gw_redis(g, errstr, errstr_size);
	const char *name = lb->task->name;
	redisReply *r[6] = {0};
	uint64_t seed = 0;
	int ok = 1;

	if (!c)
		return -EIO;
	while (seed == 0)
		randombytes_buf(&seed, sizeof(seed));
	redisAppendCommand(c, "HSETNX " KB_KEY_BOARD " secret_seed %" PRIu64,
			   name, seed);
	redisAppendCommand(c, "HSET " KB_KEY_BOARD " deadline %s", name,
			   lb->task->deadline ? lb->task->deadline : "");
	if (visibility)
		redisAppendCommand(c, "HSET " KB_KEY_BOARD " visibility %s",
				   name, visibility);
	else
		redisAppendCommand(
			c, "HSETNX " KB_KEY_BOARD " visibility public", name);
	redisAppendCommand(c, "HMGET " KB_KEY_BOARD " secret_seed visibility",
			   name);
	redisAppendCommand(c, "SISMEMBER " KB_KEY_BOARDS_DELETED " %s", name);
	seed = 0;
	if (kb__gw_read_replies(c, r, 5) < 0) {
		snprintf(errstr, errstr_size, "redis: I/O error");
		return -EIO;
	}
	for (int k = 0; k < 5; k++)
		if (r[k]->type == REDIS_REPLY_ERROR)
			ok = 0;
	/* Parse without echoing the value anywhere. */
	if (ok && (r[3]->type != REDIS_REPLY_ARRAY || r[3]->elements != 2 ||
		   r[3]->element[0]->type != REDIS_REPLY_STRING ||
		   kb_parse_u64(r[3]->element[0]->str, &lb->secret_seed) != 0))
		ok = 0;
	if (ok) {
		const redisReply *v = r[3]->element[1];
		atomic_store(&lb->closed,
			     v->type == REDIS_REPLY_STRING &&
				     strcmp(v->str, "closed") == 0);
		/* A static board deleted by an admin stays deleted. */
		if (!lb->dynamic && r[4]->type == REDIS_REPLY_INTEGER &&
		    r[4]->integer == 1)
			atomic_store(&lb->deleted, 1);
	}
	kb__gw_free_replies(r, 5);
	if (!ok) {
		snprintf(errstr, errstr_size,
			 KB_KEY_BOARD ": cannot set or read secret_seed "
				      "(wrong key type or not a decimal)",
			 name);
		return -EPROTO;
	}
	return 0;
}

int kb_gw_store_init(struct kb_gw *g, char *errstr, size_t errstr_size)
{
	redisContext *c = kb_gw_redis(g, errstr, errstr_size);

	if (!c)
		return -EIO;
	for (int s = 0; s < KB__GW_NSCRIPTS; s++) {
		struct kb_redis_script rs = {.src = script_src[s]};
		if (kb_redis_script_load(c, &rs, errstr, errstr_size) < 0)
			return -EIO;
		memcpy(script_sha[s], rs.sha, sizeof(rs.sha));
	}
	for (size_t i = 0; i < kb_gw_lb_count(g); i++) {
		int rc = kb_gw_store_init_board(g, kb_gw_lb_at(g, i), NULL,
						errstr, errstr_size);
		if (rc < 0)
			return rc;
	}
	return 0;
}

/* ---- users ---- */

int kb_gw_user_by_cli(const struct kb_gw *g, const char *cli_id,
		      struct kb_gw_user *out)
{
	char key[192];
	const char *argv[1] = {key};
	int rc;
	redisReply *r;

	snprintf(key, sizeof(key), KB_KEY_CLI, cli_id);
	r = kb__gw_eval(g, &rc, KB__GW_AUTH, 1, 1, argv, NULL);
	if (!r)
		return rc;
	if (r->type != REDIS_REPLY_ARRAY || r->elements != 3 ||
	    r->element[0]->type != REDIS_REPLY_STRING ||
	    r->element[1]->type != REDIS_REPLY_STRING ||
	    r->element[0]->len >= sizeof(out->id)) {
		freeReplyObject(r);
		return -ENOENT;
	}
	memset(out, 0, sizeof(*out));
	memcpy(out->id, r->element[0]->str, r->element[0]->len);
	snprintf(out->name, sizeof(out->name), "%s", r->element[1]->str);
	out->banned = r->element[2]->type == REDIS_REPLY_STRING &&
		      strcmp(r->element[2]->str, "0") != 0 &&
		      r->element[2]->str[0] != '\0';
	freeReplyObject(r);
	return 0;
}

int kb_gw_user_create(const struct kb_gw *g, const char *name, char user_id[33],
		      char cli_id[65])
{
	char err[256], ms[32];
	redisContext *c = kb_gw_redis(g, err, sizeof(err));

	if (!c)
		return -EIO;
	kb_random_hex(user_id, 8);
	kb_random_hex(cli_id, 32);
	snprintf(ms, sizeof(ms), "%" PRId64, kb_now_ms());
	redisAppendCommand(c, "MULTI");
	redisAppendCommand(c,
			   "HSET " KB_KEY_USER
			   " name %s cli_id %s created_ms %s banned 0",
			   user_id, name, cli_id, ms);
	redisAppendCommand(c, "SET " KB_KEY_CLI " %s", cli_id, user_id);
	redisAppendCommand(c, "SADD " KB_KEY_USERS " %s", user_id);
	return kb__gw_finish_multi(c, 3);
}

int kb_gw_user_ensure(const struct kb_gw *g, const char *user_id,
		      const char *name)
{
	char err[256], ms[32];
	redisContext *c = kb_gw_redis(g, err, sizeof(err));

	if (!c)
		return -EIO;
	snprintf(ms, sizeof(ms), "%" PRId64, kb_now_ms());
	redisAppendCommand(c, "MULTI");
	redisAppendCommand(c, "HSETNX " KB_KEY_USER " name %s", user_id, name);
	redisAppendCommand(c, "HSETNX " KB_KEY_USER " created_ms %s", user_id,
			   ms);
	redisAppendCommand(c, "HSETNX " KB_KEY_USER " banned 0", user_id);
	redisAppendCommand(c, "SADD " KB_KEY_USERS " %s", user_id);
	return kb__gw_finish_multi(c, 4);
}

/* ARGV[1]: the CLI key less its id (KB_KEY_CLI), so that the key comes
 * from kb_keys.h as every other. */
static const char clear_cli_lua[] =
	"local u = redis.call('HMGET', KEYS[1], 'name', 'cli_id')\n"
	"if not u[1] then return 0 end\n"
	"if u[2] and u[2] ~= '' then redis.call('DEL', ARGV[1] .. u[2]) end\n"
	"redis.call('HDEL', KEYS[1], 'cli_id')\n"
	"return 1\n";

int kb_gw_user_clear_cli(const struct kb_gw *g, const char *user_id)
{
	char cli[32]; /* KB_KEY_CLI less its id: the script appends it */
	int rc;

	snprintf(cli, sizeof(cli), KB_KEY_CLI, "");
	redisReply *r = kb__gw_cmd(g, &rc, "EVAL %s 1 " KB_KEY_USER " %s",
				   clear_cli_lua, user_id, cli);

	if (!r)
		return rc;
	rc = r->type == REDIS_REPLY_INTEGER && r->integer == 1 ? 0 : -ENOENT;
	freeReplyObject(r);
	return rc;
}

int kb_gw_user_set_banned(const struct kb_gw *g, const char *user_id,
			  int banned)
{
	int rc;
	redisReply *r = kb__gw_cmd(g, &rc, "EXISTS " KB_KEY_USER, user_id);

	if (!r)
		return rc;
	rc = r->type == REDIS_REPLY_INTEGER && r->integer == 1 ? 0 : -ENOENT;
	freeReplyObject(r);
	if (rc < 0)
		return rc;
	r = kb__gw_cmd(g, &rc, "HSET " KB_KEY_USER " banned %s", user_id,
		       banned ? "1" : "0");
	if (r)
		freeReplyObject(r);
	return rc;
}

int kb_gw_login_begin(const struct kb_gw *g, const char *cli_id,
		      const char *provider, const char *reset_user, long ttl_s)
{
	char err[256], ms[32];
	redisContext *c = kb_gw_redis(g, err, sizeof(err));

	if (!c)
		return -EIO;
	snprintf(ms, sizeof(ms), "%" PRId64, kb_now_ms());
	redisAppendCommand(c, "MULTI");
	if (reset_user)
		redisAppendCommand(c,
				   "HSET " KB_KEY_LOGIN
				   " provider %s created_ms %s "
				   "reset_user %s",
				   cli_id, provider, ms, reset_user);
	else
		redisAppendCommand(c,
				   "HSET " KB_KEY_LOGIN
				   " provider %s created_ms %s",
				   cli_id, provider, ms);
	redisAppendCommand(c, "EXPIRE " KB_KEY_LOGIN " %ld", cli_id, ttl_s);
	return kb__gw_finish_multi(c, 2);
}

/* {0, status, reason} into *status and why; returns -EPERM. -EPROTO for
 * any other shape. */
static int refusal(const redisReply *r, int *status, char *why, size_t why_size)
{
	if (r->elements != 3 || r->element[1]->type != REDIS_REPLY_INTEGER ||
	    r->element[2]->type != REDIS_REPLY_STRING)
		return -EPROTO;
	*status = (int)r->element[1]->integer;
	snprintf(why, why_size, "%s", r->element[2]->str);
	return -EPERM;
}

int kb_gw_login_step(const struct kb_gw *g, const char *step,
		     const char *cli_id, const char *provider,
		     const char *nonce_sha, long *ttl_left, int *status,
		     char *why, size_t why_size)
{
	char key[192];
	const char *argv[4] = {key, step, provider, nonce_sha};
	int rc;
	redisReply *r;

	snprintf(key, sizeof(key), KB_KEY_LOGIN, cli_id);
	r = kb__gw_eval(g, &rc, KB__GW_LOGIN, 1, 4, argv, NULL);
	if (!r)
		return rc;
	rc = -EPROTO;
	if (r->type == REDIS_REPLY_ARRAY && r->elements >= 2 &&
	    r->element[0]->type == REDIS_REPLY_INTEGER) {
		if (r->element[0]->integer == 0) {
			rc = refusal(r, status, why, why_size);
		} else if (r->element[1]->type == REDIS_REPLY_INTEGER) {
			*ttl_left = (long)r->element[1]->integer;
			rc = 0;
		}
	}
	freeReplyObject(r);
	return rc;
}

int kb_gw_auth_link(const struct kb_gw *g, const char *user_id,
		    const char *name, const char *cli_id, const char *provider,
		    int reset, int *status, char *why, size_t why_size)
{
	char k1[192], k2[192], k3[192], ms[32];
	const char *argv[9] = {k1,   k2,     k3,       user_id,
			       name, cli_id, provider, reset ? "1" : "0",
			       ms};
	int rc;
	redisReply *r;

	snprintf(k1, sizeof(k1), KB_KEY_LOGIN, cli_id);
	snprintf(k2, sizeof(k2), KB_KEY_USER, user_id);
	snprintf(k3, sizeof(k3), KB_KEY_CLI, cli_id);
	snprintf(ms, sizeof(ms), "%" PRId64, kb_now_ms());
	r = kb__gw_eval(g, &rc, KB__GW_LINK, 3, 9, argv, NULL);
	if (!r)
		return rc;
	rc = -EPROTO;
	if (r->type == REDIS_REPLY_ARRAY && r->elements >= 1 &&
	    r->element[0]->type == REDIS_REPLY_INTEGER)
		rc = r->element[0]->integer == 1
			     ? 0
			     : refusal(r, status, why, why_size);
	freeReplyObject(r);
	return rc;
}

int kb_gw_seen_once(const struct kb_gw *g, const char *key, long ttl_s)
{
	int rc;
	redisReply *r = kb__gw_cmd(g, &rc, "SET %s 1 NX EX %ld", key, ttl_s);

	if (!r)
		return rc;
	rc = r->type == REDIS_REPLY_STATUS ? 1 : 0;
	freeReplyObject(r);
	return rc;
}

/* ---- submissions ---- */

int kb_gw_sub_create(const struct kb_gw *g, const struct kb_gw_sub *s,
		     uint64_t *id, char *user_name, size_t name_size,
		     int *status, char *why, size_t why_size, int64_t *retry_ms)
{
	char k[14][256], ms[32], lim[32], cap[32], forget[32], ttl[32];
	const char *argv[28];
	size_t argvlen[28];
	int rc, n = 0;
	redisReply *r;

	snprintf(k[0], sizeof(k[0]), KB_KEY_NEXT_SUB);
	snprintf(k[1], sizeof(k[1]), KB_KEY_USER, s->user_id);
	snprintf(k[2], sizeof(k[2]), KB_KEY_BOARD, s->lb);
	snprintf(k[3], sizeof(k[3]), KB_KEY_BOARD_ACCESS, s->lb);
	snprintf(k[4], sizeof(k[4]), KB_KEY_BOARD_RATES, s->lb);
	snprintf(k[5], sizeof(k[5]), KB_KEY_RATE_WINDOW, s->lb, s->category,
		 s->user_id);
	snprintf(k[6], sizeof(k[6]), KB_KEY_CODE, s->code_sha);
	snprintf(k[7], sizeof(k[7]), KB_KEY_SUBS_USER, s->user_id);
	snprintf(k[8], sizeof(k[8]), KB_KEY_SUBS_USER_BOARD, s->user_id, s->lb);
	snprintf(k[9], sizeof(k[9]), KB_KEY_SUBS_BOARD, s->lb);
	snprintf(k[10], sizeof(k[10]), KB_KEY_SUBS_ALL);
	snprintf(k[11], sizeof(k[11]), KB_KEY_QUEUED, s->gpu);
	snprintf(k[12], sizeof(k[12]), KB_KEY_ADMIN);
	snprintf(k[13], sizeof(k[13]), KB_KEY_ACTIVE, s->user_id, s->gpu);
	snprintf(ms, sizeof(ms), "%" PRId64, s->submitted_ms);
	snprintf(lim, sizeof(lim), "%ld", s->default_limit);
	snprintf(cap, sizeof(cap), "%ld", s->max_queued);
	snprintf(forget, sizeof(forget), "%ld", s->queued_forget_s * 1000);
	snprintf(ttl, sizeof(ttl), "%ld", s->code_ttl_s);
	for (int i = 0; i < 14; i++)
		argv[n++] = k[i];
	argv[n++] = s->user_id;
	argv[n++] = s->lb;
	argv[n++] = s->gpu;
	argv[n++] = s->mode;
	argv[n++] = s->category;
	argv[n++] = s->file_name;
	argv[n++] = s->code_sha;
	argv[n] = s->code; /* binary-safe: its length below */
	argvlen[n++] = s->code_len;
	argv[n++] = ms;
	argv[n++] = s->admin ? "1" : "0";
	argv[n++] = lim;
	argv[n++] = cap;
	argv[n++] = forget;
	argv[n++] = ttl;
	for (int i = 0; i < n; i++)
		if (argv[i] != s->code)
			argvlen[i] = strlen(argv[i]);
	r = kb__gw_eval(g, &rc, KB__GW_SUBMIT, 14, n, argv, argvlen);
	if (!r)
		return rc;
	rc = -EPROTO;
	if (r->type == REDIS_REPLY_ARRAY && r->elements >= 3 &&
	    r->element[0]->type == REDIS_REPLY_INTEGER) {
		if (r->element[0]->integer == 1 &&
		    r->element[1]->type == REDIS_REPLY_INTEGER &&
		    r->element[2]->type == REDIS_REPLY_STRING) {
			*id = (uint64_t)r->element[1]->integer;
			snprintf(user_name, name_size, "%s",
				 r->element[2]->str);
			rc = 0;
		} else if (r->element[0]->integer == 0 && r->elements == 4) {
			*status = (int)r->element[1]->integer;
			snprintf(why, why_size, "%s", r->element[2]->str);
			*retry_ms = r->element[3]->integer;
			rc = 1;
		}
	}
	freeReplyObject(r);
	return rc;
}

static const char mark_failed_lua[] =
	"if redis.call('HGET', KEYS[1], 'status') ~= 'queued' then return 0 end\n"
	"redis.call('HSET', KEYS[1], 'status', 'failed', 'verdict', "
	"'infra_error', 'error', ARGV[1], 'done_ms', ARGV[2])\n"
	"redis.call('ZREM', KEYS[2], ARGV[3])\n"
	"return 1\n";

int kb_gw_sub_mark_failed(const struct kb_gw *g, uint64_t id, const char *why)
{
	char err[256], key[64], ms[32], ids[32], gkey[256];
	redisContext *c = kb_gw_redis(g, err, sizeof(err));
	redisReply *gr, *r;
	int rc;

	if (!c)
		return -EIO;
	snprintf(key, sizeof(key), KB_KEY_SUB_N, id);
	gr = kb__gw_cmd(g, &rc, "HGET %s gpu", key);
	if (!gr)
		return rc;
	/* No gpu: the queue key of the empty name, which holds nothing. */
	snprintf(gkey, sizeof(gkey), KB_KEY_QUEUED,
		 gr->type == REDIS_REPLY_STRING ? gr->str : "");
	freeReplyObject(gr);
	snprintf(ms, sizeof(ms), "%" PRId64, kb_now_ms());
	snprintf(ids, sizeof(ids), "%" PRIu64, id);
	r = kb__gw_cmd(g, &rc, "EVAL %s 2 %s %s %s %s %s", mark_failed_lua, key,
		       gkey, why, ms, ids);
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

int kb_gw_sub_fetch(const struct kb_gw *g, uint64_t id, int with_code,
		    struct kb_gw_sub_rec *out)
{
	int rc;
	char err[256];
	redisReply *r[2] = {0};

	memset(out, 0, sizeof(*out));
	out->hash = kb__gw_cmd(g, &rc, "HGETALL " KB_KEY_SUB_N, id);
	if (!out->hash)
		return rc;
	const char *status = kb_gw_sub_field(out, "status");
	if (out->hash->type != REDIS_REPLY_ARRAY || out->hash->elements == 0 ||
	    (status && strcmp(status, "deleted") == 0) ||
	    kb_gw_sub_field(out, "deleted_ms")) {
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
	redisAppendCommand(c, "GET " KB_KEY_RESULT_N, id, gpu ? gpu : "");
	if (with_code)
		redisAppendCommand(c, "GET " KB_KEY_CODE, sha ? sha : "");
	rc = kb__gw_read_replies(c, r, with_code ? 2 : 1);
	if (rc < 0) {
		kb_gw_sub_rec_free(out);
		return rc;
	}
	out->res = r[0];
	out->code = r[1];
	return 0;
}

int kb_gw_sub_delete(const struct kb_gw *g, uint64_t id, const char *user_id,
		     char *lb, size_t lb_size, char *gpu, size_t gpu_size,
		     int *rank_changed)
{
	char key[64], ids[32], ms[32];
	const char *argv[4] = {key, ids, user_id ? user_id : "", ms};
	int rc;
	redisReply *r;

	snprintf(key, sizeof(key), KB_KEY_SUB_N, id);
	snprintf(ids, sizeof(ids), "%" PRIu64, id);
	snprintf(ms, sizeof(ms), "%" PRId64, kb_now_ms());
	r = kb__gw_eval(g, &rc, KB__GW_DELETE, 1, 4, argv, NULL);
	if (!r)
		return rc;
	rc = -EPROTO;
	if (r->type == REDIS_REPLY_ARRAY && r->elements >= 2 &&
	    r->element[0]->type == REDIS_REPLY_INTEGER) {
		if (r->element[0]->integer == 0)
			rc = r->element[1]->integer == 403 ? -EPERM : -ENOENT;
		else if (r->elements == 4) {
			snprintf(lb, lb_size, "%s", r->element[1]->str);
			snprintf(gpu, gpu_size, "%s", r->element[2]->str);
			*rank_changed = r->element[3]->integer == 1;
			rc = 0;
		}
	}
	freeReplyObject(r);
	return rc;
}

const char *const kb_gw_list_fields[] = {
	"lb",      "gpu",       "mode",    "file_name", "submitted_ms",
	"status",  "stage",     "verdict", "score",     "done_ms",
	"user_id", "user_name", NULL,
};
#define NLIST_FIELDS 12

const char *kb_gw_list_value(const redisReply *row, const char *field)
{
	for (size_t i = 0; kb_gw_list_fields[i]; i++)
		if (strcmp(kb_gw_list_fields[i], field) == 0) {
			if (!row || row->type != REDIS_REPLY_ARRAY ||
			    i >= row->elements ||
			    row->element[i]->type != REDIS_REPLY_STRING)
				return NULL;
			return row->element[i]->str;
		}
	return NULL;
}

void kb_gw_sub_list_free(struct kb_gw_sub_list *l)
{
	for (size_t i = 0; l->rows && i < l->n; i++)
		if (l->rows[i])
			freeReplyObject(l->rows[i]);
	free(l->rows);
	free(l->ids);
	memset(l, 0, sizeof(*l));
}

/* ZREVRANGE of an index, then one HMGET per id, pipelined. */
static int list_index(const struct kb_gw *g, const char *index, long offset,
		      long limit, struct kb_gw_sub_list *out)
{
	char err[256];
	int rc;
	redisReply *z;
	redisContext *c;

	memset(out, 0, sizeof(*out));
	z = kb__gw_cmd(g, &rc, "ZREVRANGE %s %ld %ld", index, offset,
		       offset + limit - 1);
	if (!z)
		return rc;
	if (z->type != REDIS_REPLY_ARRAY || z->elements == 0) {
		freeReplyObject(z);
		return 0;
	}
	out->ids = calloc(z->elements, sizeof(*out->ids));
	out->rows = calloc(z->elements, sizeof(*out->rows));
	c = kb_gw_redis(g, err, sizeof(err));
	if (!out->ids || !out->rows || !c) {
		freeReplyObject(z);
		kb_gw_sub_list_free(out);
		return c ? -ENOMEM : -EIO;
	}
	for (size_t i = 0; i < z->elements; i++) {
		const char *argv[2 + NLIST_FIELDS];
		char key[64];
		kb_parse_u64(z->element[i]->str, &out->ids[i]);
		snprintf(key, sizeof(key), KB_KEY_SUB, z->element[i]->str);
		argv[0] = "HMGET";
		argv[1] = key;
		for (int f = 0; f < NLIST_FIELDS; f++)
			argv[2 + f] = kb_gw_list_fields[f];
		redisAppendCommandArgv(c, 2 + NLIST_FIELDS, argv, NULL);
	}
	out->n = z->elements;
	freeReplyObject(z);
	rc = kb__gw_read_replies(c, out->rows, (int)out->n);
	if (rc < 0) {
		free(out->rows);
		out->rows = NULL;
		kb_gw_sub_list_free(out);
	}
	return rc;
}

int kb_gw_sub_list_user(const struct kb_gw *g, const char *user_id,
			const char *lb, long offset, long limit,
			struct kb_gw_sub_list *out)
{
	char index[256];

	if (lb)
		snprintf(index, sizeof(index), KB_KEY_SUBS_USER_BOARD, user_id,
			 lb);
	else
		snprintf(index, sizeof(index), KB_KEY_SUBS_USER, user_id);
	return list_index(g, index, offset, limit, out);
}

int kb_gw_sub_list_board(const struct kb_gw *g, const char *lb, long offset,
			 long limit, struct kb_gw_sub_list *out)
{
	char index[256];

	snprintf(index, sizeof(index), KB_KEY_SUBS_BOARD, lb);
	return list_index(g, index, offset, limit, out);
}

int kb_gw_queue_position(const struct kb_gw *g, const char *gpu, uint64_t id,
			 long *position)
{
	int rc;
	redisReply *r =
		kb__gw_cmd(g, &rc, "ZRANK " KB_KEY_QUEUED " %" PRIu64, gpu, id);

	if (!r)
		return rc;
	*position = r->type == REDIS_REPLY_INTEGER ? (long)r->integer + 1 : 0;
	freeReplyObject(r);
	return 0;
}

int kb_gw_queued_count(const struct kb_gw *g, const char *gpu, long *count)
{
	int rc;
	redisReply *r = kb__gw_cmd(g, &rc, "ZCARD " KB_KEY_QUEUED, gpu);

	if (!r)
		return rc;
	*count = r->type == REDIS_REPLY_INTEGER ? (long)r->integer : 0;
	freeReplyObject(r);
	return 0;
}

int kb_gw_store_job_event(const struct kb_gw *g, uint64_t id, const char *gpu,
			  int finished)
{
	char err[256];
	redisContext *c = kb_gw_redis(g, err, sizeof(err));
	redisReply *r[2] = {0};
	int rc;

	if (!c)
		return -EIO;
	redisAppendCommand(c, "ZREM " KB_KEY_QUEUED " %" PRIu64, gpu, id);
	if (finished)
		redisAppendCommand(c, "SREM " KB_KEY_RUNNING " %" PRIu64, gpu,
				   id);
	else
		redisAppendCommand(c, "SADD " KB_KEY_RUNNING " %" PRIu64, gpu,
				   id);
	rc = kb__gw_read_replies(c, r, 2);
	if (rc == 0)
		kb__gw_free_replies(r, 2);
	return rc;
}

int kb_gw_running_count(const struct kb_gw *g, const char *gpu, long *count)
{
	char err[256];
	int rc;
	redisReply *m = kb__gw_cmd(g, &rc, "SMEMBERS " KB_KEY_RUNNING, gpu);
	redisContext *c;

	*count = 0;
	if (!m)
		return rc;
	if (m->type != REDIS_REPLY_ARRAY || m->elements == 0) {
		freeReplyObject(m);
		return 0;
	}
	c = kb_gw_redis(g, err, sizeof(err));
	if (!c) {
		freeReplyObject(m);
		return -EIO;
	}
	for (size_t i = 0; i < m->elements; i++)
		redisAppendCommand(c, "HGET " KB_KEY_SUB " status",
				   m->element[i]->str);
	for (size_t i = 0; i < m->elements; i++) {
		redisReply *s;
		if ((rc = kb__gw_read_replies(c, &s, 1)) < 0)
			break;
		/* A worker reported it, so it runs, even while the ranker has
		 * not recorded "running" yet. Finished (or gone) while no
		 * gateway listened: forget it. */
		if (s->type == REDIS_REPLY_STRING &&
		    strcmp(s->str, "done") != 0 &&
		    strcmp(s->str, "failed") != 0 &&
		    strcmp(s->str, "deleted") != 0)
			(*count)++;
		else
			m->element[i]->type = REDIS_REPLY_NIL;
		freeReplyObject(s);
	}
	if (rc == 0)
		for (size_t i = 0; i < m->elements; i++)
			if (m->element[i]->type == REDIS_REPLY_NIL) {
				redisReply *x = kb__gw_cmd(
					g, &rc, "SREM " KB_KEY_RUNNING " %s",
					gpu, m->element[i]->str);
				if (x)
					freeReplyObject(x);
			}
	freeReplyObject(m);
	return rc;
}

static char *dup_field(const redisReply *r)
{
	return r && r->type == REDIS_REPLY_STRING ? strdup(r->str) : NULL;
}

int kb_gw_sub_state(const struct kb_gw *g, uint64_t id,
		    struct kb_gw_sub_state *out)
{
	int rc;
	redisReply *h;

	memset(out, 0, sizeof(*out));
	h = kb__gw_cmd(g, &rc,
		       "HMGET " KB_KEY_SUB_N " status stage stage_ms "
		       "submitted_ms gpu error deleted_ms",
		       id);
	if (!h)
		return rc;
	if (h->type != REDIS_REPLY_ARRAY || h->elements != 7 ||
	    h->element[0]->type != REDIS_REPLY_STRING) {
		freeReplyObject(h);
		return -ENOENT;
	}
	out->status = dup_field(h->element[0]);
	out->stage = dup_field(h->element[1]);
	out->stage_ms = h->element[2]->type == REDIS_REPLY_STRING
				? strtoll(h->element[2]->str, NULL, 10)
				: 0;
	out->submitted_ms = h->element[3]->type == REDIS_REPLY_STRING
				    ? strtoll(h->element[3]->str, NULL, 10)
				    : 0;
	out->gpu = dup_field(h->element[4]);
	out->error = dup_field(h->element[5]);
	if (h->element[6]->type == REDIS_REPLY_STRING) {
		free(out->status);
		out->status = strdup("deleted");
	}
	freeReplyObject(h);
	if (out->status && strcmp(out->status, "done") == 0) {
		out->res = kb__gw_cmd(g, &rc, "GET " KB_KEY_RESULT_N, id,
				      out->gpu ? out->gpu : "");
		if (out->res && out->res->type != REDIS_REPLY_STRING) {
			freeReplyObject(out->res);
			out->res = NULL;
		}
	}
	return rc;
}

void kb_gw_sub_state_free(struct kb_gw_sub_state *s)
{
	free(s->status);
	free(s->stage);
	free(s->gpu);
	free(s->error);
	if (s->res)
		freeReplyObject(s->res);
	memset(s, 0, sizeof(*s));
}

/* ---- rankings ---- */

int kb_gw_ranking_count(const struct kb_gw *g, const char *lb, const char *gpu,
			const char *user_id, long *count)
{
	int rc;
	redisReply *r =
		user_id ? kb__gw_cmd(g, &rc, "ZSCORE " KB_KEY_RANK " %s", lb,
				     gpu, user_id)
			: kb__gw_cmd(g, &rc, "ZCARD " KB_KEY_RANK, lb, gpu);

	if (!r)
		return rc;
	if (user_id)
		*count = r->type == REDIS_REPLY_STRING ? 1 : 0;
	else
		*count = r->type == REDIS_REPLY_INTEGER ? (long)r->integer : 0;
	freeReplyObject(r);
	return 0;
}

/* A member of kb:rankorder (ranker/ranking.lua): "<16 hex digits: the
 * score's bits>:<16 digits: submitted_ms>:<20 digits: submission id>:<user
 * id>", all digits zero-padded, 9999999999999999 and 0 for a best whose
 * submission is unknown. Returns 0, or -EPROTO for another shape. */
static int parse_member(const char *m, size_t len, struct kb_gw_rank_entry *e)
{
	char ms[17], id[21];
	const size_t head = 16 + 1 + 16 + 1 + 20 + 1;

	if (len <= head || len - head >= sizeof(e->user_id) || m[16] != ':' ||
	    m[33] != ':' || m[54] != ':')
		return -EPROTO;
	memcpy(ms, m + 17, 16);
	ms[16] = '\0';
	memcpy(id, m + 34, 20);
	id[20] = '\0';
	if (strspn(ms, "0123456789") != 16 || strspn(id, "0123456789") != 20)
		return -EPROTO;
	errno = 0;
	e->sub_id = strtoull(id, NULL, 10);
	if (errno)
		return -EPROTO;
	e->submitted_ms = strcmp(ms, "9999999999999999") == 0
				  ? INT64_MAX
				  : strtoll(ms, NULL, 10);
	memcpy(e->user_id, m + head, len - head);
	e->user_id[len - head] = '\0';
	return 0;
}

/* The ranker's rank_rebuild (ranking.lua), for an order out of step with
 * the scores: a ranking written before kb:rankorder existed. */
static int rebuild_order(const struct kb_gw *g, const char *lb, const char *gpu)
{
	char k[3][256];
	const char *argv[3] = {k[0], k[1], k[2]};
	redisReply *r;
	int rc;

	snprintf(k[0], sizeof(k[0]), KB_KEY_RANK, lb, gpu);
	snprintf(k[1], sizeof(k[1]), KB_KEY_RANK_INFO, lb, gpu);
	snprintf(k[2], sizeof(k[2]), KB_KEY_RANK_ORDER, lb, gpu);
	r = kb__gw_eval(g, &rc, KB__GW_RANK_REBUILD, 3, 3, argv, NULL);
	if (r)
		freeReplyObject(r);
	return rc;
}

/* ZCARD of the scores and of the order, and the page of the order. */
static int read_order(const struct kb_gw *g, const char *lb, const char *gpu,
		      long offset, long limit, long *nscores, long *norder,
		      redisReply **page)
{
	char err[256];
	redisContext *c = kb_gw_redis(g, err, sizeof(err));
	redisReply *r[3] = {0};
	int rc;

	if (!c)
		return -EIO;
	redisAppendCommand(c, "ZCARD " KB_KEY_RANK, lb, gpu);
	redisAppendCommand(c, "ZCARD " KB_KEY_RANK_ORDER, lb, gpu);
	redisAppendCommand(c, "ZRANGE " KB_KEY_RANK_ORDER " %ld %ld", lb, gpu,
			   offset, offset + limit - 1);
	rc = kb__gw_read_replies(c, r, 3);
	if (rc < 0)
		return rc;
	if (r[0]->type != REDIS_REPLY_INTEGER ||
	    r[1]->type != REDIS_REPLY_INTEGER ||
	    r[2]->type != REDIS_REPLY_ARRAY) {
		kb__gw_free_replies(r, 3);
		return -EPROTO;
	}
	*nscores = (long)r[0]->integer;
	*norder = (long)r[1]->integer;
	*page = r[2];
	kb__gw_free_replies(r, 2);
	return 0;
}

/* The order is the ranking (ranker/ranking.lua): a page is one ZRANGE, and
 * its entries' ranks are their positions. */
int kb_gw_ranking(const struct kb_gw *g, const char *lb, const char *gpu,
		  long offset, long limit, struct kb_gw_rank_entry **out,
		  size_t *n)
{
	char err[256];
	redisContext *c;
	redisReply *page = NULL;
	struct kb_gw_rank_entry *all = NULL;
	long nscores, norder;
	size_t count;
	int rc;

	*out = NULL;
	*n = 0;
	rc = read_order(g, lb, gpu, offset, limit, &nscores, &norder, &page);
	if (rc == 0 && nscores != norder) {
		freeReplyObject(page);
		page = NULL;
		rc = rebuild_order(g, lb, gpu);
		if (rc == 0)
			rc = read_order(g, lb, gpu, offset, limit, &nscores,
					&norder, &page);
	}
	if (rc < 0)
		return rc;
	count = page->elements;
	if (count == 0)
		goto done;
	all = calloc(count, sizeof(*all));
	c = kb_gw_redis(g, err, sizeof(err));
	if (!all || !c) {
		rc = all ? -EIO : -ENOMEM;
		goto done;
	}
	for (size_t i = 0; i < count; i++) {
		const redisReply *m = page->element[i];
		if (m->type != REDIS_REPLY_STRING ||
		    parse_member(m->str, m->len, &all[i]) < 0) {
			rc = -EPROTO;
			goto done;
		}
		all[i].rank = offset + (long)i + 1;
	}
	for (size_t i = 0; i < count; i++) {
		redisAppendCommand(c, "ZSCORE " KB_KEY_RANK " %s", lb, gpu,
				   all[i].user_id);
		redisAppendCommand(c, "HGET " KB_KEY_USER " name",
				   all[i].user_id);
		redisAppendCommand(c, "HGET " KB_KEY_SUB_N " file_name",
				   all[i].sub_id);
	}
	for (size_t i = 0; i < count; i++) {
		redisReply *f[3];
		rc = kb__gw_read_replies(c, f, 3);
		if (rc < 0) {
			/* read_replies dropped the connection: the rest of the
			 * pipeline is gone with it. */
			goto done;
		}
		if (f[0]->type == REDIS_REPLY_STRING) {
			snprintf(all[i].score_text, sizeof(all[i].score_text),
				 "%s", f[0]->str);
			all[i].score = strtod(all[i].score_text, NULL);
		}
		if (f[1]->type == REDIS_REPLY_STRING)
			snprintf(all[i].user_name, sizeof(all[i].user_name),
				 "%s", f[1]->str);
		if (f[2]->type == REDIS_REPLY_STRING)
			snprintf(all[i].file_name, sizeof(all[i].file_name),
				 "%s", f[2]->str);
		kb__gw_free_replies(f, 3);
	}
	*out = all;
	*n = count;
	all = NULL;
done:
	free(all);
	if (page)
		freeReplyObject(page);
	return rc;
}
