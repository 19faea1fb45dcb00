/* The multipart/form-data parser: framing, strictness, and that feeding a
 * body in any pieces gives the same result as feeding it whole. */
#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "http/multipart.h"

#define B "----kbBoundary7MA4YWxk"
#define FILE_PART(name, fname, data)                                           \
	"--" B "\r\n"                                                          \
	"Content-Disposition: form-data; name=\"" name "\"; filename=\"" fname \
	"\"\r\n"                                                               \
	"Content-Type: text/x-csrc\r\n"                                        \
	"\r\n" data "\r\n"
#define FIELD_PART(name, value)                                                \
	"--" B "\r\n"                                                          \
	"Content-Disposition: form-data; name=\"" name "\"\r\n"                \
	"\r\n" value "\r\n"
#define CLOSE "--" B "--\r\n"

struct outcome {
	int feed_rc, finish_rc, found;
	char *data;
	size_t len;
	char *filename;
};

static void outcome_free(struct outcome *o)
{
	free(o->data);
	free(o->filename);
}

/* Parses body fed in pieces of at most step bytes (0: all at once). */
static struct outcome parse_steps(const char *body, size_t len, size_t step,
				  size_t max)
{
	struct outcome o = {0};
	kb_multipart *m = kb_multipart_new(B, "file", max);

	ck_assert_ptr_nonnull(m);
	if (step == 0)
		step = len ? len : 1;
	for (size_t i = 0; i < len && o.feed_rc == 0; i += step) {
		size_t n = len - i < step ? len - i : step;
		o.feed_rc = kb_multipart_feed(m, body + i, n);
	}
	o.finish_rc = kb_multipart_finish(m);
	if (o.finish_rc == 0) {
		const char *d = kb_multipart_data(m, &o.len);
		o.found = kb_multipart_found(m);
		o.data = malloc(o.len + 1);
		memcpy(o.data, d, o.len + 1);
		const char *fn = kb_multipart_filename(m);
		o.filename = fn ? strdup(fn) : NULL;
	}
	kb_multipart_destroy(m);
	return o;
}

static struct outcome parse(const char *body)
{
	return parse_steps(body, strlen(body), 0, 1 << 20);
}

START_TEST(good_body)
{
	const char *body = FILE_PART("file", "sub.c", "int x = 1;\n") CLOSE;
	struct outcome o = parse(body);

	ck_assert_int_eq(o.finish_rc, 0);
	ck_assert_int_eq(o.found, 1);
	ck_assert_str_eq(o.data, "int x = 1;\n");
	ck_assert_uint_eq(o.len, 11);
	ck_assert_str_eq(o.filename, "sub.c");
	outcome_free(&o);
}
END_TEST

/* Every split point, and byte by byte, must give the same answer: the
 * delimiter match state crosses feed() calls. */
START_TEST(every_split_point)
{
	const char *body =
		"preamble \r\n----kbBoundary7MA4 partial\r\n" FIELD_PART(
			"a", "\r\n----kbBoundary7MA4YWx-not-one")
			FILE_PART("file", "k.c",
				  "a\r\nb\r\n-\r\n--"
				  "\r\r\n\r\n--x--") CLOSE "epilogue";
	size_t len = strlen(body);

	for (size_t step = 1; step <= len; step++) {
		struct outcome o = parse_steps(body, len, step, 1 << 20);
		ck_assert_msg(o.finish_rc == 0, "step %zu: rc %d", step,
			      o.finish_rc);
		ck_assert_int_eq(o.found, 1);
		ck_assert_str_eq(o.data, "a\r\nb\r\n-\r\n--\r\r\n\r\n--x--");
		outcome_free(&o);
	}
}
END_TEST

START_TEST(preamble_and_epilogue_ignored)
{
	struct outcome o = parse("This is the preamble.\r\n" FILE_PART(
		"file", "p.py", "print(1)") CLOSE
				 "This is the epilogue, even with --" B "\r\n");

	ck_assert_int_eq(o.finish_rc, 0);
	ck_assert_str_eq(o.data, "print(1)");
	outcome_free(&o);
}
END_TEST

