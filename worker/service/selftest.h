/* kb_selftest: what a worker proves before it serves.
 *
 * For every problem of KB_PROBLEMS this worker's device type runs (its
 * gpus list names it) and whose language it builds, with an example
 * submission_ok.* in its directory: the first problem of each language is
 * evaluated in test mode through the real build and sandbox and must pass
 * -- a compiler, toolkit, interpreter (torch that does not import or does
 * not see the device) or sandbox that does not work shows here, as the
 * platform's fault, instead of in users' jobs; every other problem is
 * built (build_only), so that the harness cache holds its trusted harness
 * and the first user job is as fast as the next.
 *
 * Thread-safety: call before serving, from one thread.
 */
#ifndef KB_SELFTEST_H
#define KB_SELFTEST_H

#include <stddef.h>

#include "eval.h"

/* Runs the checks with opts (workdir, sandbox, device...). Returns the
 * number of problems checked or built (0 when none applies), or -EIO with
 * errstr naming the problem and why it failed (-EINVAL when the problem
 * set does not load). */
int kb_selftest_run(const struct kb_eval_opts *opts, const char *problems,
		    char *errstr, size_t errstr_size);

#endif
