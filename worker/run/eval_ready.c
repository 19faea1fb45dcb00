/* kb_eval_ready: the held Python run (see eval_ready.h): one started
 * ahead for the next job, which may take it for its first run. The run
 * itself is ready.h's kb_held; this file decides when one starts, whether
 * a job takes it, and hands it over (eval_int.h's hooks, which eval.c
 * calls).
 */
#include "eval_ready.h"

#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "eval_int.h"
#include "kb_log.h"
#include "kb_util.h"
#include "pbutil.h"
#include "ready.h"

/* How long a held run waits for a job before it ends (the next job then
 * starts another). */
#define READY_HOLD_S 3600.0
/* After a held run failed (ready_backoff), the next waits this long,
 * doubled for each failure in a row (at most READY_HOLD_S). */
#define READY_RETRY_S 10.0
/* How long a job waits for a held run to finish starting. */
#define READY_SETTLE_S 60.0

struct kb_eval_ready {
	pthread_mutex_t mu;
	int busy; /* a job or a start has it */
	struct kb_eval_opts o;
	struct job j;        /* J, the options, the interpreter: as a job's */
	struct kb_argv argv; /* the interpreter and J/out/kb_ready.py */
	struct sb_args a;
	struct kb_held h;
	double t0;         /* when it started */
	unsigned taken;    /* jobs that took one */
	unsigned failures; /* held runs in a row that failed */
	double next_start; /* none starts before (kb_mono_s()) */
};

static void ready_put(struct kb_eval_ready *rd);
static void ready_drop(struct kb_eval_ready *rd);
static void ready_backoff(struct kb_eval_ready *rd);

/* ---- the job's first run ---- */

/* Hands argv (the run's: the held run's interpreter, then its arguments)
 * to the held run this job took. Returns 1 when it runs there; 0 when it
 * cannot (the held run ended before the job came): then J/step is fresh
 * again with the cases for a sandbox of its own; -1 with the infra error
 * set. Either way the job no longer holds it. */
int kb__eval_held_release(struct job *j, const struct kb_plan_run *p,
			  const struct kb_argv *argv)
{
	struct kb_eval_ready *rd = j->held;
	int rc = -EINVAL;

	if (strcmp(argv->v[0], rd->argv.v[0]) == 0)
		rc = kb_held_release(&rd->h, argv->v + 1, p->timeout_s);
	if (rc == 0)
		return 1;
	kb_warn("sub=%" PRIu64 ": the held Python run cannot take the "
		"job (%s): a fresh sandbox runs it",
		j->s->id, rc == -EPIPE ? "it had ended" : strerror(-rc));
	kb_held_discard(&rd->h);
	ready_put(rd);
	j->held = NULL;
	kb_jobdir_step_end(&j->jd);
	return kb__eval_prepare_run(j, p) < 0 ? -1 : 0;
}

/* Waits for the held run the job released (kb__eval_held_release()). */
int kb__eval_held_join(struct job *j, struct kb_sandbox_result *r, char *err,
		       size_t err_size)
{
	struct kb_eval_ready *rd = j->held;
	int rc = kb_held_join(&rd->h, r, err, err_size);

	ready_put(rd);
	j->held = NULL;
	/* Ended before the sandbox saw the release (ready.py died just
	 * before the job came): nothing of the job ran; not the user's. */
	if (rc == 0 && !r->infra_error && !r->released) {
		r->infra_error = 1;
		snprintf(r->infra_msg, sizeof(r->infra_msg),
			 "the held Python run ended before its job started");
	}
	return rc;
}

/* The job ended before its first run: its held run ends unused. */
void kb__eval_held_drop(struct job *j)
{
	if (!j->held)
		return;
	kb_held_discard(&j->held->h);
	ready_put(j->held);
	j->held = NULL;
}

/* ---- taking it, starting the next ---- */

/* Gives back what a job or a start took. */
static void ready_put(struct kb_eval_ready *rd)
{
	pthread_mutex_lock(&rd->mu);
	rd->busy = 0;
	pthread_mutex_unlock(&rd->mu);
}

/* Takes rd for the caller (busy) when a held run is alive and neither a
 * job nor a start has it. Returns 1 if so, else 0. */
