/* kb_gw_results: see results.h. */
#include "results.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "kb_report.h"
#include "rules.h"

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
	kb_rules_iso8601(ms, buf, sizeof(buf));
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
		json_object_set_new(o, rr->result[i]->key ? rr->result[i]->key : "",
				    kb_gw_jstr(rr->result[i]->value));
	return o;
}

static json_t *compile_json(const Kb__CompileResult *c)
{
	if (!c)
		return json_null();
	return json_pack("{s:b,s:s,s:b,s:o,s:o,s:o,s:i,s:f}", "nvcc_found", 1,
			 "nvcc_version", "", "success", c->success, "command",
			 kb_gw_jstr(c->command), "stdout", kb_gw_jstr(c->stdout),
			 "stderr", kb_gw_jstr(c->stderr), "exit_code", c->exit_code,
			 "duration", c->duration_s);
}

/* What of the secret run shows was decided by kb_report_redact(). */
static json_t *run_json(const Kb__RunResult *rr)
{
	return json_pack("{s:b,s:b,s:s,s:o,s:o,s:i,s:f,s:o,s:b}", "success",
			 rr->success, "passed", rr->passed, "command", "", "stdout",
			 kb_gw_jstr(rr->stdout), "stderr", kb_gw_jstr(rr->stderr),
			 "exit_code", rr->exit_code, "duration", rr->duration_s,
			 "result", kv_map(rr), "timed_out", rr->timed_out);
}

static const char *mode_key(Kb__Mode m)
{
	return kb_report_mode_name(m);
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
		json_object_set_new(ev, "compilation", compile_json(r->compile));
		json_object_set_new(ev, "run", run_json(rr));
		json_object_set_new(ev, "profile", json_null());
		json_object_set_new(runs, rr->key ? rr->key : "run", ev);
	}
	if (r->n_runs == 0 && r->compile) {
		/* A failed build: upstream reports it under the mode's key
		 * with no run. */
		json_t *ev = json_object();
		json_object_set_new(ev, "start", kb_gw_jiso(r->started_at_ms));
		json_object_set_new(ev, "end", kb_gw_jiso(r->finished_at_ms));
		json_object_set_new(ev, "compilation", compile_json(r->compile));
		json_object_set_new(ev, "run", json_null());
		json_object_set_new(ev, "profile", json_null());
		json_object_set_new(runs, mode_key(r->mode), ev);
	}
	sys = json_pack("{s:o,s:i,s:s,s:o,s:o,s:s,s:o,s:i,s:i,s:i,s:i}", "gpu",
			kb_gw_jstr(si ? si->device_name : ""), "device_count", 1,
			"cpu", "", "runtime", kb_gw_jstr(si ? si->runtime : ""),
			"platform", kb_gw_jstr(si ? si->platform : ""), "torch", "",
			"driver", kb_gw_jstr(si ? si->driver : ""), "sm_clock_start_mhz",
			si ? si->sm_clock_start_mhz : 0, "sm_clock_end_mhz",
			si ? si->sm_clock_end_mhz : 0, "temp_start_c",
			si ? si->temp_start_c : 0, "temp_end_c", si ? si->temp_end_c : 0);
	return json_pack("{s:b,s:o,s:o,s:o}", "success",
			 r->verdict != KB__VERDICT__VERDICT_INFRA_ERROR &&
				 r->fault != KB__FAULT__FAULT_INFRA,
			 "error", kb_gw_jstr(r->error ? r->error : ""), "system", sys,
			 "runs", runs);
}

json_t *kb_gw_result_event(const Kb__Result *r, uint64_t id)
{
	char *report = kb_report_render(r);
	json_t *reports = json_array();

	json_array_append_new(reports, kb_gw_jstr(report ? report : ""));
	free(report);
	json_t *results = json_array();
	json_array_append_new(results, kb_gw_result_full(r));
	return json_pack("{s:s,s:o,s:o,s:I,s:s,s:o,s:s,s:s}", "status", "success",
			 "results", results, "reports", reports, "submission_id",
			 (json_int_t)id, "verdict", kb_report_verdict_name(r->verdict),
			 "score", r->has_score ? json_real(r->score) : json_null(),
			 "gpu", r->gpu ? r->gpu : "", "mode", mode_key(r->mode));
}