START_TEST(several_parts_only_file_kept)
{
	struct outcome o =
		parse(FIELD_PART("leaderboard", "vectorsum")
			      FILE_PART("other", "o.c", "not this")
				      FILE_PART("file", "f.c", "this one")
					      FIELD_PART("gpu", "CPU") CLOSE);

	ck_assert_int_eq(o.finish_rc, 0);
	ck_assert_int_eq(o.found, 1);
	ck_assert_str_eq(o.data, "this one");
	ck_assert_str_eq(o.filename, "f.c");
	outcome_free(&o);
}
END_TEST

/* Text fields asked for are kept beside the file, split anywhere;
 * absent ones are NULL; a long or repeated one is an error. */
START_TEST(kept_text_fields)
{
	static const char body[] = FIELD_PART("benchmark_index", "2")
		FILE_PART("file", "f.c", "code")
			FIELD_PART("ncu_kernel_name", "regex:k.*") CLOSE;
	char long_body[4096];

	for (size_t step = 1; step <= sizeof(body); step += 7) {
		kb_multipart *m = kb_multipart_new(B, "file", 1 << 20);
		ck_assert_int_eq(kb_multipart_keep_text(m, "benchmark_index"),
				 0);
		ck_assert_int_eq(kb_multipart_keep_text(m, "ncu_kernel_name"),
				 0);
		ck_assert_int_eq(kb_multipart_keep_text(m, "ncu_launch_count"),
				 0);
		for (size_t i = 0; i < sizeof(body) - 1; i += step)
			ck_assert_int_eq(
				kb_multipart_feed(m, body + i,
						  sizeof(body) - 1 - i < step
							  ? sizeof(body) - 1 - i
							  : step),
				0);
		ck_assert_int_eq(kb_multipart_finish(m), 0);
		ck_assert_str_eq(kb_multipart_text(m, "benchmark_index"), "2");
		ck_assert_str_eq(kb_multipart_text(m, "ncu_kernel_name"),
				 "regex:k.*");
		ck_assert_ptr_null(kb_multipart_text(m, "ncu_launch_count"));
		ck_assert_ptr_null(kb_multipart_text(m, "other"));
		ck_assert_str_eq(kb_multipart_data(m, NULL), "code");
		kb_multipart_destroy(m);
	}

	kb_multipart *m = kb_multipart_new(B, "file", 1 << 20);
	ck_assert_int_eq(kb_multipart_keep_text(m, "file"), -EINVAL);
	ck_assert_int_eq(kb_multipart_keep_text(m, "a"), 0);
	static const char twice[] = FIELD_PART("a", "1") FIELD_PART("a", "2")
		CLOSE;
	ck_assert_int_eq(kb_multipart_feed(m, twice, sizeof(twice) - 1),
			 -EINVAL);
	kb_multipart_destroy(m);

	m = kb_multipart_new(B, "file", 1 << 20);
	ck_assert_int_eq(kb_multipart_keep_text(m, "a"), 0);
	int n = snprintf(
		long_body, sizeof(long_body),
		"--" B
		"\r\nContent-Disposition: form-data; name=\"a\"\r\n\r\n");
	memset(long_body + n, 'x', KB_MULTIPART_TEXT_MAX + 1);
	n += KB_MULTIPART_TEXT_MAX + 1;
	n += snprintf(long_body + n, sizeof(long_body) - (size_t)n,
		      "\r\n" CLOSE);
	ck_assert_int_eq(kb_multipart_feed(m, long_body, (size_t)n), -EINVAL);
	kb_multipart_destroy(m);
}
END_TEST

START_TEST(missing_file_field)
{
	struct outcome o = parse(FIELD_PART("leaderboard", "x")
					 FILE_PART("upload", "f.c", "code")
						 CLOSE);

	ck_assert_int_eq(o.finish_rc, 0);
	ck_assert_int_eq(o.found, 0);
	ck_assert_ptr_null(o.filename);
	outcome_free(&o);
}
END_TEST

START_TEST(empty_file_is_found)
{
	struct outcome o = parse(FILE_PART("file", "e.c", "") CLOSE);

	ck_assert_int_eq(o.finish_rc, 0);
	ck_assert_int_eq(o.found, 1);
	ck_assert_uint_eq(o.len, 0);
	outcome_free(&o);
}
END_TEST

