/* The web pages' reads: Redis into the page models of render.h.
 *
 * Each loader fills a model that owns its memory (free it with the
 * matching _free call; strings point into the Redis replies the model
 * keeps). Rankings come from kb_gw_ranking (the API's order and ties);
 * histories from kb:hist / kb:uhist (docs/internals.md), the newest
 * HIST_MAX entries. Reads only; every call uses this thread's connection.
 * Return codes are the store's: 0, -ENOENT, -EIO, -EPROTO, -ENOMEM.
 */
#include "data.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/events.h"
#include "kb_keys.h"
#include "kb_seal.h"
#include "kb_util.h"
#include "store/internal.h"

#define RANK_MAX 500
#define HIST_MAX 5000
#define USER_HIST_MAX 1000
#define PODIUM 3
#define REFERENCE_MAX (256u << 10)

/* Live boards anyone may read. */
static int public_board(const struct kb_gw_lb *lb)
{
	return lb && !atomic_load(&lb->deleted) && !atomic_load(&lb->closed);
}

/* Parses "<id>:<score>:<rest>" (rest may hold ':'). Returns 0 or -1. */
static int parse_member(const char *m, uint64_t *id, double *score,
			const char **rest)
{
	char *end;

	*id = strtoull(m, &end, 10);
	if (end == m || *end != ':')
		return -1;
	*score = strtod(end + 1, &end);
	if (*end != ':' || !(*score > 0))
		return -1;
	*rest = end + 1;
	return 0;
}

/* ZRANGE key -max -1 WITHSCORES on this thread's connection. */
static redisReply *tail_of(const struct kb_gw *g, const char *key, long max,
			   int *rc)
{
	return kb__gw_cmd(g, rc, "ZRANGE %s %ld -1 WITHSCORES", key, -max);
}

int kb_web_workers(struct kb_gw *g, const char *gpu)
{
	struct kb_gw_outlook o;

	if (!g->events)
		return KB_WEB_WORKERS_UNKNOWN;
	kb_gw_events_outlook(g->events, gpu, 0, kb_now_ms(),
			     g->cfg.worker_stale_s * 1000, &o);
	return o.workers < 0 ? KB_WEB_WORKERS_UNKNOWN : o.workers;
}

/* ---- a board ---- */

static struct kb_web_rank web_rank(const struct kb_gw_rank_entry *e)
{
	return (struct kb_web_rank){
		e->rank,
		e->user_id,
		e->user_name,
		e->score,
		e->submitted_ms == INT64_MAX ? 0 : e->submitted_ms,
		e->sub_id};
}

/* The task's reference file into m->reference (none when it has none or
 * it cannot be read: the page says so, the board still shows). */
static void load_reference(const struct kb_task *t,
			   struct kb_web_board_model *m)
{
	const char *names[64];
	size_t n = 0, len = 0;
	char err[512];

	for (size_t i = 0; i < t->nfiles && n < 64; i++)
		names[n++] = t->files[i].name;
	int i = kb_web_reference_file(names, n);
	if (i < 0 || !t->dir)
		return;
	/* A synced board's files are untrusted input: kb_task_read keeps
	 * the read inside its source. */
	if (kb_task_read(t, t->files[i].source, REFERENCE_MAX, &m->reference,
			 &len, err, sizeof(err)) < 0) {
		m->reference = NULL;
		return;
	}
	m->bd.reference_name = t->files[i].name;
	m->bd.reference = m->reference;
}

static int load_gpu(struct kb_gw *g, const struct kb_gw_lb *lb, size_t k,
		    struct kb_web_board_model *m)
{
	const char *gpu = lb->task->gpus[k];
	struct kb_web_gpu *wg = &m->gpus[k];
	char key[300];
	size_t n = 0;
	long count = 0;
	int rc;

