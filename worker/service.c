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

#include "kb_kafka.h"
#include "kb_log.h"
#include "kb_metrics.h"
#include "kb_report.h"
#include "kb_signal.h"
#include "kb_util.h"
#include "pbutil.h"

#define SEND_TIMEOUT_MS 10000
#define BACKOFF_MAX_S 30.0
#define TICK_S 0.2
#define ABANDON_WAIT_S 2.0
#define MARK_PREFIX "kb-attempt"
#define COMMITTED_TIMEOUT_MS 10000

/* Job metrics, counted in the process's registry (kb_metrics.h); main.c
 * serves it on KB_METRICS_PORT. Registered once per process; the gpu is
 * a label so that a dashboard sums workers per device type. */
static struct {
	kb_metric_family *jobs, *phase, *kills, *inflight, *serving, *retries;
} M;

static void metrics_init(void)
{
	kb_metrics *m = kb_metrics_default();

	M.jobs = kb_metrics_counter(m, "kb_worker_jobs_total",
				    "Jobs finished, by verdict and whose fault it was "
				    "(none, user, infra).", "gpu,verdict,fault");
	M.phase = kb_metrics_histogram(m, "kb_worker_job_phase_seconds",
				       "Time of a job's phases: build, run (all "
				       "harness runs), total (taken to published).",
				       "gpu,phase", kb_metrics_job_bounds,
				       KB_METRICS_JOB_NBOUNDS);
	M.kills = kb_metrics_counter(m, "kb_worker_sandbox_kills_total",
				     "Sandboxed runs the worker killed: timeout (wall "
				     "clock), sigkill (memory limit or abandoned).",
				     "gpu,reason");
	M.inflight = kb_metrics_gauge(m, "kb_worker_jobs_in_flight",
				      "Jobs being evaluated (0 or 1 per worker).", "gpu");
	M.serving = kb_metrics_gauge(m, "kb_worker_serving",
				     "1 while the worker consumes its queue, 0 "
				     "once it stops.", "gpu");
	M.retries = kb_metrics_counter(m, "kb_worker_infra_retries_total",
				       "Evaluations repeated after an infrastructure "
				       "error.", "gpu");
}

/* Counts a finished job's verdict, phases and the runs the sandbox
 * killed. */
