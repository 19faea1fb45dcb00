/* kb_lang: the one table of task languages, and its lookups. */
#include <check.h>
#include <stddef.h>
#include <string.h>

#include "kb_lang.h"
#include "kb_check_main.h"

START_TEST(find_takes_the_four_names_only)
{
	const char *names[] = {"c", "cu", "hip", "py"};

	for (int i = 0; i < KB_LANG_COUNT; i++) {
		const struct kb_lang *l = kb_lang_find(names[i]);
		ck_assert_ptr_nonnull(l);
		ck_assert_int_eq(l->id, i);
		ck_assert_str_eq(l->name, names[i]);
		ck_assert_ptr_eq(kb_lang_get(i), l);
	}
	const char *bad[] = {"C", "cuda", "CU", "", "python", "py ", "h"};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		ck_assert_ptr_null(kb_lang_find(bad[i]));
	ck_assert_ptr_null(kb_lang_find(NULL));
	ck_assert_ptr_null(kb_lang_get(-1));
	ck_assert_ptr_null(kb_lang_get(KB_LANG_COUNT));
}
END_TEST

START_TEST(what_each_language_is)
{
	const struct kb_lang *c = kb_lang_get(KB_LANG_C);
	const struct kb_lang *cu = kb_lang_get(KB_LANG_CU);
	const struct kb_lang *hip = kb_lang_get(KB_LANG_HIP);
	const struct kb_lang *py = kb_lang_get(KB_LANG_PY);

	ck_assert_str_eq(c->display, "C");
	ck_assert_str_eq(cu->display, "CUDA");
	ck_assert_str_eq(hip->display, "HIP");
	ck_assert_str_eq(py->display, "Python");
	ck_assert_str_eq(py->comment, "#");
	ck_assert_str_eq(cu->comment, "//");
	ck_assert_uint_eq(c->families, KB_LANG_CPU);
	ck_assert_uint_eq(cu->families, KB_LANG_NVIDIA);
	ck_assert_uint_eq(hip->families, KB_LANG_AMD);
	ck_assert_uint_eq(py->families,
			  KB_LANG_CPU | KB_LANG_NVIDIA | KB_LANG_AMD);
	ck_assert_uint_eq(c->toolchain, 0);
	ck_assert_uint_eq(cu->toolchain, KB_LANG_NVIDIA);
	ck_assert_uint_eq(hip->toolchain, KB_LANG_AMD);
	ck_assert_uint_eq(py->toolchain, 0);
	ck_assert_int_eq(py->python, 1);
	ck_assert_int_eq(c->python + cu->python + hip->python, 0);
	ck_assert_int_eq(cu->ncu, 1);
	ck_assert_int_eq(c->ncu + hip->ncu + py->ncu, 0);
	ck_assert_str_eq(py->config_required, "main");
	ck_assert_str_eq(py->config_keys[0], "main");
	ck_assert_ptr_null(py->config_keys[1]);
	for (int i = KB_LANG_C; i <= KB_LANG_HIP; i++)
		ck_assert_str_eq(kb_lang_get(i)->config_required, "sources");
}
END_TEST

START_TEST(extensions)
{
	const struct kb_lang *hip = kb_lang_get(KB_LANG_HIP);

	ck_assert_int_eq(kb_lang_has_ext(kb_lang_get(KB_LANG_C), "a.c"), 1);
	ck_assert_int_eq(kb_lang_has_ext(kb_lang_get(KB_LANG_C), "a.cu"), 0);
	ck_assert_int_eq(kb_lang_has_ext(kb_lang_get(KB_LANG_CU), "a.cu"), 1);
	ck_assert_int_eq(kb_lang_has_ext(kb_lang_get(KB_LANG_CU), "a.c"), 0);
	ck_assert_int_eq(kb_lang_has_ext(hip, "k.hip"), 1);
	ck_assert_int_eq(kb_lang_has_ext(hip, "k.cpp"), 1);
	ck_assert_int_eq(kb_lang_has_ext(hip, "k.cu"), 0);
	ck_assert_int_eq(kb_lang_has_ext(kb_lang_get(KB_LANG_PY), "s.py"), 1);
	/* The extension alone is no file name. */
	ck_assert_int_eq(kb_lang_has_ext(kb_lang_get(KB_LANG_PY), ".py"), 0);
	ck_assert_int_eq(kb_lang_has_ext(kb_lang_get(KB_LANG_PY), ""), 0);
}
END_TEST

START_TEST(list_phrase)
{
	char buf[64], small[8];

	ck_assert_str_eq(kb_lang_list(buf, sizeof(buf)), "c, cu, hip or py");
	ck_assert_str_eq(kb_lang_list(small, sizeof(small)), "c, cu, ");
	ck_assert_ptr_eq(kb_lang_list(buf, 0), buf);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("lang");
	TCase *tc = tcase_create("lang");

	tcase_add_test(tc, find_takes_the_four_names_only);
	tcase_add_test(tc, what_each_language_is);
	tcase_add_test(tc, extensions);
	tcase_add_test(tc, list_phrase);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return kb_check_run(suite());
}
