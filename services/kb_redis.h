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

/* Connects to "redis://host:port[/db]" or "unix:/path". Returns a context
 * or NULL with errstr set. Free with redisFree(). */
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
redisReply *kb_redis_eval(redisContext *c, struct kb_redis_script *s,
			  int nkeys, int argc, const char **argv,
			  const size_t *argvlen, char *errstr,
			  size_t errstr_size);

#endif
