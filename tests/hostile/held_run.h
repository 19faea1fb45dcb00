/* Test helper for held sandbox runs (kb_sandbox_opts.held): the run goes
 * on a thread of its own while the test holds, then releases it. Shared
 * by check_sandbox_basic.c and check_sandbox_hostile.c. */
#ifndef KB_TEST_HELD_RUN_H
#define KB_TEST_HELD_RUN_H

#include <check.h>
#include <pthread.h>
#include <stdint.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include "kb_sandbox.h"

struct held_run {
	struct kb_sandbox_opts o;
	struct kb_sandbox_result r;
	char *argv[4];
	int sv[2], efd, rc;
	char err[256];
	pthread_t t;
};

static void *held_run_main(void *arg)
{
	struct held_run *h = arg;

	h->rc = kb_sandbox_run(&h->o, &h->r, h->err, sizeof(h->err));
	return NULL;
}

/* Starts `sh -c script` held for up to hold_s, with o's other options. */
static void held_run_start(struct held_run *h, struct kb_sandbox_opts o,
			   const char *script, double hold_s)
{
	memset(h, 0, sizeof(*h));
	ck_assert_int_eq(
		socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, h->sv), 0);
	h->efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	ck_assert_int_ge(h->efd, 0);
	h->argv[0] = "sh";
	h->argv[1] = "-c";
	h->argv[2] = (char *)script;
	h->o = o;
	h->o.argv = h->argv;
	h->o.want_report = 1;
	h->o.held = 1;
	h->o.go_fd = h->sv[1];
	h->o.release_fd = h->efd;
	h->o.hold_timeout_s = hold_s;
	ck_assert_int_eq(pthread_create(&h->t, NULL, held_run_main, h), 0);
}

/* Releases it with a wall-clock limit of limit_ms and sends line. */
static void held_run_release(struct held_run *h, uint64_t limit_ms,
			     const char *line)
{
	ck_assert_int_eq(write(h->efd, &limit_ms, sizeof(limit_ms)),
			 (ssize_t)sizeof(limit_ms));
	ck_assert_int_eq(send(h->sv[0], line, strlen(line), MSG_NOSIGNAL),
			 (ssize_t)strlen(line));
}

/* Waits for the run; the result is in h->r (cleared by the caller). */
static void held_run_join(struct held_run *h)
{
	pthread_join(h->t, NULL);
	close(h->sv[0]);
	close(h->sv[1]);
	close(h->efd);
}

#endif
