/* kb_util: UTF-8, hashing, random hex, constant-time compare, clocks,
 * whole-file I/O, kb_buf and kb_truncate. */
#include <check.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "kb_util.h"
#include "kb_check_main.h"

/* Substring checks that print both strings when they fail. */
#define ck_assert_contains(hay, needle)                                        \
	ck_assert_msg(strstr((hay), (needle)) != NULL,                         \
		      "'%s' does not contain '%s'", (hay), (needle))
#define ck_assert_not_contains(hay, needle)                                    \
	ck_assert_msg(strstr((hay), (needle)) == NULL, "'%s' contains '%s'",   \
		      (hay), (needle))

#define VALID(lit) kb_utf8_valid(lit, sizeof(lit) - 1)

START_TEST(utf8_accepts_well_formed)
{
	ck_assert_int_eq(kb_utf8_valid("", 0), 1);
	ck_assert_int_eq(kb_utf8_valid(NULL, 0), 1);
	ck_assert_int_eq(VALID("plain ascii\n\t~"), 1);
	ck_assert_int_eq(VALID("\x7F"), 1);             /* DEL, last 1-byte */
	ck_assert_int_eq(VALID("\xC2\x80"), 1);         /* U+0080 */
	ck_assert_int_eq(VALID("\xDF\xBF"), 1);         /* U+07FF */
	ck_assert_int_eq(VALID("\xE0\xA0\x80"), 1);     /* U+0800 */
	ck_assert_int_eq(VALID("\xED\x9F\xBF"), 1);     /* U+D7FF */
	ck_assert_int_eq(VALID("\xEE\x80\x80"), 1);     /* U+E000 */
	ck_assert_int_eq(VALID("\xEF\xBF\xBF"), 1);     /* U+FFFF */
	ck_assert_int_eq(VALID("\xF0\x90\x80\x80"), 1); /* U+10000 */
	ck_assert_int_eq(VALID("\xF4\x8F\xBF\xBF"), 1); /* U+10FFFF */
	ck_assert_int_eq(
		VALID("gr\xC3\xBC\xC3\x9F \xE2\x82\xAC \xF0\x9F\x9A\x80"), 1);
}
END_TEST

START_TEST(utf8_rejects_malformed)
{
	ck_assert_int_eq(VALID("a\0b"), 0); /* NUL is not text */
	ck_assert_int_eq(VALID("\x80"), 0); /* lone continuation */
	ck_assert_int_eq(VALID("\xBF"), 0);
	ck_assert_int_eq(VALID("\xC0\x80"), 0);         /* overlong NUL */
	ck_assert_int_eq(VALID("\xC1\xBF"), 0);         /* overlong 7F */
	ck_assert_int_eq(VALID("\xE0\x9F\xBF"), 0);     /* overlong 7FF */
	ck_assert_int_eq(VALID("\xF0\x8F\xBF\xBF"), 0); /* overlong FFFF */
	ck_assert_int_eq(VALID("\xED\xA0\x80"), 0);     /* U+D800 */
	ck_assert_int_eq(VALID("\xED\xBF\xBF"), 0);     /* U+DFFF */
	ck_assert_int_eq(VALID("\xF4\x90\x80\x80"), 0); /* U+110000 */
	ck_assert_int_eq(VALID("\xF5\x80\x80\x80"), 0);
	ck_assert_int_eq(VALID("\xFF"), 0);
	ck_assert_int_eq(VALID("\xFE"), 0);
	ck_assert_int_eq(VALID("\xC3"), 0); /* truncated */
	ck_assert_int_eq(VALID("\xE2\x82"), 0);
	ck_assert_int_eq(VALID("\xF0\x9F\x9A"), 0);
	ck_assert_int_eq(VALID("\xE2\x28\xA1"), 0);     /* bad 2nd byte */
	ck_assert_int_eq(VALID("\xE2\x82\x28"), 0);     /* bad 3rd byte */
	ck_assert_int_eq(VALID("\xF0\x9F\x9A\x28"), 0); /* bad 4th byte */
	ck_assert_int_eq(VALID("ok\xC3"), 0);           /* bad at the end */
	/* The length is respected: the valid prefix alone passes. */
	ck_assert_int_eq(kb_utf8_valid("ok\xC3", 2), 1);
}
END_TEST

