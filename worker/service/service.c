#include "service.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "eval_ready.h"
#include "kb_kafka.h"
#include "kb_keys.h"
#include "kb_lease.h"
#include "kb_log.h"
#include "kb_metrics.h"
#include "kb_mode.h"
#include "kb_report.h"
#include "kb_redis.h"
#include "kb_signal.h"
#include "kb_taskstore.h"
#include "kb_util.h"
#include "pbutil.h"

#define SEND_TIMEOUT_MS 10000
#define BACKOFF_MAX_S 30.0
#define TICK_S 0.2
#define ABANDON_WAIT_S 2.0
#define STORE_TIMEOUT_MS 2000
#define WAIT_STEP_S 1.0
#define FINISH_TRIES 5

/* Job metrics, counted in the process's registry (kb_metrics.h); main.c
 * serves it on KB_METRICS_PORT. Registered once per process; the gpu is
 * a label so that a dashboard sums workers per device type. */
static struct {
	kb_metric_family *jobs, *phase, *kills, *inflight, *serving, *retries;
} M;

static void metrics_init(void)
{
	kb_metrics *m = kb_metrics_default();

	M.jobs = kb_metrics_counter(
		m, "kb_worker_jobs_total",
		"Jobs finished, by verdict and whose fault it was "
		"(none, user, infra).",
		"gpu,verdict,fault");
	M.phase = kb_metrics_histogram(
		m, "kb_worker_job_phase_seconds",
		"Time of a job's phases: build, run (all "
		"harness runs), total (taken to published).",
		"gpu,phase", kb_metrics_job_bounds, KB_METRICS_JOB_NBOUNDS);
	M.kills = kb_metrics_counter(
		m, "kb_worker_sandbox_kills_total",
		"Sandboxed runs the worker killed: timeout (wall "
		"clock), sigkill (memory limit or abandoned).",
		"gpu,reason");
	M.inflight = kb_metrics_gauge(
		m, "kb_worker_jobs_in_flight",
		"Jobs being evaluated (0 or 1 per worker).", "gpu");
	M.serving = kb_metrics_gauge(m, "kb_worker_serving",
				     "1 while the worker consumes its queue, 0 "
				     "once it stops.",
				     "gpu");
	M.retries = kb_metrics_counter(
		m, "kb_worker_infra_retries_total",
		"Evaluations repeated after an infrastructure "
		"error.",
		"gpu");
}

/* Counts a finished job's verdict, phases and the runs the sandbox
 * killed. */
static void count_job(const char *gpu, const Kb__Result *r, double total_s)
{
	kb_counter_inc(kb_metric_get3(M.jobs, gpu,
				      kb_report_verdict_name(r->verdict),
				      kb_report_fault_name(r->fault)));
	kb_histogram_observe(kb_metric_get2(M.phase, gpu, "build"), r->build_s);
	kb_histogram_observe(kb_metric_get2(M.phase, gpu, "run"), r->harness_s);
	kb_histogram_observe(kb_metric_get2(M.phase, gpu, "total"), total_s);
	for (size_t i = 0; i < r->n_runs; i++) {
		const Kb__RunResult *run = r->runs[i];
		if (run->timed_out)
			kb_counter_inc(kb_metric_get2(M.kills, gpu, "timeout"));
		else if (run->signal == SIGKILL)
			kb_counter_inc(kb_metric_get2(M.kills, gpu, "sigkill"));
	}
}

struct svc {
	const struct kb_service_opts *o;
	kb_producer *p;
	kb_consumer *c;
	double drain_deadline; /* 0 until a stop is noticed */
	int hung;              /* a job outlived kb_service_job_max_s */
	/* The store (leases, tasks): NULL while unreachable, tried again
	 * at most every second. */
	redisContext *redis;
	double redis_retry_at;
	kb_taskstore *tasks;
	char token[192]; /* this process's lease owner token */
	/* The lease of the job being evaluated. */
	uint64_t lease_id;
	double lease_ok_at; /* last successful take or renewal */
	double lease_next;  /* next renewal */
	int lease_lost;     /* renewal said lost, or none came in time */
	uint64_t busy_with; /* the job being handled, for heartbeats */
	double heartbeat_next;
};

struct job {
	struct svc *svc;
	Kb__Submission *sub;
	char key[24];
	double t0;
	atomic_int cancel;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	int done;           /* under mu */
	Kb__Result *result; /* under mu */
};

