/* kb_gw_results: see results.h. */
#include "results.h"

#include <inttypes.h>
#include <sodium.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "http/rules.h"
#include "kb_mode.h"
#include "kb_report.h"
#include "kb_time.h"

json_t *kb_gw_jstr(const char *s)
{
	size_t n;
	char *clean;
	json_t *j;

	if (!s)
		return json_null();
	clean = kb_gw_utf8_sanitize(s, strlen(s), &n);
	j = clean ? json_stringn(clean, n) : json_null();
	free(clean);
	return j;
}

json_t *kb_gw_jnum(const char *s)
{
	char *end;
	double v;

	if (!s || !*s)
		return json_null();
	v = strtod(s, &end);
	return *end ? json_null() : json_real(v);
}

json_t *kb_gw_jiso(int64_t ms)
{
	char buf[40];

	if (ms <= 0)
		return json_null();
	kb_time_iso8601(ms, buf, sizeof(buf));
	return json_string(buf);
}

static int is_secret(const Kb__RunResult *rr)
{
	return rr->key && strcmp(rr->key, "private") == 0;
}

static json_t *kv_map(const Kb__RunResult *rr)
{
	json_t *o = json_object();

	for (size_t i = 0; i < rr->n_result; i++)
		json_object_set_new(
			o, rr->result[i]->key ? rr->result[i]->key : "",
			kb_gw_jstr(rr->result[i]->value));
	return o;
}

static json_t *compile_json(const Kb__CompileResult *c)
{
	if (!c)
		return json_null();
	return json_pack("{s:b,s:s,s:b,s:o,s:o,s:o,s:i,s:f}", "nvcc_found", 1,
			 "nvcc_version", "", "success", c->success, "command",
			 kb_gw_jstr(c->command), "stdout",
			 kb_gw_jstr(c->stdout), "stderr", kb_gw_jstr(c->stderr),
			 "exit_code", c->exit_code, "duration", c->duration_s);
}

/* What of the secret run shows was decided by kb_report_redact(). */
static json_t *run_json(const Kb__RunResult *rr)
{
	return json_pack("{s:b,s:b,s:s,s:o,s:o,s:i,s:f,s:o,s:b}", "success",
			 rr->success, "passed", rr->passed, "command", "",
			 "stdout", kb_gw_jstr(rr->stdout), "stderr",
			 kb_gw_jstr(rr->stderr), "exit_code", rr->exit_code,
			 "duration", rr->duration_s, "result", kv_map(rr),
			 "timed_out", rr->timed_out);
}

/* A failed build as the run it stopped: not passed, with the compiler's
 * output and exit status. */
static json_t *compile_run_json(const Kb__CompileResult *c)
{
	return json_pack("{s:b,s:b,s:o,s:o,s:o,s:i,s:f,s:o,s:b}", "success", 0,
			 "passed", 0, "command", kb_gw_jstr(c->command),
			 "stdout", kb_gw_jstr(c->stdout), "stderr",
			 kb_gw_jstr(c->stderr), "exit_code", c->exit_code,
			 "duration", c->duration_s, "result", json_object(),
			 "timed_out", 0);
}

/* Upstream's profile object {profiler, trace (base64), download_url}, or
 * null for a run without one. The summary is in the report; an error
 * (no profile on this host) is shown as it is. */
static json_t *profile_json(const Kb__RunResult *rr)
{
	const Kb__Profile *p = rr->profile;
	json_t *trace = json_null();

	if (!p)
		return json_null();
	if (p->trace.len > 0) {
		size_t n = sodium_base64_encoded_len(
			p->trace.len, sodium_base64_VARIANT_ORIGINAL);
		char *b64 = malloc(n);
		if (b64) {
			sodium_bin2base64(b64, n, p->trace.data, p->trace.len,
					  sodium_base64_VARIANT_ORIGINAL);
			trace = json_string(b64);
			free(b64);
		}
	}
	return json_pack(
		"{s:o,s:o,s:o,s:o,s:o}", "profiler", kb_gw_jstr(p->profiler),
		"trace", trace, "download_url",
		p->download_url && *p->download_url
			? kb_gw_jstr(p->download_url)
			: json_null(),
		"summary", kb_gw_jstr(p->summary), "error",
		p->error && *p->error ? kb_gw_jstr(p->error) : json_null());
}

