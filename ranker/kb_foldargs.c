#include "kb_foldargs.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kb_keys.h"
#include "kb_mode.h"
#include "kb_report.h"
#include "kb_util.h"

const char *kb_verdict_name(Kb__Verdict verdict)
{
	switch (verdict) {
	case KB__VERDICT__VERDICT_PASSED:
		return "passed";
	case KB__VERDICT__VERDICT_FAILED:
		return "failed";
	case KB__VERDICT__VERDICT_COMPILE_ERROR:
		return "compile_error";
	case KB__VERDICT__VERDICT_TIMEOUT:
		return "timeout";
	case KB__VERDICT__VERDICT_CRASHED:
		return "crashed";
	case KB__VERDICT__VERDICT_INFRA_ERROR:
		return "infra_error";
	case KB__VERDICT__VERDICT_SUSPECT:
		return "suspect";
	default:
		return "unspecified";
	}
}

static int run_passed(const Kb__Result *r, const char *key)
{
	for (size_t i = 0; i < r->n_runs; i++) {
		const Kb__RunResult *run = r->runs[i];
		if (run && run->key && strcmp(run->key, key) == 0)
			return run->success && run->passed;
	}
	return 0;
}

int kb_result_is_scored(const Kb__Result *r)
{
	/* The worker's has_score is necessary but not trusted alone: a score
	 * enters a public ranking only when every condition of the contract
	 * holds, checked here from the Result itself. */
	if (!r || !r->has_score)
		return 0;
	if (r->mode != KB__MODE__MODE_LEADERBOARD ||
	    r->verdict != KB__VERDICT__VERDICT_PASSED)
		return 0;
	if (!isfinite(r->score) || r->score <= 0)
		return 0;
	return run_passed(r, "leaderboard") && run_passed(r, "private");
}

static char *strdup_printf(const char *fmt, ...)
	__attribute__((format(printf, 1, 2)));

static char *strdup_printf(const char *fmt, ...)
{
	va_list ap;
	int n;
	char *s;

	va_start(ap, fmt);
	n = vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	if (n < 0)
		return NULL;
	s = malloc((size_t)n + 1);
	if (!s)
		return NULL;
	va_start(ap, fmt);
	vsnprintf(s, (size_t)n + 1, fmt, ap);
	va_end(ap);
	return s;
}

static int nonempty(const char *s)
{
	return s && *s;
}

/* Names that become parts of Redis keys must not contain the separator,
 * or "kb:rank:a:b:c" would have two readings. */
static int key_part_ok(const char *s)
{
	return nonempty(s) && !strchr(s, ':');
}

/* The shortest of %.15g, %.16g and %.17g that reads back as exactly v:
 * %.17g always does, so the script's tonumber() and ZADD see the very
 * double the worker measured, and kb:sub's score reads "0.00025" rather
 * than "0.00025000000000000001". */
static void format_score(char *buf, size_t size, double v)
{
	for (int prec = 15; prec <= 17; prec++) {
		snprintf(buf, size, "%.*g", prec, v);
		if (strtod(buf, NULL) == v)
			return;
	}
}

void kb_fold_call_free(struct kb_fold_call *call)
{
	if (!call)
		return;
	for (int i = 0; i < KB_FOLD_NKEYS; i++) {
		free(call->keys[i]);
		call->keys[i] = NULL;
	}
	free(call->packed);
	call->packed = NULL;
}