/* The store's connection, or NULL while it cannot be reached. */
static redisContext *store(struct svc *s)
{
	char err[256];

	if (s->redis)
		return s->redis;
	if (kb_mono_s() < s->redis_retry_at)
		return NULL;
	s->redis = kb_redis_connect(s->o->redis_url, STORE_TIMEOUT_MS, err,
				    sizeof(err));
	if (!s->redis) {
		s->redis_retry_at = kb_mono_s() + 1.0;
		kb_warn("store: %s", err);
	}
	return s->redis;
}

/* After a failed call: drops the connection if the failure was its. */
static void store_check(struct svc *s)
{
	if (s->redis && s->redis->err) {
		redisFree(s->redis);
		s->redis = NULL;
	}
}

static long lease_ttl_ms(const struct svc *s)
{
	return (long)(s->o->lease_ttl_s * 1000);
}

/* Keeps the lease of the job being evaluated: renews it every quarter of
 * its ttl; sets lease_lost when the store says another worker has it, or
 * when no renewal got through for three quarters of the ttl (the lease
 * may end before the next one does: stop first, so that two workers
 * never run the job at once). */
static void keep_lease(struct svc *s)
{
	const double now = kb_mono_s(), ttl = s->o->lease_ttl_s;
	char err[256];
	redisContext *c;
	int rc;

	if (s->lease_lost || now < s->lease_next)
		return;
	c = store(s);
	rc = c ? kb_lease_renew(c, s->lease_id, s->token, lease_ttl_ms(s), err,
				sizeof(err))
	       : -EIO;
	if (rc == 1) {
		s->lease_ok_at = now;
		s->lease_next = now + ttl / 4;
		return;
	}
	if (rc == 0) {
		kb_error("job sub=%" PRIu64 ": lease lost to another worker",
			 s->lease_id);
		s->lease_lost = 1;
		return;
	}
	store_check(s);
	s->lease_next = now + 1.0;
	if (now - s->lease_ok_at > ttl * 0.75) {
		kb_error("job sub=%" PRIu64 ": lease not renewed for %.0f s "
			 "(store unreachable): stopping the job",
			 s->lease_id, now - s->lease_ok_at);
		s->lease_lost = 1;
	}
}

/* Once a stop is requested, every wait is bounded by the grace period
 * that started when it was first noticed. Returns 1 once it has passed. */
static int past_drain_deadline(struct svc *s)
{
	if (!kb_signal_stopping())
		return 0;
	if (s->drain_deadline == 0) {
		s->drain_deadline = kb_mono_s() + s->o->drain_grace_s;
		kb_info("stop requested: draining for up to %.0f s",
			s->o->drain_grace_s);
	}
	return kb_mono_s() >= s->drain_deadline;
}

/* Sleeps up to seconds, in short steps, giving up early past the drain
 * deadline. */
static void nap(struct svc *s, double seconds)
{
	const double until = kb_mono_s() + seconds;

	while (kb_mono_s() < until && !past_drain_deadline(s)) {
		struct timespec ts = {0, (long)(TICK_S * 1e9)};

		kb_producer_poll(s->p, 0);
		nanosleep(&ts, NULL);
	}
}

/* Produces one message and waits for its acknowledgement, retrying with
 * exponential backoff. Returns 0 once delivered, -1 when the drain
 * deadline passed first. */
static int send_reliably(struct svc *s, const char *topic, const void *key,
			 size_t key_len, const void *buf, size_t len,
			 const char *what)
{
	double backoff = 1.0;

	for (int attempt = 1;; attempt++) {
		char err[256] = "";
		int timeout_ms = SEND_TIMEOUT_MS, rc;

		/* While draining, no wait outlasts the grace period by much. */
		if (s->drain_deadline > 0) {
			int left_ms =
				(int)((s->drain_deadline - kb_mono_s()) * 1000);

			if (left_ms < timeout_ms)
				timeout_ms = left_ms > 1000 ? left_ms : 1000;
		}
		rc = kb_producer_send(s->p, topic, key, key_len, buf, len,
				      timeout_ms, err, sizeof(err));

		if (rc == 0)
			return 0;
		kb_error("publishing %s to %s failed (attempt %d): %s", what,
			 topic, attempt, err);
		if (past_drain_deadline(s))
			return -1;
		nap(s, backoff);
		backoff = backoff * 2 > BACKOFF_MAX_S ? BACKOFF_MAX_S
						      : backoff * 2;
	}
}

