/* The web pages' renderer without a server: escaping of what users and
 * problem files supply, score units, time left, the plot's record line,
 * what a gpu's section and index row say of its workers. */
#include <check.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "kb_check_main.h"
#include "web/render.h"

START_TEST(user_text_is_escaped)
{
	struct kb_buf b = {0};
	struct kb_web_rank r = {1,    "u1", "<script>alert(1)</script>",
				1e-3, 1000, 7};
	struct kb_web_point p = {1000, 1e-3, 7, "u1"};
	struct kb_web_gpu g = {"CPU", &r, 1, 1, &p, 1, 1};
	struct kb_web_board bd = {.name = "lb",
				  .lang = "c",
				  .description = "a < b && \"c\" 'd'",
				  .ranking_by = "mean",
				  .deadline_ms = -1,
				  .gpus = &g,
				  .ngpus = 1};

	ck_assert_int_eq(kb_web_render_board(&b, &bd, 2000, 3), 0);
	ck_assert_ptr_null(strstr(b.data, "<script>alert"));
	ck_assert_ptr_nonnull(
		strstr(b.data, "&lt;script&gt;alert(1)&lt;/script&gt;"));
	ck_assert_ptr_nonnull(strstr(
		b.data, "a &lt; b &amp;&amp; &quot;c&quot; &#39;d&#39;"));
	ck_assert_ptr_nonnull(strstr(b.data, "data-gen=\"3\""));
	/* No inline script or style: the pages' CSP forbids both. */
	ck_assert_ptr_null(strstr(b.data, "<script>"));
	ck_assert_ptr_null(strstr(b.data, "style="));
	kb_buf_free(&b);
}
END_TEST

/* A gpu no worker serves says so, with its name escaped; one with workers
 * says how many; an unknown count says nothing. */
START_TEST(workers_are_said)
{
	struct kb_buf b = {0};
	struct kb_web_gpu g[3] = {{.gpu = "H<100", .workers = 0},
				  {.gpu = "CPU", .workers = 2},
				  {.gpu = "T4",
				   .workers = KB_WEB_WORKERS_UNKNOWN}};
	struct kb_web_board bd = {.name = "lb",
				  .lang = "c",
				  .description = "",
				  .ranking_by = "mean",
				  .deadline_ms = -1,
				  .gpus = g,
				  .ngpus = 3};

	ck_assert_int_eq(kb_web_render_board(&b, &bd, 2000, 1), 0);
	ck_assert_ptr_nonnull(
		strstr(b.data, "No worker online for H&lt;100: submissions "
			       "wait until one starts."));
	ck_assert_ptr_nonnull(strstr(b.data, "2 workers online"));
	ck_assert_ptr_null(strstr(b.data, "for CPU"));
	ck_assert_ptr_null(strstr(b.data, "for T4"));
	kb_buf_free(&b);

	const char *gpus[] = {"H100", "CPU"};
	int workers[] = {0, 1};
	struct kb_web_index_row row = {.name = "lb",
				       .lang = "c",
				       .deadline_ms = -1,
				       .gpus = gpus,
				       .ngpus = 2,
				       .workers = workers};
	ck_assert_int_eq(kb_web_render_index(&b, &row, 1, 2000, 1), 0);
	ck_assert_ptr_nonnull(strstr(b.data, "No worker online for H100</td>"));
	ck_assert_ptr_nonnull(strstr(b.data, "1 worker online</td>"));
	kb_buf_free(&b);
	row.workers = NULL;
	ck_assert_int_eq(kb_web_render_index(&b, &row, 1, 2000, 1), 0);
	ck_assert_ptr_null(strstr(b.data, "worker online"));
	kb_buf_free(&b);
}
END_TEST

START_TEST(scores_have_units)
{
	char s[48];

	kb_web_score(1.5, s, sizeof(s));
	ck_assert_str_eq(s, "1.500 s");
	kb_web_score(2.5e-4, s, sizeof(s));
	ck_assert_str_eq(s, "250.0 µs");
	kb_web_score(1.234e-3, s, sizeof(s));
	ck_assert_str_eq(s, "1.234 ms");
	kb_web_score(5e-9, s, sizeof(s));
	ck_assert_str_eq(s, "5.000 ns");
	kb_web_score(0, s, sizeof(s));
	ck_assert_str_eq(s, "–");
	kb_web_score(NAN, s, sizeof(s));
	ck_assert_str_eq(s, "–");
}
END_TEST

START_TEST(time_left)
{
	char s[64];

	kb_web_time_left(-1, 0, s, sizeof(s));
	ck_assert_str_eq(s, "");
	kb_web_time_left(1000, 2000, s, sizeof(s));
	ck_assert_str_eq(s, "closed");
	kb_web_time_left((3 * 86400 + 4 * 3600) * 1000LL, 0, s, sizeof(s));
	ck_assert_str_eq(s, "3 d 4 h left");
	kb_web_time_left(90 * 60 * 1000LL, 0, s, sizeof(s));
	ck_assert_str_eq(s, "1 h 30 min left");
}
END_TEST

/* The record is the running minimum: worse results later add no step. */
START_TEST(plot_steps_only_on_records)
{
	struct kb_buf b = {0};
	struct kb_web_point p[] = {
		{1000, 4e-3, 1, "a"},
		{2000, 5e-3, 2, "b"},
		{3000, 2e-3, 3, "b"},
		{4000, 3e-3, 4, "a"},
	};

	ck_assert_int_eq(
		kb_web_plot(&b, "p", "t", p, 4, NULL, 0, 0, NULL, 100000), 0);
	ck_assert_ptr_nonnull(strstr(b.data, "data-points=\"2\""));
	ck_assert_ptr_nonnull(strstr(b.data, "in 2 improvements"));
	ck_assert_ptr_nonnull(strstr(b.data, "class=\"line record\""));
	kb_buf_free(&b);
	ck_assert_int_eq(
		kb_web_plot(&b, "p", "t", p, 0, NULL, 0, 0, NULL, 100000), 0);
	ck_assert_ptr_nonnull(strstr(b.data, "No ranked submission yet"));
	kb_buf_free(&b);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("web_render");
	TCase *tc = tcase_create("render");

	tcase_add_test(tc, user_text_is_escaped);
	tcase_add_test(tc, workers_are_said);
	tcase_add_test(tc, scores_have_units);
	tcase_add_test(tc, time_left);
	tcase_add_test(tc, plot_steps_only_on_records);
	suite_add_tcase(s, tc);
	return kb_check_run(s);
}
