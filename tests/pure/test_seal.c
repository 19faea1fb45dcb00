/* kb_seal: which upstream Python tasks the loader seals, and the task it
 * makes of them (tests/worker/data/upstream_py, KB_WORKER_DATA). */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kb_check_main.h"
#include "kb_seal.h"
#include "kb_task.h"
#include "kb_util.h"

#define UP KB_WORKER_DATA "/upstream_py"

#define ck_assert_contains(hay, needle)                                        \
	ck_assert_msg((hay) && strstr((hay), (needle)) != NULL,                \
		      "'%s' does not contain '%s'", (hay) ? (hay) : "(null)",  \
		      (needle))

static long file_index(const struct kb_task *t, const char *name)
{
	for (size_t i = 0; i < t->nfiles; i++)
		if (strcmp(t->files[i].name, name) == 0)
			return (long)i;
	return -1;
}

static char *read_eval(size_t *len)
{
	char *text;

	ck_assert_int_eq(kb_read_file(UP "/eval.py", 1u << 20, &text, len), 0);
	return text;
}

/* The task as upstream runs it: loaded with sealing off. */
static void load_unsealed(struct kb_task *t)
{
	char err[512] = "";

	setenv("KB_SEAL_UPSTREAM", "0", 1);
	ck_assert_msg(kb_task_load_dir(UP "/vectoradd", NULL, t, err,
				       sizeof(err)) == 0,
		      "%s", err);
	unsetenv("KB_SEAL_UPSTREAM");
	ck_assert_int_eq(t->sealed, 0);
	ck_assert_contains(t->seal_reason, "KB_SEAL_UPSTREAM");
	ck_assert_int_ge(file_index(t, "eval.py"), 0);
}

START_TEST(known_hash_seals)
{
	struct kb_task t;
	char err[512] = "", *text;
	size_t len;
	long p;

	unsetenv("KB_SEAL_UPSTREAM");
	unsetenv("KB_HARNESS_DIR");
	ck_assert_msg(kb_task_load_dir(UP "/vectoradd", NULL, &t, err,
				       sizeof(err)) == 0,
		      "%s", err);
	ck_assert_int_eq(t.sealed, 1);
	ck_assert_ptr_null(t.seal_reason);
	ck_assert_str_eq(kb_task_config(&t, "main"), "kbh_eval.py");
	ck_assert_int_lt(file_index(&t, "eval.py"), 0);
	ck_assert_int_ge(file_index(&t, "kbh_eval.py"), 0);
	ck_assert_int_ge(file_index(&t, "kbh_child.py"), 0);
	ck_assert_int_ge(file_index(&t, "reference.py"), 0);
	ck_assert_int_ge(file_index(&t, "utils.py"), 0);
	p = file_index(&t, "problem.py");
	ck_assert_int_ge(p, 0);
	ck_assert_contains(t.files[p].source, "/python/kbh_upstream.py");
	ck_assert_str_eq(t.upstream_eval, "../eval.py");
	/* Every file reads, the harness's from the harness directory. */
	for (size_t i = 0; i < t.nfiles; i++) {
		if (strcmp(t.files[i].source, "@SUBMISSION@") == 0)
			continue;
		ck_assert_msg(kb_task_read(&t, t.files[i].source, 1u << 20,
					   &text, &len, err, sizeof(err)) == 0,
			      "%s", err);
		free(text);
	}
	kb_task_clear(&t);
}
END_TEST

/* A synced source (confined): the harness still comes from the harness
 * directory, outside the source's root. */
START_TEST(confined_task_seals)
{
	struct kb_task t;
	char err[512] = "", *text;
	size_t len;
	long p;

	unsetenv("KB_SEAL_UPSTREAM");
	ck_assert_msg(kb_task_load_confined(UP, "vectoradd", NULL, &t, err,
					    sizeof(err)) == 0,
		      "%s", err);
	ck_assert_int_eq(t.sealed, 1);
	p = file_index(&t, "kbh_run.py");
	ck_assert_int_ge(p, 0);
	ck_assert_int_eq(kb_task_read(&t, t.files[p].source, 1u << 20, &text,
				      &len, err, sizeof(err)),
			 0);
	free(text);
	/* Nothing else absolute reads: only what lies beneath the harness
	 * directory, lexically. */
	char up[4300];
	snprintf(up, sizeof(up), "%s/../../../etc/passwd", t.harness_dir);
	ck_assert_int_eq(kb_seal_is_harness_file(&t, up), 0);
	ck_assert_int_eq(kb_seal_is_harness_file(&t, "/etc/passwd"), 0);
	ck_assert_int_lt(kb_task_read(&t, "/etc/passwd", 1024, &text, &len, err,
				      sizeof(err)),
			 0);
	kb_task_clear(&t);
}
END_TEST

START_TEST(one_changed_byte_does_not_seal)
{
	struct kb_task t;
	char reason[256] = "", *text;
	size_t len;

	load_unsealed(&t);
	text = read_eval(&len);
	ck_assert_str_eq(kb_seal_known(text, len),
			 "tests/worker/data/upstream_py/eval.py");
	ck_assert_int_eq(kb_seal_decide(&t, text, len, reason, sizeof(reason)),
			 1);
	text[len / 2] ^= 1;
	ck_assert_ptr_null(kb_seal_known(text, len));
	ck_assert_int_eq(kb_seal_decide(&t, text, len, reason, sizeof(reason)),
			 0);
	ck_assert_str_eq(reason, "eval.py is not a standard upstream version");
	free(text);
	kb_task_clear(&t);
}
END_TEST

START_TEST(missing_reference_does_not_seal)
{
	struct kb_task t;
	char reason[256] = "", *text;
	size_t len;
	long r;

	load_unsealed(&t);
	text = read_eval(&len);
	r = file_index(&t, "reference.py");
	ck_assert_int_ge(r, 0);
	free(t.files[r].name);
	t.files[r].name = strdup("reference_v1.py");
	ck_assert_int_eq(kb_seal_decide(&t, text, len, reason, sizeof(reason)),
			 0);
	ck_assert_str_eq(reason, "no reference.py");
	free(text);
	kb_task_clear(&t);
}
END_TEST

/* Not upstream-shaped (our own harness's task): never sealed, and the
 * rewrite refuses it. */
START_TEST(own_task_untouched)
{
	struct kb_task t;
	char err[512] = "";

	unsetenv("KB_SEAL_UPSTREAM");
	ck_assert_msg(kb_task_load_dir(KB_SOURCE_DIR "/problems/pmpp_py/"
						     "vectoradd",
				       NULL, &t, err, sizeof(err)) == 0,
		      "%s", err);
	ck_assert_int_eq(t.sealed, 0);
	ck_assert_ptr_null(t.seal_reason);
	ck_assert_int_eq(kb_seal_eval_index(&t), -1);
	ck_assert_int_lt(kb_seal_rewrite(&t, "/h", err, sizeof(err)), 0);
	kb_task_clear(&t);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("seal");
	TCase *tc = tcase_create("seal");

	tcase_add_test(tc, known_hash_seals);
	tcase_add_test(tc, confined_task_seals);
	tcase_add_test(tc, one_changed_byte_does_not_seal);
	tcase_add_test(tc, missing_reference_does_not_seal);
	tcase_add_test(tc, own_task_untouched);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return kb_check_run(suite());
}