static void publish_event(struct job *j, Kb__ResultEvent *ev, int reliably,
			  int *rc)
{
	size_t len = kb__result_event__get_packed_size(ev);
	uint8_t *buf = kb__xcalloc(1, len);

	kb__result_event__pack(ev, buf);
	if (reliably)
		*rc = send_reliably(j->svc, KB_TOPIC_RESULTS, j->key,
				    strlen(j->key), buf, len, "result");
	else if (kb_producer_send_async(j->svc->p, KB_TOPIC_RESULTS, j->key,
					strlen(j->key), buf, len) < 0)
		kb_warn("progress event for sub=%" PRIu64 " not queued",
			j->sub->id);
	free(buf);
}

static const char *event_gpu(const struct job *j)
{
	return j->sub->gpu && j->sub->gpu[0] ? j->sub->gpu : j->svc->o->gpu;
}

/* Progress is best effort: losing one only delays a status line. Called
 * on the evaluation's thread; the producer is thread-safe. */
static void on_progress(void *ctx, Kb__Stage stage, const char *message,
			int64_t elapsed_ms)
{
	struct job *j = ctx;
	Kb__Progress pr = KB__PROGRESS__INIT;
	Kb__ResultEvent ev = KB__RESULT_EVENT__INIT;

	/* An abandoned job's thread may outlive the producer. */
	if (atomic_load(&j->cancel))
		return;
	pr.stage = stage;
	pr.message = (char *)message;
	pr.elapsed_ms = elapsed_ms;
	pr.worker = (char *)j->svc->o->worker;
	ev.submission_id = j->sub->id;
	ev.gpu = (char *)event_gpu(j);
	ev.event_case = KB__RESULT_EVENT__EVENT_PROGRESS;
	ev.progress = &pr;
	publish_event(j, &ev, 0, NULL);
}

/* Publishes a heartbeat when one is due (service.h). Best effort: a lost
 * one is made good by the next. */
static void heartbeat(struct svc *s)
{
	Kb__Progress pr = KB__PROGRESS__INIT;
	Kb__ResultEvent ev = KB__RESULT_EVENT__INIT;
	const char *name = s->o->worker;
	uint8_t *buf;
	size_t len;

	if (s->o->heartbeat_s <= 0 || kb_mono_s() < s->heartbeat_next)
		return;
	s->heartbeat_next = kb_mono_s() + s->o->heartbeat_s;
	pr.worker = (char *)name;
	pr.busy_with = s->busy_with;
	ev.gpu = (char *)s->o->gpu;
	ev.event_case = KB__RESULT_EVENT__EVENT_PROGRESS;
	ev.progress = &pr;
	len = kb__result_event__get_packed_size(&ev);
	buf = kb__xcalloc(1, len ? len : 1);
	kb__result_event__pack(&ev, buf);
	if (kb_producer_send_async(s->p, KB_TOPIC_RESULTS, name, strlen(name),
				   buf, len) < 0)
		kb_warn("heartbeat not queued");
	free(buf);
}

static void *job_main(void *arg)
{
	struct job *j = arg;
	const struct kb_service_opts *o = j->svc->o;
	struct kb_eval_opts eo = o->eval;
	Kb__Result *r;

	eo.t0 = j->t0;
	eo.progress = on_progress;
	eo.progress_ctx = j;
	eo.cancel = &j->cancel;
	for (int attempt = 1;; attempt++) {
		r = kb_eval_run(&eo, j->sub);
		if (r->verdict != KB__VERDICT__VERDICT_INFRA_ERROR ||
		    attempt >= o->infra_attempts || atomic_load(&j->cancel))
			break;
		kb_warn("job sub=%" PRIu64
			" attempt=%d infra_error, retrying: %s",
			j->sub->id, attempt, r->error);
		kb_counter_inc(kb_metric_get1(M.retries, o->gpu));
		kb__result__free_unpacked(r, NULL);
		for (int t = 0; t < attempt * 5 && !atomic_load(&j->cancel);
		     t++)
			nanosleep(&(struct timespec){0, (long)(TICK_S * 1e9)},
				  NULL);
	}
	pthread_mutex_lock(&j->mu);
	j->result = r;
	j->done = 1;
	pthread_cond_signal(&j->cv);
	pthread_mutex_unlock(&j->mu);
	return NULL;
}

/* Kills every process this worker started (only the sandbox forks) and
 * their process groups, so an abandoned job leaves nothing running. */
static void kill_children(void)
{
	const pid_t self = getpid();
	DIR *d = opendir("/proc");
	struct dirent *e;

	if (!d)
		return;
	while ((e = readdir(d))) {
		char path[64], buf[512], *p;
		FILE *f;
		long pid, ppid;

		if (!isdigit((unsigned char)e->d_name[0]))
			continue;
		pid = strtol(e->d_name, NULL, 10);
		snprintf(path, sizeof(path), "/proc/%ld/stat", pid);
		f = fopen(path, "re");
		if (!f)
			continue;
		p = fgets(buf, sizeof(buf), f) ? strrchr(buf, ')') : NULL;
		fclose(f);
		if (!p || sscanf(p + 1, " %*c %ld", &ppid) != 1 || ppid != self)
			continue;
		kb_warn("killing abandoned job process %ld", pid);
		kill(-(pid_t)pid, SIGKILL);
		kill((pid_t)pid, SIGKILL);
	}
	closedir(d);
}

