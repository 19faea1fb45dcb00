/* reconcile: the queue's reconciler (see reconcile.h). */
#include "reconcile.h"

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#include "base/reconcile_rules.h"
#include "kb_kafka.h"
#include "kb_log.h"
#include "kb_mode.h"
#include "kb_util.h"
#include "store/store.h"
#include "submit.h"

#define LOG_TIMEOUT_MS 5000
#define QUEUED_MAX 1000000L

/* Reads the submissions topic's log of gpu. */
static int read_log(struct kb_gw *g, const char *gpu, struct kb_gw_log *log)
{
	char topic[256], err[256];
	int32_t parts[KB_GW_RECONCILE_PARTS];
	int n;

	memset(log, 0, sizeof(*log));
	if (kb_topic_submissions(topic, sizeof(topic), gpu) < 0)
		return -EINVAL;
	if (kb_producer_cluster_id(g->producer, log->cluster,
				   sizeof(log->cluster), LOG_TIMEOUT_MS, err,
				   sizeof(err)) < 0 ||
	    kb_producer_partitions(g->producer, topic, parts,
				   KB_GW_RECONCILE_PARTS, &n, LOG_TIMEOUT_MS,
				   err, sizeof(err)) < 0)
		goto fail;
	log->nparts = 0;
	for (int i = 0; i < n; i++) {
		int32_t p = parts[i];

		if (p < 0 || p >= KB_GW_RECONCILE_PARTS)
			continue;
		if (kb_producer_watermarks(g->producer, topic, p, &log->low[p],
					   &log->high[p], LOG_TIMEOUT_MS, err,
					   sizeof(err)) < 0)
			goto fail;
		if (p + 1 > log->nparts)
			log->nparts = p + 1;
	}
	return 0;
fail:
	kb_warn("reconcile: gpu=%s: %s (skipped this pass)", gpu, err);
	return -EIO;
}

static const char *field(const struct kb_gw_sub_rec *rec, const char *name)
{
	const char *v = kb_gw_sub_field(rec, name);

	return v ? v : "";
}

/* Ends a submission whose message is lost as the platform's fault. */
static void end_lost(struct kb_gw *g, uint64_t id, const char *why)
{
	char msg[384];

	snprintf(msg, sizeof(msg),
		 "the submission queue lost this submission (%s); this is the "
		 "platform's fault, not yours: please submit it again",
		 why);
	kb_error("reconcile: sub=%" PRIu64 " ended: %s", id, why);
	if (kb_gw_sub_mark_failed(g, id, msg) == 0)
		kb_gw_push_state(g, NULL, id);
}

/* Publishes q's Submission again, rebuilt from its record. Returns 1 when
 * published, 0 when nothing was done, -1 when it was ended instead. */
static int republish(struct kb_gw *g, const struct kb_gw_queued *q,
		     long max_republish)
{
	struct kb_gw_sub_rec rec;
	const struct kb_gw_lb *lb;
	Kb__ProfileRequest *profile = NULL;
	struct kb_gw_sub s;
	const char *pf;
	enum kb_mode mode;
	long count;
	int rc;

	if (kb_gw_sub_fetch(g, q->id, 1, &rec) < 0)
		return 0;
	lb = kb_gw_lb_find(g, field(&rec, "lb"));
	mode = kb_mode_parse(field(&rec, "mode"));
	if (!lb || mode == KB_MODE_INVALID) {
		kb_gw_sub_rec_free(&rec);
		end_lost(g, q->id, "its leaderboard is no longer hosted");
		return -1;
	}
	if (!rec.code || rec.code->type != REDIS_REPLY_STRING) {
		kb_gw_sub_rec_free(&rec);
		end_lost(g, q->id, "its code is no longer stored");
		return -1;
	}
	if (kb_gw_sub_republish_begin(g, q, &count) < 0 || count == 0) {
		kb_gw_sub_rec_free(&rec);
		return 0;
	}
	pf = kb_gw_sub_field(&rec, "profile");
	if (pf && *pf)
		profile = kb__profile_request__unpack(NULL, strlen(pf),
						      (const uint8_t *)pf);
	s = (struct kb_gw_sub){
		.user_id = field(&rec, "user_id"),
		.lb = lb->task->name,
		.gpu = field(&rec, "gpu"),
		.mode = kb_mode_name(mode),
		.file_name = field(&rec, "file_name"),
		.code = rec.code->str,
		.code_len = rec.code->len,
		.submitted_ms = strtoll(field(&rec, "submitted_ms"), NULL, 10),
	};
	rc = kb_gw_publish(g, lb, mode, q->id, &s, field(&rec, "user_name"),
			   profile);
	if (rc < 0)
		kb_warn("reconcile: sub=%" PRIu64 " not re-published (%d)",
			q->id, rc);
	else
		kb_warn("reconcile: sub=%" PRIu64
			" gpu=%s was no longer in the "
			"queue's log: re-published (%ld of %ld)",
			q->id, s.gpu, count, max_republish);
	/* s points into rec. */
	if (profile)
		kb__profile_request__free_unpacked(profile, NULL);
	kb_gw_sub_rec_free(&rec);
	return rc < 0 ? 0 : 1;
}