static int ready_claim(struct kb_eval_ready *rd)
{
	int ok;

	pthread_mutex_lock(&rd->mu);
	ok = !rd->busy && kb_held_alive(&rd->h);
	if (ok)
		rd->busy = 1;
	pthread_mutex_unlock(&rd->mu);
	return ok;
}

/* A held run still starting (importing torch) would share the CPUs with
 * the job about to run, whose timings it would disturb: the job waits
 * until it is ready. One that is not ready within READY_SETTLE_S is
 * ended and counts as a failure. */
void kb__eval_ready_settle(struct kb_eval_ready *rd)
{
	if (!ready_claim(rd))
		return;
	switch (kb_held_wait_ready(&rd->h, READY_SETTLE_S)) {
	case 1:
		break;
	case 0:
		kb_warn("the held Python run was not ready after %.0f s: "
			"ended",
			kb_mono_s() - rd->t0);
		kb_held_discard(&rd->h);
		ready_drop(rd);
		ready_backoff(rd);
		break;
	default: /* it ended: ready_drop says how */
		ready_drop(rd);
	}
	ready_put(rd);
}

/* Whether the job's first command can be the held run: its first harness
 * run, of a Python task, with the environment every held run has (no
 * secret seed, not under Nsight Compute), the real sandbox and no
 * compile step before it (which needs J/step first). */
int kb__eval_ready_fits(const struct job *j, const struct kb_builder *b)
{
	return j->python && j->o->python && !j->o->sandbox &&
	       !j->o->build_only && j->nplan > 0 && !j->plan[0].secret &&
	       !kb__eval_under_ncu(j, &j->plan[0]) &&
	       !(b->build && kb_build_py_compiles(&j->s->code));
}

/* Takes the held run for job j when one is waiting: J becomes the job's
 * directory (its J/step the scratch of the first run). */
void kb__eval_ready_take(struct kb_eval_ready *rd, struct job *j)
{
	if (!ready_claim(rd))
		return;
	j->jd = rd->j.jd;
	/* The held run's options keep pointing at rd->j.jd's paths, which
	 * stay; its descriptors are the job's now. */
	rd->j.jd.fd = rd->j.jd.lock_fd = rd->j.jd.out_fd = -1;
	rd->j.jd.step_fd = -1;
	j->held = rd;
	rd->taken++;
	rd->failures = 0;
	kb_debug("sub=%" PRIu64 " takes the held Python run started %.1f s "
		 "ago (%s)",
		 j->s->id, kb_mono_s() - rd->t0,
		 kb_held_wait_ready(&rd->h, 0.001) == 1 ? "ready"
							: "not ready");
}

struct kb_eval_ready *kb_eval_ready_new(void)
{
	struct kb_eval_ready *rd = kb__xcalloc(1, sizeof(*rd));

	pthread_mutex_init(&rd->mu, NULL);
	rd->j.jd.fd = -1;
	return rd;
}

/* One more held run in a row failed: the next waits longer and longer
 * (READY_RETRY_S doubled per failure, at most READY_HOLD_S). */
static void ready_backoff(struct kb_eval_ready *rd)
{
	rd->failures++;
	rd->next_start =
		kb_mono_s() +
		fmin(READY_RETRY_S *
			     (1 << (rd->failures < 9 ? rd->failures : 9)),
		     READY_HOLD_S);
}

/* Ends a held run that no job took and releases its J (rd is busy). */
static void ready_drop(struct kb_eval_ready *rd)
{
	struct kb_sandbox_result r;
	char err[256] = "";
	int rc;

	if (kb_held_alive(&rd->h)) {
		kb_held_discard(&rd->h);
	} else if (rd->h.started) {
		double lived = kb_mono_s() - rd->t0;

		rc = kb_held_join(&rd->h, &r, err, sizeof(err));
		if (rc == 0 && !r.infra_error && r.timed_out) {
			kb_info("the held Python run reached its hold limit "
				"(%.0f s) unused",
				lived);
		} else {
			/* Ended by itself: a broken interpreter or sandbox. */
			ready_backoff(rd);
			kb_warn("the held Python run ended before a job came "
				"(after %.1f s; the next in %.0f s): %s%s%.2000s",
				lived, rd->next_start - kb_mono_s(),
				rc < 0 || r.infra_error ? err : "it exited",
				r.err && r.err_len ? "; stderr: " : "",
				r.err ? r.err : "");
		}
		kb_sandbox_result_clear(&r);
	}
	if (rd->j.jd.fd >= 0)
		kb_jobdir_close(&rd->j.jd, 0);
	rd->j.jd.fd = -1;
	kb_argv_free(&rd->argv);
}