double kb_service_job_max_s(const struct kb_service_opts *o)
{
	const struct kb_eval_opts *e = &o->eval;
	const double cap = e->run_timeout_cap_s > 0 ? e->run_timeout_cap_s
						    : 3600;
	/* A harness build (up to 30 min), the user's build, three runs, the
	 * retry back-offs and a minute of slack, per attempt. */
	double s = (1800 + e->build_timeout_s + 3 * cap + 60) *
		   (o->infra_attempts > 0 ? o->infra_attempts : 1);

	return s > 86400 ? 86400 : s;
}

/* Waits for the evaluation, keeping the producer served. Returns the
 * Result, or NULL when the job was abandoned (at the drain deadline, or
 * hung: s->hung); then *running says whether its thread is still running
 * (and using j). */
static Kb__Result *wait_job(struct svc *s, struct job *j, pthread_t th,
			    int *running)
{
	const double deadline = j->t0 + kb_service_job_max_s(s->o);
	Kb__Result *r = NULL;
	int done;

	pthread_mutex_lock(&j->mu);
	while (!j->done && !past_drain_deadline(s) && !s->lease_lost &&
	       !(s->hung = kb_mono_s() > deadline)) {
		struct timespec ts;
		kb_message m;

		pthread_mutex_unlock(&j->mu);
		kb_producer_poll(s->p, 0);
		/* The partitions are paused: polling returns nothing, but
		 * keeps this member in the group through rebalances. */
		if (kb_consumer_poll(s->c, 0, &m) == 1)
			kb_message_release(&m);
		keep_lease(s);
		heartbeat(s);
		clock_gettime(CLOCK_REALTIME, &ts);
		ts.tv_nsec += (long)(TICK_S * 1e9);
		if (ts.tv_nsec >= 1000000000L) {
			ts.tv_sec++;
			ts.tv_nsec -= 1000000000L;
		}
		pthread_mutex_lock(&j->mu);
		if (!j->done)
			pthread_cond_timedwait(&j->cv, &j->mu, &ts);
	}
	done = j->done;
	pthread_mutex_unlock(&j->mu);
	*running = 0;
	if (done) {
		pthread_join(th, NULL);
		r = j->result;
		return r;
	}
	if (s->hung)
		kb_error("job sub=%" PRIu64 " did not end within %.0f s: hung; "
			 "the worker stops, its offset stays uncommitted",
			 j->sub->id, kb_service_job_max_s(s->o));
	else if (s->lease_lost)
		kb_warn("abandoning sub=%" PRIu64 ": its lease is lost",
			j->sub->id);
	else
		kb_warn("abandoning sub=%" PRIu64 " at the drain deadline; its "
			"offset stays uncommitted",
			j->sub->id);
	atomic_store(&j->cancel, 1);
	kill_children();
	/* Give the evaluation a moment to notice and clean its directory;
	 * the process exits soon whether it does or not. */
	for (double t = 0; t < ABANDON_WAIT_S; t += TICK_S) {
		pthread_mutex_lock(&j->mu);
		done = j->done;
		pthread_mutex_unlock(&j->mu);
		if (done)
			break;
		nanosleep(&(struct timespec){0, (long)(TICK_S * 1e9)}, NULL);
	}
	if (done) {
		pthread_join(th, NULL);
		kb__result__free_unpacked(j->result, NULL);
	} else {
		pthread_detach(th);
		*running = 1;
	}
	return NULL;
}

static void job_free(struct job *j)
{
	kb__submission__free_unpacked(j->sub, NULL);
	pthread_mutex_destroy(&j->mu);
	pthread_cond_destroy(&j->cv);
	free(j);
}

/* Commits m, or says why not: a failed commit costs at most a second
 * delivery, which the lease answers "done". */
static void commit(struct svc *s, const kb_message *m)
{
	char err[256];

	if (kb_consumer_commit(s->c, m, err, sizeof(err)) < 0)
		kb_warn("commit of %s [%d] @%" PRId64 " failed (a second "
			"delivery is skipped: the job is done): %s",
			m->topic, m->partition, m->offset, err);
}