START_TEST(no_filename_parameter)
{
	struct outcome o = parse(FIELD_PART("file", "inline code") CLOSE);

	ck_assert_int_eq(o.finish_rc, 0);
	ck_assert_str_eq(o.data, "inline code");
	ck_assert_ptr_null(o.filename);
	outcome_free(&o);
}
END_TEST

START_TEST(quoted_filename_escapes)
{
	struct outcome o = parse(
		"--" B "\r\ncontent-disposition: FORM-DATA ; "
		"filename=\"a\\\"b\\\\c.c\"; name=file\r\n\r\nx\r\n" CLOSE);

	ck_assert_int_eq(o.finish_rc, 0);
	ck_assert_str_eq(o.filename, "a\"b\\c.c");
	outcome_free(&o);
}
END_TEST

START_TEST(truncated_bodies)
{
	const char *full = FILE_PART("file", "t.c", "abc") CLOSE;
	size_t len = strlen(full);

	/* Every proper prefix that stops before "--B--" is complete. */
	for (size_t cut = 0; cut < len - 2; cut++) {
		struct outcome o = parse_steps(full, cut, 0, 1 << 20);
		ck_assert_msg(o.finish_rc == -EINVAL, "cut %zu: rc %d", cut,
			      o.finish_rc);
		outcome_free(&o);
	}
}
END_TEST

START_TEST(no_delimiter_at_all)
{
	struct outcome o = parse("just some text, no multipart\r\n");

	ck_assert_int_eq(o.finish_rc, -EINVAL);
	outcome_free(&o);
}
END_TEST

START_TEST(crlf_variations)
{
	struct outcome o;

	/* Transport padding after a delimiter is allowed. */
	o = parse("--" B " \t\r\nContent-Disposition: form-data; name=\"file\""
		  "\r\n\r\npad\r\n--" B "--");
	ck_assert_int_eq(o.finish_rc, 0);
	ck_assert_str_eq(o.data, "pad");
	outcome_free(&o);

	/* The close delimiter may end the body without CRLF (done above)
	 * or be followed by anything. */
	o = parse(FILE_PART("file", "a", "x") "--" B "--garbage");
	ck_assert_int_eq(o.finish_rc, 0);
	outcome_free(&o);

	/* Bare LF line ends are refused, in the boundary line... */
	o = parse("--" B
		  "\nContent-Disposition: form-data; name=\"file\"\n\nx\n--" B
		  "--\n");
	ck_assert_int_eq(o.finish_rc, -EINVAL);
	outcome_free(&o);

	/* ...and in part headers. */
	o = parse(
		"--" B
		"\r\nContent-Disposition: form-data; name=\"file\"\n\r\nx\r\n" CLOSE);
	ck_assert_int_eq(o.finish_rc, -EINVAL);
	outcome_free(&o);

	/* CR not followed by LF in headers. */
	o = parse(
		"--" B
		"\r\nContent-Disposition: form-data; name=\"file\"\r\r\n\r\nx\r\n" CLOSE);
	ck_assert_int_eq(o.finish_rc, -EINVAL);
	outcome_free(&o);

	/* Body lines may use any line ends: they are data. */
	o = parse(FILE_PART("file", "lf.c", "a\nb\rc\n\n") CLOSE);
	ck_assert_int_eq(o.finish_rc, 0);
	ck_assert_str_eq(o.data, "a\nb\rc\n\n");
	outcome_free(&o);
}
END_TEST

START_TEST(boundary_prefix_in_content_is_an_error)
{
	/* RFC 2046: the boundary must not occur in the content. */
	struct outcome o =
		parse(FILE_PART("file", "a.c", "x\r\n--" B "tail") CLOSE);

	ck_assert_int_eq(o.finish_rc, -EINVAL);
	outcome_free(&o);
}
END_TEST

