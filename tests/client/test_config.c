/* kb_cfg: reading ~/.popcorn.yaml and rewriting it without losing other
 * keys, atomically and privately. */
#include <errno.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <check.h>

#include "config.h"
#include "kb_check_main.h"

static int parse(const char *s, struct kb_cfg *c)
{
	char err[256];
	int rc = kb_cfg_parse(s, strlen(s), c, err, sizeof(err));
	if (rc < 0)
		ck_assert_msg(err[0], "an error needs a message");
	return rc;
}

/* Runs kb_cfg_update and returns the new document (caller frees). */
static char *update(const char *in, const char *key, const char *value,
		    int want_rc)
{
	struct kb_buf out = {0};
	char err[256] = "";
	int rc = kb_cfg_update(in, in ? strlen(in) : 0, key, value, &out, err,
			       sizeof(err));

	ck_assert_msg(rc == want_rc, "rc %d (%s) for:\n%s", rc, err,
		      in ? in : "(null)");
	if (rc < 0) {
		kb_buf_free(&out);
		return NULL;
	}
	return out.data ? out.data : strdup("");
}

START_TEST(parse_keys)
{
	struct kb_cfg c;

	ck_assert_int_eq(
		parse("# comment\ncli_id: abc-123\napi_url: \"http://h:1\"\n"
		      "other: {a: [1, 2]}\nlist:\n  - x\n",
		      &c),
		0);
	ck_assert_str_eq(c.cli_id, "abc-123");
	ck_assert_str_eq(c.api_url, "http://h:1");
	kb_cfg_clear(&c);
	ck_assert_ptr_null(c.cli_id);

	ck_assert_int_eq(parse("{cli_id: 42}", &c), 0); /* flow style; digits */
	ck_assert_str_eq(c.cli_id, "42");
	kb_cfg_clear(&c);

	/* A nested value under cli_id is not an id. */
	ck_assert_int_eq(parse("cli_id: [a]\nnext: 1\n", &c), 0);
	ck_assert_ptr_null(c.cli_id);
	kb_cfg_clear(&c);
	kb_cfg_clear(NULL);
}
END_TEST

START_TEST(parse_empty_and_bad)
{
	struct kb_cfg c;

	ck_assert_int_eq(parse("", &c), 0);
	ck_assert_ptr_null(c.cli_id);
	ck_assert_int_eq(parse("# only a comment\n", &c), 0);
	ck_assert_int_eq(parse("---\n", &c), 0);
	ck_assert_ptr_null(c.cli_id);
	ck_assert_int_eq(parse("- a\n- b\n", &c), -EINVAL);
	ck_assert_int_eq(parse("just a string\n", &c), -EINVAL);
	ck_assert_int_eq(parse("cli_id: [unclosed\n", &c), -EINVAL);
	ck_assert_ptr_null(c.cli_id);
}
END_TEST

START_TEST(update_replaces_and_keeps)
{
	struct kb_cfg c;
	char *out = update(
		"cli_id: old\nteam: gpu-mode\nnested:\n  a: 1\n  b: [x, y]\n",
		"cli_id", "new-id", 0);

	ck_assert_msg(strstr(out, "cli_id: \"new-id\"") && !strstr(out, "old"),
		      "%s", out);
	ck_assert_msg(strstr(out, "team: gpu-mode"), "%s", out);
	/* Order kept: cli_id still first. */
	ck_assert_msg(strstr(out, "cli_id") < strstr(out, "team"), "%s", out);
	ck_assert_int_eq(parse(out, &c), 0);
	ck_assert_str_eq(c.cli_id, "new-id");
	kb_cfg_clear(&c);
	ck_assert_msg(strstr(out, "a: 1") && strstr(out, "b: [x, y]"), "%s",
		      out);
	free(out);
}
END_TEST

START_TEST(update_adds_and_quotes)
{
	struct kb_cfg c;
	char *out = update("team: gpu-mode\n", "cli_id", "12345", 0);

	ck_assert_msg(strstr(out, "team: gpu-mode") <
			      strstr(out, "cli_id: \"12345\""),
		      "%s", out);
	free(out);

	out = update("", "cli_id", "abc", 0);
	ck_assert_int_eq(parse(out, &c), 0);
	ck_assert_str_eq(c.cli_id, "abc");
	kb_cfg_clear(&c);
	free(out);

	out = update(NULL, "cli_id", "abc", 0);
	ck_assert_msg(strstr(out, "cli_id: \"abc\""), "%s", out);
	free(out);

	out = update("# nothing here\n", "cli_id", "abc", 0);
	ck_assert_msg(strstr(out, "cli_id: \"abc\""), "%s", out);
	free(out);

	out = update("---\n", "cli_id", "abc", 0);
	ck_assert_msg(strstr(out, "cli_id: \"abc\""), "%s", out);
	free(out);

	/* A nested value is replaced by the string. */
	out = update("cli_id: {weird: 1}\nz: 2\n", "cli_id", "s", 0);
	ck_assert_int_eq(parse(out, &c), 0);
	ck_assert_str_eq(c.cli_id, "s");
	kb_cfg_clear(&c);
	ck_assert_msg(!strstr(out, "weird") && strstr(out, "z: 2"), "%s", out);
	free(out);

	/* A value needing escapes survives the round trip. */
	out = update("a: 1\n", "api_url", "http://h/\"q\"", 0);
	ck_assert_int_eq(parse(out, &c), 0);
	ck_assert_str_eq(c.api_url, "http://h/\"q\"");
	kb_cfg_clear(&c);
	free(out);
}
END_TEST