/* After the job's Result was acknowledged: the lease says "done", so that
 * any later delivery of the job is skipped. */
static void finish_lease(struct svc *s, uint64_t id)
{
	char err[256];

	for (int i = 0; i < FINISH_TRIES; i++) {
		redisContext *c = store(s);
		int rc = c ? kb_lease_finish(c, id, s->token,
					     (long)s->o->lease_keep_s, err,
					     sizeof(err))
			   : -EIO;

		if (rc == 0)
			kb_warn("job sub=%" PRIu64 ": another worker had taken "
				"the lease meanwhile",
				id);
		if (rc >= 0)
			return;
		store_check(s);
		nap(s, WAIT_STEP_S);
	}
	kb_warn("job sub=%" PRIu64 ": lease not marked done (store "
		"unreachable); its message is committed",
		id);
}

/* Frees the lease without counting an attempt (a drain, or a job that
 * cannot start yet). */
static void release_lease(struct svc *s, uint64_t id)
{
	char err[256];
	redisContext *c = store(s);

	if (!c || kb_lease_release(c, id, s->token, err, sizeof(err)) < 0) {
		store_check(s);
		kb_warn("job sub=%" PRIu64 ": lease not released (%s); it "
			"ends after %.0f s",
			id, c ? err : "store unreachable", s->o->lease_ttl_s);
	}
}

/* Publishes an infra_error Result for a job that is not run (given up, or
 * its task cannot be had), marks the lease done and commits m. Frees sub.
 * Returns as run_job. */
static int end_job(struct svc *s, const kb_message *m, Kb__Submission *sub,
		   const char *why)
{
	Kb__ResultEvent ev = KB__RESULT_EVENT__INIT;
	struct job j = {.svc = s, .sub = sub};
	const uint64_t id = sub->id;
	Kb__Result *r;
	int rc = 0;

	kb_error("job sub=%" PRIu64 " given up: %s", id, why);
	snprintf(j.key, sizeof(j.key), "%" PRIu64, id);
	r = kb_eval_given_up(&s->o->eval, sub, why);
	ev.submission_id = id;
	ev.gpu = r->gpu;
	ev.event_case = KB__RESULT_EVENT__EVENT_RESULT;
	ev.result = r;
	publish_event(&j, &ev, 1, &rc);
	kb__result__free_unpacked(r, NULL);
	kb__submission__free_unpacked(sub, NULL);
	if (rc < 0)
		return 1;
	finish_lease(s, id);
	commit(s, m);
	return 0;
}

/* Serves the group (paused) and the producer for up to seconds. */
static void serve(struct svc *s, double seconds)
{
	const double until = kb_mono_s() + seconds;

	while (kb_mono_s() < until && !kb_signal_stopping()) {
		kb_message m;

		kb_producer_poll(s->p, 0);
		heartbeat(s);
		if (kb_consumer_poll(s->c, 100, &m) == 1)
			kb_message_release(&m);
	}
}

enum take_outcome { TAKE_RUN, TAKE_DONE, TAKE_GIVE_UP, TAKE_MOVED, TAKE_STOP };

/* Takes the lease of sub: waits while another worker holds it or the
 * store is unreachable (serving the group meanwhile), until this worker
 * holds it, the job turns out done, its partition moves to another
 * member, or a stop is requested. */
static enum take_outcome take_lease(struct svc *s, const kb_message *m,
				    const Kb__Submission *sub,
				    struct kb_lease_take *lt)
{
	char err[256], said[160] = "";

	for (;;) {
		redisContext *c;
		int rc;

		if (kb_signal_stopping())
			return TAKE_STOP;
		c = store(s);
		rc = c ? kb_lease_take(c, sub->id, s->token, lease_ttl_ms(s),
				       s->o->job_attempts, lt, err, sizeof(err))
		       : -EIO;
		if (rc == 0 && lt->verdict == KB_LEASE_TAKEN)
			return TAKE_RUN;
		if (rc == 0 && lt->verdict == KB_LEASE_DONE)
			return TAKE_DONE;
		if (rc == 0 && lt->verdict == KB_LEASE_GIVE_UP)
			return TAKE_GIVE_UP;
		if (rc < 0) {
			store_check(s);
			snprintf(err, sizeof(err), "the store is unreachable");
		} else {
			snprintf(err, sizeof(err), "%s is running it",
				 lt->owner);
		}
		/* Said once per reason, not every second. */
		if (strcmp(said, err) != 0) {
			kb_info("job sub=%" PRIu64 " waits: %s", sub->id, err);
			snprintf(said, sizeof(said), "%s", err);
		}
		serve(s, WAIT_STEP_S);
		if (!kb_consumer_assigned(s->c, m))
			return TAKE_MOVED;
	}
}

