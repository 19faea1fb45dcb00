/* kb_score: verdicts and scores (see kb_score.h). */
#include "kb_score.h"

#include <errno.h>
#include <math.h>
#include <string.h>

int kb_score_combine(const char *ranking_by, const double *means_ns, size_t n,
		     double *score_s)
{
	double acc = 0;

	if (!ranking_by || !means_ns || n == 0)
		return -EINVAL;
	for (size_t i = 0; i < n; i++)
		if (!isfinite(means_ns[i]) || means_ns[i] <= 0)
			return -EINVAL;
	if (strcmp(ranking_by, "last") == 0) {
		acc = means_ns[n - 1];
	} else if (strcmp(ranking_by, "mean") == 0) {
		for (size_t i = 0; i < n; i++)
			acc += means_ns[i];
		acc /= (double)n;
	} else if (strcmp(ranking_by, "geom") == 0) {
		/* The mean of the logs cannot overflow where a product of
		 * many large means would. */
		for (size_t i = 0; i < n; i++)
			acc += log(means_ns[i]);
		acc = exp(acc / (double)n);
	} else {
		return -EINVAL;
	}
	acc *= 1e-9;
	if (!isfinite(acc) || acc <= 0)
		return -EINVAL;
	*score_s = acc;
	return 0;
}

enum kb_run_end kb_run_classify(int signaled, int exit_code, int timed_out,
				int report_ok, int check)
{
	/* Our own kill comes first: a run we stopped for the wall-clock
	 * limit dies by SIGKILL, which is a timeout, not a crash. */
	if (timed_out)
		return KB_RUN_TIMEOUT;
	if (signaled)
		return KB_RUN_CRASHED;
	switch (exit_code) {
	case 0:
		/* Exit 0 is only a pass with a report saying so. Without a
		 * (well-formed) report, or without a check line, the user's
		 * code may have called exit(0) before the harness finished:
		 * that must never count as a pass, and it is the user's
		 * doing, so it is a crash. */
		if (!report_ok || check < 0)
			return KB_RUN_CRASHED;
		return check == 1 ? KB_RUN_OK : KB_RUN_FAILED;
	case 112:
		return KB_RUN_FAILED;
	case 114:
		return KB_RUN_TIMEOUT;
	case 2:
	case 110:
	case 111:
	case 113:
		return KB_RUN_INFRA;
	default:
		return KB_RUN_CRASHED;
	}
}

int kb_run_infra_exit(int exit_code)
{
	return exit_code == 2 || exit_code == 110 || exit_code == 111 ||
	       exit_code == 113;
}

int kb_run_user_started(const char *report, size_t len)
{
	static const char line[] = "user-code: started";
	const size_t n = sizeof(line) - 1;
	size_t pos = 0;

	if (!report)
		return 0;
	while (pos < len) {
		const char *p = report + pos;
		const char *nl = memchr(p, '\n', len - pos);
		size_t l = nl ? (size_t)(nl - p) : len - pos;

		if (l == n && memcmp(p, line, n) == 0)
			return 1;
		pos += l + 1;
	}
	return 0;
}

enum kb_run_end kb_run_classify_started(int signaled, int exit_code,
					int timed_out, int report_ok, int check,
					int user_started)
{
	enum kb_run_end e = kb_run_classify(signaled, exit_code, timed_out,
					    report_ok, check);

	/* The harness's own error codes are a claim anyone in the process
	 * can make; once the submission has run, it may have made it. */
	if (e == KB_RUN_INFRA && user_started)
		return KB_RUN_CRASHED;
	return e;
}
