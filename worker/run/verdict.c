#include "verdict.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Wall time also covers process start, input generation, checking and L2
 * flushes, so honest reports stay far below it; the slack only absorbs
 * clock granularity. */
#define DEVICE_TIME_SLACK_S 0.001
#define DEVICE_TIME_TOLERANCE 1.02

static int is_private(const struct kb_run_outcome *o)
{
	return strcmp(o->key, "private") == 0;
}

static void describe_end(const struct kb_run_outcome *o, char *buf, size_t n)
{
	const int secret = is_private(o);

	switch (o->end) {
	case KB_RUN_OK:
		snprintf(buf, n, "%s passed", o->label);
		break;
	case KB_RUN_FAILED:
		snprintf(buf, n, "%s failed", o->label);
		break;
	case KB_RUN_TIMEOUT:
		snprintf(buf, n, "%s timed out after %.0f s", o->label,
			 o->timeout_s);
		break;
	case KB_RUN_CRASHED:
		if (secret)
			snprintf(buf, n, "%s crashed", o->label);
		else if (o->oom)
			snprintf(buf, n, "%s ran out of memory", o->label);
		else if (o->signal)
			snprintf(buf, n, "%s crashed with signal %d (%s)",
				 o->label, o->signal, strsignal(o->signal));
		else if (o->user_started && kb_run_infra_exit(o->exit_code))
			/* The harness's code for its own errors, but after
			 * the submission ran: it may have exited itself. */
			snprintf(buf, n,
				 "%s crashed: exit status %d after your code "
				 "started",
				 o->label, o->exit_code);
		else if (o->why[0])
			snprintf(buf, n, "%s crashed: %s", o->label, o->why);
		else if (o->bad_report)
			snprintf(buf, n, "%s produced no valid harness report",
				 o->label);
		else
			snprintf(buf, n, "%s exited with status %d", o->label,
				 o->exit_code);
		break;
	case KB_RUN_INFRA:
		snprintf(buf, n, "infrastructure error in the %s: %s", o->label,
			 o->why[0] ? o->why : "harness failed");
		break;
	}
}

static void set(struct kb_verdict *v, Kb__Verdict verdict, Kb__Fault fault)
{
	v->verdict = verdict;
	v->fault = fault;
}

static int assemble_build(const struct kb_verdict_in *in, struct kb_verdict *v)
{
	const char *msg = in->build_msg ? in->build_msg : "";

	switch (in->build) {
	case KB_BUILD_NONE:
	case KB_BUILD_OK:
		return 0;
	case KB_BUILD_FAILED:
		set(v, KB__VERDICT__VERDICT_COMPILE_ERROR,
		    KB__FAULT__FAULT_USER);
		snprintf(v->error, sizeof(v->error),
			 "compilation failed (exit status %d)",
			 in->build_exit_code);
		return 1;
	case KB_BUILD_TIMEOUT:
		set(v, KB__VERDICT__VERDICT_COMPILE_ERROR,
		    KB__FAULT__FAULT_USER);
		snprintf(v->error, sizeof(v->error),
			 "compilation timed out after %.0f s",
			 in->build_timeout_s);
		return 1;
	case KB_BUILD_UNSUPPORTED:
		/* Reported as a compile error so the user sees why, but it is
		 * a routing problem, never charged to the user. */
		set(v, KB__VERDICT__VERDICT_COMPILE_ERROR,
		    KB__FAULT__FAULT_INFRA);
		snprintf(v->error, sizeof(v->error), "%s", msg);
		return 1;
	case KB_BUILD_INFRA:
		set(v, KB__VERDICT__VERDICT_INFRA_ERROR,
		    KB__FAULT__FAULT_INFRA);
		snprintf(v->error, sizeof(v->error),
			 "infrastructure error during the build: %s", msg);
		return 1;
	}
	return 0;
}

static void assemble_score(const struct kb_verdict_in *in, struct kb_verdict *v)
{
	for (size_t i = 0; i < in->nruns; i++) {
		const struct kb_run_outcome *o = &in->runs[i];

		if (strcmp(o->key, "leaderboard") != 0)
			continue;
		if (!o->means || o->nmeans == 0 ||
		    kb_score_combine(in->ranking_by, o->means, o->nmeans,
				     &v->score) < 0) {
			set(v, KB__VERDICT__VERDICT_INFRA_ERROR,
			    KB__FAULT__FAULT_INFRA);
			snprintf(v->error, sizeof(v->error),
				 "the ranked run reported no usable benchmark "
				 "means (ranking_by %s)",
				 in->ranking_by ? in->ranking_by : "?");
			v->score = 0;
			return;
		}
		v->has_score = 1;
		return;
	}
	set(v, KB__VERDICT__VERDICT_INFRA_ERROR, KB__FAULT__FAULT_INFRA);
	snprintf(v->error, sizeof(v->error), "the plan had no ranked run");
}

