/* kb_eval_ready: a worker's held Python run, started ahead for the next
 * job (eval.h's opts.ready).
 *
 * Python's interpreter and torch take 2-4 s to start, longer than the
 * rest of a test-mode job; so a worker that is idle starts the next job's
 * first harness run ahead (kb_eval_ready_start), in a sandbox of its own
 * like any run's (ready.h's kb_held, running ready.py), whose interpreter
 * has imported torch before the job comes. kb_eval_run() takes it for the
 * job's first run when that run fits (a Python task's, not secret, not
 * under Nsight Compute, no compile step first); every other run, and
 * every job when none is waiting, runs as usual. Each held run serves one
 * job, then ends as every run does.
 *
 * Thread-safety: a kb_eval_ready may be shared by the evaluations of one
 * worker and the thread that starts the next (its own lock); never start
 * one while a job runs, whose timings the interpreter's start would
 * disturb.
 */
#ifndef KB_EVAL_READY_H
#define KB_EVAL_READY_H

#include "eval.h"

/* A worker's held Python run, empty until started. */
struct kb_eval_ready *kb_eval_ready_new(void);

/* Starts a held run for the next Python job of o, unless one is held or
 * in use, o has no Python with torch (or a fake sandbox), or the last
 * held runs failed (ended by themselves, could not start, or were not
 * ready within a minute): then it waits 10 s, doubled per failure in a
 * row, at most an hour. Cheap when there is nothing to do: call it on
 * every idle moment. The options must be those of the jobs it will serve.
 * Returns 0 (also when there is nothing to do) or -errno (logged; jobs
 * then run as usual). */
int kb_eval_ready_start(struct kb_eval_ready *rd, const struct kb_eval_opts *o);

/* Waits up to timeout_s until the held run has imported torch. Returns 1
 * ready, 0 not (yet), -1 none or it ended. */
int kb_eval_ready_wait(struct kb_eval_ready *rd, double timeout_s);

/* How many jobs have taken a held run of rd. */
unsigned kb_eval_ready_taken(struct kb_eval_ready *rd);

/* Ends the held run, if any, and frees rd (NULL is a no-op). */
void kb_eval_ready_free(struct kb_eval_ready *rd);

#endif
