/* POST /{lb}/{gpu}/{mode}: a submission answered with server-sent events,
 * as upstream's streaming endpoint (popcorn-cli reads it).
 *
 * Everything up to the submission itself is an ordinary request: the
 * same checks as POST /submission (plain JSON errors with their status).
 * Once kb_gw_submit() accepted it, the answer is 200 text/event-stream:
 *
 *   event: status   data: {"status": <stage>, "stage", "message",
 *                          "submission_id", "elapsed_time", "position", ...}
 *   event: result   data: {"status": "success", "results": [FullResult],
 *                          "reports": [text], ...}        (last)
 *   event: error    data: {"status": "error", "detail", "status_code"} (last)
 *
 * and a comment line ": keep-alive" every KB_SSE_KEEPALIVE_S while
 * nothing else is said. The stream is a watch on the hub (opened before
 * the submission is published) whose events are formatted as they come;
 * while there is nothing to send, the connection is suspended, so a long
 * run costs no thread. The watch's wake callback resumes it; the ticker
 * wakes it for keep-alives. After KB_SSE_MAX_S without a result the stream
 * ends with an error (the submission goes on; poll /user/submissions/{id}).
 *
 * Suspend/resume discipline (libmicrohttpd calls resuming a connection
 * that is not suspended undefined): both happen under the stream's mutex,
 * and `suspended` records which state MHD is in, so the wake callback
 * resumes only a suspended connection, exactly once.
 */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/limiter.h"
#include "core/events.h"
#include "core/results.h"
#include "core/submit.h"
#include "kb_log.h"
#include "kb_time.h"
#include "kb_util.h"
#include "routes.h"

#define BLOCK_SIZE (32u << 10)

struct kb_gw_stream {
	struct MHD_Connection *conn;
	struct kb_gw_watch *w;
	pthread_mutex_t mu; /* everything below */
	int suspended;
	int finished; /* the final event is in out (or was sent) */
	uint64_t id;
	double t0; /* kb_mono_s() of the request */
	int64_t keepalive_ms, next_keepalive, deadline;
	struct kb_buf out;
	size_t off;
	char last_stage[24];
	long last_position;
	struct kb_gw *g;
	char gpu[64]; /* the record's spelling */
};

static void wake(void *ctx)
{
	struct kb_gw_stream *st = ctx;

	pthread_mutex_lock(&st->mu);
	if (st->suspended) {
		st->suspended = 0;
		MHD_resume_connection(st->conn);
	}
	pthread_mutex_unlock(&st->mu);
}

static void append_event(struct kb_gw_stream *st, const char *name,
			 json_t *data)
{
	/* Status times print short ("3.66", not "3.6600000000000001"); the
	 * result keeps every digit of its scores. */
	size_t flags = JSON_COMPACT;
	if (strcmp(name, "status") == 0)
		flags |= JSON_REAL_PRECISION(10);
	char *s = json_dumps(data, flags);

	json_decref(data);
	if (!s)
		return;
	kb_buf_printf(&st->out, "event: %s\ndata: %s\n\n", name, s);
	free(s);
}