const char *kb_gw_first_run_key(Kb__Mode m)
{
	switch (m) {
	case KB__MODE__MODE_BENCHMARK:
		return "benchmark";
	case KB__MODE__MODE_PROFILE:
		return "profile";
	default:
		return "test"; /* test; a ranked submission starts with tests */
	}
}

static int compile_failed(const Kb__Result *r)
{
	return r->compile && !r->compile->success;
}

json_t *kb_gw_result_full(const Kb__Result *r)
{
	json_t *runs = json_object(), *sys;
	const Kb__SystemInfo *si = r->system;

	for (size_t i = 0; i < r->n_runs; i++) {
		const Kb__RunResult *rr = r->runs[i];
		json_t *ev = json_object();
		json_object_set_new(ev, "start", kb_gw_jiso(r->started_at_ms));
		json_object_set_new(ev, "end", kb_gw_jiso(r->finished_at_ms));
		/* Upstream attaches the build to each run it preceded. */
		json_object_set_new(ev, "compilation",
				    compile_json(r->compile));
		json_object_set_new(ev, "run", run_json(rr));
		json_object_set_new(ev, "profile", profile_json(rr));
		json_object_set_new(runs, rr->key ? rr->key : "run", ev);
	}
	if (r->n_runs == 0 && compile_failed(r)) {
		/* A failed build, under the key of the run it stopped. */
		json_t *ev = json_object();
		json_object_set_new(ev, "start", kb_gw_jiso(r->started_at_ms));
		json_object_set_new(ev, "end", kb_gw_jiso(r->finished_at_ms));
		json_object_set_new(ev, "compilation",
				    compile_json(r->compile));
		json_object_set_new(ev, "run", compile_run_json(r->compile));
		json_object_set_new(ev, "profile", json_null());
		json_object_set_new(runs, kb_gw_first_run_key(r->mode), ev);
	}
	sys = json_pack("{s:o,s:i,s:s,s:o,s:o,s:s,s:o,s:i,s:i,s:i,s:i}", "gpu",
			kb_gw_jstr(si ? si->device_name : ""), "device_count",
			1, "cpu", "", "runtime",
			kb_gw_jstr(si ? si->runtime : ""), "platform",
			kb_gw_jstr(si ? si->platform : ""), "torch", "",
			"driver", kb_gw_jstr(si ? si->driver : ""),
			"sm_clock_start_mhz", si ? si->sm_clock_start_mhz : 0,
			"sm_clock_end_mhz", si ? si->sm_clock_end_mhz : 0,
			"temp_start_c", si ? si->temp_start_c : 0, "temp_end_c",
			si ? si->temp_end_c : 0);
	return json_pack("{s:b,s:o,s:o,s:o}", "success",
			 r->verdict != KB__VERDICT__VERDICT_INFRA_ERROR &&
				 r->fault != KB__FAULT__FAULT_INFRA,
			 "error", kb_gw_jstr(r->error ? r->error : ""),
			 "system", sys, "runs", runs);
}

json_t *kb_gw_result_event(const Kb__Result *r, uint64_t id)
{
	char *report = kb_report_render(r);
	json_t *reports = json_array();
	struct kb_gw_job job;

	json_array_append_new(reports, kb_gw_jstr(report ? report : ""));
	free(report);
	json_t *results = json_array();
	json_array_append_new(results, kb_gw_result_full(r));
	kb_gw_job_of_result(r, id, &job);
	return json_pack("{s:s,s:o,s:o,s:I,s:s,s:o,s:s,s:s,s:{s:s,s:o}}",
			 "status", "success", "results", results, "reports",
			 reports, "submission_id", (json_int_t)id, "verdict",
			 kb_report_verdict_name(r->verdict), "score",
			 r->has_score ? json_real(r->score) : json_null(),
			 "gpu", r->gpu ? r->gpu : "", "mode",
			 kb_mode_label(r->mode), "job", "status", job.status,
			 "error",
			 job.error[0] ? kb_gw_jstr(job.error) : json_null());
}

