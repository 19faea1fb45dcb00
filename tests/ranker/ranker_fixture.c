#include "ranker_fixture.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void run(Kb__RunResult *run, const char *key)
{
	kb__run_result__init(run);
	run->key = (char *)key;
	run->success = 1;
	run->passed = 1;
	run->duration_s = 0.5;
	run->stdout = "ok\n";
}

void fx_scored(struct fx_result *f, uint64_t id, const char *user, double score,
	       int64_t submitted_ms)
{
	memset(f, 0, sizeof(*f));
	snprintf(f->lb, sizeof(f->lb), "vectorsum_cpu");
	snprintf(f->gpu, sizeof(f->gpu), "CPU");
	snprintf(f->user, sizeof(f->user), "%s", user);

	kb__compile_result__init(&f->compile);
	f->compile.success = 1;
	f->compile.command = "cc -O3 -march=native -fopenmp";
	run(&f->runs[0], "test");
	run(&f->runs[1], "leaderboard");
	run(&f->runs[2], "private");
	kb__key_value__init(&f->kv);
	/* A key/value with a NUL-free but binary-ish value, so the packed
	 * bytes are not plain text. */
	f->kv.key = "benchmark.0.mean";
	f->kv.value = "1234.5";
	f->kvp[0] = &f->kv;
	f->runs[1].n_result = 1;
	f->runs[1].result = f->kvp;
	for (int i = 0; i < 3; i++)
		f->runp[i] = &f->runs[i];
	kb__system_info__init(&f->sys);
	f->sys.device_name = "test cpu";

	kb__result__init(&f->r);
	f->r.submission_id = id;
	f->r.leaderboard = f->lb;
	f->r.gpu = f->gpu;
	f->r.mode = KB__MODE__MODE_LEADERBOARD;
	f->r.user_id = f->user;
	f->r.compile = &f->compile;
	f->r.n_runs = 3;
	f->r.runs = f->runp;
	f->r.system = &f->sys;
	f->r.has_score = 1;
	f->r.score = score;
	f->r.verdict = KB__VERDICT__VERDICT_PASSED;
	f->r.fault = KB__FAULT__FAULT_NONE;
	f->r.submitted_at_ms = submitted_ms;
	f->r.started_at_ms = submitted_ms + 10;
	f->r.finished_at_ms = submitted_ms + 20;
	f->r.worker = "test-worker";

	kb__result_event__init(&f->ev);
	f->ev.submission_id = id;
	f->ev.gpu = f->gpu;
	f->ev.event_case = KB__RESULT_EVENT__EVENT_RESULT;
	f->ev.result = &f->r;
}

void fx_failed(struct fx_result *f, uint64_t id, const char *user,
	       int64_t submitted_ms)
{
	fx_scored(f, id, user, 0, submitted_ms);
	f->runs[0].passed = 0;
	f->runs[0].exit_code = 112;
	f->r.n_runs = 1;
	f->r.has_score = 0;
	f->r.verdict = KB__VERDICT__VERDICT_FAILED;
	f->r.fault = KB__FAULT__FAULT_USER;
	f->r.error = "test 0 failed";
}

uint8_t *fx_pack_event(const struct fx_result *f, size_t *len)
{
	uint8_t *buf;

	*len = kb__result_event__get_packed_size(&f->ev);
	buf = malloc(*len + 1);
	if (buf)
		kb__result_event__pack(&f->ev, buf);
	return buf;
}

uint8_t *fx_pack_progress(uint64_t id, const char *gpu, Kb__Stage stage,
			  size_t *len)
{
	Kb__Progress p = KB__PROGRESS__INIT;
	Kb__ResultEvent ev = KB__RESULT_EVENT__INIT;
	uint8_t *buf;

	p.stage = stage;
	p.message = "working";
	p.elapsed_ms = 42;
	p.worker = "test-worker";
	ev.submission_id = id;
	ev.gpu = (char *)gpu;
	ev.event_case = KB__RESULT_EVENT__EVENT_PROGRESS;
	ev.progress = &p;
	*len = kb__result_event__get_packed_size(&ev);
	buf = malloc(*len + 1);
	if (buf)
		kb__result_event__pack(&ev, buf);
	return buf;
}