static void count_job(const char *gpu, const Kb__Result *r, double total_s)
{
	kb_counter_inc(kb_metric_get3(M.jobs, gpu, kb_report_verdict_name(r->verdict),
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
			int left_ms = (int)((s->drain_deadline - kb_mono_s()) *
					    1000);

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
		backoff = backoff * 2 > BACKOFF_MAX_S ? BACKOFF_MAX_S : backoff * 2;
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
		kb_warn("job sub=%" PRIu64 " attempt=%d infra_error, retrying: %s",
			j->sub->id, attempt, r->error);
		kb_counter_inc(kb_metric_get1(M.retries, o->gpu));
		kb__result__free_unpacked(r, NULL);
		for (int t = 0; t < attempt * 5 && !atomic_load(&j->cancel); t++)
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

int kb_service_parse_mark(const char *metadata, uint64_t *id, int *attempt)
{
	char prefix[16];
	unsigned long long v;
	int n, used = 0;

	if (!metadata ||
	    sscanf(metadata, "%15s %llu %d%n", prefix, &v, &n, &used) != 3 ||
	    metadata[used] != '\0' || strcmp(prefix, MARK_PREFIX) != 0 ||
	    n < 0)
		return -EINVAL;
	*id = (uint64_t)v;
	*attempt = n;
	return 0;
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
	while (!j->done && !past_drain_deadline(s) &&
	       !(s->hung = kb_mono_s() > deadline)) {
		struct timespec ts;

		pthread_mutex_unlock(&j->mu);
		kb_producer_poll(s->p, 0);
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
	else
		kb_warn("abandoning sub=%" PRIu64 " at the drain deadline; its "
			"offset stays uncommitted", j->sub->id);
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

static int eval_job(struct svc *s, const kb_message *m, Kb__Submission *sub,
		    int before);

/* The attempts the mark on m's partition counts for sub: 0 when there is
 * none, or it is about another message or submission. */
static int marked_attempts(struct svc *s, const kb_message *m,
			   const Kb__Submission *sub)
{
	char meta[128], err[256];
	int64_t off;
	uint64_t id;
	int n;

	if (kb_consumer_committed(s->c, m, &off, meta, sizeof(meta),
				  COMMITTED_TIMEOUT_MS, err, sizeof(err)) < 0) {
		kb_warn("sub=%" PRIu64 ": %s (counted as a first attempt)",
			sub->id, err);
		return 0;
	}
	if (off != m->offset ||
	    kb_service_parse_mark(meta, &id, &n) < 0 || id != sub->id)
		return 0;
	return n;
}

static void mark(struct svc *s, const kb_message *m, const Kb__Submission *sub,
		 int attempt)
{
	char meta[64], err[256];

	snprintf(meta, sizeof(meta), MARK_PREFIX " %" PRIu64 " %d", sub->id,
		 attempt);
	if (kb_consumer_mark(s->c, m, meta, err, sizeof(err)) < 0)
		kb_warn("sub=%" PRIu64 ": %s (a crash now would not count)",
			sub->id, err);
}

/* Publishes an infra_error Result for a job stopped before it ran, and
 * commits m. Returns as run_job. */
static int give_up(struct svc *s, const kb_message *m, Kb__Submission *sub,
		   int attempts)
{
	Kb__ResultEvent ev = KB__RESULT_EVENT__INIT;
	struct job j = {.svc = s, .sub = sub};
	char why[256], err[256];
	Kb__Result *r;
	int rc = 0;

	snprintf(why, sizeof(why),
		 "evaluation abandoned: %d workers stopped (crashed or hung) "
		 "while running this submission; it is not run again",
		 attempts);
	kb_error("job sub=%" PRIu64 " given up: %s", sub->id, why);
	snprintf(j.key, sizeof(j.key), "%" PRIu64, sub->id);
	r = kb_eval_given_up(&s->o->eval, sub, why);
	ev.submission_id = sub->id;
	ev.gpu = r->gpu;
	ev.event_case = KB__RESULT_EVENT__EVENT_RESULT;
	ev.result = r;
	publish_event(&j, &ev, 1, &rc);
	kb__result__free_unpacked(r, NULL);
	kb__submission__free_unpacked(sub, NULL);
	if (rc < 0)
		return 1;
	if (kb_consumer_commit(s->c, m, err, sizeof(err)) < 0)
		kb_warn("commit of %s [%d] @%" PRId64 " failed: %s", m->topic,
			m->partition, m->offset, err);
	return 0;
}

/* Evaluates sub (which this call owns and frees), publishes its Result
 * and commits m. Returns 0 to go on, 1 when the job was abandoned or its
 * Result could not be published (stop the loop). */
static int run_job(struct svc *s, const kb_message *m, Kb__Submission *sub)
{
	const int before = marked_attempts(s, m, sub);

	if (before >= s->o->job_attempts)
		return give_up(s, m, sub, before);
	mark(s, m, sub, before + 1);
	return eval_job(s, m, sub, before);
}

/* run_job's evaluation: before is the attempts counted before this one
 * (restored when the job is abandoned by our own decision, a drain). */
static int eval_job(struct svc *s, const kb_message *m, Kb__Submission *sub,
		    int before)
{
	/* The job, and the Submission it owns, outlive this frame if it is
	 * abandoned while its thread still runs: they are left to the exit
	 * in that case. */
	struct job *j = kb__xcalloc(1, sizeof(*j));
	Kb__ResultEvent ev = KB__RESULT_EVENT__INIT;
	Kb__Result *r;
	pthread_t th;
	char err[256];
	int rc = 0, running;

	j->svc = s;
	j->sub = sub;
	j->t0 = kb_mono_s();
	atomic_init(&j->cancel, 0);
	pthread_mutex_init(&j->mu, NULL);
	pthread_cond_init(&j->cv, NULL);
	snprintf(j->key, sizeof(j->key), "%" PRIu64, sub->id);
	kb_info("job start sub=%" PRIu64 " gpu=%s lb=%s mode=%s user=%s "
		"partition=%d offset=%" PRId64,
		sub->id, event_gpu(j), sub->leaderboard,
		kb_report_mode_name(sub->mode), sub->user_id, m->partition,
		m->offset);
	/* Taken: the first event, before anything can go wrong. */
	on_progress(j, KB__STAGE__STAGE_QUEUED, "running", 0);
	kb_gauge_set(kb_metric_get1(M.inflight, s->o->gpu), 1);

	rc = pthread_create(&th, NULL, job_main, j);
	if (rc != 0) {
		/* Without a thread the job cannot be timed; leave it for
		 * another worker. */
		kb_error("pthread_create: %s", strerror(rc));
		job_free(j);
		return 1;
	}
	r = wait_job(s, j, th, &running);
	kb_gauge_set(kb_metric_get1(M.inflight, s->o->gpu), 0);
	if (!r) {
		/* A drain is no fault of the job's: it does not count. */
		if (!s->hung)
			mark(s, m, sub, before);
		if (!running)
			job_free(j);
		return 1;
	}
	ev.submission_id = sub->id;
	ev.gpu = (char *)event_gpu(j);
	ev.event_case = KB__RESULT_EVENT__EVENT_RESULT;
	ev.result = r;
	publish_event(j, &ev, 1, &rc);
	kb_info("job done sub=%" PRIu64 " gpu=%s lb=%s mode=%s verdict=%s "
		"fault=%s score=%.9g build_s=%.3f harness_s=%.3f "
		"elapsed_s=%.3f published=%s",
		sub->id, r->gpu, r->leaderboard, kb_report_mode_name(r->mode),
		kb_report_verdict_name(r->verdict),
		kb_report_fault_name(r->fault), r->has_score ? r->score : 0.0,
		r->build_s, r->harness_s, kb_mono_s() - j->t0,
		rc == 0 ? "yes" : "no");
	count_job(s->o->gpu, r, kb_mono_s() - j->t0);
	kb__result__free_unpacked(r, NULL);
	job_free(j); /* and sub */
	if (rc < 0)
		return 1;
	if (kb_consumer_commit(s->c, m, err, sizeof(err)) < 0)
		kb_warn("commit of %s [%d] @%" PRId64 " failed (the job may "
			"run again): %s",
			m->topic, m->partition, m->offset, err);
	return 0;
}

/* Sends an undecodable message to the dead-letter topic and commits it.
 * Returns 0 to go on, 1 to stop. */
static int dead_letter(struct svc *s, const kb_message *m, const char *reason)
{
	Kb__DeadLetter dl = KB__DEAD_LETTER__INIT;
	char err[256];
	uint8_t *buf;
	size_t len;
	int rc;

	kb_warn("dead letter from %s [%d] @%" PRId64 ": %s", m->topic,
		m->partition, m->offset, reason);
	dl.topic = (char *)m->topic;
	dl.partition = m->partition;
	dl.offset = m->offset;
	dl.key.data = (uint8_t *)m->key;
	dl.key.len = m->key ? m->key_len : 0;
	dl.value.data = (uint8_t *)m->value;
	dl.value.len = m->value ? m->value_len : 0;
	dl.reason = (char *)reason;
	len = kb__dead_letter__get_packed_size(&dl);
	buf = kb__xcalloc(1, len);
	kb__dead_letter__pack(&dl, buf);
	rc = send_reliably(s, KB_TOPIC_DLQ, m->key, m->key ? m->key_len : 0,
			   buf, len, "dead letter");
	free(buf);
	if (rc < 0)
		return 1;
	if (kb_consumer_commit(s->c, m, err, sizeof(err)) < 0)
		kb_warn("commit of dead letter failed: %s", err);
	return 0;
}

static int handle(struct svc *s, const kb_message *m)
{
	Kb__Submission *sub = m->value ? kb__submission__unpack(NULL,
							       m->value_len,
							       m->value)
				       : NULL;

	if (!sub)
		return dead_letter(s, m, "value is not a kb.Submission");
	return run_job(s, m, sub);
}

/* A job may hold the consumer for its whole evaluation without polling:
 * raise max.poll.interval.ms above the longest one, so that the group
 * does not hand its partition to another worker meanwhile. The caller's
 * extras come after and may override it. */
static const char **consumer_extra(const struct kb_service_opts *o,
				   char *interval, size_t interval_size)
{
	double job_s = kb_service_job_max_s(o) + o->drain_grace_s + 60;
	size_t n = 0;
	const char **extra;

	if (job_s * 1000 > 86400000.0)
		job_s = 86400;
	snprintf(interval, interval_size, "%.0f", job_s * 1000);
	while (o->consumer_extra && o->consumer_extra[n])
		n++;
	extra = kb__xcalloc(n + 3, sizeof(*extra));
	extra[0] = "max.poll.interval.ms";
	extra[1] = interval;
	for (size_t i = 0; i < n; i++)
		extra[2 + i] = o->consumer_extra[i];
	return extra;
}

int kb_service_run(const struct kb_service_opts *o, char *errstr,
		   size_t errstr_size)
{
	struct svc s = {.o = o};
	char topic[256], group[256], interval[32];
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
	metrics_init();
	kb_gauge_set(kb_metric_get1(M.inflight, o->gpu), 0);
	s.p = kb_producer_new(o->brokers, o->worker, NULL, errstr, errstr_size);
	if (!s.p)
		return -EIO;
	extra = consumer_extra(o, interval, sizeof(interval));
	s.c = kb_consumer_new(o->brokers, group, topics, 1, extra, errstr,
			      errstr_size);
	free(extra);
	if (!s.c) {
		kb_producer_destroy(s.p);
		return -EIO;
	}
	kb_info("consuming %s in group %s as %s", topic, group, o->worker);
	kb_gauge_set(kb_metric_get1(M.serving, o->gpu), 1);
	while (!kb_signal_stopping()) {
		kb_message m;
		int n = kb_consumer_poll(s.c, 500, &m);

		kb_producer_poll(s.p, 0);
		if (n < 0) {
			snprintf(errstr, errstr_size, "consumer failed (%d)", n);
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
	return rc;
}