/* The mode a run row shows: the secret run is the ranked run it repeats;
 * "profile.N" is a profile run. */
static const char *row_mode(const Kb__RunResult *rr)
{
	if (is_secret(rr))
		return "leaderboard";
	if (!rr->key)
		return "";
	if (strncmp(rr->key, "profile", 7) == 0 &&
	    (rr->key[7] == '\0' || rr->key[7] == '.'))
		return "profile";
	return rr->key;
}

/* The owner's diagnostics of a public test or benchmark run (upstream's
 * runs[].diagnostics): the run's output and status, and the build. */
static json_t *diagnostics_json(const Kb__Result *r, const Kb__RunResult *rr)
{
	const Kb__CompileResult *c = r->compile;
	json_t *comp = c ? json_pack("{s:b,s:o,s:o,s:o,s:i,s:f}", "success",
				     c->success, "command",
				     kb_gw_jstr(c->command), "stdout",
				     kb_gw_jstr(c->stdout), "stderr",
				     kb_gw_jstr(c->stderr), "exit_code",
				     c->exit_code, "duration", c->duration_s)
			 : json_null();

	if (!rr)
		return json_pack("{s:o,s:o,s:b,s:i,s:f,s:o}", "stdout",
				 kb_gw_jstr(""), "stderr", kb_gw_jstr(""),
				 "success", 0, "exit_code",
				 c ? c->exit_code : -1, "duration",
				 c ? c->duration_s : 0.0, "compilation", comp);
	return json_pack("{s:o,s:o,s:b,s:i,s:f,s:o}", "stdout",
			 kb_gw_jstr(rr->stdout), "stderr",
			 kb_gw_jstr(rr->stderr), "success", rr->success,
			 "exit_code", rr->exit_code, "duration", rr->duration_s,
			 "compilation", comp);
}

static json_t *row_json(const Kb__Result *r, const char *mode, int secret)
{
	json_t *o = json_object();

	json_object_set_new(o, "start_time", kb_gw_jiso(r->started_at_ms));
	json_object_set_new(o, "end_time", kb_gw_jiso(r->finished_at_ms));
	json_object_set_new(o, "mode", json_string(mode));
	json_object_set_new(o, "secret", json_boolean(secret));
	json_object_set_new(o, "runner", kb_gw_jstr(r->gpu));
	return o;
}

json_t *kb_gw_result_runs(const Kb__Result *r)
{
	json_t *runs = json_array();

	for (size_t i = 0; i < r->n_runs; i++) {
		const Kb__RunResult *rr = r->runs[i];
		int secret = is_secret(rr);
		const char *mode = row_mode(rr);
		enum kb_mode m = kb_mode_parse(mode);
		int ranked = !secret && m == KB_MODE_LEADERBOARD;
		int diag = !secret &&
			   (m == KB_MODE_TEST || m == KB_MODE_BENCHMARK);
		json_t *o = row_json(r, mode, secret);
		json_object_set_new(o, "score",
				    ranked && r->has_score ? json_real(r->score)
							   : json_null());
		json_object_set_new(o, "passed", json_boolean(rr->passed));
		json_object_set_new(o, "success", json_boolean(rr->success));
		json_object_set_new(o, "exit_code",
				    json_integer(rr->exit_code));
		json_object_set_new(o, "timed_out",
				    json_boolean(rr->timed_out));
		json_object_set_new(o, "duration", json_real(rr->duration_s));
		if (diag)
			json_object_set_new(o, "result", kv_map(rr));
		if (diag)
			json_object_set_new(o, "diagnostics",
					    diagnostics_json(r, rr));
		if (!secret && m == KB_MODE_PROFILE)
			json_object_set_new(o, "profile", profile_json(rr));
		json_array_append_new(runs, o);
	}
	if (r->n_runs == 0 && compile_failed(r)) {
		/* The build failed: the run it stopped, not passed, with the
		 * compiler's output in its diagnostics. */
		json_t *o = row_json(r, kb_gw_first_run_key(r->mode), 0);
		json_object_set_new(o, "score", json_null());
		json_object_set_new(o, "passed", json_false());
		json_object_set_new(o, "success", json_false());
		json_object_set_new(o, "exit_code",
				    json_integer(r->compile->exit_code));
		json_object_set_new(o, "timed_out", json_false());
		json_object_set_new(o, "duration",
				    json_real(r->compile->duration_s));
		json_object_set_new(o, "result", json_object());
		json_object_set_new(o, "diagnostics",
				    diagnostics_json(r, NULL));
		json_array_append_new(runs, o);
	}
	return runs;
}

