#include "ready.h"

#include <errno.h>
#include <math.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include "kb_log.h"
#include "kb_util.h"

static void *held_main(void *arg)
{
	struct kb_held *h = arg;

	h->rc = kb_sandbox_run(&h->so, &h->r, h->err, sizeof(h->err));
	atomic_store(&h->ended, 1);
	return NULL;
}

int kb_held_start(struct kb_held *h, const struct kb_sandbox_opts *so,
		  double hold_s, char *errstr, size_t errstr_size)
{
	int sv[2];
	int rc;

	memset(h, 0, sizeof(*h));
	h->sock = h->run_sock = h->efd = -1;
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0) {
		rc = -errno;
		snprintf(errstr, errstr_size, "held run: socketpair: %s",
			 strerror(errno));
		return rc;
	}
	h->sock = sv[0];
	h->run_sock = sv[1];
	if ((h->efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)) < 0) {
		rc = -errno;
		snprintf(errstr, errstr_size, "held run: eventfd: %s",
			 strerror(errno));
		kb_close_fd(&h->sock);
		kb_close_fd(&h->run_sock);
		return rc;
	}
	h->so = *so;
	h->so.want_report = 1;
	h->so.held = 1;
	h->so.go_fd = h->run_sock;
	h->so.release_fd = h->efd;
	h->so.hold_timeout_s = hold_s;
	rc = pthread_create(&h->thread, NULL, held_main, h);
	if (rc != 0) {
		snprintf(errstr, errstr_size, "held run: thread: %s",
			 strerror(rc));
		kb_close_fd(&h->sock);
		kb_close_fd(&h->run_sock);
		kb_close_fd(&h->efd);
		return -rc;
	}
	h->started = 1;
	return 0;
}

int kb_held_alive(struct kb_held *h)
{
	return h->started && !atomic_load(&h->ended);
}

int kb_held_wait_ready(struct kb_held *h, double timeout_s)
{
	double end = kb_mono_s() + timeout_s;

	if (h->ready)
		return 1;
	if (!h->started)
		return -1;
	while (h->got < sizeof(h->buf)) {
		double left = end - kb_mono_s();
		struct pollfd pf = {h->sock, POLLIN, 0};
		int pr;
		ssize_t n;

		if (left <= 0)
			return 0;
		pr = poll(&pf, 1, (int)ceil(left * 1000.0));
		if (pr < 0 && errno == EINTR)
			continue;
		if (pr <= 0)
			return pr == 0 ? 0 : -1;
		n = recv(h->sock, h->buf + h->got, sizeof(h->buf) - h->got, 0);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return -1;
		h->got += (size_t)n;
	}
	if (memcmp(h->buf, "ready\n", sizeof(h->buf)) != 0)
		return -1;
	h->ready = 1;
	return 1;
}

static int send_all(int fd, const char *s, size_t n)
{
	while (n > 0) {
		ssize_t k = send(fd, s, n, MSG_NOSIGNAL);

		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0)
			return -EPIPE;
		s += k;
		n -= (size_t)k;
	}
	return 0;
}

int kb_held_release(struct kb_held *h, char *const *args, double timeout_s)
{
	uint64_t ms = (uint64_t)ceil(timeout_s * 1000.0);
	struct kb_buf b = {0};
	int rc = 0;

	if (!kb_held_alive(h))
		return -EPIPE;
	for (size_t i = 0; args[i]; i++) {
		if (strchr(args[i], '\n')) {
			kb_buf_free(&b);
			return -EINVAL;
		}
		kb_buf_append(&b, "arg ", 4);
		kb_buf_append(&b, args[i], strlen(args[i]));
		kb_buf_append(&b, "\n", 1);
	}
	kb_buf_append(&b, "go\n", 3);
	/* The limit first: the run cannot start the job before its clock
	 * does. */
	if (write(h->efd, &ms, sizeof(ms)) != (ssize_t)sizeof(ms))
		rc = -errno;
	else
		rc = send_all(h->sock, b.data, b.len);
	kb_buf_free(&b);
	if (rc == 0)
		h->released = 1;
	return rc;
}

int kb_held_join(struct kb_held *h, struct kb_sandbox_result *r, char *errstr,
		 size_t errstr_size)
{
	int rc;

	memset(r, 0, sizeof(*r));
	if (!h->started) {
		snprintf(errstr, errstr_size, "held run: not started");
		return -EINVAL;
	}
	pthread_join(h->thread, NULL);
	*r = h->r;
	rc = h->rc;
	snprintf(errstr, errstr_size, "%s", h->err);
	kb_close_fd(&h->sock);
	kb_close_fd(&h->run_sock);
	kb_close_fd(&h->efd);
	memset(&h->r, 0, sizeof(h->r));
	h->started = 0;
	return rc;
}

void kb_held_discard(struct kb_held *h)
{
	struct kb_sandbox_result r;
	uint64_t ms = 1;
	char err[256];

	if (!h->started)
		return;
	/* EOF for ready.py, and a wall-clock limit of 1 ms for the run: the
	 * sandbox kills it at once, also while it is still importing. */
	kb_close_fd(&h->sock);
	if (!h->released && write(h->efd, &ms, sizeof(ms)) < 0)
		kb_warn("held run: release: %s (it ends at EOF)",
			strerror(errno));
	kb_held_join(h, &r, err, sizeof(err));
	kb_sandbox_result_clear(&r);
}