	wg->gpu = gpu;
	wg->workers = kb_web_workers(g, gpu);
	rc = kb_gw_ranking(g, lb->task->name, gpu, 0, RANK_MAX, &m->entries[k],
			   &n);
	if (rc < 0)
		return rc;
	rc = kb_gw_ranking_count(g, lb->task->name, gpu, NULL, &count);
	if (rc < 0)
		return rc;
	m->ranks[k] = calloc(n ? n : 1, sizeof(*m->ranks[k]));
	if (!m->ranks[k])
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		const struct kb_gw_rank_entry *e = &m->entries[k][i];
		m->ranks[k][i] = web_rank(e);
	}
	wg->rank = m->ranks[k];
	wg->nrank = n;
	wg->nranked = count;

	snprintf(key, sizeof(key), KB_KEY_HIST, lb->task->name, gpu);
	m->hist_replies[k] = tail_of(g, key, HIST_MAX, &rc);
	if (!m->hist_replies[k])
		return rc;
	const redisReply *h = m->hist_replies[k];
	size_t nh = h->type == REDIS_REPLY_ARRAY ? h->elements / 2 : 0;
	m->points[k] = calloc(nh ? nh : 1, sizeof(*m->points[k]));
	if (!m->points[k])
		return -ENOMEM;
	size_t np = 0;
	for (size_t i = 0; i < nh; i++) {
		struct kb_web_point *p = &m->points[k][np];
		const char *user;
		if (parse_member(h->element[2 * i]->str, &p->sub_id, &p->score,
				 &user) < 0)
			continue;
		p->user_id = user;
		p->t_ms = (int64_t)strtod(h->element[2 * i + 1]->str, NULL);
		np++;
	}
	wg->hist = m->points[k];
	wg->nhist = np;
	return 0;
}

int kb_web_load_board(struct kb_gw *g, const struct kb_gw_lb *lb,
		      struct kb_web_board_model *m)
{
	const struct kb_task *t = lb->task;
	size_t ng = t->ngpus;
	int rc = 0;

	memset(m, 0, sizeof(*m));
	if (!public_board(lb))
		return -ENOENT;
	m->ngpus = ng;
	m->gpus = calloc(ng ? ng : 1, sizeof(*m->gpus));
	m->entries = calloc(ng ? ng : 1, sizeof(*m->entries));
	m->ranks = calloc(ng ? ng : 1, sizeof(*m->ranks));
	m->hist_replies = calloc(ng ? ng : 1, sizeof(*m->hist_replies));
	m->points = calloc(ng ? ng : 1, sizeof(*m->points));
	m->templates = calloc(t->ntemplates ? t->ntemplates : 1,
			      sizeof(*m->templates));
	if (!m->gpus || !m->entries || !m->ranks || !m->hist_replies ||
	    !m->points || !m->templates)
		return -ENOMEM;
	for (size_t k = 0; k < ng && rc == 0; k++)
		rc = load_gpu(g, lb, k, m);
	for (size_t i = 0; i < t->ntemplates; i++)
		m->templates[i] = t->templates[i].key;
	m->bd = (struct kb_web_board){
		.name = t->name,
		.lang = t->lang,
		.description = t->description,
		.ranking_by = t->ranking_by,
		.deadline = t->deadline,
		.deadline_ms = lb->deadline_ms,
		.templates = m->templates,
		.ntemplates = t->ntemplates,
		.gpus = m->gpus,
		.ngpus = ng,
		.not_sealed = kb_seal_not_sealed(t),
	};
	if (rc == 0)
		load_reference(t, m);
	return rc;
}

void kb_web_board_free(struct kb_web_board_model *m)
{
	for (size_t k = 0; k < m->ngpus; k++) {
		if (m->entries)
			free(m->entries[k]);
		if (m->ranks)
			free(m->ranks[k]);
		if (m->points)
			free(m->points[k]);
		if (m->hist_replies && m->hist_replies[k])
			freeReplyObject(m->hist_replies[k]);
	}
	free(m->gpus);
	free(m->entries);
	free(m->ranks);
	free(m->hist_replies);
	free(m->points);
	free(m->templates);
	free(m->reference);
	memset(m, 0, sizeof(*m));
}

/* ---- the index ---- */

/* Adds the members of a ranking to the set of participants (a sorted,
 * deduplicated array of strings owned by the replies). */
static int add_members(const redisReply *r, const char ***set, size_t *n,
		       size_t *cap)
{
	for (size_t i = 0; r && r->type == REDIS_REPLY_ARRAY && i < r->elements;
	     i++) {
		const char *u = r->element[i]->str;
		size_t j = 0;
		while (j < *n && strcmp((*set)[j], u) != 0)
			j++;
		if (j < *n)
			continue;
		if (*n == *cap) {
			size_t nc = *cap ? *cap * 2 : 64;
			const char **s = realloc(*set, nc * sizeof(*s));
			if (!s)
				return -ENOMEM;
			*set = s;
			*cap = nc;
		}
		(*set)[(*n)++] = u;
	}
	return 0;
}

