#include "kb_testenv.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <hiredis/hiredis.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdint.h>
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

int kb_test_fixed_port(void)
{
	static unsigned seed;
	unsigned lo = 32768, hi = 60999;
	FILE *f = fopen("/proc/sys/net/ipv4/ip_local_port_range", "r");

	if (f) {
		if (fscanf(f, "%u %u", &lo, &hi) != 2)
			lo = 32768, hi = 60999;
		fclose(f);
	}
	if (!seed)
		seed = (unsigned)getpid() ^ (unsigned)time(NULL) ^
		       (unsigned)(uintptr_t)&seed;
	/* Below the ephemeral range if it leaves room, else above it. */
	if (lo > 11024)
		return 10000 + (int)(rand_r(&seed) % (lo - 10000));
	if (hi < 64511)
		return (int)hi + 1 + (int)(rand_r(&seed) % (65535 - hi));
	return 10000 + (int)(rand_r(&seed) % 1024);
}

int kb_test_refused_port(int *fd)
{
	struct sockaddr_in a = {.sin_family = AF_INET};
	socklen_t len = sizeof(a);

	/* No SO_REUSEADDR: with it on both sides, Linux would let another
	 * socket bind the port while ours does not listen. */
	*fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (*fd < 0)
		return -1;
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (bind(*fd, (struct sockaddr *)&a, sizeof(a)) == 0 &&
	    getsockname(*fd, (struct sockaddr *)&a, &len) == 0)
		return ntohs(a.sin_port);
	close(*fd);
	*fd = -1;
	return -1;
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
			int fd = open(logpath, O_WRONLY | O_CREAT | O_APPEND,
				      0644);
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
					size_t n = end ? (size_t)(end - start)
						       : strlen(start);
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
		if (waited < timeout_ms)
			sleep_ms(20);
	}
	return -1;
}

/* The process_id the redis-server behind c reports, or -1. */
static long redis_pid(redisContext *c)
{
	redisReply *r = redisCommand(c, "INFO server");
	long pid = -1;

	if (r && r->type == REDIS_REPLY_STRING) {
		const char *p = strstr(r->str, "process_id:");
		if (p)
			pid = strtol(p + strlen("process_id:"), NULL, 10);
	}
	if (r)
		freeReplyObject(r);
	return pid;
}

/* Spawns redis-server for s (its socket, or s->port when s->port != 0)
 * and waits until it answers as itself. 0 when up; -1 when it exited
 * (a taken port) or never answered. */
static int redis_spawn(struct kb_test_server *s)
{
	char port[16], sock[128], log[128];
	/* Durable: every write in the append-only file before it is
	 * answered, so a SIGKILLed server restarts with all of it. */
	char *aof = s->durable ? "yes" : "no";
	char *tcp[] = {"/usr/bin/redis-server",
		       "--port",
		       port,
		       "--bind",
		       "127.0.0.1",
		       "--dir",
		       s->dir,
		       "--save",
		       "",
		       "--appendonly",
		       aof,
		       "--appendfsync",
		       "always",
		       "--daemonize",
		       "no",
		       "--loglevel",
		       "warning",
		       NULL};
	char *unix_[] = {"/usr/bin/redis-server",
			 "--port",
			 "0",
			 "--unixsocket",
			 sock,
			 "--unixsocketperm",
			 "700",
			 "--dir",
			 s->dir,
			 "--save",
			 "",
			 "--appendonly",
			 aof,
			 "--appendfsync",
			 "always",
			 "--daemonize",
			 "no",
			 "--loglevel",
			 "warning",
			 NULL};
	struct timeval tv = {1, 0};

	snprintf(port, sizeof(port), "%d", s->port);
	snprintf(sock, sizeof(sock), "%s/redis.sock", s->dir);
	snprintf(log, sizeof(log), "%s/redis.log", s->dir);
	s->pid = kb_test_spawn(s->port ? tcp : unix_, NULL, log);
	if (s->pid < 0)
		return -1;
	for (int waited = 0; waited < 60000; waited += 20) {
		redisContext *c =
			s->port ? redisConnectWithTimeout("127.0.0.1", s->port,
							  tv)
				: redisConnectUnixWithTimeout(sock, tv);
		/* On TCP another server may hold the port we asked for:
		 * only ours counts. */
		long pid = c && !c->err ? redis_pid(c) : -1;
		if (c)
			redisFree(c);
		if (pid == (long)s->pid)
			return 0;
		if (waitpid(s->pid, NULL, WNOHANG) == s->pid) {
			forget(s->pid);
			s->pid = 0;
			return -1;
		}
		sleep_ms(20);
	}
	kb_test_stop(s->pid, 1000);
	s->pid = 0;
	return -1;
}

static int redis_start(struct kb_test_server *s, int tcp, int durable)
{
	memset(s, 0, sizeof(*s));
	s->durable = durable;
	snprintf(s->dir, sizeof(s->dir), "/tmp/kb-test-redis-XXXXXX");
	if (!mkdtemp(s->dir)) {
		fprintf(stderr, "kb_testenv: mkdtemp: %s\n", strerror(errno));
		s->dir[0] = '\0';
		return -1;
	}
	for (int attempt = 0; attempt < (tcp ? 20 : 1); attempt++) {
		if (tcp)
			s->port = kb_test_fixed_port();
		if (redis_spawn(s) == 0) {
			if (tcp)
				snprintf(s->url, sizeof(s->url),
					 "redis://127.0.0.1:%d", s->port);
			else
				snprintf(s->url, sizeof(s->url),
					 "unix:%s/redis.sock", s->dir);
			return 0;
		}
	}
	fprintf(stderr, "kb_testenv: redis-server did not start; log in %s\n",
		s->dir);
	return -1;
}

