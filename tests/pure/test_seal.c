/* kb_seal: which upstream Python tasks the loader seals, and the task it
 * makes of them (tests/worker/data/upstream_py and upstream_py2,
 * KB_WORKER_DATA), and which upstream eval.py versions it knows. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kb_check_main.h"
#include "kb_seal.h"
#include "kb_task.h"
#include "kb_util.h"

#define UP KB_WORKER_DATA "/upstream_py"
#define UP2 KB_WORKER_DATA "/upstream_py2"
/* The fixtures' eval.py versions (their sha256). */
#define V1_FIXTURE                                                             \
	"3a1e78c40e1480857ebb8617631932dd976a1a7271fcee41fdc88301cdcad855"
#define V2_FIXTURE                                                             \
	"c4824d59737c05374a4d9ff41230d7d38e9e5be05a97725d5c9335bfc2edde70"

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

static char *read_eval_at(const char *path, size_t *len)
{
	char *text;

	ck_assert_int_eq(kb_read_file(path, 1u << 20, &text, len), 0);
	return text;
}

static char *read_eval(size_t *len)
{
	return read_eval_at(UP "/eval.py", len);
}

/* The task in dir as upstream runs it: loaded with sealing off. */
static void load_unsealed_dir(const char *dir, struct kb_task *t)
{
	char err[512] = "";

	setenv("KB_SEAL_UPSTREAM", "0", 1);
	ck_assert_msg(kb_task_load_dir(dir, NULL, t, err, sizeof(err)) == 0,
		      "%s", err);
	unsetenv("KB_SEAL_UPSTREAM");
	ck_assert_int_eq(t->sealed, 0);
	ck_assert_contains(t->seal_reason, "KB_SEAL_UPSTREAM");
	ck_assert_int_ge(file_index(t, "eval.py"), 0);
}

static void load_unsealed(struct kb_task *t)
{
	load_unsealed_dir(UP "/vectoradd", t);
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
	p = file_index(&t, "kbh_upstream_rules.py");
	ck_assert_int_ge(p, 0);
	ck_assert_contains(t.files[p].source,
			   "/python/kbh_upstream_rules_v1.py");
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
	ck_assert_int_eq(
		kb_seal_decide(&t, text, len, NULL, reason, sizeof(reason)), 1);
	text[len / 2] ^= 1;
	ck_assert_ptr_null(kb_seal_known(text, len));
	ck_assert_int_eq(
		kb_seal_decide(&t, text, len, NULL, reason, sizeof(reason)), 0);
	ck_assert_str_eq(reason, "eval.py is not a standard upstream version");
	free(text);
	kb_task_clear(&t);
}
END_TEST

/* A file renamed: reference.py gone, or a task bringing a file named as
 * the adapter's case rule (the rule must be the harness's). */
START_TEST(renamed_file_does_not_seal)
{
	static const char *const cases[][3] = {
		{"reference.py", "reference_v1.py", "no reference.py"},
		{"utils.py", "kbh_upstream_rules.py",
		 "the task lists its own problem.py or kbh_upstream_rules.py"},
	};
	struct kb_task t;
	char reason[256] = "", *text;
	size_t len;
	long r;

	load_unsealed(&t);
	text = read_eval(&len);
	r = file_index(&t, cases[_i][0]);
	ck_assert_int_ge(r, 0);
	free(t.files[r].name);
	t.files[r].name = strdup(cases[_i][1]);
	ck_assert_int_eq(
		kb_seal_decide(&t, text, len, NULL, reason, sizeof(reason)), 0);
	ck_assert_str_eq(reason, cases[_i][2]);
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
	ck_assert_int_lt(kb_seal_rewrite(&t, kb_seal_version_hex(V1_FIXTURE),
					 "/h", err, sizeof(err)),
			 0);
	kb_task_clear(&t);
}
END_TEST

/* The second fixture (upstream_py2/eval.py: case rule v2, a leaderboard
 * that times the last case only): its tasks seal with rule v2's file. */
START_TEST(v2_fixture_seals_with_its_rule)
{
	static const char *const dirs[] = {UP2 "/mix", UP2 "/rowsum"};
	struct kb_task t;
	char err[512] = "";
	long p;

	unsetenv("KB_SEAL_UPSTREAM");
	unsetenv("KB_HARNESS_DIR");
	ck_assert_msg(kb_task_load_dir(dirs[_i], NULL, &t, err, sizeof(err)) ==
			      0,
		      "%s", err);
	ck_assert_msg(t.sealed == 1, "%s: %s", dirs[_i],
		      t.seal_reason ? t.seal_reason : "");
	p = file_index(&t, "kbh_upstream_rules.py");
	ck_assert_int_ge(p, 0);
	ck_assert_contains(t.files[p].source,
			   "/python/kbh_upstream_rules_v2.py");
	ck_assert_int_ge(file_index(&t, "problem.py"), 0);
	kb_task_clear(&t);
}
END_TEST

/* A version whose leaderboard times the last case only seals a task
 * only where the score is that case's anyway (ranking_by last). */
