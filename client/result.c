/* kb_result: see result.h. */
#include "result.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kb_util.h"

/* Output of a run shown in a synthesised report, per stream. */
#define LOG_MAX 2000

__attribute__((format(printf, 3, 4))) static void set_why(char *why, size_t n,
							  const char *fmt, ...)
{
	va_list ap;

	if (!why || !n)
		return;
	va_start(ap, fmt);
	vsnprintf(why, n, fmt, ap);
	va_end(ap);
}

/* 1 if o has key set to true, 0 if false, -1 if absent or not boolean. */
static int get_bool(const json_t *o, const char *key)
{
	const json_t *v = json_object_get(o, key);

	if (!json_is_boolean(v))
		return -1;
	return json_is_true(v) ? 1 : 0;
}

static const char *get_str(const json_t *o, const char *key)
{
	return json_string_value(json_object_get(o, key));
}

/* Upstream FullResult list: {"success", "error", "runs": {key: {"compilation":
 * {...}|null, "run": {...}|null}}}. */
static enum kb_outcome results_outcome(const json_t *list, char *why, size_t n)
{
	size_t i;
	const json_t *r;

	if (json_array_size(list) == 0) {
		set_why(why, n, "the result lists no runs");
		return KB_OUTCOME_UNKNOWN;
	}
	json_array_foreach(list, i, r)
	{
		const char *key;
		const json_t *ev;

		if (get_bool(r, "success") == 0) {
			const char *err = get_str(r, "error");
			set_why(why, n, "the run failed: %s",
				err && *err ? err : "no detail");
			return KB_OUTCOME_FAILED;
		}
		json_object_foreach((json_t *)json_object_get(r, "runs"), key,
				    ev)
		{
			const json_t *comp = json_object_get(ev, "compilation");
			const json_t *run = json_object_get(ev, "run");
			if (json_is_object(comp) &&
			    get_bool(comp, "success") == 0) {
				set_why(why, n, "compilation failed (%s)", key);
				return KB_OUTCOME_FAILED;
			}
			if (json_is_object(run) &&
			    (get_bool(run, "success") == 0 ||
			     get_bool(run, "passed") == 0)) {
				set_why(why, n, "run '%s' did not pass", key);
				return KB_OUTCOME_FAILED;
			}
		}
	}
	return KB_OUTCOME_PASSED;
}

/* A record's runs: [{"mode", "passed", ...}]. */
static enum kb_outcome runs_outcome(const json_t *list, char *why, size_t n)
{
	size_t i;
	const json_t *r;

	if (json_array_size(list) == 0) {
		set_why(why, n, "no runs recorded");
		return KB_OUTCOME_UNKNOWN;
	}
	json_array_foreach(list, i, r)
	{
		if (get_bool(r, "passed") != 1) {
			set_why(why, n, "run '%s' did not pass",
				get_str(r, "mode") ? get_str(r, "mode") : "?");
			return KB_OUTCOME_FAILED;
		}
	}
	return KB_OUTCOME_PASSED;
}

enum kb_outcome kb_result_outcome(const json_t *res, char *why, size_t why_size)
{
	const char *verdict = get_str(res, "verdict");
	const char *status = get_str(res, "status");
	const json_t *list;
	int passed;

	if (why && why_size)
		why[0] = '\0';
	if (!json_is_object(res)) {
		set_why(why, why_size, "the result is not a JSON object");
		return KB_OUTCOME_UNKNOWN;
	}
	/* The job's status first, as popcorn-cli reads it: failed, timed_out
	 * and hacked are failures whatever else the record says (a ranked
	 * submission can pass every run it made and still not be ranked). */
	const json_t *job = json_object_get(res, "job");
	const char *js = get_str(job, "status"), *jerr = get_str(job, "error");
	if (js && (strcmp(js, "failed") == 0 || strcmp(js, "timed_out") == 0 ||
		   strcmp(js, "hacked") == 0)) {
		set_why(why, why_size, "job %s: %s", js,
			jerr && *jerr ? jerr : "no detail");
		return verdict && strcmp(verdict, "infra_error") == 0
			       ? KB_OUTCOME_INFRA
			       : KB_OUTCOME_FAILED;
	}
	if (verdict && *verdict) {
		set_why(why, why_size, "verdict %s", verdict);
		if (strcmp(verdict, "passed") == 0)
			return KB_OUTCOME_PASSED;
		if (strcmp(verdict, "infra_error") == 0)
			return KB_OUTCOME_INFRA;
		return KB_OUTCOME_FAILED;
	}
	passed = get_bool(res, "passed");
	if (passed >= 0) {
		set_why(why, why_size, "%s",
			passed ? "passed" : "did not pass");
		return passed ? KB_OUTCOME_PASSED : KB_OUTCOME_FAILED;
	}
	if (status && strcmp(status, "failed") == 0) {
		const char *err = get_str(res, "error");
		set_why(why, why_size, "the platform could not run it: %s",
			err && *err ? err : "no detail");
		return KB_OUTCOME_INFRA;
	}
	list = json_object_get(res, "results");
	if (json_is_array(list))
		return results_outcome(list, why, why_size);
	list = json_object_get(res, "runs");
	if (json_is_array(list))
		return runs_outcome(list, why, why_size);
	set_why(why, why_size, "the result says neither passed nor failed");
	return KB_OUTCOME_UNKNOWN;
}

int kb_result_done(const json_t *rec)
{
	int done = get_bool(rec, "done");
	const char *status = get_str(rec, "status");

	if (done >= 0)
		return done;
	return status &&
	       (strcmp(status, "done") == 0 || strcmp(status, "failed") == 0);
}