/* A board's podium per gpu and its participants (added to users). */
static int load_index_gpus(struct kb_gw *g, const struct kb_task *t,
			   struct kb_web_index_own *o, const char ***users,
			   size_t *nusers, size_t *cap)
{
	size_t ng = t->ngpus;
	int rc = 0;

	o->top = calloc(ng ? ng : 1, sizeof(*o->top));
	o->ntop = calloc(ng ? ng : 1, sizeof(*o->ntop));
	o->entries = calloc(ng ? ng : 1, sizeof(*o->entries));
	o->members = calloc(ng ? ng : 1, sizeof(*o->members));
	o->workers = calloc(ng ? ng : 1, sizeof(*o->workers));
	o->ngpus = ng;
	if (!o->top || !o->ntop || !o->entries || !o->members || !o->workers)
		return -ENOMEM;
	for (size_t k = 0; k < ng && rc == 0; k++) {
		char key[300];
		size_t n = 0;
		o->workers[k] = kb_web_workers(g, t->gpus[k]);
		rc = kb_gw_ranking(g, t->name, t->gpus[k], 0, PODIUM,
				   &o->entries[k], &n);
		if (rc < 0)
			break;
		o->top[k] = calloc(n ? n : 1, sizeof(**o->top));
		if (!o->top[k])
			return -ENOMEM;
		for (size_t i = 0; i < n; i++)
			o->top[k][i] = web_rank(&o->entries[k][i]);
		o->ntop[k] = n;
		snprintf(key, sizeof(key), KB_KEY_RANK, t->name, t->gpus[k]);
		o->members[k] = kb__gw_cmd(g, &rc, "ZRANGE %s 0 -1", key);
		if (!o->members[k])
			break;
		rc = add_members(o->members[k], users, nusers, cap);
	}
	return rc;
}

int kb_web_load_index(struct kb_gw *g, struct kb_web_index_model *m)
{
	size_t nb = kb_gw_lb_count(g);
	int rc = 0;

	memset(m, 0, sizeof(*m));
	m->rows = calloc(nb ? nb : 1, sizeof(*m->rows));
	m->own = calloc(nb ? nb : 1, sizeof(*m->own));
	if (!m->rows || !m->own)
		return -ENOMEM;
	for (size_t i = 0; i < nb && rc == 0; i++) {
		const struct kb_gw_lb *lb = kb_gw_lb_at(g, i);
		if (!public_board(lb))
			continue;
		const struct kb_task *t = lb->task;
		struct kb_web_index_own *o = &m->own[m->n];
		size_t ng = t->ngpus;
		const char **users = NULL;
		size_t nusers = 0, cap = 0;
		rc = load_index_gpus(g, t, o, &users, &nusers, &cap);
		free(users);
		if (rc < 0) {
			m->n++; /* kb_web_index_free frees what o holds */
			break;
		}
		/* The description's first non-empty line, as a summary (a
		 * Markdown heading's marks dropped). */
		const char *d = t->description ? t->description : "";
		while (*d == '\n' || *d == ' ' || *d == '#')
			d++;
		size_t len = strcspn(d, "\n");
		o->summary = strndup(d, len > 200 ? 200 : len);
		m->rows[m->n] = (struct kb_web_index_row){
			.name = t->name,
			.lang = t->lang,
			.summary = o->summary,
			.deadline_ms = lb->deadline_ms,
			.gpus = (const char *const *)t->gpus,
			.ngpus = ng,
			.top = (const struct kb_web_rank *const *)o->top,
			.ntop = o->ntop,
			.participants = (long)nusers,
			.workers = o->workers,
		};
		m->n++;
	}
	return rc;
}

void kb_web_index_free(struct kb_web_index_model *m)
{
	for (size_t i = 0; m->own && i < m->n; i++) {
		struct kb_web_index_own *o = &m->own[i];
		for (size_t k = 0; k < o->ngpus; k++) {
			if (o->entries)
				free(o->entries[k]);
			if (o->top)
				free(o->top[k]);
			if (o->members && o->members[k])
				freeReplyObject(o->members[k]);
		}
		free(o->top);
		free(o->ntop);
		free(o->entries);
		free(o->members);
		free(o->workers);
		free(o->summary);
	}
	free(m->rows);
	free(m->own);
	memset(m, 0, sizeof(*m));
}

/* ---- a user ---- */

int kb_web_load_user(struct kb_gw *g, const char *user_id,
		     struct kb_web_user_model *m)
{
	char err[256], key[200];
	size_t nb = kb_gw_lb_count(g), nq = 0;
	int rc;

