/* The descriptions' Markdown subset (gateway/web/markdown.h): each block
 * and inline form, and that nothing of the source reaches the page
 * unescaped (raw HTML, attribute breakouts, links to other schemes). */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "kb_check_main.h"
#include "web/markdown.h"

static char out[8192];

static const char *md(const char *src)
{
	struct kb_buf b = {0};

	ck_assert_int_eq(kb_web_md(&b, src), 0);
	ck_assert_uint_lt(b.len, sizeof(out));
	memcpy(out, b.data, b.len + 1);
	kb_buf_free(&b);
	return out;
}

#define HAS(src, want)                                                         \
	ck_assert_msg(strstr(md(src), want), "%s\n  -> %s\n  lacks %s", src,   \
		      out, want)
#define LACKS(src, bad)                                                        \
	ck_assert_msg(!strstr(md(src), bad), "%s\n  -> %s\n  has %s", src,     \
		      out, bad)

START_TEST(blocks)
{
	ck_assert_str_eq(md("# Title\n\nOne\ntwo.\n\nThree."),
			 "<h3>Title</h3><p>One\ntwo.</p><p>Three.</p>");
	HAS("## Sub ##", "<h4>Sub</h4>");
	HAS("###### six", "<h6>six</h6>");
	LACKS("#nospace", "<h3>");
	ck_assert_str_eq(
		md("```c\nint a<b;\n\nx\n```\nafter"),
		"<pre><code>int a&lt;b;\n\nx\n</code></pre><p>after</p>");
	HAS("~~~\n# not a heading\n~~~", "<pre><code># not a heading\n");
	ck_assert_str_eq(md("Implement:\n\n    float f(void);\n\n    int g;\n"),
			 "<p>Implement:</p><pre><code>float f(void);\n\nint "
			 "g;\n</code></pre>");
	/* Items continue on indented lines (the bundled descriptions do). */
	ck_assert_str_eq(md("- one\n  more\n- two\n\n- three\n\nend"),
			 "<ul><li>one\nmore</li><li>two</li><li>three</li></ul>"
			 "<p>end</p>");
	HAS("1. a\n2. b", "<ol><li>a</li><li>b</li></ol>");
	HAS("text\n- item", "<p>text</p><ul><li>item</li></ul>");
}
END_TEST

START_TEST(inline_forms)
{
	ck_assert_str_eq(md("a `x < y` **bold** *em* _em2_ end"),
			 "<p>a <code>x &lt; y</code> <strong>bold</strong> "
			 "<em>em</em> <em>em2</em> end</p>");
	/* Snake case and arithmetic stay as written. */
	ck_assert_str_eq(md("custom_kernel and n_max_x; 2 * 3 * 4"),
			 "<p>custom_kernel and n_max_x; 2 * 3 * 4</p>");
	HAS("**`code` in strong**",
	    "<strong><code>code</code> in strong</strong>");
	HAS("see [the docs](https://example.com/a?b=1&c=2).",
	    "<a rel=\"nofollow noopener noreferrer\" "
	    "href=\"https://example.com/a?b=1&amp;c=2\">the docs</a>.");
	HAS("[x](http://h)", "href=\"http://h\"");
	HAS("unclosed `tick and *star", "unclosed `tick and *star");
}
END_TEST

START_TEST(nothing_passes_through)
{
	LACKS("<script>alert(1)</script>", "<script");
	HAS("<script>alert(1)</script>",
	    "&lt;script&gt;alert(1)&lt;/script&gt;");
	LACKS("<img src=x onerror=alert(1)>", "<img");
	LACKS("[x](javascript:alert(1))", "<a");
	LACKS("[x](data:text/html,hi)", "<a");
	LACKS("[x](/relative)", "<a");
	HAS("[x](javascript:alert(1))", "[x](javascript:alert(1))");
	/* A quote cannot leave the href; a space is no url. */
	LACKS("[x](https://a\"onmouseover=\"x)", "\"onmouseover");
	LACKS("[x](https://a b)", "<a");
	LACKS("```\n</code></pre><script>\n```", "<script");
	LACKS("`</code><b>`", "<b>");
	HAS("# <i>h</i>", "<h3>&lt;i&gt;h&lt;/i&gt;</h3>");
	ck_assert_str_eq(md(NULL), "");
	ck_assert_str_eq(md(""), "");
}
END_TEST

/* Deep nesting is bounded, not recursed without end. */
START_TEST(deep_nesting_is_bounded)
{
	char src[4000];
	size_t n = 0;

	for (int i = 0; i < 600; i++)
		src[n++] = '[';
	for (int i = 0; i < 600; i++)
		src[n++] = '*';
	src[n] = '\0';
	struct kb_buf b = {0};
	ck_assert_int_eq(kb_web_md(&b, src), 0);
	ck_assert_ptr_nonnull(strstr(b.data, "[[[["));
	kb_buf_free(&b);
}
END_TEST

/* Runs of openers that never close cost one scan each kind, not one per
 * opener: a hostile 300 kB description renders at once. */
START_TEST(hostile_runs_are_linear)
{
	static const char *const units[] = {"*a ", "_a ", "**a ",       "[a](",
					    "[",   "`",   "[a]( *b _c "};
	enum { N = 300000 };
	char *src = malloc(N + 16);

	ck_assert_ptr_nonnull(src);
	for (size_t u = 0; u < sizeof(units) / sizeof(units[0]); u++) {
		size_t n = 0, k = strlen(units[u]);
		while (n + k < N) {
			memcpy(src + n, units[u], k);
			n += k;
		}
		src[n] = '\0';
		struct kb_buf b = {0};
		double t0 = kb_mono_s();
		ck_assert_int_eq(kb_web_md(&b, src), 0);
		double dt = kb_mono_s() - t0;
		ck_assert_msg(dt < 1.0, "%s x %zu took %.2f s", units[u], n / k,
			      dt);
		kb_buf_free(&b);
	}
	free(src);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("web_markdown");
	TCase *tc = tcase_create("markdown");

	tcase_add_test(tc, blocks);
	tcase_add_test(tc, inline_forms);
	tcase_add_test(tc, nothing_passes_through);
	tcase_add_test(tc, deep_nesting_is_bounded);
	tcase_add_test(tc, hostile_runs_are_linear);
	suite_add_tcase(s, tc);
	return kb_check_run(s);
}