/* The GPU types of the live boards, each once: *n names into gpus. */
static size_t board_gpus(struct kb_gw *g, const char **gpus, size_t max)
{
	size_t n = 0, nb = kb_gw_lb_count(g);

	for (size_t b = 0; b < nb; b++) {
		const struct kb_gw_lb *lb = kb_gw_lb_at(g, b);

		if (!lb || atomic_load(&lb->deleted))
			continue;
		for (size_t k = 0; k < lb->task->ngpus; k++) {
			size_t j = 0;

			while (j < n &&
			       strcasecmp(gpus[j], lb->task->gpus[k]) != 0)
				j++;
			if (j == n && n < max)
				gpus[n++] = lb->task->gpus[k];
		}
	}
	return n;
}

static int reconcile_gpu(struct kb_gw *g, const char *gpu,
			 struct kb_gw_reconcile_stats *st)
{
	const int64_t grace_ms = g->cfg.reconcile_grace_s * 1000;
	struct kb_gw_queued *q;
	struct kb_gw_log log;
	size_t n;
	/* The records first, then the log: a place recorded before the list
	 * was read is then below the high mark read after it (the broker
	 * had acknowledged it), so a message in flight is never taken for
	 * one past the end. */
	int rc = kb_gw_queued_list(g, gpu, QUEUED_MAX, &q, &n);

	if (rc < 0)
		return rc;
	rc = read_log(g, gpu, &log);
	if (rc < 0) {
		free(q);
		return rc;
	}
	for (size_t i = 0; i < n; i++) {
		enum kb_gw_reconcile_action a =
			kb_gw_reconcile_decide(&q[i], &log, kb_now_ms(),
					       grace_ms, g->cfg.reconcile_max);

		st->seen++;
		if (a == KB_GW_RECON_FORGET) {
			kb_gw_queued_forget(g, gpu, q[i].id);
			st->forgotten++;
		} else if (a == KB_GW_RECON_REPUBLISH) {
			int r = republish(g, &q[i], g->cfg.reconcile_max);

			st->republished += r > 0;
			st->failed += r < 0;
		} else if (a == KB_GW_RECON_FAIL) {
			char why[128];

			snprintf(why, sizeof(why),
				 "its message was gone from the broker %ld "
				 "times",
				 q[i].republished + 1);
			end_lost(g, q[i].id, why);
			st->failed++;
		}
	}
	free(q);
	return 0;
}

int kb_gw_reconcile_pass(struct kb_gw *g, struct kb_gw_reconcile_stats *st)
{
	const char *gpus[256];
	char owner[64];
	size_t n;
	int rc, first = 0;

	memset(st, 0, sizeof(*st));
	snprintf(owner, sizeof(owner), "gateway-%ld", (long)getpid());
	/* Held for a pass at most: a gateway that dies mid-pass does not
	 * stop the others for longer. */
	rc = kb_gw_reconcile_lock(
		g, owner,
		g->cfg.reconcile_s > 0 ? g->cfg.reconcile_s * 1000 : 30000);
	if (rc <= 0)
		return rc;
	n = board_gpus(g, gpus, 256);
	for (size_t i = 0; i < n; i++) {
		rc = reconcile_gpu(g, gpus[i], st);
		if (rc < 0 && first == 0)
			first = rc;
	}
	if (st->republished || st->failed || st->forgotten)
		kb_info("reconcile: seen=%ld republished=%ld failed=%ld "
			"forgotten=%ld",
			st->seen, st->republished, st->failed, st->forgotten);
	return first;
}

struct kb_gw_reconciler {
	struct kb_gw *g;
	pthread_t thread;
	int started;
	atomic_int stop;
};

static void *reconcile_main(void *arg)
{
	struct kb_gw_reconciler *r = arg;

	while (!atomic_load(&r->stop)) {
		struct kb_gw_reconcile_stats st;
		const double until =
			kb_mono_s() + (double)r->g->cfg.reconcile_s;

		while (!atomic_load(&r->stop) && kb_mono_s() < until)
			nanosleep(&(struct timespec){0, 200 * 1000 * 1000},
				  NULL);
		if (!atomic_load(&r->stop))
			kb_gw_reconcile_pass(r->g, &st);
	}
	/* This thread's Redis connection (store.h). */
	kb_gw_redis_drop();
	return NULL;
}

struct kb_gw_reconciler *kb_gw_reconcile_start(struct kb_gw *g, char *errstr,
					       size_t errstr_size)
{
	struct kb_gw_reconciler *r = calloc(1, sizeof(*r));

	if (!r) {
		snprintf(errstr, errstr_size, "out of memory");
		return NULL;
	}
	r->g = g;
	atomic_init(&r->stop, 0);
	if (g->cfg.reconcile_s == 0)
		return r;
	if (pthread_create(&r->thread, NULL, reconcile_main, r) != 0) {
		snprintf(errstr, errstr_size, "cannot start the reconciler");
		free(r);
		return NULL;
	}
	r->started = 1;
	return r;
}

void kb_gw_reconcile_stop(struct kb_gw_reconciler *r)
{
	if (!r)
		return;
	atomic_store(&r->stop, 1);
	if (r->started)
		pthread_join(r->thread, NULL);
	free(r);
}