	memset(m, 0, sizeof(*m));
	m->name = kb__gw_cmd(g, &rc, "HGET " KB_KEY_USER " name", user_id);
	if (!m->name)
		return rc;
	if (m->name->type != REDIS_REPLY_STRING)
		return -ENOENT;
	/* Every (board, gpu) pair: ZSCORE, ZCARD; then the rank of each hit. */
	size_t npairs = 0;
	for (size_t i = 0; i < nb; i++) {
		const struct kb_gw_lb *lb = kb_gw_lb_at(g, i);
		if (public_board(lb))
			npairs += lb->task->ngpus;
	}
	m->best = calloc(npairs ? npairs : 1, sizeof(*m->best));
	redisReply **r = calloc(2 * (npairs ? npairs : 1), sizeof(*r));
	if (!m->best || !r) {
		free(r);
		return -ENOMEM;
	}
	redisContext *c = kb_gw_redis(g, err, sizeof(err));
	if (!c) {
		free(r);
		return -EIO;
	}
	for (size_t i = 0; i < nb; i++) {
		const struct kb_gw_lb *lb = kb_gw_lb_at(g, i);
		if (!public_board(lb))
			continue;
		for (size_t k = 0; k < lb->task->ngpus; k++) {
			snprintf(key, sizeof(key), KB_KEY_RANK, lb->task->name,
				 lb->task->gpus[k]);
			redisAppendCommand(c, "ZSCORE %s %s", key, user_id);
			redisAppendCommand(c, "ZCARD %s", key);
			m->best[nq++] = (struct kb_web_user_best){
				lb->task->name, lb->task->gpus[k], 0, 0, 0};
		}
	}
	rc = kb__gw_read_replies(c, r, (int)(2 * nq));
	if (rc < 0) {
		free(r);
		return rc;
	}
	for (size_t q = 0; q < nq; q++) {
		struct kb_web_user_best *b = &m->best[m->nbest];
		if (r[2 * q]->type != REDIS_REPLY_STRING)
			continue;
		*b = m->best[q];
		b->score = strtod(r[2 * q]->str, NULL);
		b->nranked = r[2 * q + 1]->type == REDIS_REPLY_INTEGER
				     ? (long)r[2 * q + 1]->integer
				     : 0;
		m->nbest++;
	}
	kb__gw_free_replies(r, (int)(2 * nq));
	free(r);
	/* Rank: users strictly better, plus one (ties share a rank here). */
	for (size_t i = 0; i < m->nbest; i++) {
		struct kb_web_user_best *b = &m->best[i];
		snprintf(key, sizeof(key), KB_KEY_RANK, b->lb, b->gpu);
		redisReply *x = kb__gw_cmd(g, &rc, "ZCOUNT %s -inf (%.17g", key,
					   b->score);
		if (!x)
			return rc;
		b->rank = (x->type == REDIS_REPLY_INTEGER ? (long)x->integer
							  : 0) +
			  1;
		freeReplyObject(x);
	}
	snprintf(key, sizeof(key), KB_KEY_USER_HIST, user_id);
	m->hist = tail_of(g, key, USER_HIST_MAX, &rc);
	if (!m->hist)
		return rc;
	size_t nh = m->hist->type == REDIS_REPLY_ARRAY ? m->hist->elements / 2
						       : 0;
	m->pts = calloc(nh ? nh : 1, sizeof(*m->pts));
	m->lbgpu = calloc(nh ? nh : 1, sizeof(*m->lbgpu));
	if (!m->pts || !m->lbgpu)
		return -ENOMEM;
	for (size_t i = 0; i < nh; i++) {
		struct kb_web_user_point *p = &m->pts[m->npts];
		const char *rest;
		if (parse_member(m->hist->element[2 * i]->str, &p->sub_id,
				 &p->score, &rest) < 0)
			continue;
		/* rest is "<lb>:<gpu>": split a copy, and keep only boards that
		 * are still public. */
		char *lbgpu = strdup(rest),
		     *colon = lbgpu ? strchr(lbgpu, ':') : NULL;
		if (!colon) {
			free(lbgpu);
			continue;
		}
		*colon = '\0';
		const struct kb_gw_lb *lb = kb_gw_lb_find(g, lbgpu);
		if (!public_board(lb)) {
			free(lbgpu);
			continue;
		}
		p->lb = lbgpu;
		p->gpu = colon + 1;
		p->t_ms =
			(int64_t)strtod(m->hist->element[2 * i + 1]->str, NULL);
		m->lbgpu[m->npts++] = lbgpu;
	}
	return 0;
}

void kb_web_user_free(struct kb_web_user_model *m)
{
	for (size_t i = 0; m->lbgpu && i < m->npts; i++)
		free(m->lbgpu[i]);
	free(m->lbgpu);
	free(m->pts);
	free(m->best);
	if (m->name)
		freeReplyObject(m->name);
	if (m->hist)
		freeReplyObject(m->hist);
	memset(m, 0, sizeof(*m));
}