/* Gives sub its task files when the event names them by reference.
 * Returns 0, 1 when the store cannot be reached now (try again), or -1
 * when the task cannot be had (why set). */
static int resolve_task(struct svc *s, Kb__Submission *sub, char *why,
			size_t why_size)
{
	char err[256];
	int rc;

	if (sub->task)
		return 0;
	if (!sub->task_ref || !sub->task_ref[0]) {
		snprintf(why, why_size, "the submission names no task");
		return -1;
	}
	rc = kb_taskstore_resolve(s->tasks, store(s), sub, err, sizeof(err));
	if (rc == 0)
		return 0;
	if (rc == -EIO) {
		store_check(s);
		kb_warn("job sub=%" PRIu64 ": %s (trying again)", sub->id, err);
		return 1;
	}
	snprintf(why, why_size, "the task's files cannot be had: %s", err);
	return -1;
}

static int eval_job(struct svc *s, const kb_message *m, Kb__Submission *sub,
		    int *lost);

/* Whether the ranker has folded a Result of sub already: 1, 0, or -1 when
 * the store cannot say. Why: a worker that published its Result and was
 * killed before it marked the lease done leaves a lease that runs out
 * like a crash's; the next worker would evaluate the job again. */
static int result_folded(struct svc *s, const Kb__Submission *sub)
{
	char id[24], key[256];
	redisContext *c = store(s);
	redisReply *r;
	int rc;

	if (!c)
		return -1;
	snprintf(id, sizeof(id), "%" PRIu64, sub->id);
	snprintf(key, sizeof(key), KB_KEY_RESULT, id, sub->gpu ? sub->gpu : "");
	r = redisCommand(c, "EXISTS %s", key);
	rc = r && r->type == REDIS_REPLY_INTEGER ? r->integer > 0 : -1;
	if (r)
		freeReplyObject(r);
	else
		store_check(s);
	return rc;
}

/* Runs sub (which this call owns and frees) once, whatever deliveries
 * and rebalances do: under its lease, publishing its Result and then
 * committing m. Returns 0 to go on, 1 to stop the loop (a drain, a hung
 * job, or a Result that could not be published). */
static int run_job(struct svc *s, const kb_message *m, Kb__Submission *sub)
{
	char why[384];

	for (;;) {
		struct kb_lease_take lt;
		int rc, lost = 0;

		switch (take_lease(s, m, sub, &lt)) {
		case TAKE_STOP:
			kb__submission__free_unpacked(sub, NULL);
			return 1;
		case TAKE_MOVED:
			kb_info("job sub=%" PRIu64 ": its partition moved to "
				"another worker while it waited",
				sub->id);
			kb__submission__free_unpacked(sub, NULL);
			return 0;
		case TAKE_DONE:
			kb_info("job sub=%" PRIu64 " was evaluated already (by "
				"%s): skipped",
				sub->id, lt.owner);
			kb__submission__free_unpacked(sub, NULL);
			commit(s, m);
			return 0;
		case TAKE_GIVE_UP:
			snprintf(why, sizeof(why),
				 "evaluation abandoned: %d workers stopped "
				 "(crashed or hung) while running this "
				 "submission; it is not run again",
				 lt.attempts);
			return end_job(s, m, sub, why);
		case TAKE_RUN:
			break;
		}
		if (lt.attempts > 0 && result_folded(s, sub) == 1) {
			kb_info("job sub=%" PRIu64 ": the worker that stopped "
				"while running it had published its Result "
				"(folded): not run again",
				sub->id);
			finish_lease(s, sub->id);
			kb__submission__free_unpacked(sub, NULL);
			commit(s, m);
			return 0;
		}
		if (lt.attempts > 0)
			kb_warn("job sub=%" PRIu64
				": %d worker%s stopped while "
				"running it before",
				sub->id, lt.attempts,
				lt.attempts == 1 ? "" : "s");
		rc = resolve_task(s, sub, why, sizeof(why));
		if (rc < 0)
			return end_job(s, m, sub, why);
		if (rc > 0) {
			release_lease(s, sub->id);
			serve(s, WAIT_STEP_S);
			continue;
		}
		s->lease_id = sub->id;
		s->lease_ok_at = kb_mono_s();
		s->lease_next = s->lease_ok_at + s->o->lease_ttl_s / 4;
		s->lease_lost = 0;
		rc = eval_job(s, m, sub, &lost);
		if (!lost)
			return rc;
		/* Another worker holds it now (or may): wait for it as any
		 * second delivery would. The job's memory is the abandoned
		 * thread's, if it still runs; this message is decoded again. */
		sub = kb__submission__unpack(NULL, m->value_len, m->value);
		if (!sub)
			return 1;
	}
}

