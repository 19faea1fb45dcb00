/* kb_keys: the Redis key schema, the one place keys are spelled, for C
 * and Lua alike (docs/internals.md "Redis keys" says what each holds and
 * who writes it). Each name is a printf format; its arguments follow it.
 * Names that become parts of keys (boards, gpus, users) never contain ':'.
 *
 * The Lua scripts take their keys as KEYS[], built by the C side from
 * these, except where a script walks from one record to others. There it
 * calls the prelude the build compiles in front of every script
 * (cmake/lua_keys.cmake): KB_KEY_RANK becomes K.rank(a1, a2), the
 * arguments joined as the format says, and K_PATTERN.rank the Lua
 * pattern that reads them back. So a definition here holds only string
 * literals and <inttypes.h> macros, and a format only %s, %d and
 * [a-z0-9_:]; the build stops on anything else. tests/layout
 * (layout_keys) holds C files and Lua scripts to this header.
 */
#ifndef KB_KEYS_H
#define KB_KEYS_H

#include <inttypes.h>

/* Users and logins. */
#define KB_KEY_USER "kb:user:%s"           /* user id: hash */
#define KB_KEY_USERS "kb:users"            /* set of user ids */
#define KB_KEY_CLI "kb:cli:%s"             /* CLI id -> user id */
#define KB_KEY_LOGIN "kb:clipending:%s"    /* CLI id: pending login (hash) */
#define KB_KEY_ADMIN "kb:admin"            /* hash: accepting 0/1 */
#define KB_KEY_DISCORD_SEEN "kb:dcseen:%s" /* interaction id: replay guard */

/* Boards. */
#define KB_KEY_BOARD "kb:lb:%s" /* board: secret, deadline, visibility */
#define KB_KEY_BOARD_ACCESS "kb:lbaccess:%s"    /* board: users let in */
#define KB_KEY_BOARD_RATES "kb:rl:%s"           /* board: hourly limits */
#define KB_KEY_RATE_WINDOW "kb:rlw:%s:%s:%s"    /* board, category, user */
#define KB_KEY_BOARD_INVITES "kb:invites:lb:%s" /* board: invite codes */
#define KB_KEY_INVITE "kb:invite:%s"            /* code: hash */
#define KB_KEY_BOARDS_DYNAMIC "kb:lbdyn"        /* board -> directory */
#define KB_KEY_BOARDS_DELETED "kb:lbdeleted"    /* set of boards */

/* Submissions and results. */
#define KB_KEY_NEXT_SUB "kb:next_sub_id"
#define KB_KEY_SUB "kb:sub:%s"         /* submission id (decimal) */
#define KB_KEY_SUB_N "kb:sub:%" PRIu64 /* submission id (uint64_t) */
#define KB_KEY_CODE "kb:code:%s"       /* sha256 hex */
#define KB_KEY_RESULT "kb:res:%s:%s"   /* submission id, gpu */
#define KB_KEY_RESULT_N                                                        \
	"kb:res:%" PRIu64 ":%s"         /* submission id (uint64_t), gpu */
#define KB_KEY_QUEUED "kb:queued:%s"    /* gpu: queued ids (score = id) */
#define KB_KEY_RUNNING "kb:running:%s"  /* gpu: ids a worker reported */
#define KB_KEY_ACTIVE "kb:active:%s:%s" /* user, gpu: unfinished ids */

/* Submission indexes: ids by time. */
#define KB_KEY_SUBS_USER "kb:subs:user:%s"          /* user */
#define KB_KEY_SUBS_USER_BOARD "kb:subs:user:%s:%s" /* user, board */
#define KB_KEY_SUBS_BOARD "kb:subs:lb:%s"           /* board */
#define KB_KEY_SUBS_ALL "kb:subs:all"

/* The queue's promises (docs/internals.md "Every job runs once"). */
#define KB_KEY_TASK "kb:task:%s"        /* sha256 hex of a packed Task */
#define KB_KEY_LEASE "kb:lease:%s"      /* submission id: who runs it */
#define KB_KEY_RECONCILE "kb:reconcile" /* the reconciler's pass lock */

/* Rankings (ranker/ranking.lua writes them, nothing else). */
#define KB_KEY_RANK "kb:rank:%s:%s"            /* board, gpu: user -> best s */
#define KB_KEY_RANK_INFO "kb:rankinfo:%s:%s"   /* board, gpu: user -> "id:ms" */
#define KB_KEY_RANK_ORDER "kb:rankorder:%s:%s" /* board, gpu: the order */

/* Score histories (the ranker appends every scored Result; the web
 * pages plot them). */
#define KB_KEY_HIST "kb:hist:%s:%s" /* board, gpu: "id:score:user" by done_ms */
#define KB_KEY_USER_HIST "kb:uhist:%s" /* user: "id:score:lb:gpu" by done_ms */

#endif
