/* The kb commands. Each is defined in its own cmd_*.c; commands.c lists
 * them in the order kb --help shows them. */
#ifndef KB_COMMANDS_H
#define KB_COMMANDS_H

#include <stddef.h>

#include "cli.h"

extern const struct kb_cmd kb_cmd_submit;       /* cmd_submit.c */
extern const struct kb_cmd kb_cmd_leaderboards; /* cmd_boards.c */
extern const struct kb_cmd kb_cmd_ranking;      /* cmd_boards.c */
extern const struct kb_cmd kb_cmd_submissions;  /* cmd_submissions.c */
extern const struct kb_cmd kb_cmd_register;     /* cmd_account.c */
extern const struct kb_cmd kb_cmd_join;         /* cmd_account.c */
extern const struct kb_cmd kb_cmd_discord;      /* cmd_discord.c */
extern const struct kb_cmd kb_cmd_help;         /* cmd_help.c */

/* Prints the manual of kb (kb --help) to stdout. */
void kb_print_main_help(void);

/* The top-level table. */
extern const struct kb_cmd *const kb_commands[];
extern const size_t kb_ncommands;

#endif
