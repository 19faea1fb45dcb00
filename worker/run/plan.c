#include "plan.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

static double limit(uint32_t task_s, double cap_s)
{
	double t = task_s ? (double)task_s : KB_PLAN_DEFAULT_TIMEOUT_S;

	return cap_s > 0 && t > cap_s ? cap_s : t;
}

/* Upstream's profile mode: one run per benchmark case, keyed by the
 * case's index in the task (also when the request picks one). */
static int plan_profile(const Kb__Task *t, const Kb__ProfileRequest *req,
			double cap_s, struct kb_plan_run out[KB_PLAN_MAX])
{
	const struct kb_plan_run run = {"",
					"profile",
					"profile",
					"profiling",
					KB_CASES_ONE_BENCHMARK,
					0,
					KB__STAGE__STAGE_BENCHMARKING,
					limit(t->benchmark_timeout, cap_s),
					0,
					1};
	size_t first = 0, n = t->n_benchmarks;

	if (req && req->has_benchmark_index) {
		if (req->benchmark_index >= t->n_benchmarks)
			return -ERANGE;
		first = req->benchmark_index;
		n = 1;
	}
	if (n == 0)
		return -ERANGE;
	if (n > KB_PLAN_MAX)
		n = KB_PLAN_MAX;
	for (size_t i = 0; i < n; i++) {
		out[i] = run;
		out[i].index = first + i;
		snprintf(out[i].key, sizeof(out[i].key), "profile.%zu",
			 first + i);
	}
	return (int)n;
}

int kb_plan_make(Kb__Mode mode, const Kb__Task *t,
		 const Kb__ProfileRequest *req, double cap_s,
		 struct kb_plan_run out[KB_PLAN_MAX])
{
	const struct kb_plan_run test = {"test",
					 "test",
					 "tests",
					 "testing",
					 KB_CASES_TESTS,
					 0,
					 KB__STAGE__STAGE_TESTING,
					 limit(t->test_timeout, cap_s),
					 0,
					 0};
	const int last = t->ranking_by && strcmp(t->ranking_by, "last") == 0;
	const double ranked = limit(t->ranked_timeout, cap_s);

	switch (mode) {
	case KB__MODE__MODE_TEST:
		out[0] = test;
		return 1;
	case KB__MODE__MODE_BENCHMARK:
		out[0] =
			(struct kb_plan_run){"benchmark",
					     "benchmark",
					     "benchmarks",
					     "benchmarking",
					     KB_CASES_BENCHMARKS,
					     0,
					     KB__STAGE__STAGE_BENCHMARKING,
					     limit(t->benchmark_timeout, cap_s),
					     0,
					     0};
		return 1;
	case KB__MODE__MODE_PROFILE:
		return plan_profile(t, req, cap_s, out);
	case KB__MODE__MODE_LEADERBOARD:
		out[0] = test;
		out[1] = (struct kb_plan_run){"leaderboard",
					      "leaderboard",
					      "ranked run",
					      "ranked run",
					      last ? KB_CASES_LAST_BENCHMARK
						   : KB_CASES_BENCHMARKS,
					      0,
					      KB__STAGE__STAGE_RANKED_RUN,
					      ranked,
					      0,
					      0};
		/* The table gives the secret run every benchmark, whatever
		 * ranking_by says: it checks, it does not score. */
		out[2] = (struct kb_plan_run){"private",
					      "leaderboard",
					      "secret run",
					      "secret run",
					      KB_CASES_BENCHMARKS,
					      1,
					      KB__STAGE__STAGE_SECRET_RUN,
					      ranked,
					      0,
					      0};
		return 3;
	default:
		return -EINVAL;
	}
}

char *const *kb_plan_cases(const struct kb_plan_run *r, const Kb__Task *t,
			   size_t *n)
{
	switch (r->cases) {
	case KB_CASES_TESTS:
		*n = t->n_tests;
		return t->tests;
	case KB_CASES_LAST_BENCHMARK:
		if (t->n_benchmarks == 0)
			break;
		*n = 1;
		return t->benchmarks + t->n_benchmarks - 1;
	case KB_CASES_BENCHMARKS:
		*n = t->n_benchmarks;
		return t->benchmarks;
	case KB_CASES_ONE_BENCHMARK:
		if (r->index >= t->n_benchmarks)
			break;
		*n = 1;
		return t->benchmarks + r->index;
	}
	*n = 0;
	return NULL;
}