/* ---- the job's outcome ---- */

static void job_set(struct kb_gw_job *j, const char *status, const char *fmt,
		    ...) __attribute__((format(printf, 3, 4)));
static void job_set(struct kb_gw_job *j, const char *status, const char *fmt,
		    ...)
{
	va_list ap;

	j->status = status;
	va_start(ap, fmt);
	vsnprintf(j->error, sizeof(j->error), fmt, ap);
	va_end(ap);
}

/* The first public run that did not pass, or the secret one; NULL. */
static const Kb__RunResult *failed_run(const Kb__Result *r)
{
	for (size_t i = 0; r && i < r->n_runs; i++)
		if (!r->runs[i]->passed || !r->runs[i]->success)
			return r->runs[i];
	return NULL;
}

static const char *run_name(const Kb__RunResult *rr)
{
	if (!rr || !rr->key)
		return "a run";
	if (is_secret(rr))
		return "secret validation";
	if (strcmp(rr->key, "leaderboard") == 0)
		return "the ranked run";
	if (strcmp(rr->key, "test") == 0)
		return "the test run";
	if (strcmp(rr->key, "benchmark") == 0)
		return "the benchmark run";
	return "the profile run";
}

/* The line of a compiler's output that says what is wrong, at most 200
 * bytes: the first that carries "error:" (gcc, clang and nvcc put the
 * context, "In function 'f':" or "In file included from", on lines of its
 * own before it), else the first non-blank line. */
static void first_line(const Kb__CompileResult *c, char *out, size_t size)
{
	const char *t = c && c->stderr && *c->stderr ? c->stderr
			: c                          ? c->stdout
						     : NULL;
	const char *pick = NULL;

	out[0] = '\0';
	for (const char *l = t; l && *l && !pick;
	     l += strcspn(l, "\n"), l += *l == '\n') {
		size_t n = strcspn(l, "\n");
		const char *e = memmem(l, n, "error:", 6);

		if (e && (e == l || e[-1] == ' '))
			pick = l;
	}
	if (!pick)
		pick = t;
	while (pick && (*pick == '\n' || *pick == ' '))
		pick++;
	if (pick && *pick)
		snprintf(out, size, ": %.*s",
			 (int)strcspn(pick, "\n") > 200
				 ? 200
				 : (int)strcspn(pick, "\n"),
			 pick);
}