int kb_foldargs_result(const Kb__ResultEvent *ev, struct kb_fold_call *call,
		       char *errstr, size_t errstr_size)
{
	const Kb__Result *r;
	int64_t done_ms;
	size_t packed_len;
	int i;

	memset(call, 0, sizeof(*call));
	if (!ev || ev->event_case != KB__RESULT_EVENT__EVENT_RESULT ||
	    !ev->result) {
		kb_seterr(errstr, errstr_size, "event carries no result");
		return -EINVAL;
	}
	r = ev->result;
	/* The event's id and gpu are an envelope: when present they must
	 * agree with the Result, which is what gets stored. */
	if (r->submission_id == 0) {
		kb_seterr(errstr, errstr_size, "result has no submission id");
		return -EINVAL;
	}
	if (ev->submission_id != 0 && r->submission_id != ev->submission_id) {
		kb_seterr(errstr, errstr_size,
			  "result submission id %" PRIu64
			  " does not match event id %" PRIu64,
			  r->submission_id, ev->submission_id);
		return -EINVAL;
	}
	if (!key_part_ok(r->gpu)) {
		kb_seterr(errstr, errstr_size, "result gpu \"%s\" invalid",
			  r->gpu ? r->gpu : "");
		return -EINVAL;
	}
	if (nonempty(ev->gpu) && strcmp(r->gpu, ev->gpu) != 0) {
		kb_seterr(errstr, errstr_size,
			  "result gpu \"%s\" does not match event gpu \"%s\"",
			  r->gpu, ev->gpu);
		return -EINVAL;
	}
	if (!key_part_ok(r->leaderboard)) {
		kb_seterr(errstr, errstr_size,
			  "result leaderboard \"%s\" invalid",
			  r->leaderboard ? r->leaderboard : "");
		return -EINVAL;
	}
	if (!nonempty(r->user_id)) {
		kb_seterr(errstr, errstr_size, "result has no user id");
		return -EINVAL;
	}

	call->sub_id = r->submission_id;
	call->gpu = r->gpu;
	call->lb = r->leaderboard;
	call->user = r->user_id;
	call->mode = kb_mode_name_or(r->mode, "unspecified");
	call->verdict = kb_verdict_name(r->verdict);
	call->scored = kb_result_is_scored(r);

	snprintf(call->id_s, sizeof(call->id_s), "%" PRIu64, r->submission_id);
	if (call->scored)
		format_score(call->score_s, sizeof(call->score_s), r->score);
	call->score = call->score_s;
	snprintf(call->submitted_s, sizeof(call->submitted_s), "%" PRId64,
		 r->submitted_at_ms);
	done_ms = r->finished_at_ms  ? r->finished_at_ms
		  : r->started_at_ms ? r->started_at_ms
				     : r->submitted_at_ms;
	snprintf(call->done_s, sizeof(call->done_s), "%" PRId64, done_ms);

	call->keys[0] = strdup_printf(KB_KEY_RESULT, call->id_s, r->gpu);
	call->keys[1] = strdup_printf(KB_KEY_SUB, call->id_s);
	call->keys[2] = strdup_printf(KB_KEY_RANK, r->leaderboard, r->gpu);
	call->keys[3] = strdup_printf(KB_KEY_RANK_INFO, r->leaderboard, r->gpu);
	call->keys[4] =
		strdup_printf(KB_KEY_RANK_ORDER, r->leaderboard, r->gpu);
	call->keys[5] = strdup_printf(KB_KEY_HIST, r->leaderboard, r->gpu);
	call->keys[6] = strdup_printf(KB_KEY_USER_HIST, r->user_id);
	packed_len = kb__result__get_packed_size(r);
	/* +1: malloc(0) may return NULL for an empty Result. */
	call->packed = malloc(packed_len + 1);
	for (i = 0; i < KB_FOLD_NKEYS; i++)
		if (!call->keys[i])
			break;
	if (i < KB_FOLD_NKEYS || !call->packed) {
		kb_fold_call_free(call);
		kb_seterr(errstr, errstr_size, "out of memory");
		return -ENOMEM;
	}
	kb__result__pack(r, call->packed);

	call->nkeys = KB_FOLD_NKEYS;
	call->argc = KB_FOLD_NKEYS + KB_FOLD_NARGS;
	for (i = 0; i < KB_FOLD_NKEYS; i++)
		call->argv[i] = call->keys[i];
	/* ARGV[k] of the script is argv[KB_FOLD_NKEYS + k - 1]. */
	const char **a = call->argv + KB_FOLD_NKEYS;
	a[0] = (const char *)call->packed;
	a[1] = call->id_s;
	a[2] = r->user_id;
	a[3] = call->mode;
	a[4] = call->verdict;
	a[5] = call->scored ? "1" : "0";
	a[6] = call->score_s;
	a[7] = call->submitted_s;
	a[8] = call->done_s;
	for (i = 0; i < call->argc; i++)
		call->argvlen[i] = i == KB_FOLD_NKEYS ? packed_len /* binary */
						      : strlen(call->argv[i]);
	return 0;
}

int kb_foldargs_progress(const Kb__ResultEvent *ev, int64_t stage_ms,
			 struct kb_progress_call *call, char *errstr,
			 size_t errstr_size)
{
	memset(call, 0, sizeof(*call));
	if (!ev || ev->event_case != KB__RESULT_EVENT__EVENT_PROGRESS ||
	    !ev->progress) {
		kb_seterr(errstr, errstr_size, "event carries no progress");
		return -EINVAL;
	}
	if (ev->submission_id == 0) {
		kb_seterr(errstr, errstr_size, "progress has no submission id");
		return -EINVAL;
	}
	call->sub_id = ev->submission_id;
	call->gpu = ev->gpu ? ev->gpu : "";
	call->stage = kb_report_stage_name(ev->progress->stage);
	snprintf(call->key_s, sizeof(call->key_s), KB_KEY_SUB_N,
		 ev->submission_id);
	snprintf(call->stage_ms_s, sizeof(call->stage_ms_s), "%" PRId64,
		 stage_ms);
	call->nkeys = KB_PROGRESS_NKEYS;
	call->argc = KB_PROGRESS_NKEYS + KB_PROGRESS_NARGS;
	call->argv[0] = call->key_s;
	call->argv[1] = call->stage;
	call->argv[2] = call->stage_ms_s;
	for (int i = 0; i < call->argc; i++)
		call->argvlen[i] = strlen(call->argv[i]);
	return 0;
}
