#include "kb_signal.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <string.h>
#include <unistd.h>

static volatile sig_atomic_t stopping;
static int pipe_fds[2] = {-1, -1};

static void on_signal(int sig)
{
	(void)sig;
	if (stopping)
		_exit(130); /* second signal: the operator means it */
	stopping = 1;
	if (pipe_fds[1] >= 0) {
		int saved = errno;
		ssize_t w = write(pipe_fds[1], "x", 1);
		(void)w;
		errno = saved;
	}
}

int kb_signal_install(void)
{
	struct sigaction sa;

	if (pipe_fds[0] < 0 && pipe2(pipe_fds, O_CLOEXEC | O_NONBLOCK) != 0)
		return -errno;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sigemptyset(&sa.sa_mask);
	if (sigaction(SIGTERM, &sa, NULL) != 0 ||
	    sigaction(SIGINT, &sa, NULL) != 0)
		return -errno;
	sa.sa_handler = SIG_IGN;
	if (sigaction(SIGPIPE, &sa, NULL) != 0)
		return -errno;
	return 0;
}

int kb_signal_stopping(void)
{
	return stopping != 0;
}

void kb_signal_request_stop(void)
{
	stopping = 1;
	if (pipe_fds[1] >= 0) {
		int saved = errno;
		ssize_t w = write(pipe_fds[1], "x", 1);
		(void)w;
		errno = saved;
	}
}

int kb_signal_fd(void)
{
	return pipe_fds[0];
}