/* Why a finished submission did not pass, in a clause. */
static void why_failed(const char *verdict, const Kb__Result *r, char *out,
		       size_t size)
{
	const Kb__RunResult *rr = failed_run(r);
	char line[224];

	if (strcmp(verdict, "compile_error") == 0) {
		first_line(r ? r->compile : NULL, line, sizeof(line));
		snprintf(out, size, "compilation failed%s", line);
	} else if (strcmp(verdict, "crashed") == 0 && rr && rr->signal)
		snprintf(out, size, "%s crashed (signal %d)", run_name(rr),
			 rr->signal);
	else if (strcmp(verdict, "crashed") == 0 && rr && !is_secret(rr))
		snprintf(out, size, "%s crashed (exit status %d)", run_name(rr),
			 rr->exit_code);
	else if (rr)
		snprintf(out, size, "%s failed", run_name(rr));
	else
		snprintf(out, size, "%s",
			 strcmp(verdict, "passed") == 0
				 ? "no leaderboard score was recorded"
				 : "it did not pass");
}

void kb_gw_job_of(const struct kb_gw_job_in *in, struct kb_gw_job *out)
{
	const char *status = in->status,
		   *verdict = in->verdict ? in->verdict : "";
	const Kb__Result *r = in->result;
	int ranked = kb_mode_parse(in->mode) == KB_MODE_LEADERBOARD;
	char why[320];

	job_set(out, "pending", "%s", "");
	if (!status || strcmp(status, "queued") == 0)
		return;
	if (strcmp(status, "running") == 0) {
		out->status = "running";
		return;
	}
	if (strcmp(status, "done") != 0) { /* never queued, or given up */
		job_set(out, "failed", "%s",
			in->error && *in->error
				? in->error
				: "the submission could not be run");
		return;
	}
	if (strcmp(verdict, "infra_error") == 0) {
		job_set(out, "failed", "%s",
			r && r->error && *r->error ? r->error
			: in->error && *in->error
				? in->error
				: "the platform could not run this submission");
		return;
	}
	if (strcmp(verdict, "suspect") == 0) {
		job_set(out, "hacked", "%s",
			r && r->error && *r->error
				? r->error
				: "timings below what the device can do; not ranked");
		return;
	}
	if (strcmp(verdict, "timeout") == 0) {
		const Kb__RunResult *rr = failed_run(r);
		if (rr && !is_secret(rr))
			job_set(out, "timed_out", "%s timed out after %.0f s",
				run_name(rr), rr->duration_s);
		else
			job_set(out, "timed_out", "time limit exceeded");
		return;
	}
	if (strcmp(verdict, "passed") == 0 && (!ranked || in->scored)) {
		out->status = "succeeded";
		return;
	}
	why_failed(verdict, r, why, sizeof(why));
	if (ranked)
		job_set(out, "failed",
			"%s on %s; it will "
			"not appear on the leaderboard",
			why, in->gpu ? in->gpu : "?");
	else
		job_set(out, "failed", "%s", why);
}

void kb_gw_job_of_result(const Kb__Result *r, uint64_t id,
			 struct kb_gw_job *out)
{
	struct kb_gw_job_in in = {
		.id = id,
		.status = "done",
		.mode = kb_mode_label(r->mode),
		.verdict = kb_report_verdict_name(r->verdict),
		.scored = r->has_score,
		.gpu = r->gpu,
		.result = r,
	};

	kb_gw_job_of(&in, out);
}

json_t *kb_gw_job_json(const struct kb_gw_job_in *in)
{
	struct kb_gw_job j;

	kb_gw_job_of(in, &j);
	return json_pack("{s:s,s:o}", "status", j.status, "error",
			 j.error[0] ? kb_gw_jstr(j.error) : json_null());
}