static void format_status(struct kb_gw_stream *st, const struct kb_gw_event *ev)
{
	char msg[256];

	if (strcmp(st->last_stage, ev->stage) == 0 &&
	    st->last_position == ev->position)
		return;
	snprintf(st->last_stage, sizeof(st->last_stage), "%s", ev->stage);
	st->last_position = ev->position;
	const int queued = strcmp(ev->stage, "queued") == 0 && !ev->worker[0];
	struct kb_gw_outlook o = {.workers = -1, .wait_s = -1};
	char note[160] = "", start[40] = "";

	if (queued)
		kb_gw_queue_note(st->g, st->gpu, ev->position, &o, note,
				 sizeof(note));
	if (o.wait_s >= 0)
		kb_time_iso8601(kb_now_ms() + (int64_t)(o.wait_s * 1000), start,
				sizeof(start));
	if (queued && ev->position > 0)
		snprintf(msg, sizeof(msg),
			 "Submission %" PRIu64 " queued (position %ld)%s%s",
			 st->id, ev->position, note[0] ? "; " : "", note);
	else if (queued && note[0])
		snprintf(msg, sizeof(msg), "Submission %" PRIu64 " queued; %s",
			 st->id, note);
	else if (strcmp(ev->stage, "queued") == 0 && ev->worker[0])
		snprintf(msg, sizeof(msg),
			 "Submission %" PRIu64 " picked up by %s", st->id,
			 ev->worker);
	else if (ev->elapsed_ms >= 0)
		snprintf(msg, sizeof(msg),
			 "Submission %" PRIu64 ": %s (%.1f s)", st->id,
			 ev->stage, (double)ev->elapsed_ms / 1000.0);
	else
		snprintf(msg, sizeof(msg), "Submission %" PRIu64 ": %s", st->id,
			 ev->stage);
	json_t *j = json_object();
	json_object_set_new(j, "status", json_string(ev->stage));
	json_object_set_new(j, "stage", json_string(ev->stage));
	json_object_set_new(j, "message", kb_gw_jstr(msg));
	json_object_set_new(j, "submission_id",
			    json_integer((json_int_t)st->id));
	json_object_set_new(
		j, "elapsed_time",
		json_real((double)(int64_t)((kb_mono_s() - st->t0) * 100) /
			  100));
	json_object_set_new(j, "worker_elapsed_ms",
			    ev->elapsed_ms >= 0 ? json_integer(ev->elapsed_ms)
						: json_null());
	json_object_set_new(j, "position",
			    ev->position > 0 ? json_integer(ev->position)
					     : json_null());
	json_object_set_new(j, "worker",
			    ev->worker[0] ? kb_gw_jstr(ev->worker)
					  : json_null());
	if (queued) {
		json_object_set_new(j, "workers_online",
				    o.workers >= 0 ? json_integer(o.workers)
						   : json_null());
		json_object_set_new(
			j, "estimated_wait_s",
			o.wait_s >= 0
				? json_integer((json_int_t)(o.wait_s + 0.5))
				: json_null());
		json_object_set_new(j, "estimated_start",
				    start[0] ? json_string(start)
					     : json_null());
		json_object_set_new(j, "warning",
				    o.workers == 0 ? kb_gw_jstr(note)
						   : json_null());
	}
	append_event(st, "status", j);
}

static void format_error(struct kb_gw_stream *st, int status,
			 const char *detail)
{
	append_event(st, "error",
		     json_pack("{s:s,s:o,s:i,s:I}", "status", "error", "detail",
			       kb_gw_jstr(detail), "status_code", status,
			       "submission_id", (json_int_t)st->id));
	st->finished = 1;
}

static void format_event(struct kb_gw_stream *st, const struct kb_gw_event *ev)
{
	switch (ev->type) {
	case KB_GW_EV_STATUS:
		format_status(st, ev);
		break;
	case KB_GW_EV_RESULT:
		append_event(st, "result",
			     kb_gw_result_event(ev->result, st->id));
		st->finished = 1;
		break;
	case KB_GW_EV_ERROR:
		format_error(st, ev->error_status ? ev->error_status : 500,
			     ev->message);
		break;
	}
}

static ssize_t reader(void *cls, uint64_t pos, char *buf, size_t max)
{
	struct kb_gw_stream *st = cls;
	struct kb_gw_event ev;
	ssize_t n = 0;

	(void)pos;
	pthread_mutex_lock(&st->mu);
	for (;;) {
		if (st->off < st->out.len) {
			size_t k = st->out.len - st->off < max
					   ? st->out.len - st->off
					   : max;
			memcpy(buf, st->out.data + st->off, k);
			st->off += k;
			if (st->off == st->out.len)
				st->off = st->out.len = 0;
			n = (ssize_t)k;
			break;
		}
		if (st->finished) {
			n = MHD_CONTENT_READER_END_OF_STREAM;
			break;
		}
		int rc = kb_gw_watch_next(st->w, &ev);
		if (rc == 1) {
			format_event(st, &ev);
			kb_gw_event_clear(&ev);
			continue;
		}
		if (rc < 0) {
			st->finished = 1;
			continue;
		}
		int64_t now = kb_now_ms();
		if (now >= st->deadline) {
			format_error(
				st, 504,
				"no result yet; the submission goes on: poll "
				"GET /user/submissions/{id}");
			continue;
		}
		if (now >= st->next_keepalive) {
			kb_buf_append(&st->out, ": keep-alive\n\n", 14);
			st->next_keepalive = now + st->keepalive_ms;
			continue;
		}
		/* Nothing to say: give the thread back until woken. */
		st->suspended = 1;
		MHD_suspend_connection(st->conn);
		n = 0;
		break;
	}
	pthread_mutex_unlock(&st->mu);
	return n;
}

static void stream_free(void *cls)
{
	struct kb_gw_stream *st = cls;

	/* After close no wake can run (the hub wakes under its lock). */
	kb_gw_watch_close(st->w);
	pthread_mutex_destroy(&st->mu);
	kb_buf_free(&st->out);
	free(st);
}