START_TEST(bad_parts)
{
	const char *bodies[] = {
		/* no Content-Disposition */
		"--" B "\r\nContent-Type: text/plain\r\n\r\nx\r\n" CLOSE,
		/* not form-data */
		"--" B
		"\r\nContent-Disposition: attachment; name=\"file\"\r\n\r\nx\r\n" CLOSE,
		/* no name */
		"--" B
		"\r\nContent-Disposition: form-data; filename=\"a\"\r\n\r\nx\r\n" CLOSE,
		/* folded header */
		"--" B
		"\r\nContent-Disposition: form-data;\r\n name=\"file\"\r\n\r\nx\r\n" CLOSE,
		/* header without colon */
		"--" B "\r\nContent-Disposition form-data\r\n\r\nx\r\n" CLOSE,
		/* unterminated quoted string */
		"--" B
		"\r\nContent-Disposition: form-data; name=\"file\r\n\r\nx\r\n" CLOSE,
		/* two dispositions */
		"--" B "\r\nContent-Disposition: form-data; name=\"file\"\r\n"
		"Content-Disposition: form-data; name=\"x\"\r\n\r\nx\r\n" CLOSE,
		/* encoded content we would store undecoded */
		"--" B "\r\nContent-Disposition: form-data; name=\"file\"\r\n"
		"Content-Transfer-Encoding: base64\r\n\r\neA==\r\n" CLOSE,
		/* the file field twice */
		FILE_PART("file", "a", "1") FILE_PART("file", "b", "2") CLOSE,
		/* data right after the delimiter */
		"--" B
		"junk\r\nContent-Disposition: form-data; name=\"file\"\r\n\r\nx\r\n" CLOSE,
		/* control character in a header */
		"--" B
		"\r\nContent-Disposition: form-data; name=\"fi\x01le\"\r\n\r\nx\r\n" CLOSE,
	};

	for (size_t i = 0; i < sizeof(bodies) / sizeof(bodies[0]); i++) {
		struct outcome o = parse(bodies[i]);
		ck_assert_msg(o.finish_rc == -EINVAL, "body %zu: rc %d", i,
			      o.finish_rc);
		outcome_free(&o);
	}
}
END_TEST

START_TEST(size_limit)
{
	const char *body = FILE_PART("file", "s.c", "0123456789") CLOSE;
	size_t len = strlen(body);
	struct outcome o;

	o = parse_steps(body, len, 0, 10);
	ck_assert_int_eq(o.finish_rc, 0);
	ck_assert_uint_eq(o.len, 10);
	outcome_free(&o);

	for (size_t step = 1; step <= 7; step += 3) {
		o = parse_steps(body, len, step, 9);
		ck_assert_int_eq(o.feed_rc, -EFBIG);
		ck_assert_int_eq(o.finish_rc, -EFBIG); /* sticky */
		outcome_free(&o);
	}
}
END_TEST

START_TEST(other_parts_do_not_count_against_the_limit)
{
	struct outcome o = parse_steps(
		FIELD_PART("big", "0123456789012345678901234567890")
			FILE_PART("file", "s.c", "ok") CLOSE,
		strlen(FIELD_PART("big", "0123456789012345678901234567890")
			       FILE_PART("file", "s.c", "ok") CLOSE),
		0, 4);

	ck_assert_int_eq(o.finish_rc, 0);
	ck_assert_str_eq(o.data, "ok");
	outcome_free(&o);
}
END_TEST

START_TEST(errors_are_sticky)
{
	kb_multipart *m = kb_multipart_new(B, "file", 100);
	const char *bad = "--" B "\nxx";

	ck_assert_int_eq(kb_multipart_feed(m, bad, strlen(bad)), -EINVAL);
	ck_assert_int_eq(kb_multipart_feed(m, CLOSE, strlen(CLOSE)), -EINVAL);
	ck_assert_int_eq(kb_multipart_finish(m), -EINVAL);
	ck_assert_str_ne(kb_multipart_error(m), "");
	kb_multipart_destroy(m);
	kb_multipart_destroy(NULL);
}
END_TEST

