/* kb_held: a sandboxed run started before its job is known, released
 * when the job comes. Python tasks use it (eval_ready.h): the
 * interpreter and torch take 2-4 s to start, longer than the rest of a
 * test-mode job, so the worker starts the next job's harness run ahead,
 * in a fresh sandbox of its own exactly as for any run, running
 * worker/run/ready.py (embedded here), which imports torch, starts our
 * harness's child and waits. Nothing is shared between jobs: each held
 * run serves one job's first run, then ends as every run does; the
 * next job gets a new one.
 *
 * The run is kb_sandbox_run() with opts.held (kb_sandbox.h) in a thread
 * of its own; the worker talks to ready.py over a socket, its fd 4:
 *
 *   ready.py -> worker   "ready\n" once torch is imported (in both
 *                        processes)
 *   worker -> ready.py   "arg <text>\n" per argument of the run (its argv
 *                        without the interpreter), then "go\n"
 *
 * and releases the sandbox's wall-clock limit at the same moment. A run
 * that is never released ends when the worker discards it (killed) or at
 * the hold limit.
 *
 * Thread-safety: one thread drives a kb_held (the sandbox's own thread
 * aside).
 */
#ifndef KB_READY_H
#define KB_READY_H

#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>

#include "kb_sandbox.h"

/* The launcher's text (worker/run/ready.py), NUL-terminated. */
extern const char kb_ready_py[];
#define KB_READY_SCRIPT "kb_ready.py"

struct kb_held {
	pthread_t thread;
	int started;  /* the thread runs (until joined) */
	int sock;     /* the worker's end of the go socket */
	int run_sock; /* the run's end (fd 4 there) */
	int efd;      /* the release eventfd */
	int ready, released;
	char buf[6]; /* what came of "ready\n" so far */
	size_t got;
	struct kb_sandbox_opts so; /* its pointers must outlive the run */
	struct kb_sandbox_result r;
	int rc;
	char err[256];
	atomic_int ended; /* kb_sandbox_run returned */
};

/* Starts so (want_report set; held, go_fd, release_fd and hold_timeout_s
 * are filled here) in a new thread, held for at most hold_s. Returns 0,
 * or -errno with errstr set (nothing left running). */
int kb_held_start(struct kb_held *h, const struct kb_sandbox_opts *so,
		  double hold_s, char *errstr, size_t errstr_size);

/* Waits up to timeout_s for "ready". Returns 1 (ready), 0 (not yet), or
 * -1 (the run ended or said something else). */
int kb_held_wait_ready(struct kb_held *h, double timeout_s);

/* 1 while the run has not ended. */
int kb_held_alive(struct kb_held *h);

/* Sends args (NULL-terminated; no newlines) and "go", and releases the
 * wall-clock limit (timeout_s). Returns 0, or -errno: -EPIPE when the
 * run has already ended (nothing was released), -EINVAL for an argument
 * that cannot be sent. */
int kb_held_release(struct kb_held *h, char *const *args, double timeout_s);

/* Waits for the run to end and moves its result into *r (the caller
 * clears it); returns kb_sandbox_run's return value with errstr set from
 * it. The kb_held is then empty. */
int kb_held_join(struct kb_held *h, struct kb_sandbox_result *r, char *errstr,
		 size_t errstr_size);

/* Ends a run that will not be used: closes the socket and, unless it was
 * released, releases it with a limit of 1 ms (the sandbox kills it at
 * once, wherever it is), joins, drops the result. A never-started
 * kb_held is a no-op. */
void kb_held_discard(struct kb_held *h);

#endif