/* A stream holds its connection open for as long as its submission
 * runs: one user may hold KB_SSE_MAX_PER_USER of them here. The slot is
 * taken before the submission is made (a refused stream makes none) and
 * given back when the request ends (http.c). */
static int take_stream_slot(struct kb_gw_req *r)
{
	long max = r->g->cfg.sse_max_per_user;
	int rc = kb_gw_limiter_take(r->g->stream_slots, r->user.id, max);

	if (rc == -EBUSY) {
		kb_gw_reply_error_retry(
			r, 429, 30,
			"at most %ld streams per user may be "
			"open at once; wait for one to end, or submit with "
			"POST /submission/... and poll GET "
			"/user/submissions/{id}",
			max);
		return -1;
	}
	if (rc < 0) {
		kb_gw_reply_error_retry(r, 503, 30,
					"too many streams open, retry later");
		return -1;
	}
	if (max > 0) {
		r->slot = r->g->stream_slots;
		snprintf(r->slot_key, sizeof(r->slot_key), "%s", r->user.id);
	}
	return 0;
}

static void stream_begin(struct kb_gw_req *r)
{
	r->submission = 1;
	if (kb_gw_authenticate(r) < 0 || take_stream_slot(r) < 0)
		return;
	kb_gw_submission_headers(r, r->route.params[0], r->route.params[1],
				 r->route.params[2]);
}

/* A streaming submission between its halves (submit.h). */
struct deferred_stream {
	struct kb_gw_pending p;
	struct kb_gw_submit_res res;
	struct kb_gw_stream *st;
};

static void deferred_free(void *arg)
{
	struct deferred_stream *d = arg;

	if (d->st)
		stream_free(d->st); /* closes the watch */
	free(d);
}

static void stream_publish(struct kb_gw_req *r)
{
	struct deferred_stream *d = r->pending;

	kb_gw_submit_publish(r->g, &d->p, &d->res);
	if (!d->res.watch) /* a failed publish closed it */
		d->st->w = NULL;
}

/* Back on the connection's thread: the answer is the stream, or (the
 * broker refused) a plain JSON error. */
static void stream_start(struct kb_gw_req *r)
{
	struct deferred_stream *d = r->pending;
	struct kb_gw_stream *st = d->st;

	if (d->res.status) {
		kb_gw_reply_submit_error(r, &d->res);
		return; /* on_completed frees d and the stream */
	}
	d->st = NULL;
	free(d);
	r->pending = NULL;
	if (!st->w) {
		/* Made, but we cannot follow it here: say so in the stream. */
		pthread_mutex_lock(&st->mu);
		format_error(st, 503,
			     "the submission was made but cannot be followed "
			     "here; poll GET /user/submissions/{id}");
		pthread_mutex_unlock(&st->mu);
	}
	struct MHD_Response *resp = MHD_create_response_from_callback(
		MHD_SIZE_UNKNOWN, BLOCK_SIZE, reader, st, stream_free);
	if (!resp) {
		stream_free(st);
		kb_gw_reply_error(r, 500, "out of memory");
		return;
	}
	MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE,
				"text/event-stream");
	MHD_add_response_header(resp, MHD_HTTP_HEADER_CACHE_CONTROL,
				"no-cache");
	MHD_add_response_header(resp, "X-Accel-Buffering", "no");
	/* Keep-alives keep the line busy; a suspended stream cannot time
	 * out anyway. */
	MHD_set_connection_option(r->conn, MHD_CONNECTION_OPTION_TIMEOUT, 0u);
	kb_gw_reply_response(r, 200, resp);
	MHD_destroy_response(resp);
}

/* Records the submission (with profile options, or NULL), then streams
 * it. */
