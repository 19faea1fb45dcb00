/* The board and index pages' parts of issue 35 item 7, rendered without a
 * server: medals, code links only after the deadline, the plot's choices
 * (contestant, every run, scale, range) and its z-order, the reference
 * tab, Markdown descriptions, the index's order and its notice of gpus
 * without workers; the notice of a board that is not sealed. */
#include <check.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kb_check_main.h"
#include "web/render.h"

#define DAY 86400000LL
#define NOW (100 * DAY)

static const struct kb_web_rank ranks[] = {
	{1, "u1", "ann", 1e-3, 1000, 11},
	{2, "u2", "bob", 2e-3, 2000, 12},
	{3, "u3", "cy", 3e-3, 3000, 13},
	{4, "u4", "dee", 4e-3, 4000, 14},
};
/* ann improves twice, bob once, cy and dee once each; one old point. */
static const struct kb_web_point hist[] = {
	{NOW - 60 * DAY, 9e-3, 10, "u4"}, {NOW - 3 * DAY, 5e-3, 11, "u1"},
	{NOW - 2 * DAY, 2e-3, 12, "u2"},  {NOW - 2 * DAY + 1, 3e-3, 13, "u3"},
	{NOW - DAY, 4e-3, 14, "u4"},      {NOW - 1000, 1e-3, 15, "u1"},
};

static struct kb_web_gpu gpu(const char *name, size_t nrank)
{
	return (struct kb_web_gpu){name, ranks,         nrank, (long)nrank,
				   hist, nrank ? 6 : 0, 1};
}

static struct kb_web_board board(const struct kb_web_gpu *g, size_t ng,
				 int64_t deadline_ms)
{
	return (struct kb_web_board){.name = "lb",
				     .lang = "c",
				     .description = "d",
				     .ranking_by = "mean",
				     .deadline_ms = deadline_ms,
				     .gpus = g,
				     .ngpus = ng};
}

static char *render(const struct kb_web_board *bd)
{
	struct kb_buf b = {0};

	ck_assert_int_eq(kb_web_render_board(&b, bd, NOW, 1), 0);
	return b.data;
}

static const char *after(const char *s, const char *needle)
{
	const char *p = strstr(s, needle);

	ck_assert_msg(p, "no %s", needle);
	return p + strlen(needle);
}

START_TEST(medals_in_words)
{
	struct kb_web_gpu g = gpu("CPU", 4);
	struct kb_web_board bd = board(&g, 1, -1);
	char *html = render(&bd);

	ck_assert_ptr_nonnull(
		strstr(html, "<span class=\"medal gold\">gold</span> 1<"));
	ck_assert_ptr_nonnull(
		strstr(html, "<span class=\"medal silver\">silver</span> 2<"));
	ck_assert_ptr_nonnull(
		strstr(html, "<span class=\"medal bronze\">bronze</span> 3<"));
	ck_assert_ptr_nonnull(strstr(html, "<td class=\"num\">4</td>"));
	free(html);

	/* The index's podium: three per gpu, with their medals. */
	const char *gpus[] = {"CPU"};
	const struct kb_web_rank *top[] = {ranks};
	size_t ntop[] = {3};
	struct kb_web_index_row row = {.name = "lb",
				       .lang = "c",
				       .deadline_ms = -1,
				       .gpus = gpus,
				       .ngpus = 1,
				       .top = top,
				       .ntop = ntop,
				       .participants = 4};
	struct kb_buf b = {0};
	ck_assert_int_eq(kb_web_render_index(&b, &row, 1, NOW, 1), 0);
	const char *p = after(b.data, "<ol class=\"podium\">");
	p = after(p, "gold</span> <a href=\"/web/user/u1\">ann</a>");
	p = after(p, "silver</span> <a href=\"/web/user/u2\">bob</a>");
	p = after(p, "bronze</span> <a href=\"/web/user/u3\">cy</a>");
	ck_assert_ptr_null(strstr(b.data, "dee"));
	kb_buf_free(&b);

	/* The user page: a medal beside a rank of 1-3. */
	struct kb_web_user_best best[2] = {{"lb", "CPU", 1e-3, 2, 9},
					   {"lb", "H100", 1e-3, 4, 9}};
	ck_assert_int_eq(kb_web_render_user(&b, "u2", "bob", best, 2, NULL, 0,
					    NOW, 1),
			 0);
	ck_assert_ptr_nonnull(strstr(b.data, "silver</span> 2 of 9</td>"));
	ck_assert_ptr_nonnull(strstr(b.data, "<td class=\"num\">4 of 9</td>"));
	kb_buf_free(&b);
}
END_TEST