json_t *kb_gw_result_runs(const Kb__Result *r)
{
	json_t *runs = json_array();

	for (size_t i = 0; i < r->n_runs; i++) {
		const Kb__RunResult *rr = r->runs[i];
		int secret = is_secret(rr);
		const char *mode = secret ? "leaderboard" : (rr->key ? rr->key : "");
		int ranked = !secret && strcmp(mode, "leaderboard") == 0;
		json_t *o = json_object();
		json_object_set_new(o, "start_time", kb_gw_jiso(r->started_at_ms));
		json_object_set_new(o, "end_time", kb_gw_jiso(r->finished_at_ms));
		json_object_set_new(o, "mode", json_string(mode));
		json_object_set_new(o, "secret", json_boolean(secret));
		json_object_set_new(o, "runner", kb_gw_jstr(r->gpu));
		json_object_set_new(o, "score", ranked && r->has_score
							 ? json_real(r->score)
							 : json_null());
		json_object_set_new(o, "passed", json_boolean(rr->passed));
		json_object_set_new(o, "success", json_boolean(rr->success));
		json_object_set_new(o, "exit_code", json_integer(rr->exit_code));
		json_object_set_new(o, "timed_out", json_boolean(rr->timed_out));
		json_object_set_new(o, "duration", json_real(rr->duration_s));
		if (!secret && (strcmp(mode, "test") == 0 || strcmp(mode, "benchmark") == 0))
			json_object_set_new(o, "result", kv_map(rr));
		json_array_append_new(runs, o);
	}
	return runs;
}

json_t *kb_gw_job_json(const char *status, const char *verdict,
		       const char *error)
{
	const char *job = "pending";

	if (!status)
		return json_null();
	if (strcmp(status, "running") == 0)
		job = "running";
	else if (strcmp(status, "failed") == 0)
		job = "failed";
	else if (strcmp(status, "done") == 0) {
		job = "succeeded";
		if (verdict && strcmp(verdict, "infra_error") == 0)
			job = "failed";
		else if (verdict && strcmp(verdict, "timeout") == 0)
			job = "timed_out";
	}
	return json_pack("{s:s,s:o}", "status", job, "error", kb_gw_jstr(error));
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
	json_object_set_new(o, "leaderboard_name", kb_gw_jstr(kb_gw_sub_field(rec, "lb")));
	json_object_set_new(o, "gpu", kb_gw_jstr(kb_gw_sub_field(rec, "gpu")));
	json_object_set_new(o, "mode", kb_gw_jstr(kb_gw_sub_field(rec, "mode")));
	json_object_set_new(o, "file_name", kb_gw_jstr(kb_gw_sub_field(rec, "file_name")));
	json_object_set_new(o, "user_id", kb_gw_jstr(kb_gw_sub_field(rec, "user_id")));
	json_object_set_new(o, "user_name", kb_gw_jstr(kb_gw_sub_field(rec, "user_name")));
	json_object_set_new(o, "submission_time", kb_gw_jiso(ms));
	json_object_set_new(o, "submitted_ms", json_integer(ms));
	json_object_set_new(o, "status", kb_gw_jstr(status));
	json_object_set_new(o, "done", json_boolean(done));
	json_object_set_new(o, "stage", kb_gw_jstr(kb_gw_sub_field(rec, "stage")));
	json_object_set_new(o, "stage_ms", stage_ms_s ? json_integer(strtoll(stage_ms_s, NULL, 10))
						      : json_null());
	json_object_set_new(o, "elapsed_ms",
			    ms > 0 ? json_integer((done && done_ms > 0 ? done_ms : now_ms) - ms)
				   : json_null());
	json_object_set_new(o, "verdict", kb_gw_jstr(kb_gw_sub_field(rec, "verdict")));
	json_object_set_new(o, "score", kb_gw_jnum(kb_gw_sub_field(rec, "score")));
	json_object_set_new(o, "error", kb_gw_jstr(error));
	if (with_code)
		json_object_set_new(o, "code",
				    rec->code && rec->code->type == REDIS_REPLY_STRING
					    ? kb_gw_jstr(rec->code->str) : json_null());

	if (rec->res && rec->res->type == REDIS_REPLY_STRING)
		res = kb__result__unpack(NULL, rec->res->len, (const uint8_t *)rec->res->str);
	if (res) {
		kb_report_redact(res);
		char *report = kb_report_render(res);
		json_object_set_new(o, "runs", kb_gw_result_runs(res));
		json_object_set_new(o, "report", kb_gw_jstr(report));
		free(report);
		if (json_is_null(json_object_get(o, "verdict")))
			json_object_set_new(o, "verdict",
					    json_string(kb_report_verdict_name(res->verdict)));
		if (json_is_null(json_object_get(o, "score")) && res->has_score)
			json_object_set_new(o, "score", json_real(res->score));
		if (json_is_null(json_object_get(o, "error")) && res->error && *res->error)
			json_object_set_new(o, "error", kb_gw_jstr(res->error));
		kb__result__free_unpacked(res, NULL);
	} else {
		json_object_set_new(o, "runs", json_array());
		json_object_set_new(o, "report", json_null());
	}
	json_object_set_new(o, "job", kb_gw_job_json(status,
						     json_string_value(json_object_get(o, "verdict")),
						     json_string_value(json_object_get(o, "error"))));
	return o;
}
