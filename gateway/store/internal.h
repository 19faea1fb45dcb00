/* Helpers shared by the files of the kb_gw_store module (store.c,
 * admin.c, export.c, queue.c) and by the web pages' read-only pipelines
 * (web/data.c, web/feed.c); not for other modules. */
#ifndef KB_GW_STORE_INTERNAL_H
#define KB_GW_STORE_INTERNAL_H

#include <hiredis/hiredis.h>

#include "base/gateway.h"

/* One command on this thread's connection. NULL with *rc -EIO (connection
 * dropped) or -EPROTO (an error reply, logged). */
redisReply *kb__gw_cmd(const struct kb_gw *g, int *rc, const char *fmt, ...);

/* Reads n pipelined replies. On an I/O error frees what it read, drops
 * the connection and returns -EIO. */
int kb__gw_read_replies(redisContext *c, redisReply **r, int n);
void kb__gw_free_replies(redisReply **r, int n);

/* Runs MULTI, the n commands the caller appended after MULTI, EXEC;
 * checks that EXEC ran them all without error (n <= 14). */
int kb__gw_finish_multi(redisContext *c, int n);

/* The gateway's Lua scripts (gateway/store/lua/<name>.lua). */
enum kb__gw_script {
	KB__GW_AUTH,
	KB__GW_SUBMIT,
	KB__GW_DELETE,
	KB__GW_JOIN,
	KB__GW_LINK,
	KB__GW_LOGIN,
	KB__GW_FORGET_BOARD,
	KB__GW_RANK_REBUILD,
	KB__GW_NSCRIPTS
};

/* EVALSHA of a script (loaded by kb_gw_store_init), falling back to EVAL
 * when the server lost it. argc <= 32. NULL with *rc as kb__gw_cmd. An
 * error reply is logged and returned as NULL with -EPROTO. */
redisReply *kb__gw_eval(const struct kb_gw *g, int *rc, enum kb__gw_script s,
			int nkeys, int argc, const char **argv,
			const size_t *argvlen);

#endif
