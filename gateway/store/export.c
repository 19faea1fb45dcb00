/* kb_gw_store, the dataset export's reads (see store.h, "dataset
 * export"): the best ranked and passing submission per (user, code, gpu)
 * of a board, and one export row's record and code. */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "kb_keys.h"
#include "kb_log.h"
#include "kb_mode.h"
#include "kb_util.h"
#include "store.h"

/* Submissions read per ZSCAN step (one pipeline of HMGETs). */
#define SCAN_COUNT 512

static const char *const pick_fields[] = {"mode",  "status",      "verdict",
					  "score", "user_id",     "code_sha",
					  "gpu",   "submitted_ms"};
#define NPICK_FIELDS (sizeof(pick_fields) / sizeof(pick_fields[0]))

struct picks {
	struct kb_gw_export_pick *v;
	size_t n, cap, kept; /* kept: entries after the last compaction */
};

static const char *field(const redisReply *row, size_t i)
{
	const redisReply *e = row->type == REDIS_REPLY_ARRAY &&
					      i < row->elements
				      ? row->element[i]
				      : NULL;
	return e && e->type == REDIS_REPLY_STRING ? e->str : NULL;
}

/* The group, then the best first: lower score, earlier, lower id (the
 * ranking order of docs/internals.md). */
static int by_group(const void *a, const void *b)
{
	const struct kb_gw_export_pick *x = a, *y = b;
	int c = strcmp(x->user_id, y->user_id);

	if (!c)
		c = strcmp(x->code_sha, y->code_sha);
	if (!c)
		c = strcmp(x->gpu, y->gpu);
	if (c)
		return c;
	return kb_gw_export_pick_cmp(x, y);
}

int kb_gw_export_pick_cmp(const struct kb_gw_export_pick *x,
			  const struct kb_gw_export_pick *y)
{
	if (x->score != y->score)
		return x->score < y->score ? -1 : 1;
	if (x->submitted_ms != y->submitted_ms)
		return x->submitted_ms < y->submitted_ms ? -1 : 1;
	return x->id < y->id ? -1 : x->id > y->id;
}

static int by_order(const void *a, const void *b)
{
	return kb_gw_export_pick_cmp(a, b);
}

/* Keeps the best entry of each group: the array holds at most one entry
 * per group afterwards. */
static void compact(struct picks *p)
{
	size_t k = 0;

	qsort(p->v, p->n, sizeof(*p->v), by_group);
	for (size_t i = 0; i < p->n; i++) {
		if (k && strcmp(p->v[k - 1].user_id, p->v[i].user_id) == 0 &&
		    strcmp(p->v[k - 1].code_sha, p->v[i].code_sha) == 0 &&
		    strcmp(p->v[k - 1].gpu, p->v[i].gpu) == 0)
			continue;
		p->v[k++] = p->v[i];
	}
	p->n = p->kept = k;
}

static int copy(char *dst, size_t size, const char *s)
{
	size_t n = s ? strlen(s) : 0;

	if (!n || n >= size)
		return -1;
	memcpy(dst, s, n + 1);
	return 0;
}

int kb_gw_ranked_pass(const char *mode, const char *status, const char *verdict,
		      const char *score, double *seconds)
{
	char *end;
	double v;

	if (kb_mode_parse(mode) != KB_MODE_LEADERBOARD || !status ||
	    strcmp(status, "done") != 0 || !verdict ||
	    strcmp(verdict, "passed") != 0 || !score || !*score)
		return 0;
	v = strtod(score, &end);
	if (*end || !isfinite(v) || v <= 0)
		return 0;
	if (seconds)
		*seconds = v;
	return 1;
}

/* Adds the submission of row when it is ranked and passing. */
static int consider(struct picks *p, uint64_t id, const redisReply *row)
{
	const char *score = field(row, 3);
	struct kb_gw_export_pick e = {.id = id};

	if (!kb_gw_ranked_pass(field(row, 0), field(row, 1), field(row, 2),
			       score, &e.score))
		return 0;
	if (copy(e.user_id, sizeof(e.user_id), field(row, 4)) ||
	    copy(e.code_sha, sizeof(e.code_sha), field(row, 5)) ||
	    copy(e.gpu, sizeof(e.gpu), field(row, 6)))
		return 0;
	e.submitted_ms = field(row, 7) ? strtoll(field(row, 7), NULL, 10) : 0;
	if (p->n == p->cap) {
		size_t cap = p->cap ? p->cap * 2 : 256;
		void *v = realloc(p->v, cap * sizeof(*p->v));
		if (!v)
			return -ENOMEM;
		p->v = v;
		p->cap = cap;
	}
	p->v[p->n++] = e;
	return 0;
}

/* HMGETs the pick fields of the ids in keys (a ZSCAN page: member,
 * score, member, score...) in one pipeline and considers each. */