int kb_eval_ready_start(struct kb_eval_ready *rd, const struct kb_eval_opts *o)
{
	char err[256] = "", script[PATH_MAX + 32];
	double cap;
	int rc;

	if (!rd || !o->python || !o->python->torch[0] || o->sandbox)
		return 0;
	pthread_mutex_lock(&rd->mu);
	if (rd->busy || kb_held_alive(&rd->h)) {
		pthread_mutex_unlock(&rd->mu);
		return 0;
	}
	rd->busy = 1;
	pthread_mutex_unlock(&rd->mu);
	ready_drop(rd); /* one that ended unused */
	if (kb_mono_s() < rd->next_start) {
		ready_put(rd);
		return 0;
	}
	rd->o = *o;
	rd->o.ready = NULL; /* nothing of a job's: */
	rd->o.progress = NULL;
	rd->o.progress_ctx = NULL;
	rd->o.cancel = NULL;
	memset(&rd->j, 0, sizeof(rd->j));
	rd->j.o = &rd->o;
	rd->j.python = 1;
	rd->j.jd.fd = -1;
	rc = kb_jobdir_open(&rd->j.jd, o->workdir, 0, err, sizeof(err));
	if (rc == 0)
		rc = kb_jobdir_step_begin(&rd->j.jd, err, sizeof(err));
	if (rc == 0 && (rc = kb_jobdir_write_at(rd->j.jd.out_fd,
						KB_READY_SCRIPT, kb_ready_py,
						strlen(kb_ready_py), 0444)) < 0)
		snprintf(err, sizeof(err), "%s: %s", KB_READY_SCRIPT,
			 strerror(-rc));
	if (rc == 0) {
		snprintf(script, sizeof(script), "%s/" KB_READY_SCRIPT,
			 rd->j.jd.out);
		kb_argv_push(&rd->argv, o->python->exe);
		kb_argv_push(&rd->argv, script);
		/* The run's own limit is set when it is released; its CPU
		 * time limit must allow the longest run. */
		cap = o->run_timeout_cap_s > 0 ? o->run_timeout_cap_s
					       : READY_HOLD_S;
		kb__eval_sandbox_args(&rd->j, &rd->argv, rd->j.jd.step, cap, 1,
				      1, 0, &rd->a);
		/* The go socket's number in the run (kb_sandbox.h). */
		rd->a.e.v[rd->a.e.n++] = "KB_READY_FD=4";
		rd->a.e.v[rd->a.e.n] = NULL;
		rd->t0 = kb_mono_s();
		rc = kb_held_start(&rd->h, &rd->a.so, READY_HOLD_S, err,
				   sizeof(err));
	}
	if (rc < 0) {
		ready_drop(rd);
		ready_backoff(rd);
		kb_warn("cannot start a held Python run (the next in %.0f s): "
			"%s",
			rd->next_start - kb_mono_s(), err);
	}
	ready_put(rd);
	return rc;
}

int kb_eval_ready_wait(struct kb_eval_ready *rd, double timeout_s)
{
	int rc;

	pthread_mutex_lock(&rd->mu);
	rc = rd->busy                 ? 0
	     : !kb_held_alive(&rd->h) ? -1
				      : kb_held_wait_ready(&rd->h, timeout_s);
	pthread_mutex_unlock(&rd->mu);
	return rc;
}

unsigned kb_eval_ready_taken(struct kb_eval_ready *rd)
{
	unsigned n;

	pthread_mutex_lock(&rd->mu);
	n = rd->taken;
	pthread_mutex_unlock(&rd->mu);
	return n;
}

void kb_eval_ready_free(struct kb_eval_ready *rd)
{
	if (!rd)
		return;
	pthread_mutex_lock(&rd->mu);
	if (rd->busy)
		kb_warn("a held Python run is freed while in use");
	rd->busy = 1;
	pthread_mutex_unlock(&rd->mu);
	ready_drop(rd);
	pthread_mutex_destroy(&rd->mu);
	free(rd);
}