START_TEST(take_hands_over_the_buffer)
{
	const char *body = FILE_PART("file", "t.c", "taken") CLOSE;
	kb_multipart *m = kb_multipart_new(B, "file", 100);
	size_t len;

	ck_assert_int_eq(kb_multipart_feed(m, body, strlen(body)), 0);
	ck_assert_int_eq(kb_multipart_finish(m), 0);
	char *d = kb_multipart_take(m, &len);
	ck_assert_str_eq(d, "taken");
	ck_assert_uint_eq(len, 5);
	kb_multipart_data(m, &len);
	ck_assert_uint_eq(len, 0);
	free(d);
	kb_multipart_destroy(m);
}
END_TEST

START_TEST(boundary_from_content_type)
{
	char b[KB_MULTIPART_BOUNDARY_MAX + 1];
	char long_b[128];

	ck_assert_int_eq(
		kb_multipart_boundary("multipart/form-data; boundary=abc", b,
				      sizeof(b)),
		0);
	ck_assert_str_eq(b, "abc");
	ck_assert_int_eq(
		kb_multipart_boundary(
			"Multipart/Form-Data;boundary=\"a b:c\"; charset=utf-8",
			b, sizeof(b)),
		0);
	ck_assert_str_eq(b, "a b:c");
	ck_assert_int_eq(kb_multipart_boundary(
				 "multipart/form-data; charset=x; BOUNDARY=z9",
				 b, sizeof(b)),
			 0);
	ck_assert_str_eq(b, "z9");

	/* missing boundary, other media types, malformed */
	const char *bad[] = {
		NULL,
		"",
		"multipart/form-data",
		"multipart/form-data;",
		"multipart/form-data; boundary=",
		"multipart/form-data; boundary=\"\"",
		"multipart/mixed; boundary=abc",
		"application/x-www-form-urlencoded",
		"text/plain; boundary=abc",
		"multipart/form-data; boundary=\"abc",
		"multipart/form-data; boundary=\"ends with space \"",
		"multipart/form-data; boundary=a; boundary=b",
		"multipart/form-data; boundary=\"bad*char\"",
		"multipart/form-data boundary=abc",
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		ck_assert_msg(kb_multipart_boundary(bad[i], b, sizeof(b)) ==
				      -EINVAL,
			      "accepted '%s'", bad[i] ? bad[i] : "(null)");

	memset(long_b, 'x', 71);
	snprintf(long_b + 71, sizeof(long_b) - 71, "%s", "");
	char ct[160];
	snprintf(ct, sizeof(ct), "multipart/form-data; boundary=%s", long_b);
	ck_assert_int_eq(kb_multipart_boundary(ct, b, sizeof(b)), -EINVAL);
	ct[strlen(ct) - 1] = '\0'; /* 70 characters: the maximum */
	ck_assert_int_eq(kb_multipart_boundary(ct, b, sizeof(b)), 0);
	ck_assert_uint_eq(strlen(b), 70);
	ck_assert_ptr_null(kb_multipart_new(long_b, "file", 10));
	ck_assert_ptr_null(kb_multipart_new("", "file", 10));
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("gateway_multipart");
	TCase *tc = tcase_create("multipart");

	tcase_add_test(tc, good_body);
	tcase_add_test(tc, every_split_point);
	tcase_add_test(tc, preamble_and_epilogue_ignored);
	tcase_add_test(tc, several_parts_only_file_kept);
	tcase_add_test(tc, kept_text_fields);
	tcase_add_test(tc, missing_file_field);
	tcase_add_test(tc, empty_file_is_found);
	tcase_add_test(tc, no_filename_parameter);
	tcase_add_test(tc, quoted_filename_escapes);
	tcase_add_test(tc, truncated_bodies);
	tcase_add_test(tc, no_delimiter_at_all);
	tcase_add_test(tc, crlf_variations);
	tcase_add_test(tc, boundary_prefix_in_content_is_an_error);
	tcase_add_test(tc, bad_parts);
	tcase_add_test(tc, size_limit);
	tcase_add_test(tc, other_parts_do_not_count_against_the_limit);
	tcase_add_test(tc, errors_are_sticky);
	tcase_add_test(tc, take_hands_over_the_buffer);
	tcase_add_test(tc, boundary_from_content_type);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *r = srunner_create(suite());
	int failed;

	srunner_run_all(r, CK_NORMAL);
	failed = srunner_ntests_failed(r);
	srunner_free(r);
	return failed ? 1 : 0;
}