json_t *kb_gw_submission_json(uint64_t id, const struct kb_gw_sub_rec *rec,
			      long board_id, int64_t now_ms, int with_code)
{
	const char *status = kb_gw_sub_field(rec, "status");
	const char *ms_s = kb_gw_sub_field(rec, "submitted_ms");
	const char *done_s = kb_gw_sub_field(rec, "done_ms");
	const char *stage_ms_s = kb_gw_sub_field(rec, "stage_ms");
	int64_t ms = ms_s ? strtoll(ms_s, NULL, 10) : 0;
	int64_t done_ms = done_s ? strtoll(done_s, NULL, 10) : 0;
	int done = status && (strcmp(status, "done") == 0 ||
			      strcmp(status, "failed") == 0);
	const char *error = kb_gw_sub_field(rec, "error");
	json_t *o = json_object();
	Kb__Result *res = NULL;

	json_object_set_new(o, "id", json_integer((json_int_t)id));
	json_object_set_new(o, "leaderboard_id", json_integer(board_id));
	json_object_set_new(o, "leaderboard_name",
			    kb_gw_jstr(kb_gw_sub_field(rec, "lb")));
	json_object_set_new(o, "gpu", kb_gw_jstr(kb_gw_sub_field(rec, "gpu")));
	json_object_set_new(o, "mode",
			    kb_gw_jstr(kb_gw_sub_field(rec, "mode")));
	json_object_set_new(o, "file_name",
			    kb_gw_jstr(kb_gw_sub_field(rec, "file_name")));
	json_object_set_new(o, "user_id",
			    kb_gw_jstr(kb_gw_sub_field(rec, "user_id")));
	json_object_set_new(o, "user_name",
			    kb_gw_jstr(kb_gw_sub_field(rec, "user_name")));
	json_object_set_new(o, "submission_time", kb_gw_jiso(ms));
	json_object_set_new(o, "submitted_ms", json_integer(ms));
	json_object_set_new(o, "status", kb_gw_jstr(status));
	json_object_set_new(o, "done", json_boolean(done));
	json_object_set_new(o, "stage",
			    kb_gw_jstr(kb_gw_sub_field(rec, "stage")));
	json_object_set_new(
		o, "stage_ms",
		stage_ms_s ? json_integer(strtoll(stage_ms_s, NULL, 10))
			   : json_null());
	json_object_set_new(
		o, "elapsed_ms",
		ms > 0 ? json_integer((done && done_ms > 0 ? done_ms : now_ms) -
				      ms)
		       : json_null());
	json_object_set_new(o, "verdict",
			    kb_gw_jstr(kb_gw_sub_field(rec, "verdict")));
	json_object_set_new(o, "score",
			    kb_gw_jnum(kb_gw_sub_field(rec, "score")));
	json_object_set_new(o, "error", kb_gw_jstr(error));
	if (with_code)
		json_object_set_new(o, "code",
				    rec->code && rec->code->type ==
							    REDIS_REPLY_STRING
					    ? kb_gw_jstr(rec->code->str)
					    : json_null());

	if (rec->res && rec->res->type == REDIS_REPLY_STRING)
		res = kb__result__unpack(NULL, rec->res->len,
					 (const uint8_t *)rec->res->str);
	if (res) {
		kb_report_redact(res);
		char *report = kb_report_render(res);
		json_object_set_new(o, "runs", kb_gw_result_runs(res));
		json_object_set_new(o, "report", kb_gw_jstr(report));
		free(report);
		if (json_is_null(json_object_get(o, "verdict")))
			json_object_set_new(o, "verdict",
					    json_string(kb_report_verdict_name(
						    res->verdict)));
		if (json_is_null(json_object_get(o, "score")) && res->has_score)
			json_object_set_new(o, "score", json_real(res->score));
		if (json_is_null(json_object_get(o, "error")) && res->error &&
		    *res->error)
			json_object_set_new(o, "error", kb_gw_jstr(res->error));
	} else {
		json_object_set_new(o, "runs", json_array());
		json_object_set_new(o, "report", json_null());
	}
	struct kb_gw_job_in in = {
		.id = id,
		.status = status,
		.mode = kb_gw_sub_field(rec, "mode"),
		.verdict = json_string_value(json_object_get(o, "verdict")),
		.scored = json_is_number(json_object_get(o, "score")),
		.gpu = kb_gw_sub_field(rec, "gpu"),
		.error = error,
		.result = res,
	};
	json_object_set_new(o, "job", kb_gw_job_json(&in));
	if (res)
		kb__result__free_unpacked(res, NULL);
	return o;
}