START_TEST(last_only_needs_ranking_by_last)
{
	static const char *const ways[] = {"geom", "mean", "last"};
	const struct kb_seal_version *v = NULL;
	struct kb_task t;
	char reason[256] = "", *text;
	size_t len;
	int want = strcmp(ways[_i], "last") == 0;

	load_unsealed_dir(UP2 "/rowsum", &t);
	text = read_eval_at(UP2 "/eval.py", &len);
	free(t.ranking_by);
	t.ranking_by = strdup(ways[_i]);
	ck_assert_int_eq(kb_seal_decide(&t, text, len, &v, reason,
					sizeof(reason)),
			 want);
	if (want) {
		ck_assert_ptr_nonnull(v);
		ck_assert_str_eq(v->rules, "v2");
		ck_assert_uint_eq(v->flags, KB_SEAL_LAST_ONLY);
	} else {
		ck_assert_msg(strstr(reason, "last case only"), "%s", reason);
	}
	free(text);
	kb_task_clear(&t);
}
END_TEST

/* The upstream versions known, by their sha256 (gpu-mode/
 * reference-kernels, problems/...; the files are not ours to copy, so
 * their hashes stand for them): each with its case rule and flags, and
 * the versions left unsealed (kb_seal.c says why) not known. */
START_TEST(upstream_versions)
{
	static const struct kb_seal_version want[] = {
		{"7bbde85d8c4849c9ec8ca2c8a0adf4f59d2fc5bf1ea1f9de992e38f4d81b7c80",
		 "problems/pmpp_v2/eval.py@43aaeec", "v1", 0},
		{"ff5f0082ed2a676c64f027699cf7a0ad4f222a0ff0fed04d7ced95c20cc78840",
		 "problems/pmpp_v2/eval.py@4872101", "v1", 0},
		{"c33495f16f64c20b7c3412efa66b5fe6760ec23021f66ff53432d95fc17e5e10",
		 "problems/pmpp/eval.py@9c74d86", "v1", KB_SEAL_LAST_ONLY},
		{"d1b70ced1b98df1dfd2dbbcea8396cc9b2042b81216dd6a25de1bbe50cd5b5ac",
		 "problems/pmpp/eval.py@b01d5f0", "v1", KB_SEAL_LAST_ONLY},
		{"c4a3b1b76a7834ae4e3889381e2d2dd3d694d5d36274969d88c3eaffc34b2003",
		 "problems/helion/eval.py@489e78a", "v2", 0},
		{"fef54da05e87a970d52eeac2665b593eb9b611895b03f008f0a15a8c2f27a9aa",
		 "problems/nvidia/eval.py@aaf640d", "v1", 0},
		{"4310798853ded3cfe39d746863f76e08771a1a76a054e8119ee0eda1fe4b7b16",
		 "problems/nvidia/eval.py@66dcc0f", "v1", 0},
		{"dc570e98ecaf16f416ffdf1145037d6b2ad8663e2e54bc0b5142ca7becebe039",
		 "problems/nvidia/eval.py@22e1445", "v1", 0},
	};
	/* Left as upstream runs them (the first 16 hex digits of each
	 * version's sha256 in kb_seal.c's comment and the README's table). */
	static const char *const unsealed[] = {
		/* amd/eval.py (= pmpp_v2@be20768): AMD boards */
		"7a762dc03ff2ea8e9b9767f48cc5259e45bd2dcd2fbc7b74f302376442ccd258",
		/* bioml/trimul/eval.py: its board lists MI300 */
		"94f5b0a0ff72e797c0c83c30478697a897dc2ac369f8cc8e07dbcd0272803f51",
		/* helion/eval.py@8934470: CUDA-graph replay */
		"1cfede319ce057301146f3f8e8bea1aeaab31701bf19d88004aeb339c8c6981b",
		/* linalg/qr_py/eval.py: batched samples */
		"3ee309171dbc484ce0fda4ac98d28f8739e6ff491f2ceff99db1dc8ba0fc50ac",
		/* nvidia/eval_better_bench.py: batched samples */
		"106951f2f0e9ea02f4c97fc3023ee2402e9d64fdf059b14ac3653b85062f4232",
	};
	for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
		const struct kb_seal_version *v =
			kb_seal_version_hex(want[i].sha256);

		ck_assert_msg(v != NULL, "%s not known", want[i].name);
		ck_assert_str_eq(v->name, want[i].name);
		ck_assert_str_eq(v->rules, want[i].rules);
		ck_assert_uint_eq(v->flags, want[i].flags);
	}
	for (size_t i = 0; i < sizeof(unsealed) / sizeof(unsealed[0]); i++)
		ck_assert_msg(kb_seal_version_hex(unsealed[i]) == NULL,
			      "%s is known", unsealed[i]);
	/* And our fixtures. */
	ck_assert_ptr_nonnull(kb_seal_version_hex(V1_FIXTURE));
	ck_assert_ptr_nonnull(kb_seal_version_hex(V2_FIXTURE));
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("seal");
	TCase *tc = tcase_create("seal");

	tcase_add_test(tc, known_hash_seals);
	tcase_add_test(tc, confined_task_seals);
	tcase_add_test(tc, one_changed_byte_does_not_seal);
	tcase_add_loop_test(tc, renamed_file_does_not_seal, 0, 2);
	tcase_add_test(tc, own_task_untouched);
	tcase_add_loop_test(tc, v2_fixture_seals_with_its_rule, 0, 2);
	tcase_add_loop_test(tc, last_only_needs_ranking_by_last, 0, 3);
	tcase_add_test(tc, upstream_versions);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return kb_check_run(suite());
}