void kb_verdict_assemble(const struct kb_verdict_in *in, struct kb_verdict *v)
{
	memset(v, 0, sizeof(*v));
	if (in->infra) {
		set(v, KB__VERDICT__VERDICT_INFRA_ERROR,
		    KB__FAULT__FAULT_INFRA);
		snprintf(v->error, sizeof(v->error), "infrastructure error: %s",
			 in->infra);
		return;
	}
	if (in->rejected) {
		set(v, KB__VERDICT__VERDICT_FAILED, KB__FAULT__FAULT_USER);
		snprintf(v->error, sizeof(v->error), "bad request: %s",
			 in->rejected);
		return;
	}
	/* An infrastructure failure in any run outranks the user's own: the
	 * user's failure may be a symptom of it. */
	for (size_t i = 0; i < in->nruns; i++)
		if (in->runs[i].end == KB_RUN_INFRA) {
			set(v, KB__VERDICT__VERDICT_INFRA_ERROR,
			    KB__FAULT__FAULT_INFRA);
			describe_end(&in->runs[i], v->error, sizeof(v->error));
			return;
		}
	if (assemble_build(in, v))
		return;
	for (size_t i = 0; i < in->nruns; i++) {
		const struct kb_run_outcome *o = &in->runs[i];
		static const Kb__Verdict by_end[] = {
			[KB_RUN_FAILED] = KB__VERDICT__VERDICT_FAILED,
			[KB_RUN_TIMEOUT] = KB__VERDICT__VERDICT_TIMEOUT,
			[KB_RUN_CRASHED] = KB__VERDICT__VERDICT_CRASHED,
		};

		if (o->end == KB_RUN_OK)
			continue;
		set(v, by_end[o->end], KB__FAULT__FAULT_USER);
		describe_end(o, v->error, sizeof(v->error));
		return;
	}
	if (in->nruns < in->nplanned || in->nplanned == 0) {
		set(v, KB__VERDICT__VERDICT_INFRA_ERROR,
		    KB__FAULT__FAULT_INFRA);
		snprintf(v->error, sizeof(v->error),
			 "evaluation stopped after %zu of %zu runs", in->nruns,
			 in->nplanned);
		return;
	}
	for (size_t i = 0; i < in->nruns; i++) {
		const struct kb_run_outcome *o = &in->runs[i];

		if (!o->suspect)
			continue;
		set(v, KB__VERDICT__VERDICT_SUSPECT, KB__FAULT__FAULT_NONE);
		if (is_private(o))
			snprintf(v->error, sizeof(v->error),
				 "%s: a measurement was flagged suspect; not "
				 "ranked",
				 o->label);
		else
			snprintf(v->error, sizeof(v->error),
				 "%s: %s; not ranked", o->label, o->why);
		return;
	}
	set(v, KB__VERDICT__VERDICT_PASSED, KB__FAULT__FAULT_NONE);
	if (in->mode == KB__MODE__MODE_LEADERBOARD)
		assemble_score(in, v);
}

/* Parses benchmark.<i>.<field> as a number. */
static int number(const struct kb_popcorn *p, long i, const char *field,
		  double *out)
{
	char key[64];
	const char *s;
	char *end;

	snprintf(key, sizeof(key), "benchmark.%ld.%s", i, field);
	s = kb_popcorn_get(p, key);
	if (!s)
		return -ENOENT;
	errno = 0;
	*out = strtod(s, &end);
	return errno || end == s || *end ? -EINVAL : 0;
}

int kb_verdict_suspect(const struct kb_popcorn *p, double wall_s, char *why,
		       size_t why_size)
{
	double device_ns = 0;

	for (long i = 0; i < p->benchmark_count; i++) {
		char key[64];
		const char *status;
		double mean, runs;

		snprintf(key, sizeof(key), "benchmark.%ld.status", i);
		status = kb_popcorn_get(p, key);
		if (status && strcmp(status, "suspect") == 0) {
			/* The harness says why (the floor, untrusted
			 * timings, work outliving the timing); upstream
			 * harnesses never say suspect. */
			snprintf(key, sizeof(key), "benchmark.%ld.error", i);
			const char *reason = kb_popcorn_get(p, key);
			if (reason && *reason)
				snprintf(why, why_size, "benchmark %ld: %s", i,
					 reason);
			else
				snprintf(why, why_size,
					 "benchmark %ld was flagged suspect by "
					 "the harness",
					 i);
			return 1;
		}
		if (number(p, i, "mean", &mean) == 0 &&
		    number(p, i, "runs", &runs) == 0 && mean > 0 && runs > 0)
			device_ns += mean * runs;
	}
	if (device_ns * 1e-9 >
	    wall_s * DEVICE_TIME_TOLERANCE + DEVICE_TIME_SLACK_S) {
		snprintf(why, why_size,
			 "the harness reported %.3f s of device time in %.3f s "
			 "of wall time",
			 device_ns * 1e-9, wall_s);
		return 1;
	}
	return 0;
}

int kb_verdict_private_key_ok(const char *key)
{
	static const char *const kept[] = {
		"runs", "mean", "std", "err", "best", "worst", "status",
	};
	const char *dot;

	if (strcmp(key, "check") == 0 || strcmp(key, "test-count") == 0 ||
	    strcmp(key, "benchmark-count") == 0)
		return 1;
	if (strncmp(key, "test.", 5) != 0 &&
	    strncmp(key, "benchmark.", 10) != 0)
		return 0;
	dot = strrchr(key, '.');
	for (size_t i = 0; i < sizeof(kept) / sizeof(kept[0]); i++)
		if (strcmp(dot + 1, kept[i]) == 0)
			return strncmp(key, "test.", 5) != 0 ||
			       strcmp(kept[i], "status") == 0;
	return 0;
}

void kb_run_outcome_clear(struct kb_run_outcome *o)
{
	free(o->means);
	o->means = NULL;
	o->nmeans = 0;
}