/* Code is linked once the deadline has passed, never before. */
START_TEST(code_links_after_deadline)
{
	struct kb_web_gpu g = gpu("CPU", 2);
	struct kb_web_board bd = board(&g, 1, NOW + 1000);
	char *html = render(&bd);

	ck_assert_ptr_null(strstr(html, "/code/"));
	free(html);
	bd = board(&g, 1, -1);
	html = render(&bd);
	ck_assert_ptr_null(strstr(html, "/code/"));
	free(html);
	bd = board(&g, 1, NOW - 1000);
	html = render(&bd);
	ck_assert_ptr_nonnull(strstr(
		html, "<a class=\"code-link\" href=\"/web/lb/lb/code/11\">"));
	ck_assert_ptr_nonnull(strstr(html, "/web/lb/lb/code/12\""));
	free(html);

	struct kb_web_code c = {
		"lb",  "CPU", "u1",
		"ann", "k.c", "int main() { return a < b && \"</pre>\"; }",
		11,    1e-3,  1000};
	struct kb_buf b = {0};
	ck_assert_int_eq(kb_web_render_code(&b, &c), 0);
	ck_assert_ptr_nonnull(
		strstr(b.data,
		       "return a &lt; b &amp;&amp; &quot;&lt;/pre&gt;&quot;;"));
	ck_assert_ptr_null(strstr(b.data, "\"</pre>\""));
	ck_assert_ptr_nonnull(strstr(b.data, "submission 11"));
	kb_buf_free(&b);
}
END_TEST

/* The leader's line comes after the record's in the SVG: drawn on top. */
START_TEST(leader_drawn_above_record)
{
	struct kb_buf b = {0};

	ck_assert_int_eq(
		kb_web_plot(&b, "p", "t", hist, 6, ranks, 4, 4, NULL, NOW), 0);
	const char *rec = strstr(b.data, "<path class=\"line record\"");
	const char *lead = strstr(b.data, "<path class=\"line s1\"");
	const char *second = strstr(b.data, "<path class=\"line s2\"");
	ck_assert_ptr_nonnull(rec);
	ck_assert_ptr_nonnull(lead);
	ck_assert_ptr_nonnull(second);
	ck_assert_msg(second < rec && rec < lead,
		      "order: s2 %td, record %td, s1 %td", second - b.data,
		      rec - b.data, lead - b.data);
	kb_buf_free(&b);
}
END_TEST

