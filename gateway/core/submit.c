/* kb_gw_submit and the watch side of api.h.
 *
 * kb_gw_submit() is kb_gw_submit_record() then kb_gw_submit_publish()
 * (submit.h); the HTTP endpoints run the second half on the pool.
 *
 * A submission is admitted and recorded by one Lua script (store.c:
 * submit.lua) and then published with a synchronous Kafka delivery.
 * Order, so that no failure leaves a half-made submission: the script
 * either refuses (nothing written) or writes every record at once with
 * status "queued"; then the publish. A failed publish turns the record
 * into "failed" (only if nothing moved it on) and the caller answers 503:
 * no record ever claims to be queued for a message the broker does not
 * have, except across a crash between the two steps, which SIGTERM's
 * drain avoids.
 */
#include "submit.h"

#include <errno.h>
#include <inttypes.h>
#include <sodium.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/hub.h"
#include "base/queue.h"
#include "base/seed.h"
#include "http/metrics.h"
#include "http/rules.h"
#include "kb_log.h"
#include "kb_report.h"
#include "kb_taskstore.h"
#include "kb_util.h"
#include "store/store.h"

static int fail(struct kb_gw_submit_res *res, int status, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static int fail(struct kb_gw_submit_res *res, int status, const char *fmt, ...)
{
	va_list ap;

	res->status = status;
	kb_gw_metrics_submission(status);
	va_start(ap, fmt);
	vsnprintf(res->detail, sizeof(res->detail), fmt, ap);
	va_end(ap);
	return status == 503 ? -EIO : -EINVAL;
}

/* Stores the board's task once per process (SET NX: another gateway may
 * have stored the same bytes). Returns 0 or -EIO. */
static int store_task(struct kb_gw *g, struct kb_gw_lb *lb)
{
	char err[256];
	redisContext *c;

	if (atomic_load(&lb->task_stored))
		return 0;
	c = kb_gw_redis(g, err, sizeof(err));
	if (!c || kb_taskstore_put(c, lb->task_packed, lb->task_len,
				   lb->task_ref, err, sizeof(err)) < 0) {
		kb_warn("lb=%s task %.12s not stored: %s", lb->task->name,
			lb->task_ref, err);
		if (c)
			kb_gw_redis_drop();
		return -EIO;
	}
	atomic_store(&lb->task_stored, 1);
	return 0;
}

int kb_gw_publish(struct kb_gw *g, const struct kb_gw_lb *lb_c,
		  enum kb_mode mode, uint64_t id, const struct kb_gw_sub *s,
		  const char *user_name, Kb__ProfileRequest *profile)
{
	struct kb_gw_lb *lb = (struct kb_gw_lb *)lb_c; /* task_stored only */
	Kb__Submission sub = KB__SUBMISSION__INIT;
	char topic[256], key[32], err[256], cluster[128] = "";
	uint8_t stack_buf[16384], *buf;
	int32_t part = -1;
	int64_t off = -1;
	int rc;

	if (store_task(g, lb) < 0)
		return -EIO;
	sub.id = id;
	sub.user_id = (char *)s->user_id;
	sub.user_name = (char *)user_name;
	sub.leaderboard = (char *)lb->task->name;
	sub.gpu = (char *)s->gpu;
	sub.mode = (Kb__Mode)mode;
	sub.file_name = (char *)s->file_name;
	sub.code.data = (uint8_t *)s->code;
	sub.code.len = s->code_len;
	/* The task by reference: the event stays the code's size. */
	sub.task_ref = lb->task_ref;
	/* The board's own secret stays here: the run gets a seed of its
	 * own (seed.h). */
	if (mode == KB_MODE_LEADERBOARD) {
		sub.secret_seed =
			kb_gw_seed_derive(lb->secret_seed, lb->task->name, id);
		sub.has_secret_seed = 1;
	}
	sub.submitted_at_ms = s->submitted_ms;
	sub.attempt = 0;
	sub.profile = mode == KB_MODE_PROFILE ? profile : NULL;

	size_t len = kb__submission__get_packed_size(&sub);
	buf = len <= sizeof(stack_buf) ? stack_buf : malloc(len);
	if (!buf)
		return -ENOMEM;
	kb__submission__pack(&sub, buf);
	rc = kb_topic_submissions(topic, sizeof(topic), s->gpu);
	if (rc == 0) {
		int n = snprintf(key, sizeof(key), "%" PRIu64, id);
		rc = kb_producer_send_at(g->producer, topic, key, (size_t)n,
					 buf, len,
					 (int)g->cfg.kafka_timeout_ms + 2000,
					 &part, &off, err, sizeof(err));
		if (rc < 0)
			kb_warn("sub=%" PRIu64 " gpu=%s publish failed: %s", id,
				s->gpu, err);
	}
	/* The buffer held the seed: do not leave it in freed memory. */
	sodium_memzero(buf, len);
	if (buf != stack_buf)
		free(buf);
	if (rc < 0)
		return rc;
	/* Where the message is, for the reconciler (reconcile.h): a record
	 * without it is re-published after a grace period, so a failure
	 * here costs at most a duplicate, which the worker's lease skips. */
	if (kb_producer_cluster_id(g->producer, cluster, sizeof(cluster), 1000,
				   err, sizeof(err)) < 0 ||
	    kb_gw_sub_published(g, id, part, off, cluster, sub.profile) < 0)
		kb_warn("sub=%" PRIu64 " published at [%" PRId32 "]@%" PRId64
			" but not recorded",
			id, part, off);
	return 0;
}

int kb_gw_submit_record(struct kb_gw *g, const struct kb_gw_submit_req *req,
			struct kb_gw_submit_res *res, struct kb_gw_pending *p)
{
	char why[384];
	const char *reason = "";
	const struct kb_gw_lb *lb;
	enum kb_mode mode;
	int64_t now = kb_now_ms(), retry_ms = 0;
	uint64_t id = 0;
	int status = 0, rc;

	memset(res, 0, sizeof(*res));
	memset(p, 0, sizeof(*p));
	res->queued_jobs = -1;
	if (!req->user_id || !kb_rules_user_id_ok(req->user_id))
		return fail(res, 401, "unknown user");
	mode = kb_mode_parse(req->mode);
	if (mode == KB_MODE_INVALID)
		return fail(res, 400,
			    "unknown submission mode '%s' (expected test, "
			    "benchmark, profile or leaderboard)",
			    req->mode ? req->mode : "");
	lb = kb_gw_lb_find(g, req->lb);
	if (!lb)
		return fail(res, 404, "unknown leaderboard '%s'",
			    req->lb ? req->lb : "");
	const char *gpu = kb_gw_lb_gpu(lb, req->gpu);
	if (!gpu)
		return fail(res, 404,
			    "gpu '%s' is not offered for leaderboard '%s'",
			    req->gpu ? req->gpu : "", lb->task->name);
	int st = kb_rules_code(req->code, req->code_len,
			       (size_t)g->cfg.max_file_bytes, &reason);
	if (st) {
		if (st == 413)
			return fail(res, 413,
				    "file too large (limit %ld bytes)",
				    g->cfg.max_file_bytes);
		return fail(res, st, "%s", reason);
	}
	if (!req->admin && lb->deadline_ms >= 0 && now > lb->deadline_ms)
		return fail(res, 403,
			    "the deadline to submit to %s has passed (%s)",
			    lb->task->name, lb->task->deadline);
	if (req->profile && mode == KB_MODE_PROFILE) {
		char pwhy[256];
		if (kb_gw_profile_check(lb, req->profile, pwhy, sizeof(pwhy)))
			return fail(res, 400, "%s", pwhy);
		Kb__ProfileRequest *pr = &p->profile;
		kb__profile_request__init(pr);
		pr->has_benchmark_index = req->profile->has_benchmark_index;
		pr->benchmark_index = req->profile->benchmark_index;
		pr->ncu_launch_count = req->profile->ncu_launch_count;
		snprintf(p->ncu_kernel_name, sizeof(p->ncu_kernel_name), "%s",
			 req->profile->ncu_kernel_name
				 ? req->profile->ncu_kernel_name
				 : "");
		snprintf(p->ncu_kernel_name_base,
			 sizeof(p->ncu_kernel_name_base), "%s",
			 req->profile->ncu_kernel_name_base
				 ? req->profile->ncu_kernel_name_base
				 : "");
		pr->ncu_kernel_name = p->ncu_kernel_name;
		pr->ncu_kernel_name_base = p->ncu_kernel_name_base;
		p->has_profile = 1;
	}
	const char *fn = req->file_name;
	kb_rules_file_name(fn && kb_utf8_valid(fn, strlen(fn)) ? fn : NULL,
			   p->file_name, sizeof(p->file_name));

	p->lb = lb;
	p->mode = mode;
	p->s = (struct kb_gw_sub){
		.user_id = req->user_id,
		.lb = lb->task->name,
		.gpu = gpu,
		.mode = kb_mode_name(mode),
		.category = kb_rules_category(mode),
		.file_name = p->file_name,
		.code = req->code,
		.code_len = req->code_len,
		.submitted_ms = now,
		.admin = req->admin,
		.default_limit = mode == KB_MODE_LEADERBOARD
					 ? g->cfg.rate_leaderboard
					 : g->cfg.rate_test,
		.max_queued = g->cfg.max_queued_per_gpu,
		.queued_forget_s = g->cfg.queued_forget_s,
		.code_ttl_s = g->cfg.code_ttl_s,
	};
	kb_sha256_hex(req->code, req->code_len, p->s.code_sha);
	rc = kb_gw_sub_create(g, &p->s, &id, p->user_name, sizeof(p->user_name),
			      &status, why, sizeof(why), &retry_ms);
	if (rc == 1) {
		fail(res, status, "%s", why);
		if (status == 429)
			res->retry_after_s = (long)((retry_ms + 999) / 1000);
		return status == 503 ? -EAGAIN : -EPERM;
	}
	if (rc < 0)
		return fail(res, rc == -EIO ? 503 : 500,
			    rc == -EIO ? "store unavailable, retry later"
				       : "internal error");
	p->id = res->id = id;
	if (req->open_watch)
		res->watch = kb_gw_watch_open_tick(g, id, req->watch_tick_ms,
						   req->wake, req->wake_ctx);
	return 0;
}

int kb_gw_profile_check(const struct kb_gw_lb *lb, const Kb__ProfileRequest *pr,
			char *why, size_t why_size)
{
	const char *name = pr->ncu_kernel_name ? pr->ncu_kernel_name : "";
	const char *base = pr->ncu_kernel_name_base ? pr->ncu_kernel_name_base
						    : "";

	if (lb->task->multi_gpu)
		snprintf(why, why_size, "NCU profiling requires a single GPU");
	else if (lb->task->nbenchmarks == 0)
		snprintf(why, why_size,
			 "this task has no benchmarks to profile");
	else if (pr->has_benchmark_index &&
		 pr->benchmark_index >= lb->task->nbenchmarks)
		snprintf(why, why_size,
			 "benchmark_index must be between 0 and %zu",
			 lb->task->nbenchmarks - 1);
	else if (strlen(name) > 1024)
		snprintf(why, why_size,
			 "ncu_kernel_name must contain 1..1024 characters "
			 "without NUL");
	else if (*base && strcmp(base, "function") != 0 &&
		 strcmp(base, "demangled") != 0 && strcmp(base, "mangled") != 0)
		snprintf(why, why_size,
			 "ncu_kernel_name_base must be function, demangled, "
			 "or mangled");
	else
		return 0;
	return 400;
}

int kb_gw_submit_publish(struct kb_gw *g, struct kb_gw_pending *p,
			 struct kb_gw_submit_res *res)
{
	int rc = kb_gw_publish(g, p->lb, p->mode, p->id, &p->s, p->user_name,
			       p->has_profile ? &p->profile : NULL);

	res->id = p->id;
	if (rc < 0) {
		int mrc = kb_gw_sub_mark_failed(g, p->id,
						"submission queue unavailable");
		if (mrc < 0)
			kb_error("sub=%" PRIu64
				 " could not be marked failed (%d)",
				 p->id, mrc);
		/* The watch hears of the failure from the caller, not the hub. */
		if (res->watch) {
			kb_gw_watch_close(res->watch);
			res->watch = NULL;
		}
		return fail(res, 503,
			    "submission queue unavailable, retry later "
			    "(submission %" PRIu64 " was not queued)",
			    p->id);
	}
	kb_gw_metrics_submission(0);
	kb_info("sub=%" PRIu64
		" user=%s lb=%s gpu=%s mode=%s bytes=%zu%s queued",
		p->id, p->s.user_id, p->s.lb, p->s.gpu, p->s.mode,
		p->s.code_len, p->s.admin ? " admin=1" : "");
	if (kb_gw_queued_count(g, p->s.gpu, &res->queued_jobs) < 0)
		res->queued_jobs = -1;
	return 0;
}

int kb_gw_submit(struct kb_gw *g, const struct kb_gw_submit_req *req,
		 struct kb_gw_submit_res *res)
{
	struct kb_gw_pending p;
	int rc = kb_gw_submit_record(g, req, res, &p);

	return rc < 0 ? rc : kb_gw_submit_publish(g, &p, res);
}

int kb_gw_user_external(struct kb_gw *g, const char *provider,
			const char *ext_id, const char *name, char *out,
			size_t out_size)
{
	char id[160];

	if (!kb_rules_provider_ok(provider) || !kb_rules_name_ok(ext_id, 64) ||
	    !kb_rules_user_name_ok(name) || out_size < 96)
		return -EINVAL;
	snprintf(id, sizeof(id), "%s-%s", provider, ext_id);
	if (!kb_rules_user_id_ok(id))
		return -EINVAL;
	int rc = kb_gw_user_ensure(g, id, name);
	if (rc == 0)
		snprintf(out, out_size, "%s", id);
	return rc;
}

int kb_gw_push_state(struct kb_gw *g, struct kb_gw_watch *w, uint64_t id)
{
	struct kb_gw_sub_state st;
	struct kb_gw_hub_msg m = {
		.id = id, .position = -1, .elapsed_ms = -1, .synthetic = 1};
	int rc = kb_gw_sub_state(g, id, &st);

	if (rc == -ENOENT) {
		m.type = KB_GW_EV_ERROR;
		m.error_status = 404;
		m.message = "submission not found";
	} else if (rc < 0) {
		return rc;
	} else if (strcmp(st.status, "deleted") == 0) {
		m.type = KB_GW_EV_ERROR;
		m.error_status = 410;
		m.message = "the submission was deleted";
	} else if (strcmp(st.status, "failed") == 0) {
		m.type = KB_GW_EV_ERROR;
		m.error_status = 503;
		m.message = st.error ? st.error : "the submission failed";
	} else if (strcmp(st.status, "done") == 0) {
		if (!st.res) { /* done without a Result: nothing to show yet */
			kb_gw_sub_state_free(&st);
			return 0;
		}
		m.type = KB_GW_EV_RESULT;
		m.payload = st.res->str;
		m.payload_len = st.res->len;
	} else {
		m.type = KB_GW_EV_STATUS;
		m.stage = st.stage ? st.stage : st.status;
		if (strcmp(st.status, "queued") == 0 && st.gpu &&
		    kb_gw_queue_position(g, st.gpu, id, &m.position) < 0)
			m.position = -1;
		if (m.position == 0)
			m.position = -1;
	}
	if (w)
		kb_gw_hub_push(w, &m);
	else
		kb_gw_hub_publish(g->hub, &m);
	kb_gw_sub_state_free(&st);
	return 0;
}

struct kb_gw_watch *kb_gw_watch_open_tick(struct kb_gw *g, uint64_t id,
					  int tick_ms, kb_gw_wake_fn wake,
					  void *ctx)
{
	struct kb_gw_watch *w = kb_gw_hub_watch(g->hub, id, tick_ms, wake, ctx);

	/* Subscribed first, then the stored state: an event between the two
	 * is queued as well, never lost. A store error leaves the state to
	 * the events thread's fallback poll. */
	if (w)
		kb_gw_push_state(g, w, id);
	return w;
}

struct kb_gw_watch *kb_gw_watch_open(struct kb_gw *g, uint64_t id,
				     kb_gw_wake_fn wake, void *ctx)
{
	return kb_gw_watch_open_tick(g, id, 0, wake, ctx);
}

char *kb_gw_result_report(const Kb__Result *r)
{
	return kb_report_render(r);
}