START_TEST(update_refuses_non_mappings)
{
	ck_assert_ptr_null(update("- a\n", "cli_id", "x", -EINVAL));
	ck_assert_ptr_null(update("scalar\n", "cli_id", "x", -EINVAL));
	ck_assert_ptr_null(update("a: [\n", "cli_id", "x", -EINVAL));
}
END_TEST

static char dir[64];

static int rm_one(const char *p, const struct stat *st, int flag,
		  struct FTW *ftw)
{
	(void)st, (void)flag, (void)ftw;
	return remove(p);
}

static void mkdir_tmp(void)
{
	snprintf(dir, sizeof(dir), "/tmp/kb-cfg.XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(dir));
}

static void rm_tmp(void)
{
	nftw(dir, rm_one, 8, FTW_DEPTH | FTW_PHYS);
}

START_TEST(store_atomic_private)
{
	char path[128], err[256], *text = NULL;
	struct kb_cfg c;
	struct stat st;
	size_t len;
	FILE *f;

	mkdir_tmp();
	snprintf(path, sizeof(path), "%s/.popcorn.yaml", dir);
	/* A missing file is created. */
	ck_assert_int_eq(kb_cfg_load(path, &c, err, sizeof(err)), -ENOENT);
	ck_assert_int_eq(kb_cfg_store(path, "cli_id", "one", err, sizeof(err)),
			 0);
	ck_assert_int_eq(stat(path, &st), 0);
	ck_assert_int_eq(st.st_mode & 0777, 0600);

	/* An existing, world-readable file keeps its keys and turns private. */
	f = fopen(path, "w");
	fputs("cli_id: one\nextra: stays\n", f);
	fclose(f);
	chmod(path, 0644);
	ck_assert_int_eq(kb_cfg_store(path, "cli_id", "two", err, sizeof(err)),
			 0);
	ck_assert_int_eq(stat(path, &st), 0);
	ck_assert_int_eq(st.st_mode & 0777, 0600);
	ck_assert_int_eq(kb_cfg_load(path, &c, err, sizeof(err)), 0);
	ck_assert_str_eq(c.cli_id, "two");
	kb_cfg_clear(&c);
	ck_assert_int_eq(kb_read_file(path, 1 << 20, &text, &len), 0);
	ck_assert_msg(strstr(text, "extra: stays"), "%s", text);
	free(text);

	/* No temporary file is left behind. */
	char cmd[160];
	snprintf(cmd, sizeof(cmd), "test $(ls -A %s | wc -l) -eq 1", dir);
	ck_assert_int_eq(system(cmd), 0);
	rm_tmp();
}
END_TEST

START_TEST(store_follows_symlink)
{
	char real[128], link[128], err[256];
	struct kb_cfg c;
	struct stat st;

	mkdir_tmp();
	snprintf(real, sizeof(real), "%s/dotfiles-popcorn.yaml", dir);
	snprintf(link, sizeof(link), "%s/.popcorn.yaml", dir);
	FILE *f = fopen(real, "w");
	fputs("cli_id: a\n", f);
	fclose(f);
	ck_assert_int_eq(symlink(real, link), 0);
	ck_assert_int_eq(kb_cfg_store(link, "cli_id", "b", err, sizeof(err)),
			 0);
	ck_assert_int_eq(lstat(link, &st), 0);
	ck_assert(S_ISLNK(st.st_mode));
	ck_assert_int_eq(kb_cfg_load(real, &c, err, sizeof(err)), 0);
	ck_assert_str_eq(c.cli_id, "b");
	kb_cfg_clear(&c);
	rm_tmp();
}
END_TEST

START_TEST(store_refuses_broken_file)
{
	char path[128], err[256], *text = NULL;
	size_t len;

	mkdir_tmp();
	snprintf(path, sizeof(path), "%s/.popcorn.yaml", dir);
	FILE *f = fopen(path, "w");
	fputs("- not: a mapping\n", f);
	fclose(f);
	ck_assert_int_eq(kb_cfg_store(path, "cli_id", "x", err, sizeof(err)),
			 -EINVAL);
	ck_assert_msg(strstr(err, "not changed"), "%s", err);
	ck_assert_int_eq(kb_read_file(path, 1 << 20, &text, &len), 0);
	ck_assert_str_eq(text, "- not: a mapping\n");
	free(text);
	rm_tmp();
}
END_TEST

START_TEST(default_path_uses_home)
{
	char path[256], err[128];

	setenv("HOME", "/some/home", 1);
	ck_assert_int_eq(
		kb_cfg_default_path(path, sizeof(path), err, sizeof(err)), 0);
	ck_assert_str_eq(path, "/some/home/.popcorn.yaml");
}
END_TEST

int main(void)
{
	Suite *s = suite_create("client_config");
	TCase *tc = tcase_create("config");

	tcase_add_test(tc, parse_keys);
	tcase_add_test(tc, parse_empty_and_bad);
	tcase_add_test(tc, update_replaces_and_keeps);
	tcase_add_test(tc, update_adds_and_quotes);
	tcase_add_test(tc, update_refuses_non_mappings);
	tcase_add_test(tc, store_atomic_private);
	tcase_add_test(tc, store_follows_symlink);
	tcase_add_test(tc, store_refuses_broken_file);
	tcase_add_test(tc, default_path_uses_home);
	suite_add_tcase(s, tc);
	return kb_check_run(s);
}
