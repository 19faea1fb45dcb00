/* `kb discord register` (client/cmd_discord.c -> kb-discord ->
 * kb_dc_register) puts the whole command set on a fake Discord with one
 * bulk PUT: to the guild when DISCORD_GUILD_ID is set, else globally, with
 * the bot token. */
#include <check.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "fake_discord.h"

/* Runs kb with the fake's base URL and the given guild; returns the exit
 * status. */
static int run_kb(struct fake_discord *fd, const char *guild)
{
	pid_t pid = fork();
	int st = -1;

	if (pid == 0) {
		setenv("DISCORD_API_BASE", fd_url(fd), 1);
		setenv("DISCORD_APPLICATION_ID", "4242", 1);
		setenv("DISCORD_BOT_TOKEN", "bot-token-xyz", 1);
		setenv("DISCORD_GUILD_ID", guild, 1);
		execl(KB_BINARY_DIR "/client/kb", "kb", "discord", "register",
		      (char *)NULL);
		_exit(127);
	}
	waitpid(pid, &st, 0);
	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static void expect_put(struct fake_discord *fd, size_t i, const char *path)
{
	struct fd_call c;

	ck_assert_int_eq(fd_get(fd, i, &c), 0);
	ck_assert_str_eq(c.method, "PUT");
	ck_assert_str_eq(c.path, path);
	ck_assert_str_eq(c.auth, "Bot bot-token-xyz");
	json_t *cmds = json_loads(c.payload ? c.payload : "", 0, NULL);
	ck_assert_msg(json_is_array(cmds) && json_array_size(cmds) > 0,
		      "body is not a command list: %s", c.payload);
	int found = 0;
	size_t k;
	json_t *cmd;
	json_array_foreach(cmds, k, cmd)
	{
		const char *name =
			json_string_value(json_object_get(cmd, "name"));
		found |= name && strcmp(name, "leaderboard") == 0;
	}
	ck_assert_msg(found, "no /leaderboard command in %s", c.payload);
	json_decref(cmds);
	fd_call_free(&c);
}

START_TEST(register_to_guild_and_globally)
{
	struct fake_discord *fd = fd_start();

	ck_assert_ptr_nonnull(fd);
	ck_assert_int_eq(run_kb(fd, "777"), 0);
	ck_assert_int_eq(fd_ncalls(fd), 1);
	expect_put(fd, 0, "/applications/4242/guilds/777/commands");

	ck_assert_int_eq(run_kb(fd, ""), 0);
	ck_assert_int_eq(fd_ncalls(fd), 2);
	expect_put(fd, 1, "/applications/4242/commands");
	fd_stop(fd);
}
END_TEST

START_TEST(refusal_is_an_error)
{
	struct fake_discord *fd = fd_start();

	ck_assert_ptr_nonnull(fd);
	fd_rule(fd, "PUT", "/applications/", 401,
		"{\"message\": \"401: Unauthorized\"}", NULL, 1);
	ck_assert_int_ne(run_kb(fd, "777"), 0);
	fd_stop(fd);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("discord_register");
	TCase *tc = tcase_create("register");
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, register_to_guild_and_globally);
	tcase_add_test(tc, refusal_is_an_error);
	suite_add_tcase(s, tc);
	SRunner *r = srunner_create(s);
	srunner_run_all(r, CK_NORMAL);
	int failed = srunner_ntests_failed(r);
	srunner_free(r);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