int kb_result_score(const json_t *res, double *score)
{
	const json_t *v = json_object_get(res, "score");
	const json_t *runs = json_object_get(res, "runs");
	const json_t *r;
	size_t i;

	if (json_is_number(v)) {
		*score = json_number_value(v);
		return 1;
	}
	if (!json_is_array(runs))
		return 0;
	json_array_foreach(runs, i, r)
	{
		v = json_object_get(r, "score");
		if (json_is_number(v) && get_bool(r, "secret") != 1) {
			*score = json_number_value(v);
			return 1;
		}
	}
	return 0;
}

void kb_fmt_seconds(double s, char *out, size_t out_size)
{
	double a = fabs(s);

	if (!isfinite(s))
		snprintf(out, out_size, "%g s", s);
	else if (a >= 1.0 || a == 0.0)
		snprintf(out, out_size, "%.4g s", s);
	else if (a >= 1e-3)
		snprintf(out, out_size, "%.4g ms", s * 1e3);
	else if (a >= 1e-6)
		snprintf(out, out_size, "%.4g \xC2\xB5s", s * 1e6);
	else
		snprintf(out, out_size, "%.4g ns", s * 1e9);
}

/* Appends s (at most LOG_MAX bytes of it) indented, if non-empty. */
static void add_log(struct kb_buf *b, const char *title, const char *s)
{
	size_t n;

	if (!s || !*s)
		return;
	n = strlen(s);
	kb_buf_printf(b, "  %s:\n", title);
	if (n > LOG_MAX) {
		char *t = kb_truncate(s, n, LOG_MAX);
		if (t) {
			kb_buf_printf(b, "%s\n", t);
			free(t);
		}
		return;
	}
	kb_buf_append(b, s, n);
	if (s[n - 1] != '\n')
		kb_buf_append(b, "\n", 1);
}

static void render_results(struct kb_buf *b, const json_t *list)
{
	size_t i;
	const json_t *r;

	json_array_foreach(list, i, r)
	{
		const char *key;
		const json_t *ev;
		const char *err = get_str(r, "error");

		if (err && *err)
			kb_buf_printf(b, "error: %s\n", err);
		json_object_foreach((json_t *)json_object_get(r, "runs"), key,
				    ev)
		{
			const json_t *comp = json_object_get(ev, "compilation");
			const json_t *run = json_object_get(ev, "run");

			if (json_is_object(comp) &&
			    get_bool(comp, "success") == 0) {
				kb_buf_printf(
					b,
					"%s: compilation failed (exit %lld)\n",
					key,
					(long long)json_integer_value(
						json_object_get(comp,
								"exit_code")));
				add_log(b, "compiler output",
					get_str(comp, "stderr"));
				continue;
			}
			if (!json_is_object(run)) {
				kb_buf_printf(b, "%s: not run\n", key);
				continue;
			}
			char dur[32] = "";
			const json_t *d = json_object_get(run, "duration");
			if (json_is_number(d))
				kb_fmt_seconds(json_number_value(d), dur,
					       sizeof(dur));
			kb_buf_printf(b, "%s: %s%s%s%s\n", key,
				      get_bool(run, "passed") == 1 ? "passed"
								   : "failed",
				      *dur ? " (" : "", dur, *dur ? ")" : "");
			if (get_bool(run, "passed") != 1) {
				add_log(b, "stdout", get_str(run, "stdout"));
				add_log(b, "stderr", get_str(run, "stderr"));
			}
		}
	}
}

static void render_runs(struct kb_buf *b, const json_t *list)
{
	size_t i;
	const json_t *r;

	json_array_foreach(list, i, r)
	{
		const char *mode = get_str(r, "mode");
		const char *runner = get_str(r, "runner");
		const json_t *sc = json_object_get(r, "score");
		char score[48] = "";

		if (json_is_number(sc)) {
			char t[32];
			kb_fmt_seconds(json_number_value(sc), t, sizeof(t));
			snprintf(score, sizeof(score), ", score %s", t);
		}
		kb_buf_printf(b, "%s%s%s: %s%s%s\n", mode ? mode : "run",
			      runner ? " on " : "", runner ? runner : "",
			      get_bool(r, "passed") == 1 ? "passed" : "failed",
			      score,
			      get_bool(r, "secret") == 1 ? " [secret]" : "");
	}
}

char *kb_result_render(const json_t *res)
{
	struct kb_buf b = {0};
	const json_t *reports = json_object_get(res, "reports");
	const char *report = get_str(res, "report");
	const char *err = get_str(res, "error");
	const char *detail = get_str(res, "detail");

	if (kb_buf_append(&b, "", 0) < 0)
		return NULL;
	if (json_is_array(reports) && json_array_size(reports) > 0) {
		size_t i;
		const json_t *r;
		json_array_foreach(reports, i, r)
		{
			const char *s = json_string_value(r);
			if (!s)
				continue;
			if (b.len)
				kb_buf_append(&b, "\n", 1);
			kb_buf_append(&b, s, strlen(s));
			if (*s && s[strlen(s) - 1] != '\n')
				kb_buf_append(&b, "\n", 1);
		}
	} else if (report && *report) {
		kb_buf_append(&b, report, strlen(report));
		if (report[strlen(report) - 1] != '\n')
			kb_buf_append(&b, "\n", 1);
	} else if (json_is_array(json_object_get(res, "results"))) {
		render_results(&b, json_object_get(res, "results"));
	} else if (json_is_array(json_object_get(res, "runs"))) {
		render_runs(&b, json_object_get(res, "runs"));
	}
	if (err && *err)
		kb_buf_printf(&b, "error: %s\n", err);
	if (detail && *detail)
		kb_buf_printf(&b, "detail: %s\n", detail);
	return b.data;
}
