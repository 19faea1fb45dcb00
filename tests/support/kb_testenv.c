#include "kb_testenv.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "kb_util.h"

#define MAX_SERVERS 16
static pid_t started[MAX_SERVERS];
static int nstarted;
static int atexit_done;

static void stop_all(void)
{
	for (int i = 0; i < nstarted; i++)
		if (started[i] > 0)
			kill(-started[i], SIGKILL);
}

static void remember(pid_t pid)
{
	if (!atexit_done) {
		atexit(stop_all);
		atexit_done = 1;
	}
	if (nstarted < MAX_SERVERS)
		started[nstarted++] = pid;
}

static void forget(pid_t pid)
{
	for (int i = 0; i < nstarted; i++)
		if (started[i] == pid)
			started[i] = 0;
}

static void sleep_ms(int ms)
{
	struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
	nanosleep(&ts, NULL);
}

int kb_test_free_port(void)
{
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	struct sockaddr_in a = {.sin_family = AF_INET};
	socklen_t len = sizeof(a);
	int port = -1;

	if (fd < 0)
		return -1;
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (bind(fd, (struct sockaddr *)&a, sizeof(a)) == 0 &&
	    getsockname(fd, (struct sockaddr *)&a, &len) == 0)
		port = ntohs(a.sin_port);
	close(fd);
	return port;
}

pid_t kb_test_spawn(char *const argv[], char *const extra_env[],
		    const char *logpath)
{
	pid_t pid = fork();

	if (pid < 0)
		return -1;
	if (pid == 0) {
		setpgid(0, 0);
		/* Die with the test process, however it ends (Check may kill it
		 * without running exit handlers). */
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		if (getppid() == 1)
			_exit(127);
		if (logpath) {
			int fd = open(logpath, O_WRONLY | O_CREAT | O_APPEND, 0644);
			if (fd >= 0) {
				dup2(fd, 1);
				dup2(fd, 2);
				close(fd);
			}
		}
		for (int i = 0; extra_env && extra_env[i]; i++)
			putenv(extra_env[i]);
		execv(argv[0], argv);
		fprintf(stderr, "exec %s: %s\n", argv[0], strerror(errno));
		_exit(127);
	}
	setpgid(pid, pid);
	remember(pid);
	return pid;
}

int kb_test_stop(pid_t pid, int timeout_ms)
{
	int status = 0;

	if (pid <= 0)
		return -1;
	kill(-pid, SIGTERM);
	for (int waited = 0; waited < timeout_ms; waited += 10) {
		if (waitpid(pid, &status, WNOHANG) == pid) {
			kill(-pid, SIGKILL); /* stragglers in the group */
			forget(pid);
			return status;
		}
		sleep_ms(10);
	}
	kill(-pid, SIGKILL);
	waitpid(pid, &status, 0);
	forget(pid);
	return status;
}

int kb_test_wait_file(const char *path, const char *needle, int timeout_ms,
		      char *out, size_t out_size)
{
	for (int waited = 0; waited <= timeout_ms; waited += 20) {
		char *buf = NULL;
		size_t len = 0;
		if (kb_read_file(path, 64 << 20, &buf, &len) == 0) {
			char *hit = strstr(buf, needle);
			if (hit) {
				if (out && out_size) {
					char *start = hit, *end;
					while (start > buf && start[-1] != '\n')
						start--;
					end = strchr(hit, '\n');
					size_t n = end ? (size_t)(end - start) : strlen(start);
					if (n >= out_size)
						n = out_size - 1;
					memcpy(out, start, n);
					out[n] = '\0';
				}
				free(buf);
				return 0;
			}
			free(buf);
		}
		sleep_ms(20);
	}
	return -1;
}

int kb_test_redis_start(struct kb_test_server *s)
{
	char port[16], log[256];
	int fd;

	for (int attempt = 0; attempt < 5; attempt++) {
		s->port = kb_test_free_port();
		snprintf(port, sizeof(port), "%d", s->port);
		snprintf(log, sizeof(log), "/tmp/kb-test-redis-%d.log", s->port);
		char *argv[] = {"/usr/bin/redis-server", "--port", port,
				"--bind", "127.0.0.1", "--save", "",
				"--appendonly", "no", "--daemonize", "no",
				"--loglevel", "warning", NULL};
		s->pid = kb_test_spawn(argv, NULL, log);
		if (s->pid < 0)
			return -1;
		snprintf(s->url, sizeof(s->url), "redis://127.0.0.1:%d", s->port);
		for (int waited = 0; waited < 5000; waited += 20) {
			struct sockaddr_in a = {.sin_family = AF_INET,
						.sin_port = htons((uint16_t)s->port)};
			a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
			fd = socket(AF_INET, SOCK_STREAM, 0);
			if (connect(fd, (struct sockaddr *)&a, sizeof(a)) == 0) {
				close(fd);
				unlink(log);
				return 0;
			}
			close(fd);
			if (waitpid(s->pid, NULL, WNOHANG) == s->pid)
				break; /* lost the port race; try another */
			sleep_ms(20);
		}
		kb_test_stop(s->pid, 1000);
	}
	fprintf(stderr, "kb_testenv: redis-server did not start\n");
	return -1;
}

int kb_test_devbroker_start(struct kb_test_server *s)
{
	char log[256], line[512];
	char *argv[] = {KB_BINARY_DIR "/devbroker/kb-devbroker", NULL};

	snprintf(log, sizeof(log), "/tmp/kb-test-devbroker-%d-%ld.log", getpid(),
		 (long)time(NULL));
	unlink(log);
	s->port = 0;
	s->pid = kb_test_spawn(argv, NULL, log);
	if (s->pid < 0)
		return -1;
	/* kb-devbroker prints "bootstrap=HOST:PORT[,HOST:PORT]" once ready. */
	if (kb_test_wait_file(log, "bootstrap=", 10000, line, sizeof(line)) != 0) {
		fprintf(stderr, "kb_testenv: kb-devbroker did not print bootstrap\n");
		kb_test_stop(s->pid, 1000);
		return -1;
	}
	const char *b = strstr(line, "bootstrap=") + strlen("bootstrap=");
	size_t n = strcspn(b, " \t\r\n");
	if (n >= sizeof(s->url))
		n = sizeof(s->url) - 1;
	memcpy(s->url, b, n);
	s->url[n] = '\0';
	return 0;
}

void kb_test_server_stop(struct kb_test_server *s)
{
	if (s && s->pid > 0) {
		kb_test_stop(s->pid, 2000);
		s->pid = 0;
	}
}