/* run_job's evaluation. *lost: the lease was lost meanwhile (the job was
 * abandoned, nothing published, sub freed or left to its thread). */
static int eval_job(struct svc *s, const kb_message *m, Kb__Submission *sub,
		    int *lost)
{
	/* The job, and the Submission it owns, outlive this frame if it is
	 * abandoned while its thread still runs: they are left to the exit
	 * in that case. */
	struct job *j = kb__xcalloc(1, sizeof(*j));
	Kb__ResultEvent ev = KB__RESULT_EVENT__INIT;
	const uint64_t id = sub->id;
	Kb__Result *r;
	pthread_t th;
	int rc = 0, running;

	j->svc = s;
	j->sub = sub;
	j->t0 = kb_mono_s();
	atomic_init(&j->cancel, 0);
	pthread_mutex_init(&j->mu, NULL);
	pthread_cond_init(&j->cv, NULL);
	snprintf(j->key, sizeof(j->key), "%" PRIu64, id);
	kb_info("job start sub=%" PRIu64 " gpu=%s lb=%s mode=%s user=%s "
		"partition=%d offset=%" PRId64,
		id, event_gpu(j), sub->leaderboard, kb_mode_label(sub->mode),
		sub->user_id, m->partition, m->offset);
	/* Taken: the first event, before anything can go wrong. */
	on_progress(j, KB__STAGE__STAGE_QUEUED, "running", 0);
	kb_gauge_set(kb_metric_get1(M.inflight, s->o->gpu), 1);

	rc = pthread_create(&th, NULL, job_main, j);
	if (rc != 0) {
		/* Without a thread the job cannot be timed; leave it for
		 * another worker. */
		kb_error("pthread_create: %s", strerror(rc));
		release_lease(s, id);
		job_free(j);
		return 1;
	}
	r = wait_job(s, j, th, &running);
	kb_gauge_set(kb_metric_get1(M.inflight, s->o->gpu), 0);
	if (!r) {
		/* A drain is no fault of the job's: it does not count. A
		 * hang does (the lease ends unrenewed). */
		*lost = s->lease_lost && !s->hung && !kb_signal_stopping();
		if (!s->hung && !s->lease_lost)
			release_lease(s, id);
		if (!running)
			job_free(j);
		return *lost ? 0 : 1;
	}
	ev.submission_id = id;
	ev.gpu = (char *)event_gpu(j);
	ev.event_case = KB__RESULT_EVENT__EVENT_RESULT;
	ev.result = r;
	publish_event(j, &ev, 1, &rc);
	kb_info("job done sub=%" PRIu64 " gpu=%s lb=%s mode=%s verdict=%s "
		"fault=%s score=%.9g build_s=%.3f harness_s=%.3f "
		"elapsed_s=%.3f published=%s",
		id, r->gpu, r->leaderboard, kb_mode_label(r->mode),
		kb_report_verdict_name(r->verdict),
		kb_report_fault_name(r->fault), r->has_score ? r->score : 0.0,
		r->build_s, r->harness_s, kb_mono_s() - j->t0,
		rc == 0 ? "yes" : "no");
	count_job(s->o->gpu, r, kb_mono_s() - j->t0);
	kb__result__free_unpacked(r, NULL);
	job_free(j); /* and sub */
	if (rc < 0)
		return 1;
	finish_lease(s, id);
	commit(s, m);
	return 0;
}

/* Sends an undecodable message to the dead-letter topic and commits it.
 * Returns 0 to go on, 1 to stop. */
static int dead_letter(struct svc *s, const kb_message *m, const char *reason)
{
	uint8_t *buf;
	size_t len;
	int rc;

	kb_warn("dead letter from %s [%d] @%" PRId64 ": %s", m->topic,
		m->partition, m->offset, reason);
	if (kb_dead_letter_pack(m, reason, &buf, &len) < 0)
		return 1; /* out of memory: stop, the message uncommitted */
	rc = send_reliably(s, KB_TOPIC_DLQ, m->key, m->key ? m->key_len : 0,
			   buf, len, "dead letter");
	free(buf);
	if (rc < 0)
		return 1;
	commit(s, m);
	return 0;
}

/* One message: its partitions stay paused (no other message arrives)
 * while the job waits for its lease and runs, and the loop keeps
 * polling, so that this member stays in the group meanwhile. */