START_TEST(sha256_known_vectors)
{
	char out[65];

	kb_sha256_hex("", 0, out);
	ck_assert_str_eq(out, "e3b0c44298fc1c149afbf4c8996fb924"
			      "27ae41e4649b934ca495991b7852b855");
	kb_sha256_hex("abc", 3, out);
	ck_assert_str_eq(out, "ba7816bf8f01cfea414140de5dae2223"
			      "b00361a396177a9cb410ff61f20015ad");
}
END_TEST

START_TEST(random_hex_shape)
{
	char a[2 * 40 + 1], b[2 * 40 + 1];

	ck_assert_int_eq(kb_util_init(), 0);
	ck_assert_int_eq(kb_util_init(), 0); /* idempotent */
	memset(a, 'X', sizeof(a));
	kb_random_hex(a, 40); /* more than one internal chunk */
	kb_random_hex(b, 40);
	ck_assert_uint_eq(strlen(a), 80);
	ck_assert_uint_eq(strspn(a, "0123456789abcdef"), 80);
	ck_assert_str_ne(a, b);
	kb_random_hex(a, 0);
	ck_assert_str_eq(a, "");
}
END_TEST

START_TEST(secure_streq_cases)
{
	ck_assert_int_eq(kb_secure_streq("token-123", "token-123"), 1);
	ck_assert_int_eq(kb_secure_streq("", ""), 1);
	ck_assert_int_eq(kb_secure_streq("token-123", "token-124"), 0);
	ck_assert_int_eq(kb_secure_streq("token", "token-123"), 0);
	ck_assert_int_eq(kb_secure_streq("token-123", "token"), 0);
	ck_assert_int_eq(kb_secure_streq("", "x"), 0);
	ck_assert_int_eq(kb_secure_streq(NULL, "x"), 0);
	ck_assert_int_eq(kb_secure_streq("x", NULL), 0);
	ck_assert_int_eq(kb_secure_streq(NULL, NULL), 0);
}
END_TEST

static double mono_ref_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

START_TEST(clocks_move)
{
	int64_t ms = kb_now_ms();
	double r0, a, r1, b;

	/* After 2020-01-01 and before 2100-01-01. */
	ck_assert_int_gt(ms, INT64_C(1577836800000));
	ck_assert_int_lt(ms, INT64_C(4102444800000));
	/* kb_mono_s is CLOCK_MONOTONIC in seconds: read between two readings
	 * of that clock, whatever the load between them (1 us of slack for
	 * the double's rounding). */
	r0 = mono_ref_s();
	a = kb_mono_s();
	r1 = mono_ref_s();
	ck_assert_msg(a >= r0 - 1e-6 && a <= r1 + 1e-6,
		      "%.9f not in [%.9f, %.9f]", a, r0, r1);
	usleep(20000);
	b = kb_mono_s();
	ck_assert_double_ge(b - a, 0.015);
}
END_TEST

static char tmpdir[64];

