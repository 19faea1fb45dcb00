/* The top-level command table: one line per command, in the order
 * kb --help lists them. To add a command (for example "discord"), define
 * its struct kb_cmd in a new cmd_*.c, declare it in commands.h and add it
 * here; client/CMakeLists.txt takes every cmd_*.c. */
#include "commands.h"

const struct kb_cmd *const kb_commands[] = {
	&kb_cmd_submit,      &kb_cmd_leaderboards, &kb_cmd_ranking,
	&kb_cmd_submissions, &kb_cmd_register,     &kb_cmd_join,
	&kb_cmd_discord,     &kb_cmd_help,
};

const size_t kb_ncommands = sizeof(kb_commands) / sizeof(kb_commands[0]);