static int handle(struct svc *s, const kb_message *m)
{
	Kb__Submission *sub =
		m->value ? kb__submission__unpack(NULL, m->value_len, m->value)
			 : NULL;
	int rc;

	if (!sub)
		return dead_letter(s, m, "value is not a kb.Submission");
	kb_consumer_pause(s->c);
	s->busy_with = sub->id;
	s->heartbeat_next = 0; /* say so at once */
	rc = run_job(s, m, sub);
	s->busy_with = 0;
	s->heartbeat_next = 0;
	kb_consumer_resume(s->c);
	return rc;
}

/* The group settings librdkafka's guidance gives for members that work
 * long on one message: cooperative-sticky assignment, so that a rebalance
 * (a worker joining or leaving) moves only the partitions that must move
 * and never takes one from a member that is still there; and the member
 * polls all along (paused while busy), so max.poll.interval.ms only has
 * to cover the longest wait between polls (a Result's publication with
 * its retries), not a job. The caller's extras come after and may
 * override them. */
static const char **consumer_extra(const struct kb_service_opts *o)
{
	size_t n = 0;
	const char **extra;

	while (o->consumer_extra && o->consumer_extra[n])
		n++;
	extra = kb__xcalloc(n + 5, sizeof(*extra));
	extra[0] = "partition.assignment.strategy";
	extra[1] = "cooperative-sticky";
	extra[2] = "max.poll.interval.ms";
	extra[3] = "600000";
	for (size_t i = 0; i < n; i++)
		extra[4 + i] = o->consumer_extra[i];
	return extra;
}

int kb_service_run(const struct kb_service_opts *o, char *errstr,
		   size_t errstr_size)
{
	struct svc s = {.o = o};
	char topic[256], group[256], rnd[17];
	const char *topics[1] = {topic};
	const char **extra;
	int rc = 0;

	rc = kb_topic_submissions(topic, sizeof(topic), o->gpu);
	if (rc < 0) {
		snprintf(errstr, errstr_size,
			 "KB_GPU \"%s\" cannot name a Kafka topic", o->gpu);
		return rc;
	}
	snprintf(group, sizeof(group), "kb-worker.%s", o->gpu);
	kb_random_hex(rnd, 8);
	snprintf(s.token, sizeof(s.token), "%s/%ld/%s", o->worker,
		 (long)getpid(), rnd);
	s.tasks = kb_taskstore_new(o->task_cache_dir);
	if (!s.tasks) {
		snprintf(errstr, errstr_size, "out of memory");
		return -ENOMEM;
	}
	metrics_init();
	kb_gauge_set(kb_metric_get1(M.inflight, o->gpu), 0);
	s.p = kb_producer_new(o->brokers, o->worker, NULL, errstr, errstr_size);
	if (!s.p)
		return -EIO;
	extra = consumer_extra(o);
	s.c = kb_consumer_new(o->brokers, group, topics, 1, extra, errstr,
			      errstr_size);
	free(extra);
	if (!s.c) {
		kb_producer_destroy(s.p);
		kb_taskstore_destroy(s.tasks);
		return -EIO;
	}
	kb_info("consuming %s in group %s as %s", topic, group, o->worker);
	kb_gauge_set(kb_metric_get1(M.serving, o->gpu), 1);
	while (!kb_signal_stopping()) {
		kb_message m;
		int n;

		heartbeat(&s);
		n = kb_consumer_poll(s.c, 500, &m);
		kb_producer_poll(s.p, 0);
		if (n < 0) {
			snprintf(errstr, errstr_size, "consumer failed (%d)",
				 n);
			rc = n;
			break;
		}
		if (n == 0) {
			/* Idle: the next Python job's first run may start
			 * (no job's timings to disturb). */
			kb_eval_ready_start(o->eval.ready, &o->eval);
			continue;
		}
		/* A message that arrives with the stop stays uncommitted for
		 * the next worker. */
		if (!kb_signal_stopping() && handle(&s, &m) != 0) {
			kb_message_release(&m);
			if (s.hung) {
				snprintf(errstr, errstr_size, "a job hung");
				rc = -ETIMEDOUT;
			}
			break;
		}
		kb_message_release(&m);
	}
	kb_gauge_set(kb_metric_get1(M.serving, o->gpu), 0);
	kb_info("stopping: flushing the producer and leaving the group");
	if (kb_producer_flush(s.p, 5000) < 0)
		kb_warn("some progress events were not delivered");
	kb_consumer_destroy(s.c);
	kb_producer_destroy(s.p);
	if (s.redis)
		redisFree(s.redis);
	kb_taskstore_destroy(s.tasks);
	return rc;
}