START_TEST(plot_choices)
{
	struct kb_web_plot_opts o;
	struct kb_buf b = {0};

	ck_assert_int_eq(
		kb_web_plot_opts_parse(NULL, NULL, NULL, NULL, NOW, &o), 0);
	ck_assert(!o.user && !o.raw && o.scale == KB_WEB_SCALE_AUTO &&
		  o.since_ms == 0);
	ck_assert_int_eq(
		kb_web_plot_opts_parse("u2", "raw", "log", "7d", NOW, &o), 0);
	ck_assert_str_eq(o.user, "u2");
	ck_assert(o.raw && o.scale == KB_WEB_SCALE_LOG &&
		  o.since_ms == NOW - 7 * DAY);
	ck_assert_int_eq(kb_web_plot_opts_parse("", "x", "y", "2y", NOW, &o),
			 -EINVAL);
	ck_assert(!o.user && !o.raw && o.scale == KB_WEB_SCALE_AUTO &&
		  o.since_ms == 0);

	/* One contestant: their line and the record, nobody else's. */
	kb_web_plot_opts_parse("u2", NULL, NULL, NULL, NOW, &o);
	ck_assert_int_eq(
		kb_web_plot(&b, "p", "t", hist, 6, ranks, 0, 4, &o, NOW), 0);
	ck_assert_ptr_nonnull(strstr(b.data, "</span>bob</li>"));
	ck_assert_ptr_null(strstr(b.data, "ann"));
	ck_assert_ptr_null(strstr(b.data, "class=\"line s2\""));
	kb_buf_free(&b);

	/* Every run: one dot per scored result, the scale as asked. */
	kb_web_plot_opts_parse(NULL, "raw", "linear", NULL, NOW, &o);
	ck_assert_int_eq(
		kb_web_plot(&b, "p", "t", hist, 6, ranks, 4, 4, &o, NOW), 0);
	ck_assert_ptr_nonnull(
		strstr(b.data, "data-view=\"raw\" data-scale=\"linear\""));
	size_t dots = 0;
	for (const char *q = b.data; (q = strstr(q, "<circle class=\"dot"));
	     q++)
		dots++;
	ck_assert_uint_eq(dots, 6);
	kb_buf_free(&b);
	kb_web_plot_opts_parse(NULL, NULL, "log", NULL, NOW, &o);
	ck_assert_int_eq(
		kb_web_plot(&b, "p", "t", hist, 6, ranks, 4, 4, &o, NOW), 0);
	ck_assert_ptr_nonnull(
		strstr(b.data, "data-view=\"best\" data-scale=\"log\""));
	kb_buf_free(&b);

	/* A range: the old point is left out (two records: 5 ms, then 2 ms
	 * and 1 ms within the week, against four over all time). */
	kb_web_plot_opts_parse(NULL, NULL, NULL, "7d", NOW, &o);
	ck_assert_int_eq(
		kb_web_plot(&b, "p", "t", hist, 6, ranks, 4, 4, &o, NOW), 0);
	ck_assert_ptr_nonnull(strstr(b.data, "data-points=\"3\""));
	kb_buf_free(&b);
	ck_assert_int_eq(
		kb_web_plot(&b, "p", "t", hist, 6, ranks, 4, 4, NULL, NOW), 0);
	ck_assert_ptr_nonnull(strstr(b.data, "data-points=\"4\""));
	kb_buf_free(&b);
	kb_web_plot_opts_parse(NULL, NULL, NULL, "1d", NOW + 30 * DAY, &o);
	ck_assert_int_eq(
		kb_web_plot(&b, "p", "t", hist, 6, ranks, 4, 4, &o, NOW), 0);
	ck_assert_ptr_nonnull(
		strstr(b.data, "No ranked submission in this time range."));
	kb_buf_free(&b);

	/* The board's form says what is drawn, for its gpu only. */
	struct kb_web_gpu g[2] = {gpu("CPU", 4), gpu("H100", 4)};
	struct kb_web_board bd = board(g, 2, -1);
	bd.plot_gpu = "H100";
	kb_web_plot_opts_parse("u3", "raw", "log", "30d", NOW, &bd.plot);
	char *html = render(&bd);
	const char *cpu = after(html, "data-gpu=\"CPU\"");
	const char *h100 = after(html, "data-gpu=\"H100\"");
	ck_assert_ptr_nonnull(strstr(cpu,
				     "<form class=\"plot-opts\" method=\"get\" "
				     "action=\"/web/lb/lb\">"));
	ck_assert_ptr_nonnull(strstr(cpu, "data-view=\"best\""));
	ck_assert_ptr_nonnull(
		strstr(h100, "data-view=\"raw\" data-scale=\"log\""));
	ck_assert_ptr_nonnull(
		strstr(h100, "<option value=\"u3\" selected>cy</option>"));
	ck_assert_ptr_nonnull(strstr(h100, "<option value=\"30d\" selected>"));
	free(html);
}
END_TEST