static void stream_submit(struct kb_gw_req *r,
			  const Kb__ProfileRequest *profile)
{
	struct deferred_stream *d;
	const char *fn = NULL;
	size_t len = 0;
	const char *code = kb_gw_take_file(r, &len, &fn);
	struct kb_gw_stream *st;

	if (!code)
		return;
	d = calloc(1, sizeof(*d));
	st = calloc(1, sizeof(*st));
	if (!d || !st) {
		free(d);
		free(st);
		kb_gw_reply_error(r, 500, "out of memory");
		return;
	}
	pthread_mutex_init(&st->mu, NULL);
	st->conn = r->conn;
	st->t0 = r->t0;
	st->keepalive_ms = r->g->cfg.sse_keepalive_s * 1000;
	st->next_keepalive = kb_now_ms() + st->keepalive_ms;
	st->deadline = kb_now_ms() + r->g->cfg.sse_max_s * 1000;
	st->last_position = -2;
	d->st = st;
	struct kb_gw_submit_req req = {
		.user_id = r->user.id,
		.lb = r->lb->task->name,
		.gpu = r->route.params[1],
		.mode = kb_mode_name(r->mode),
		.file_name = fn,
		.code = code,
		.code_len = len,
		.profile = profile,
		.open_watch = 1,
		.wake = wake,
		.wake_ctx = st,
		/* Wakes for keep-alives and the deadline, a little more often
		 * than needed so neither is late by a whole period. */
		.watch_tick_ms = (int)(st->keepalive_ms < 5000
					       ? st->keepalive_ms
					       : 5000),
	};
	if (kb_gw_submit_record(r->g, &req, &d->res, &d->p) < 0) {
		kb_gw_reply_submit_error(r, &d->res);
		deferred_free(d);
		return;
	}
	r->sub_id = st->id = d->res.id;
	st->g = r->g;
	snprintf(st->gpu, sizeof(st->gpu), "%s",
		 d->p.s.gpu ? d->p.s.gpu : req.gpu);
	/* Until the stream starts, the watch's wakes find it unsuspended
	 * and do nothing; its events wait in the queue. */
	st->w = d->res.watch;
	r->pending = d;
	r->pending_free = deferred_free;
	kb_gw_defer(r, stream_publish, stream_start);
}

static void stream_finish(struct kb_gw_req *r)
{
	stream_submit(r, NULL);
}

/* ---- POST /profile/{lb}/{gpu}: popcorn-cli's hosted profiling ---- */

static const char *const profile_fields[] = {
	"benchmark_index",
	"ncu_kernel_name",
	"ncu_kernel_name_base",
	"ncu_launch_count",
};

static void profile_begin(struct kb_gw_req *r)
{
	r->submission = 1;
	if (kb_gw_authenticate(r) < 0 || take_stream_slot(r) < 0 ||
	    kb_gw_submission_headers(r, r->route.params[0], r->route.params[1],
				     "profile") < 0)
		return;
	for (size_t i = 0;
	     i < sizeof(profile_fields) / sizeof(profile_fields[0]); i++)
		kb_multipart_keep_text(r->mp, profile_fields[i]);
}

/* A form field's whole number >= min, into *out. Returns 1 when the field
 * was given, 0 when absent, -1 (replied 400) when not such a number. */
static int form_uint(struct kb_gw_req *r, const char *name, uint64_t min,
		     uint32_t *out)
{
	const char *v = kb_multipart_text(r->mp, name);
	uint64_t n;

	if (!v)
		return 0;
	if (kb_parse_u64(v, &n) != 0 || n < min || n > UINT32_MAX) {
		kb_gw_reply_error(r, 400, "%s must be an integer >= %llu", name,
				  (unsigned long long)min);
		return -1;
	}
	*out = (uint32_t)n;
	return 1;
}

static void profile_finish(struct kb_gw_req *r)
{
	Kb__ProfileRequest pr = KB__PROFILE_REQUEST__INIT;
	const char *name, *base;
	int has;

	/* The form is read once the body is complete: kb_gw_take_file (in
	 * stream_submit) reports a malformed body first. */
	if (kb_multipart_finish(r->mp) == 0) {
		if ((has = form_uint(r, "benchmark_index", 0,
				     &pr.benchmark_index)) < 0 ||
		    form_uint(r, "ncu_launch_count", 1, &pr.ncu_launch_count) <
			    0)
			return;
		pr.has_benchmark_index = has == 1;
		name = kb_multipart_text(r->mp, "ncu_kernel_name");
		base = kb_multipart_text(r->mp, "ncu_kernel_name_base");
		if (name && (!*name || !kb_utf8_valid(name, strlen(name)))) {
			kb_gw_reply_error(
				r, 400,
				"ncu_kernel_name must contain 1..1024 "
				"characters without NUL");
			return;
		}
		pr.ncu_kernel_name = (char *)(name ? name : "");
		pr.ncu_kernel_name_base = (char *)(base ? base : "");
	}
	stream_submit(r, &pr);
}

const struct kb_gw_handler kb_gw_stream_handlers[KB_ROUTE_COUNT] = {
	[KB_ROUTE_STREAM] = {stream_begin, stream_finish},
	[KB_ROUTE_PROFILE] = {profile_begin, profile_finish},
};
