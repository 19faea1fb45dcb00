/* kb_report: see kb_report.h. */
#include "kb_report.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kb_mode.h"
#include "kb_util.h"

struct out {
	struct kb_buf b;
	int err;
};

static void put(struct out *o, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
static void put(struct out *o, const char *fmt, ...)
{
	va_list ap;
	char *s;

	if (o->err)
		return;
	va_start(ap, fmt);
	if (vasprintf(&s, fmt, ap) < 0) {
		o->err = 1;
		va_end(ap);
		return;
	}
	va_end(ap);
	if (kb_buf_append(&o->b, s, strlen(s)) < 0)
		o->err = 1;
	free(s);
}

/* Writes text with every line prefixed by indent. */
static void put_block(struct out *o, const char *indent, const char *text)
{
	while (text && *text) {
		size_t len = strcspn(text, "\n");

		put(o, "%s%.*s\n", indent, (int)len, text);
		text += len + (text[len] == '\n');
	}
}

static const char *get(const Kb__RunResult *rr, const char *key)
{
	for (size_t k = 0; k < rr->n_result; k++)
		if (strcmp(rr->result[k]->key, key) == 0)
			return rr->result[k]->value;
	return NULL;
}

/* The value of "<kind>.<i>.<field>" (kind "test" or "benchmark"). */
static const char *item(const Kb__RunResult *rr, const char *kind, long i,
			const char *field)
{
	char key[96];

	snprintf(key, sizeof(key), "%s.%ld.%s", kind, i, field);
	return get(rr, key);
}

static long count(const Kb__RunResult *rr, const char *key)
{
	const char *v = get(rr, key);

	return v ? strtol(v, NULL, 10) : 0;
}

/* A time given in nanoseconds, in the unit that reads best. */
static void fmt_ns(char *buf, size_t n, const char *ns_text)
{
	double ns = ns_text ? strtod(ns_text, NULL) : 0;

	if (!ns_text)
		snprintf(buf, n, "?");
	else if (ns < 1e3)
		snprintf(buf, n, "%.1f ns", ns);
	else if (ns < 1e6)
		snprintf(buf, n, "%.3f µs", ns / 1e3);
	else if (ns < 1e9)
		snprintf(buf, n, "%.3f ms", ns / 1e6);
	else
		snprintf(buf, n, "%.3f s", ns / 1e9);
}

static const char *run_title(const char *key)
{
	if (strncmp(key, "profile.", 8) == 0)
		return "Profile";
	static const char *const titles[][2] = {
		{"test", "Tests"},         {"benchmark", "Benchmarks"},
		{"profile", "Profile"},    {"leaderboard", "Ranked run"},
		{"private", "Secret run"},
	};

	for (size_t i = 0; i < sizeof(titles) / sizeof(titles[0]); i++)
		if (strcmp(titles[i][0], key) == 0)
			return titles[i][1];
	return key;
}

static int is_private(const Kb__RunResult *rr)
{
	return strcmp(rr->key, "private") == 0;
}

static void put_run_head(struct out *o, const Kb__RunResult *rr)
{
	const char *title = run_title(rr->key);
	const long tests = count(rr, "test-count");

	if (is_private(rr)) {
		put(o, "%s %s %s\n", rr->passed ? "✅" : "❌", title,
		    rr->passed ? "passed" : "failed");
		return;
	}
	if (rr->timed_out)
		put(o, "❌ %s timed out after %.2f s\n", title, rr->duration_s);
	else if (rr->signal)
		put(o, "❌ %s crashed (signal %d: %s)\n", title, rr->signal,
		    strsignal(rr->signal));
	else if (!rr->success && rr->n_result == 0)
		put(o, "❌ %s crashed (exit status %d, no harness report)\n",
		    title, rr->exit_code);
	else if (!rr->success)
		put(o, "❌ %s crashed (exit status %d)\n", title, rr->exit_code);
	else if (strcmp(rr->key, "test") == 0 && tests > 0) {
		long passed = 0;

		for (long i = 0; i < tests; i++) {
			const char *st = item(rr, "test", i, "status");

			passed += st && strcmp(st, "pass") == 0;
		}
		put(o, "%s %s %s (%ld/%ld, %.2f s)\n", rr->passed ? "✅" : "❌",
		    title, rr->passed ? "passed" : "failed", passed, tests,
		    rr->duration_s);
	} else
		put(o, "%s %s %s (%.2f s)\n", rr->passed ? "✅" : "❌", title,
		    rr->passed ? "passed" : "failed", rr->duration_s);
}

/* How many of n declared items (tests or benchmarks) the report has: a
 * harness that stops early, or a run that crashes, leaves the rest out. */
static long reported(const Kb__RunResult *rr, const char *kind, long n)
{
	long i = 0;

	while (i < n &&
	       (item(rr, kind, i, "spec") || item(rr, kind, i, "status")))
		i++;
	return i;
}

static void put_not_reached(struct out *o, long shown, long n)
{
	if (shown < n)
		put(o, "  … %ld more not reached\n", n - shown);
}

static void put_tests(struct out *o, const Kb__RunResult *rr)
{
	const long n = count(rr, "test-count");
	const long shown = reported(rr, "test", n);

	for (long i = 0; i < shown; i++) {
		const char *spec = item(rr, "test", i, "spec");
		const char *st = item(rr, "test", i, "status");
		const char *why = item(rr, "test", i, "error");

		if (!why)
			why = item(rr, "test", i, "message");
		put(o, "  %s %s%s\n", st && strcmp(st, "pass") == 0 ? "✅" : "❌",
		    spec ? spec : "?", st ? "" : " (no result)");
		if (why)
			put_block(o, "     ", why);
	}
	put_not_reached(o, shown, n);
}

static int known_bench_key(const char *suffix)
{
	static const char *const known[] = {
		"spec",  "runs",   "mean",  "std",  "err",    "best",
		"worst", "status", "error", "gbps", "gflops",
	};

	for (size_t i = 0; i < sizeof(known) / sizeof(known[0]); i++)
		if (strcmp(known[i], suffix) == 0)
			return 1;
	return 0;
}

/* Achieved throughput when the harness reports it, then whatever else it
 * measured on one line. */
static void put_throughput(struct out *o, const Kb__RunResult *rr, long i)
{
	const char *gbps = item(rr, "benchmark", i, "gbps");
	const char *gflops = item(rr, "benchmark", i, "gflops");
	char prefix[48];
	size_t plen;
	int first = 1;

	if (gbps || gflops)
		put(o, "    📈 %s%s%s%s%s\n", gbps ? gbps : "",
		    gbps ? " GB/s" : "", gbps && gflops ? "   " : "",
		    gflops ? gflops : "", gflops ? " GFLOP/s" : "");
	plen = (size_t)snprintf(prefix, sizeof(prefix), "benchmark.%ld.", i);
	for (size_t k = 0; k < rr->n_result; k++) {
		const char *key = rr->result[k]->key;

		if (strncmp(key, prefix, plen) != 0 ||
		    strchr(key + plen, '.') || known_bench_key(key + plen))
			continue;
		put(o, "%s%s=%s", first ? "    " : " ", key + plen,
		    rr->result[k]->value);
		first = 0;
	}
	if (!first)
		put(o, "\n");
}

static void put_benchmarks(struct out *o, const Kb__RunResult *rr)
{
	const long n = count(rr, "benchmark-count");
	const long shown = reported(rr, "benchmark", n);

	for (long i = 0; i < shown; i++) {
		const char *spec = item(rr, "benchmark", i, "spec");
		const char *st = item(rr, "benchmark", i, "status");
		const char *why = item(rr, "benchmark", i, "error");
		const char *err = item(rr, "benchmark", i, "err");
		const char *runs = item(rr, "benchmark", i, "runs");
		char mean[32], pm[32], best[32], worst[32];

		put(o, "  %s\n", spec ? spec : "?");
		if (st && strcmp(st, "pass") != 0)
			put(o, "    status: %s\n", st);
		if (why)
			put_block(o, "    ", why);
		if (item(rr, "benchmark", i, "mean")) {
			fmt_ns(mean, sizeof(mean),
			       item(rr, "benchmark", i, "mean"));
			fmt_ns(pm, sizeof(pm),
			       err ? err : item(rr, "benchmark", i, "std"));
			fmt_ns(best, sizeof(best),
			       item(rr, "benchmark", i, "best"));
			fmt_ns(worst, sizeof(worst),
			       item(rr, "benchmark", i, "worst"));
			put(o, "    ⏱ %s ± %s\n", mean, pm);
			put(o, "    ⚡ best %s   🐌 worst %s   runs %s\n", best,
			    worst, runs ? runs : "?");
		}
		put_throughput(o, rr, i);
	}
	put_not_reached(o, shown, n);
}

static void put_output(struct out *o, const Kb__RunResult *rr)
{
	if (rr->stdout && rr->stdout[0]) {
		put(o, "  stdout:\n");
		put_block(o, "    | ", rr->stdout);
	}
	if (rr->stderr && rr->stderr[0]) {
		put(o, "  stderr:\n");
		put_block(o, "    | ", rr->stderr);
	}
}

/* A profile run's profiler and its summary (the speed-of-light table),
 * or why there is no profile. */
static void put_profile(struct out *o, const Kb__RunResult *rr)
{
	const Kb__Profile *p = rr->profile;

	if (!p)
		return;
	put(o, "  🔬 %s (%s)\n",
	    p->profiler && *p->profiler ? p->profiler : "profiler", rr->key);
	if (p->error && *p->error) {
		put(o, "  no profile: %s\n", p->error);
		return;
	}
	put_block(o, "    ", p->summary);
	if (p->trace.len > 0)
		put(o, "  trace: %zu bytes (zip)%s%s\n", p->trace.len,
		    p->download_url && *p->download_url ? ", " : "",
		    p->download_url && *p->download_url ? p->download_url : "");
}

static void put_run(struct out *o, const Kb__RunResult *rr)
{
	put(o, "\n");
	put_run_head(o, rr);
	if (is_private(rr))
		return;
	put_tests(o, rr);
	put_benchmarks(o, rr);
	put_profile(o, rr);
	if (!rr->passed)
		put_output(o, rr);
}

static void put_compile(struct out *o, const Kb__CompileResult *c)
{
	put(o, "\n");
	if (c->success) {
		put(o, "✅ Compilation successful (%.2f s)\n", c->duration_s);
		return;
	}
	put(o, "❌ Compilation failed");
	if (c->exit_code >= 0)
		put(o, " (exit status %d)", c->exit_code);
	put(o, "\n");
	if (c->command && c->command[0])
		put(o, "  $ %s\n", c->command);
	put_block(o, "  ", c->stderr);
	put_block(o, "  ", c->stdout);
}

static void put_score(struct out *o, const Kb__Result *r)
{
	char text[32], ns[32];

	snprintf(ns, sizeof(ns), "%.17g", r->score * 1e9);
	fmt_ns(text, sizeof(text), ns);
	put(o, "\nScore: %s (%.9g s)\n", text, r->score);
}

/* One "start → end" reading; "?" for a side that was not read (0). */
static void put_reading(struct out *o, int *first, int start, int end,
			double scale, int decimals, const char *unit)
{
	char a[32] = "?", b[32] = "?";

	if (!start && !end)
		return;
	if (start)
		snprintf(a, sizeof(a), "%.*f", decimals, start * scale);
	if (end)
		snprintf(b, sizeof(b), "%.*f", decimals, end * scale);
	put(o, "%s%s → %s %s", *first ? "Start → end: " : ", ", a, b, unit);
	*first = 0;
}

static void put_system(struct out *o, const Kb__SystemInfo *si)
{
	const char *parts[3][2] = {{"driver ", si->driver},
				   {"runtime ", si->runtime},
				   {"", si->platform}};
	int first = 1;

	put(o, "Running on %s", si->device_name);
	for (size_t i = 0; i < 3; i++) {
		if (!parts[i][1] || !parts[i][1][0])
			continue;
		put(o, "%s%s%s", first ? " (" : ", ", parts[i][0], parts[i][1]);
		first = 0;
	}
	put(o, "%s\n", first ? "" : ")");
	first = 1;
	put_reading(o, &first, si->sm_clock_start_mhz, si->sm_clock_end_mhz, 1,
		    0, "MHz");
	put_reading(o, &first, si->temp_start_c, si->temp_end_c, 1, 0, "°C");
	put_reading(o, &first, si->power_start_mw, si->power_end_mw, 1e-3, 1,
		    "W");
	if (!first)
		put(o, "\n");
}

char *kb_report_render(const Kb__Result *r)
{
	struct out o = {{0}, 0};
	const Kb__SystemInfo *si = r->system;

	put(&o, "%s · %s · %s · submission %llu\n",
	    r->leaderboard && r->leaderboard[0] ? r->leaderboard : "?",
	    r->gpu && r->gpu[0] ? r->gpu : "?", kb_mode_label(r->mode),
	    (unsigned long long)r->submission_id);
	if (si && si->device_name && si->device_name[0])
		put_system(&o, si);
	if (r->compile)
		put_compile(&o, r->compile);
	for (size_t i = 0; i < r->n_runs; i++)
		put_run(&o, r->runs[i]);
	if (r->has_score)
		put_score(&o, r);
	put(&o, "\nVerdict: %s", kb_report_verdict_name(r->verdict));
	if (r->fault == KB__FAULT__FAULT_INFRA)
		put(&o, " (a platform fault, not counted against you)");
	if (r->error && r->error[0])
		put(&o, " — %s", r->error);
	put(&o, "\n");
	if (o.err) {
		kb_buf_free(&o.b);
		return NULL;
	}
	return o.b.data;
}

static void clear_str(char **s)
{
	if (*s && *s != (char *)protobuf_c_empty_string)
		free(*s);
	*s = (char *)protobuf_c_empty_string;
}

void kb_report_redact(Kb__Result *r)
{
	for (size_t i = 0; i < r->n_runs; i++) {
		Kb__RunResult *rr = r->runs[i];

		if (!is_private(rr))
			continue;
		rr->success = rr->passed;
		rr->exit_code = 0;
		rr->duration_s = 0;
		rr->timed_out = 0;
		rr->signal = 0;
		clear_str(&rr->stdout);
		clear_str(&rr->stderr);
		for (size_t k = 0; k < rr->n_result; k++)
			kb__key_value__free_unpacked(rr->result[k], NULL);
		free(rr->result);
		rr->result = NULL;
		rr->n_result = 0;
		if (rr->profile) {
			kb__profile__free_unpacked(rr->profile, NULL);
			rr->profile = NULL;
		}
	}
}

int kb_report_stage_secret(Kb__Stage s)
{
	return s == KB__STAGE__STAGE_SECRET_RUN;
}

const char *kb_report_stage_name(Kb__Stage s)
{
	switch (s) {
	case KB__STAGE__STAGE_QUEUED:
		return "queued";
	case KB__STAGE__STAGE_COMPILING:
		return "compiling";
	case KB__STAGE__STAGE_TESTING:
		return "testing";
	case KB__STAGE__STAGE_BENCHMARKING:
		return "benchmarking";
	case KB__STAGE__STAGE_RANKED_RUN:
		return "ranked_run";
	case KB__STAGE__STAGE_SECRET_RUN:
		return "ranked_run";
	case KB__STAGE__STAGE_DONE:
		return "done";
	default:
		return "unspecified";
	}
}

const char *kb_report_verdict_name(Kb__Verdict v)
{
	static const char *const names[] = {
		[KB__VERDICT__VERDICT_UNSPECIFIED] = "unspecified",
		[KB__VERDICT__VERDICT_PASSED] = "passed",
		[KB__VERDICT__VERDICT_FAILED] = "failed",
		[KB__VERDICT__VERDICT_COMPILE_ERROR] = "compile_error",
		[KB__VERDICT__VERDICT_TIMEOUT] = "timeout",
		[KB__VERDICT__VERDICT_CRASHED] = "crashed",
		[KB__VERDICT__VERDICT_INFRA_ERROR] = "infra_error",
		[KB__VERDICT__VERDICT_SUSPECT] = "suspect",
	};

	return (unsigned)v < sizeof(names) / sizeof(names[0]) ? names[v]
							      : "unknown";
}

const char *kb_report_fault_name(Kb__Fault f)
{
	static const char *const names[] = {
		[KB__FAULT__FAULT_NONE] = "none",
		[KB__FAULT__FAULT_USER] = "user",
		[KB__FAULT__FAULT_INFRA] = "infra",
	};

	return (unsigned)f < sizeof(names) / sizeof(names[0]) ? names[f]
							      : "unknown";
}
