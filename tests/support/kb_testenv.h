/* kb_testenv: throwaway real servers for tests.
 *
 * kb_test_redis_start() runs a real redis-server with no persistence on a
 * unix socket in a directory of its own, in its own process group;
 * kb_test_server_stop() kills it. kb_test_devbroker_start() runs
 * build/devbroker/kb-devbroker and reads its bootstrap address. Both are
 * stopped at exit even if a test fails, as long as the test process exits
 * normally (atexit).
 *
 * Ports. A test never picks a "free" port and binds it later: between the
 * two, another test's server (or an outgoing connection) can take it, and
 * then requests reach the wrong server. Servers we build bind port 0
 * themselves and report the port (kb-devbroker prints "bootstrap=",
 * kb-gateway logs "listening on ADDR:PORT": kb_test_wait_listening());
 * redis-server listens on a unix socket; where a test needs a port that
 * refuses connections, kb_test_refused_port() holds it bound.
 *
 * Paths: KB_SOURCE_DIR and KB_BINARY_DIR are compiled in.
 */
#ifndef KB_TESTENV_H
#define KB_TESTENV_H

#include <sys/types.h>

struct kb_test_server {
	pid_t pid;
	int port;      /* TCP servers only; 0 for a unix socket */
	char url[128]; /* "unix:/DIR/redis.sock", "redis://127.0.0.1:PORT" or
			* the broker's bootstrap list */
	char dir[64];  /* redis: its private directory (socket, log) */
	int durable;   /* redis: append-only file, fsync'd on every write */
};

/* Returns 0 or -1 (with a message on stderr). */
int kb_test_redis_start(struct kb_test_server *s);
int kb_test_devbroker_start(struct kb_test_server *s);
/* Stops the server; a redis directory is removed. NULL or stopped: no-op. */
void kb_test_server_stop(struct kb_test_server *s);

/* kb_test_redis_start() with an append-only file synced on every write:
 * after a SIGKILL, kb_test_redis_restart() brings all of it back. */
int kb_test_redis_start_durable(struct kb_test_server *s);

/* A redis-server on loopback TCP, for tests of redis:// URLs. The port
 * comes from kb_test_fixed_port(); a port some other server holds is a
 * failed start, retried with another, and the server reached is checked
 * to be ours (INFO's process_id). Returns 0 or -1. */
int kb_test_redis_start_tcp(struct kb_test_server *s);

/* Starts redis-server again where s's stopped one was (same socket or
 * port, empty unless durable), after kb_test_server_stop() without the directory's
 * removal: call kb_test_redis_kill() to stop it for a restart. */
void kb_test_redis_kill(struct kb_test_server *s);
int kb_test_redis_restart(struct kb_test_server *s);

/* A random loopback port below the kernel's ephemeral range, for a server
 * that must be told its port (KB_DEVBROKER_PORT, redis-server's --port).
 * No port-0 bind and no outgoing connection is ever given one, but another
 * such pick may be: bind it, retry with a new one when that fails, and
 * check that the server reached is the one started. */
int kb_test_fixed_port(void);

/* A loopback port that refuses connections for as long as *fd stays open
 * (bound, never listened on, so nobody else can take it). Returns the port
 * and sets *fd (close it when done), or -1. */
int kb_test_refused_port(int *fd);

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

/* Like kb_test_wait_file, but gives up (-1) as soon as the process pid,
 * which writes the log, has exited (it is reaped then). */
int kb_test_wait_log(pid_t pid, const char *path, const char *needle,
		     int timeout_ms, char *out, size_t out_size);

/* Waits until the log at logpath of the server pid holds the line
 * "... listening on ADDR:PORT ..." (kb-gateway's, once it serves; with
 * KB_HTTP_PORT=0 the port is the one it bound) and returns PORT; -1 if pid
 * exits first or timeout_ms passes. */
int kb_test_wait_listening(pid_t pid, const char *logpath, int timeout_ms);

/* The line added to the not-sealed copy's eval.py (below). */
#define KB_TEST_UNSEALED_LINE "# not the standard eval.py"

/* Upstream-shaped problems, sealed and not (services/kb_seal.h): in dir
 * (which exists), dir/sealed is a copy of tests/worker/data/upstream_py
 * (its eval.py a standard version), dir/open another with
 * KB_TEST_UNSEALED_LINE added to its eval.py, and dir/start.yaml a
 * competition file naming one board of each, st_sealed and st_open.
 * Returns 0 or -1 (with a message on stderr). */
int kb_test_upstream_copies(const char *dir);

#endif
