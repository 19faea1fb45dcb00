/* kb_dc_commands: the slash commands KernelBot offers on Discord, as the
 * JSON that Discord's bulk-overwrite endpoint takes, and their
 * registration.
 *
 *   /leaderboard submit test|benchmark|profile|ranked  script leaderboard gpu
 *   /leaderboard list | show | show-personal | task | template | get-submission
 *   /admin start | stop | ban | unban | delete-submission | reload-problems
 *
 * The names and options follow upstream KernelBot's bot, so its users find
 * the same commands (ours name the option "leaderboard", upstream
 * "leaderboard_name"; both are accepted when we read an interaction).
 *
 * Registration is a PUT of the whole set (it replaces what was there, so
 * it is idempotent): to /applications/<app>/guilds/<guild>/commands when a
 * guild is given (visible at once; for a test or a private server), else
 * to /applications/<app>/commands (global).
 *
 * Thread-safety: pure, except kb_dc_register(), which does blocking HTTP.
 */
#ifndef KB_DC_COMMANDS_H
#define KB_DC_COMMANDS_H

#include <jansson.h>
#include <stddef.h>

/* The command set (a new reference; NULL when out of memory). */
json_t *kb_dc_commands_json(void);

/* The registration URL for api_base, app and guild (NULL or "" for
 * global) into out. Returns 0 or -ENAMETOOLONG. */
int kb_dc_commands_url(const char *api_base, const char *app_id,
		       const char *guild_id, char *out, size_t size);

/* PUTs the command set. Returns the number of commands Discord now has,
 * or a negative code with errstr holding Discord's answer. */
int kb_dc_register(const char *api_base, const char *app_id,
		   const char *guild_id, const char *bot_token, char *errstr,
		   size_t errstr_size);

#endif