static int scan_page(const struct kb_gw *g, const redisReply *keys,
		     struct picks *p)
{
	char err[256];
	redisContext *c = kb_gw_redis(g, err, sizeof(err));
	size_t n = keys->elements / 2, sent = 0;
	uint64_t *ids;
	redisReply **rows;
	int rc = 0;

	if (!c)
		return -EIO;
	if (!n)
		return 0;
	ids = calloc(n, sizeof(*ids));
	rows = calloc(n, sizeof(*rows));
	if (!ids || !rows) {
		free(ids);
		free(rows);
		return -ENOMEM;
	}
	for (size_t i = 0; i < n; i++) {
		const char *argv[2 + NPICK_FIELDS];
		char key[64];
		const redisReply *m = keys->element[2 * i];
		if (m->type != REDIS_REPLY_STRING ||
		    kb_parse_u64(m->str, &ids[sent]))
			continue;
		snprintf(key, sizeof(key), KB_KEY_SUB, m->str);
		argv[0] = "HMGET";
		argv[1] = key;
		for (size_t f = 0; f < NPICK_FIELDS; f++)
			argv[2 + f] = pick_fields[f];
		redisAppendCommandArgv(c, (int)(2 + NPICK_FIELDS), argv, NULL);
		sent++;
	}
	rc = kb__gw_read_replies(c, rows, (int)sent);
	for (size_t i = 0; rc == 0 && i < sent; i++)
		rc = consider(p, ids[i], rows[i]);
	if (rc != -EIO)
		kb__gw_free_replies(rows, (int)sent);
	free(ids);
	free(rows);
	return rc;
}

int kb_gw_export_picks(const struct kb_gw *g, const char *lb,
		       struct kb_gw_export_pick **out, size_t *n)
{
	struct picks p = {0};
	char cursor[32] = "0";
	int rc = 0;

	*out = NULL;
	*n = 0;
	do {
		redisReply *r = kb__gw_cmd(g, &rc,
					   "ZSCAN " KB_KEY_SUBS_BOARD
					   " %s COUNT %d",
					   lb, cursor, SCAN_COUNT);
		if (!r)
			break;
		if (r->type != REDIS_REPLY_ARRAY || r->elements != 2 ||
		    r->element[0]->type != REDIS_REPLY_STRING ||
		    r->element[1]->type != REDIS_REPLY_ARRAY ||
		    r->element[0]->len >= sizeof(cursor)) {
			freeReplyObject(r);
			rc = -EPROTO;
			break;
		}
		snprintf(cursor, sizeof(cursor), "%s", r->element[0]->str);
		rc = scan_page(g, r->element[1], &p);
		freeReplyObject(r);
		/* The bound: at most twice one entry per group, plus a page. */
		if (rc == 0 && p.n > 2 * p.kept + SCAN_COUNT)
			compact(&p);
	} while (rc == 0 && strcmp(cursor, "0") != 0);
	if (rc < 0) {
		free(p.v);
		return rc;
	}
	compact(&p);
	qsort(p.v, p.n, sizeof(*p.v), by_order);
	*out = p.v;
	*n = p.n;
	return 0;
}

int kb_gw_export_row(const struct kb_gw *g, const struct kb_gw_export_pick *pk,
		     struct kb_gw_export_rec *out)
{
	char err[256], key[64], code_key[128];
	redisContext *c = kb_gw_redis(g, err, sizeof(err));
	int rc;

	memset(out, 0, sizeof(*out));
	if (!c)
		return -EIO;
	snprintf(key, sizeof(key), KB_KEY_SUB_N, pk->id);
	snprintf(code_key, sizeof(code_key), KB_KEY_CODE, pk->code_sha);
	redisAppendCommand(c, "HMGET %s user_name file_name", key);
	redisAppendCommand(c, "HGET " KB_KEY_USER " name", pk->user_id);
	redisAppendCommand(c, "GET %s", code_key);
	rc = kb__gw_read_replies(c, out->r, 3);
	if (rc < 0) {
		memset(out, 0, sizeof(*out));
		return rc;
	}
	if (out->r[0]->type != REDIS_REPLY_ARRAY || out->r[0]->elements != 2 ||
	    out->r[1]->type == REDIS_REPLY_ERROR ||
	    out->r[2]->type == REDIS_REPLY_ERROR) {
		kb_gw_export_rec_free(out);
		return -EPROTO;
	}
	/* The user's name now (upstream joins its user table), else the
	 * name recorded with the submission. */
	out->user_name = out->r[1]->type == REDIS_REPLY_STRING
				 ? out->r[1]->str
				 : field(out->r[0], 0);
	out->file_name = field(out->r[0], 1);
	if (out->r[2]->type == REDIS_REPLY_STRING) {
		out->code = out->r[2]->str;
		out->code_len = out->r[2]->len;
	}
	return 0;
}

void kb_gw_export_rec_free(struct kb_gw_export_rec *rec)
{
	kb__gw_free_replies(rec->r, 3);
	memset(rec, 0, sizeof(*rec));
}
