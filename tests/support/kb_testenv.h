/* kb_testenv: throwaway real servers for tests.
 *
 * kb_test_redis_start() runs a real redis-server on a free loopback port
 * with no persistence, in its own process group; kb_test_redis_stop() kills
 * it. kb_test_devbroker_start() runs build/devbroker/kb-devbroker and reads
 * its bootstrap address. Both are stopped at exit even if a test fails, as
 * long as the test process exits normally (atexit).
 *
 * Paths: KB_SOURCE_DIR and KB_BINARY_DIR are compiled in.
 */
#ifndef KB_TESTENV_H
#define KB_TESTENV_H

#include <sys/types.h>

struct kb_test_server {
	pid_t pid;
	int port;
	char url[128]; /* "redis://127.0.0.1:PORT" or the broker's bootstrap list */
};

/* Returns 0 or -1 (with a message on stderr). */
int kb_test_redis_start(struct kb_test_server *s);
int kb_test_devbroker_start(struct kb_test_server *s);
void kb_test_server_stop(struct kb_test_server *s);

/* A free TCP port on 127.0.0.1 (bound then released). */
int kb_test_free_port(void);

/* Starts argv (argv[0] an absolute path) with extra environment entries
 * ("K=V", NULL-terminated) added, stdout/stderr appended to logpath (or
 * inherited when NULL), in its own process group. Returns the pid or -1. */
pid_t kb_test_spawn(char *const argv[], char *const extra_env[],
		    const char *logpath);

/* SIGTERM to the group, wait up to timeout_ms, then SIGKILL. Returns the
 * wait status. */
int kb_test_stop(pid_t pid, int timeout_ms);

/* Polls until path contains needle or timeout_ms passes; returns 0 if found.
 * If out is non-NULL, copies the line holding needle (NUL-terminated). */
int kb_test_wait_file(const char *path, const char *needle, int timeout_ms,
		      char *out, size_t out_size);

#endif