static void mk_tmpdir(void)
{
	snprintf(tmpdir, sizeof(tmpdir), "/tmp/kb-pure-XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(tmpdir));
}

START_TEST(file_roundtrip_and_mode)
{
	char path[128], *data = NULL;
	size_t len = 99;
	struct stat st;

	mk_tmpdir();
	snprintf(path, sizeof(path), "%s/f", tmpdir);
	ck_assert_int_eq(kb_write_file(path, "hello\0world", 11, 0640), 0);
	ck_assert_int_eq(stat(path, &st), 0);
	ck_assert_int_eq(st.st_mode & 0777, 0640);
	ck_assert_int_eq(kb_read_file(path, 1024, &data, &len), 0);
	ck_assert_uint_eq(len, 11);
	ck_assert_int_eq(memcmp(data, "hello\0world", 12), 0); /* + NUL */
	free(data);

	/* Rewriting truncates and applies the new mode exactly. */
	ck_assert_int_eq(kb_write_file(path, "x", 1, 0600), 0);
	ck_assert_int_eq(stat(path, &st), 0);
	ck_assert_int_eq(st.st_mode & 0777, 0600);
	ck_assert_int_eq(kb_read_file(path, 1, &data, &len), 0);
	ck_assert_str_eq(data, "x");
	ck_assert_uint_eq(len, 1);
	free(data);

	/* Empty file. */
	ck_assert_int_eq(kb_write_file(path, NULL, 0, 0600), 0);
	ck_assert_int_eq(kb_read_file(path, 0, &data, &len), 0);
	ck_assert_str_eq(data, "");
	ck_assert_uint_eq(len, 0);
	free(data);
	unlink(path);
	rmdir(tmpdir);
}
END_TEST

START_TEST(file_errors)
{
	char path[128], *data = (char *)1;
	size_t len;
	char big[10000];

	mk_tmpdir();
	snprintf(path, sizeof(path), "%s/big", tmpdir);
	memset(big, 'a', sizeof(big));
	ck_assert_int_eq(kb_write_file(path, big, sizeof(big), 0600), 0);
	ck_assert_int_eq(kb_read_file(path, sizeof(big) - 1, &data, &len),
			 -EFBIG);
	ck_assert_ptr_null(data);
	ck_assert_int_eq(kb_read_file(path, sizeof(big), &data, &len), 0);
	ck_assert_uint_eq(len, sizeof(big));
	free(data);
	ck_assert_int_eq(kb_read_file(path, SIZE_MAX, &data, &len), 0);
	free(data);
	unlink(path);

	snprintf(path, sizeof(path), "%s/missing", tmpdir);
	ck_assert_int_eq(kb_read_file(path, 100, &data, &len), -ENOENT);
	snprintf(path, sizeof(path), "%s/no/such/dir", tmpdir);
	ck_assert_int_eq(kb_write_file(path, "x", 1, 0600), -ENOENT);
	rmdir(tmpdir);
}
END_TEST

START_TEST(proc_file_without_size)
{
	char *data;
	size_t len;

	/* st_size is 0 for procfs files; reading must not trust it. */
	ck_assert_int_eq(
		kb_read_file("/proc/self/status", 1 << 20, &data, &len), 0);
	ck_assert_uint_gt(len, 0);
	ck_assert_contains(data, "Name:");
	free(data);
}
END_TEST

START_TEST(buf_append_and_printf)
{
	struct kb_buf b = {0};

	ck_assert_int_eq(kb_buf_append(&b, "", 0), 0);
	ck_assert_str_eq(b.data, "");
	ck_assert_int_eq(kb_buf_append(&b, "ab", 2), 0);
	ck_assert_int_eq(kb_buf_printf(&b, "-%d-%s", 42, "x"), 0);
	ck_assert_str_eq(b.data, "ab-42-x");
	ck_assert_uint_eq(b.len, 7);
	/* Grows past the first allocation in one printf. */
	ck_assert_int_eq(kb_buf_printf(&b, "%0300d", 7), 0);
	ck_assert_uint_eq(b.len, 307);
	ck_assert_int_eq(b.data[306], '7');
	ck_assert_int_eq(b.data[307], '\0');
	ck_assert_uint_ge(b.cap, 308);
	kb_buf_free(&b);
	ck_assert_ptr_null(b.data);
	ck_assert_uint_eq(b.len, 0);
	kb_buf_free(NULL);

	/* printf on an empty buffer. */
	ck_assert_int_eq(kb_buf_printf(&b, "%s", "only"), 0);
	ck_assert_str_eq(b.data, "only");
	kb_buf_free(&b);
}
END_TEST

START_TEST(truncate_fits)
{
	char *s = kb_truncate("hello", 5, 5);

	ck_assert_str_eq(s, "hello");
	free(s);
	s = kb_truncate(NULL, 0, 0);
	ck_assert_str_eq(s, "");
	free(s);
}
END_TEST

START_TEST(truncate_ascii)
{
	char *s = kb_truncate("hello world", 11, 5);

	ck_assert_str_eq(s, "hello\n[... 6 bytes truncated]");
	free(s);
	s = kb_truncate("abc", 3, 0);
	ck_assert_str_eq(s, "\n[... 3 bytes truncated]");
	free(s);
}
END_TEST

START_TEST(truncate_on_boundary)
{
	/* "a€b": a, E2 82 AC, b (5 bytes). */
	const char *t = "a\xE2\x82\xAC"
			"b";
	char *s;

	/* Cutting after 1..3 bytes of € moves back before it. */
	for (size_t max = 1; max <= 3; max++) {
		s = kb_truncate(t, 5, max);
		ck_assert_str_eq(s, "a\n[... 4 bytes truncated]");
		free(s);
	}
	s = kb_truncate(t, 5, 4); /* right after € */
	ck_assert_str_eq(s, "a\xE2\x82\xAC\n[... 1 bytes truncated]");
	free(s);
	/* A 4-byte sequence (rocket) cut after 3 of its bytes. */
	s = kb_truncate("\xF0\x9F\x9A\x80z", 5, 3);
	ck_assert_str_eq(s, "\n[... 5 bytes truncated]");
	free(s);
	/* Invalid input: at most 3 bytes are given back. */
	s = kb_truncate("\x80\x80\x80\x80\x80", 5, 4);
	ck_assert_str_eq(s, "\x80\n[... 4 bytes truncated]");
	free(s);
}
END_TEST

/* Paths of an untrusted problem source (issue 30): folded lexically, never
 * above the root. */
START_TEST(path_beneath_folds_and_confines)
{
	static const struct {
		const char *base, *rel, *out;
		int rc;
	} c[] = {
		{"", "a/b", "a/b", 0},
		{"set/p", "../eval.py", "set/eval.py", 0},
		{"set/p", "./x//y/", "set/p/x/y", 0},
		{"set/p", "../..", "", 0},
		{"set/p", "../../../etc/passwd", NULL, -EXDEV},
		{"", "..", NULL, -EXDEV},
		{"a", "b/../../..", NULL, -EXDEV},
		{"", "/etc/passwd", NULL, -EINVAL},
		{"/abs", "x", NULL, -EINVAL},
		{"", "", NULL, -EINVAL},
	};
	char out[64];

	for (size_t i = 0; i < sizeof(c) / sizeof(c[0]); i++) {
		int rc = kb_path_beneath(c[i].base, c[i].rel, out, sizeof(out));
		ck_assert_msg(rc == c[i].rc, "%s + %s: %d, want %d", c[i].base,
			      c[i].rel, rc, c[i].rc);
		if (rc == 0)
			ck_assert_str_eq(out, c[i].out);
	}
	ck_assert_int_eq(kb_path_beneath("", "abcdef", out, 4), -ENAMETOOLONG);
}
END_TEST

START_TEST(u64_strict_decimals)
{
	uint64_t v = 7;

	ck_assert_int_eq(kb_parse_u64("0", &v), 0);
	ck_assert_uint_eq(v, 0);
	ck_assert_int_eq(kb_parse_u64("18446744073709551615", &v), 0);
	ck_assert_uint_eq(v, UINT64_MAX);
	ck_assert_int_eq(kb_parse_u64("18446744073709551616", &v), -ERANGE);
	ck_assert_int_eq(kb_parse_u64("01", &v), -EINVAL);
	ck_assert_int_eq(kb_parse_u64("+1", &v), -EINVAL);
	ck_assert_int_eq(kb_parse_u64("", &v), -EINVAL);
	ck_assert_int_eq(kb_parse_u64(NULL, &v), -EINVAL);
	ck_assert_int_eq(kb_parse_u64("12a", &v), -EINVAL);
	ck_assert_int_eq(kb_parse_u64(" 1", &v), -EINVAL);
	ck_assert_uint_eq(v, UINT64_MAX); /* untouched on error */
	/* The digits variant takes leading zeros and nothing else more. */
	ck_assert_int_eq(kb_parse_u64_digits("007", &v), 0);
	ck_assert_uint_eq(v, 7);
	ck_assert_int_eq(kb_parse_u64_digits("0", &v), 0);
	ck_assert_uint_eq(v, 0);
	ck_assert_int_eq(kb_parse_u64_digits("018446744073709551615", &v), 0);
	ck_assert_uint_eq(v, UINT64_MAX);
	ck_assert_int_eq(kb_parse_u64_digits("18446744073709551616", &v),
			 -ERANGE);
	ck_assert_int_eq(kb_parse_u64_digits("", &v), -EINVAL);
	ck_assert_int_eq(kb_parse_u64_digits("-1", &v), -EINVAL);
	ck_assert_int_eq(kb_parse_u64_digits(NULL, &v), -EINVAL);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("util");
	TCase *tc = tcase_create("util");

	tcase_add_test(tc, utf8_accepts_well_formed);
	tcase_add_test(tc, utf8_rejects_malformed);
	tcase_add_test(tc, sha256_known_vectors);
	tcase_add_test(tc, random_hex_shape);
	tcase_add_test(tc, secure_streq_cases);
	tcase_add_test(tc, clocks_move);
	tcase_add_test(tc, file_roundtrip_and_mode);
	tcase_add_test(tc, file_errors);
	tcase_add_test(tc, proc_file_without_size);
	tcase_add_test(tc, buf_append_and_printf);
	tcase_add_test(tc, truncate_fits);
	tcase_add_test(tc, truncate_ascii);
	tcase_add_test(tc, truncate_on_boundary);
	tcase_add_test(tc, path_beneath_folds_and_confines);
	tcase_add_test(tc, u64_strict_decimals);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return kb_check_run(suite());
}
