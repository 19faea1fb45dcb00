/* kb_redis: connecting to Redis and running Lua scripts, on hiredis.
 *
 * Callers use hiredis' redisCommand() directly for plain commands; this
 * module adds URL parsing and script handling.
 * Thread-safety: a redisContext belongs to one thread.
 */
#ifndef KB_REDIS_H
#define KB_REDIS_H

#include <hiredis/hiredis.h>
#include <stddef.h>

/* A parsed Redis URL: "redis://[[user]:password@]host[:port][/db]" (port
 * 6379 by default, host a name, an IPv4 address or a bracketed IPv6 one) or
 * "unix:/path" (also "unix:///path"). The password is taken literally (no
 * %-decoding). */
struct kb_redis_url {
	int is_unix;
	char host[256];     /* TCP: host name or address, brackets removed */
	int port;           /* TCP: 1..65535 */
	char path[108];     /* unix: the socket path (fits sun_path) */
	int db;             /* -1 when the URL names none */
	char user[128];     /* empty: none (AUTH password only) */
	char password[256]; /* empty: no AUTH */
};

/* Pure parser, no I/O. Returns 0, or -EINVAL with errstr saying what is
 * wrong (the password never appears in errstr). Thread-safe. */
int kb_redis_url_parse(const char *url, struct kb_redis_url *out, char *errstr,
		       size_t errstr_size);

/* Connects to a URL as above within timeout_ms, sends AUTH when the URL has
 * a password and SELECT when it names a db. The same timeout then applies
 * to each command's socket I/O (redisSetTimeout); a caller that blocks
 * longer on purpose (BLPOP) raises it with redisSetTimeout(). Returns a
 * context or NULL with errstr set. Free with redisFree(). */
redisContext *kb_redis_connect(const char *url, int timeout_ms, char *errstr,
			       size_t errstr_size);

struct kb_redis_script {
	const char *src;
	char sha[41];
};

/* Loads the script (SCRIPT LOAD) and records its SHA1. Returns 0 or -EIO. */
int kb_redis_script_load(redisContext *c, struct kb_redis_script *s,
			 char *errstr, size_t errstr_size);

/* EVALSHA with nkeys keys then the args (argv/argvlen as in
 * redisCommandArgv); reloads the script once on NOSCRIPT. Returns the reply
 * (caller frees with freeReplyObject) or NULL with errstr set. A Redis error
 * reply is returned as a reply of type REDIS_REPLY_ERROR. */
redisReply *kb_redis_eval(redisContext *c, struct kb_redis_script *s, int nkeys,
			  int argc, const char **argv, const size_t *argvlen,
			  char *errstr, size_t errstr_size);

#endif