/* Every ranked contestant can be picked, not only the first 50. */
START_TEST(plot_lists_every_contestant)
{
	enum { N = 120 };
	static struct kb_web_rank many[N];
	static char ids[N][8], names[N][8];

	for (int i = 0; i < N; i++) {
		snprintf(ids[i], sizeof ids[i], "u%d", i + 1);
		snprintf(names[i], sizeof names[i], "n%d", i + 1);
		many[i] = (struct kb_web_rank){i + 1,          ids[i], names[i],
					       (i + 1) * 1e-3, 1000,   100 + i};
	}
	struct kb_web_gpu g = {"H100", many, N, N, hist, 6, 1};
	struct kb_web_board bd = board(&g, 1, -1);
	char *html = render(&bd);

	ck_assert_ptr_nonnull(
		strstr(html, "<option value=\"u51\">n51</option>"));
	ck_assert_ptr_nonnull(
		strstr(html, "<option value=\"u120\">n120</option>"));
	free(html);
}
END_TEST

START_TEST(reference_tab)
{
	const char *names[] = {"submission.cu", "task.h", "reference.cu",
			       "problem.c"};
	const char *ours[] = {"submission.c", "problem.c", "harness.c"};

	ck_assert_int_eq(kb_web_reference_file(names, 4), 2);
	ck_assert_int_eq(kb_web_reference_file(ours, 3), 1);
	ck_assert_int_eq(kb_web_reference_file(ours + 2, 1), -1);

	struct kb_web_gpu g = gpu("CPU", 1);
	struct kb_web_board bd = board(&g, 1, -1);
	bd.reference_name = "reference.cu";
	bd.reference = "if (a < b) return \"x\";";
	char *html = render(&bd);
	ck_assert_ptr_nonnull(
		strstr(html, "<a href=\"#reference\">Reference</a>"));
	const char *p = after(html, "<section id=\"reference\" class=\"tab\">");
	p = after(p, "reference.cu");
	ck_assert_ptr_nonnull(
		strstr(p, "<code>if (a &lt; b) return &quot;x&quot;;</code>"));
	free(html);
	bd.reference = NULL;
	html = render(&bd);
	ck_assert_ptr_nonnull(strstr(html, "name no reference implementation"));
	free(html);
}
END_TEST

START_TEST(description_is_markdown)
{
	struct kb_web_gpu g = gpu("CPU", 1);
	struct kb_web_board bd = board(&g, 1, -1);

	bd.description = "# Sum\n\nUse `custom_kernel`.\n\n<b>x</b>";
	char *html = render(&bd);
	const char *p = after(html, "<div class=\"desc md\">");
	ck_assert_ptr_nonnull(
		strstr(p, "<h3>Sum</h3><p>Use <code>custom_kernel</code>.</p>"
			  "<p>&lt;b&gt;x&lt;/b&gt;</p>"));
	free(html);
}
END_TEST

/* A board that is not sealed says so under its title, with the reason,
 * escaped; a sealed one (or one of ours) says nothing about sealing. */
START_TEST(not_sealed_notice)
{
	struct kb_web_gpu g = gpu("CPU", 1);
	struct kb_web_board bd = board(&g, 1, -1);
	char *html = render(&bd);

	ck_assert_msg(strstr(html, "sealed") == NULL, "%s", html);
	free(html);
	bd.not_sealed = "eval.py is <not> a \"standard\" version";
	html = render(&bd);
	const char *p = after(
		after(html, "</h1>"),
		"<p class=\"notice unsealed\"><strong>Not sealed:</strong> "
		"eval.py is &lt;not&gt; a &quot;standard&quot; version; "
		"timing is measured by the submission's own process");
	ck_assert_msg(strstr(p, "<div id=\"live\"") != NULL,
		      "the notice comes before the rankings:\n%s", html);
	ck_assert_ptr_null(strstr(html, "<not>"));
	free(html);
}
END_TEST