int kb_test_redis_start(struct kb_test_server *s)
{
	return redis_start(s, 0, 0);
}

int kb_test_redis_start_durable(struct kb_test_server *s)
{
	return redis_start(s, 0, 1);
}

int kb_test_redis_start_tcp(struct kb_test_server *s)
{
	return redis_start(s, 1, 0);
}

void kb_test_redis_kill(struct kb_test_server *s)
{
	if (s && s->pid > 0) {
		kb_test_stop(s->pid, 2000);
		s->pid = 0;
	}
}

int kb_test_redis_restart(struct kb_test_server *s)
{
	/* The same port may be taken meanwhile (only by another fixed-port
	 * pick): keep trying for a while, never settling for another's. */
	for (int attempt = 0; attempt < (s->port ? 100 : 1); attempt++) {
		if (redis_spawn(s) == 0)
			return 0;
		sleep_ms(100);
	}
	fprintf(stderr, "kb_testenv: redis-server did not restart; log in %s\n",
		s->dir);
	return -1;
}

int kb_test_devbroker_start(struct kb_test_server *s)
{
	char log[256], line[512];
	char *argv[] = {KB_BINARY_DIR "/devbroker/kb-devbroker", NULL};

	static int nstarts;

	/* A log of its own: the bootstrap line read back must be this
	 * broker's, not an earlier one's. */
	snprintf(log, sizeof(log), "/tmp/kb-test-devbroker-%d-%d.log", getpid(),
		 ++nstarts);
	unlink(log);
	memset(s, 0, sizeof(*s));
	s->pid = kb_test_spawn(argv, NULL, log);
	if (s->pid < 0)
		return -1;
	/* kb-devbroker binds port 0 and prints "bootstrap=HOST:PORT[,...]"
	 * once its brokers listen. */
	for (int waited = 0;; waited += 20) {
		if (kb_test_wait_file(log, "bootstrap=", 0, line,
				      sizeof(line)) == 0)
			break;
		int gone = waitpid(s->pid, NULL, WNOHANG) == s->pid;
		if (gone || waited >= 60000) {
			fprintf(stderr,
				"kb_testenv: kb-devbroker did not print "
				"bootstrap; log in %s\n",
				log);
			if (gone)
				forget(s->pid);
			else
				kb_test_stop(s->pid, 1000);
			s->pid = 0;
			return -1;
		}
		sleep_ms(20);
	}
	const char *b = strstr(line, "bootstrap=") + strlen("bootstrap=");
	size_t n = strcspn(b, " \t\r\n");
	if (n >= sizeof(s->url))
		n = sizeof(s->url) - 1;
	memcpy(s->url, b, n);
	s->url[n] = '\0';
	return 0;
}

static int rm_entry(const char *path, const struct stat *st, int flag,
		    struct FTW *ftw)
{
	(void)st;
	(void)flag;
	(void)ftw;
	remove(path);
	return 0; /* best effort */
}

void kb_test_server_stop(struct kb_test_server *s)
{
	if (!s)
		return;
	if (s->pid > 0) {
		kb_test_stop(s->pid, 2000);
		s->pid = 0;
	}
	if (s->dir[0]) {
		nftw(s->dir, rm_entry, 8, FTW_DEPTH | FTW_PHYS);
		s->dir[0] = '\0';
	}
}

int kb_test_wait_log(pid_t pid, const char *path, const char *needle,
		     int timeout_ms, char *out, size_t out_size)
{
	for (int waited = 0; waited <= timeout_ms; waited += 20) {
		if (kb_test_wait_file(path, needle, 0, out, out_size) == 0)
			return 0;
		if (waitpid(pid, NULL, WNOHANG) == pid) {
			forget(pid);
			return -1;
		}
		sleep_ms(20);
	}
	return -1;
}

int kb_test_wait_listening(pid_t pid, const char *logpath, int timeout_ms)
{
	static const char needle[] = "listening on ";
	char line[512];

	if (kb_test_wait_log(pid, logpath, needle, timeout_ms, line,
			     sizeof(line)) < 0)
		return -1;
	/* "listening on ADDR:PORT": the port follows the address's last ':'
	 * (ADDR may be IPv6). */
	char *a = strstr(line, needle) + strlen(needle);
	a[strcspn(a, " \t")] = '\0';
	char *colon = strrchr(a, ':');
	long port = colon ? strtol(colon + 1, NULL, 10) : 0;
	return port > 0 && port < 65536 ? (int)port : -1;
}

int kb_test_upstream_copies(const char *dir)
{
	static const char up[] = KB_SOURCE_DIR "/tests/worker/data/upstream_py";
	char cmd[4096];
	int n = snprintf(cmd, sizeof(cmd),
			 "cp -r '%s' '%s/sealed' && cp -r '%s' '%s/open' && "
			 "echo '" KB_TEST_UNSEALED_LINE
			 "' >> '%s/open/eval.py' && "
			 "printf 'problems:\\n"
			 "  - {directory: sealed/vectoradd, name: st_sealed}\\n"
			 "  - {directory: open/vectoradd, name: st_open}\\n' "
			 "> '%s/start.yaml'",
			 up, dir, up, dir, dir, dir);

	if (n < 0 || (size_t)n >= sizeof(cmd) || system(cmd) != 0) {
		fprintf(stderr, "kb_test_upstream_copies: %s failed\n", cmd);
		return -1;
	}
	return 0;
}