/* Open boards with participants first, closed ones last; in a board the
 * gpus with a ranking first, the empty ones folded after them. */
START_TEST(order_of_boards_and_gpus)
{
	const char *gpus[] = {"A", "B"};
	const struct kb_web_rank *top[] = {NULL, ranks};
	size_t ntop[] = {0, 1};
	struct kb_web_index_row rows[3] = {
		{.name = "closed",
		 .deadline_ms = NOW - 1,
		 .gpus = gpus,
		 .ngpus = 2,
		 .participants = 5},
		{.name = "empty", .deadline_ms = -1, .gpus = gpus, .ngpus = 2},
		{.name = "busy",
		 .deadline_ms = NOW + DAY,
		 .gpus = gpus,
		 .ngpus = 2,
		 .top = top,
		 .ntop = ntop,
		 .participants = 1},
	};
	struct kb_buf b = {0};

	ck_assert_int_eq(kb_web_render_index(&b, rows, 3, NOW, 1), 0);
	const char *p = after(b.data, "data-lb=\"busy\"");
	p = after(p, "<th scope=\"row\">B</th>");
	p = after(p, "<th scope=\"row\">A</th>");
	p = after(p, "data-lb=\"empty\"");
	p = after(p, "data-lb=\"closed\"");
	kb_buf_free(&b);

	struct kb_web_gpu g[2] = {gpu("EMPTY", 0), gpu("FULL", 2)};
	struct kb_web_board bd = board(g, 2, -1);
	char *html = render(&bd);
	p = after(html, "data-gpu=\"FULL\"");
	p = after(p, "class=\"gpu empty\" id=\"gpu-0\" data-gpu=\"EMPTY\"");
	ck_assert_ptr_nonnull(
		strstr(p, "<details><summary>No one is ranked on EMPTY yet"));
	free(html);
}
END_TEST

/* The index names, once, every gpu no worker serves. */
START_TEST(index_notice_of_gpus_without_workers)
{
	const char *g1[] = {"H100", "CPU"}, *g2[] = {"MI300", "H100"};
	int w1[] = {0, 2}, w2[] = {0, 0};
	struct kb_web_index_row rows[2] = {
		{.name = "a",
		 .deadline_ms = -1,
		 .gpus = g1,
		 .ngpus = 2,
		 .workers = w1},
		{.name = "b",
		 .deadline_ms = -1,
		 .gpus = g2,
		 .ngpus = 2,
		 .workers = w2},
	};
	struct kb_buf b = {0};

	ck_assert_int_eq(kb_web_render_index(&b, rows, 2, NOW, 1), 0);
	ck_assert_ptr_nonnull(
		strstr(b.data, "role=\"status\">No worker online for H100, "
			       "MI300: submissions to them wait"));
	kb_buf_free(&b);
	w1[0] = w2[0] = w2[1] = 1;
	ck_assert_int_eq(kb_web_render_index(&b, rows, 2, NOW, 1), 0);
	ck_assert_ptr_null(strstr(b.data, "role=\"status\""));
	kb_buf_free(&b);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("web_board");
	TCase *tc = tcase_create("board");

	tcase_add_test(tc, medals_in_words);
	tcase_add_test(tc, code_links_after_deadline);
	tcase_add_test(tc, leader_drawn_above_record);
	tcase_add_test(tc, plot_choices);
	tcase_add_test(tc, plot_lists_every_contestant);
	tcase_add_test(tc, reference_tab);
	tcase_add_test(tc, description_is_markdown);
	tcase_add_test(tc, not_sealed_notice);
	tcase_add_test(tc, order_of_boards_and_gpus);
	tcase_add_test(tc, index_notice_of_gpus_without_workers);
	suite_add_tcase(s, tc);
	return kb_check_run(s);
}
