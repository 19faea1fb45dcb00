/* Tests of services/kb_elfcheck.h: small C files compiled with `cc -c`
 * (the worker's flags) at test time, each checked; and malformed objects
 * (truncations, random byte and field mutations of a real one) that must
 * give -EINVAL or a verdict, never a crash (run under the ASan build to
 * see out-of-bounds reads). */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <check.h>
#include <elf.h>
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "kb_elfcheck.h"
#include "kb_check_main.h"

static const char *const exports[] = {"custom_kernel", NULL};
static const struct kb_elfcheck_policy policy = {exports, exports,
						 "submission.c"};

struct obj {
	unsigned char *b;
	size_t len;
};

/* Compiles src with the worker's flags plus extra; the object's bytes. */
static struct obj compile(const char *src, const char *extra)
{
	char dir[] = "/tmp/kb-elfcheck-XXXXXX";
	char path[128], cmd[512];
	struct obj o = {NULL, 0};

	ck_assert_ptr_nonnull(mkdtemp(dir));
	snprintf(path, sizeof path, "%s/submission.c", dir);
	FILE *f = fopen(path, "w");
	ck_assert_ptr_nonnull(f);
	fputs(src, f);
	fclose(f);
	snprintf(cmd, sizeof cmd,
		 "cd %s && cc -O3 -march=native -fopenmp %s -c submission.c "
		 "-o submission.o 2> cc.log || { cat cc.log >&2; exit 1; }",
		 dir, extra ? extra : "");
	ck_assert_msg(system(cmd) == 0, "cc failed for:\n%s", src);
	snprintf(path, sizeof path, "%s/submission.o", dir);
	f = fopen(path, "rb");
	ck_assert_ptr_nonnull(f);
	fseek(f, 0, SEEK_END);
	o.len = (size_t)ftell(f);
	fseek(f, 0, SEEK_SET);
	o.b = malloc(o.len);
	ck_assert_ptr_nonnull(o.b);
	ck_assert_uint_eq(fread(o.b, 1, o.len, f), o.len);
	fclose(f);
	snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
	ck_assert_int_eq(system(cmd), 0);
	return o;
}

/* The verdict for src under policy p. */
static struct kb_elfcheck_result check_src(const char *src, const char *extra,
					   const struct kb_elfcheck_policy *p)
{
	struct obj o = compile(src, extra);
	struct kb_elfcheck_result r;
	char err[256] = "";
	int rc = kb_elfcheck(o.b, o.len, p, &r, err, sizeof err);

	ck_assert_msg(rc == 0, "kb_elfcheck: %d (%s)", rc, err);
	free(o.b);
	return r;
}

#define KERNEL                                                                 \
	"#include <stddef.h>\n"                                                \
	"float custom_kernel(const float *d, size_t n) {\n"                    \
	"  float s = 0; for (size_t i = 0; i < n; i++) s += d[i];\n"           \
	"  return s; }\n"

/* expect(src, bit, substring of the message) */
static void expect(const char *src, unsigned bit, const char *needle)
{
	struct kb_elfcheck_result r = check_src(src, NULL, &policy);

	ck_assert_msg(r.found & bit, "want bit %#x, got %#x (%s) for:\n%s", bit,
		      r.found, r.msg, src);
	ck_assert_msg(strstr(r.msg, needle), "message '%s' lacks '%s'", r.msg,
		      needle);
	ck_assert_msg(strstr(r.msg, "submission.c"), "message '%s'", r.msg);
}

START_TEST(honest_ok)
{
	/* OpenMP, static helpers and file-scope statics are all fine */
	static const char src[] =
		"#include <stddef.h>\n#include <omp.h>\n"
		"static float acc[64];\n"
		"static float part(const float *x, size_t n) {\n"
		"  float s = 0; for (size_t i = 0; i < n; i++) s += x[i];\n"
		"  return s; }\n"
		"float custom_kernel(const float *d, size_t n) {\n"
		"  double t = 0;\n"
		"#pragma omp parallel for reduction(+:t)\n"
		"  for (size_t b = 0; b < n; b += 4096)\n"
		"    t += part(d + b, n - b < 4096 ? n - b : 4096);\n"
		"  acc[0] = (float)t; return acc[0]; }\n";
	struct kb_elfcheck_result r = check_src(src, NULL, &policy);

	ck_assert_msg(r.found == 0, "refused: %s", r.msg);
	ck_assert_str_eq(r.msg, "");
	ck_assert_uint_eq(r.nfindings, 0);
	/* and the problems' own example submissions */
	r = check_src(KERNEL, NULL, &policy);
	ck_assert_msg(r.found == 0, "refused: %s", r.msg);
}
END_TEST

START_TEST(constructor)
{
	expect("static volatile int v; __attribute__((constructor)) static void f(void) { v = 1; }\n" KERNEL,
	       KB_ELFCHECK_CTOR, "constructor");
	/* with a priority: .init_array.NNNNN */
	expect("static volatile int v; __attribute__((constructor(101))) static void f(void) { v = 1; }\n" KERNEL,
	       KB_ELFCHECK_CTOR, ".init_array");
	/* by hand, under another name but with the init_array type */
	expect("static void f(void) {}\n"
	       "__attribute__((used, section(\".mine,\\\"aw\\\",@init_array#\")))"
	       " static void (*p)(void) = f;\n" KERNEL,
	       KB_ELFCHECK_CTOR, "before main");
	/* .preinit_array and code added to .init */
	expect("static void f(void) {}\n"
	       "__attribute__((used, section(\".preinit_array\")))"
	       " static void (*p)(void) = f;\n" KERNEL,
	       KB_ELFCHECK_CTOR, ".preinit_array");
	expect("__asm__(\".section .init,\\\"ax\\\"\\n nop\\n .text\");\n" KERNEL,
	       KB_ELFCHECK_CTOR, ".init");
}
END_TEST

START_TEST(destructor)
{
	expect("static volatile int v; __attribute__((destructor)) static void f(void) { v = 1; }\n" KERNEL,
	       KB_ELFCHECK_DTOR, "destructor");
	expect("__asm__(\".section .fini,\\\"ax\\\"\\n nop\\n .text\");\n" KERNEL,
	       KB_ELFCHECK_DTOR, ".fini");
}
END_TEST

START_TEST(ifunc)
{
	expect("#include <stddef.h>\n"
	       "static float impl(const float *d, size_t n) { (void)d; return (float)n; }\n"
	       "static void *res(void) { return (void *)impl; }\n"
	       "float custom_kernel(const float *d, size_t n) "
	       "__attribute__((ifunc(\"res\")));\n",
	       KB_ELFCHECK_IFUNC, "ifunc");
	/* a local ifunc runs its resolver just the same */
	expect("#include <stddef.h>\n"
	       "static int one(void) { return 1; }\n"
	       "static void *res(void) { return (void *)one; }\n"
	       "static int pick(void) __attribute__((ifunc(\"res\")));\n"
	       "float custom_kernel(const float *d, size_t n) "
	       "{ (void)d; return (float)n * (float)pick(); }\n",
	       KB_ELFCHECK_IFUNC, "'pick'");
}
END_TEST

START_TEST(timing_names)
{
	expect("#include <time.h>\n"
	       "int clock_gettime(clockid_t c, struct timespec *t) "
	       "{ (void)c; t->tv_sec = 0; t->tv_nsec = 0; return 0; }\n" KERNEL,
	       KB_ELFCHECK_DENIED, "'clock_gettime'");
	expect("#include <sys/time.h>\n"
	       "int gettimeofday(struct timeval *t, void *z) "
	       "{ (void)z; t->tv_sec = 0; t->tv_usec = 0; return 0; }\n" KERNEL,
	       KB_ELFCHECK_DENIED, "'gettimeofday'");
	expect("int cudaEventElapsedTime(float *ms, void *a, void *b) "
	       "{ (void)a; (void)b; *ms = 0; return 0; }\n" KERNEL,
	       KB_ELFCHECK_DENIED, "'cudaEventElapsedTime'");
}
END_TEST

START_TEST(harness_names)
{
	expect("int kbh_report_kv(void *r, const char *k, const char *f, ...);\n"
	       "int kbh_report_kv(void *r, const char *k, const char *f, ...) "
	       "{ (void)r; (void)k; (void)f; return 0; }\n" KERNEL,
	       KB_ELFCHECK_DENIED, "'kbh_report_kv'");
	/* weak does not make it any better */
	expect("__attribute__((weak)) int kbh_now_ns(void) { return 0; }\n" KERNEL,
	       KB_ELFCHECK_DENIED, "'kbh_now_ns'");
	/* main, _start and libc's own names */
	expect("int main(void) { return 0; }\n" KERNEL, KB_ELFCHECK_DENIED,
	       "'main'");
	expect("#include <stddef.h>\nvoid *malloc(size_t n) { (void)n; return 0; }\n"
	       KERNEL, KB_ELFCHECK_DENIED, "'malloc'");
	/* referring to the harness's internals */
	expect("#include <stdint.h>\nuint64_t kbh_now_ns(void);\n"
	       "#include <stddef.h>\n"
	       "float custom_kernel(const float *d, size_t n) "
	       "{ (void)d; return (float)(n + kbh_now_ns()); }\n",
	       KB_ELFCHECK_HARNESS, "'kbh_now_ns'");
}
END_TEST

START_TEST(exports_only)
{
	/* a global helper, a global variable, hidden visibility, common */
	expect("float helper(float x) { return x; }\n" KERNEL,
	       KB_ELFCHECK_EXPORT, "declare 'helper' static");
	expect("float table[64];\n" KERNEL, KB_ELFCHECK_EXPORT, "'table'");
	expect("__attribute__((visibility(\"hidden\"))) int strcmp2(void) "
	       "{ return 0; }\n" KERNEL,
	       KB_ELFCHECK_EXPORT, "'strcmp2'");
	struct kb_elfcheck_result r =
		check_src("int shared_counter;\n" KERNEL, "-fcommon", &policy);
	ck_assert_msg(r.found & KB_ELFCHECK_EXPORT, "common symbol: %#x",
		      r.found);
	/* no allow list: only denied names count */
	struct kb_elfcheck_policy open = {NULL, NULL, NULL};
	r = check_src("float helper(float x) { return x; }\n" KERNEL, NULL,
		      &open);
	ck_assert_msg(r.found == 0, "%s", r.msg);
	ck_assert_msg(strstr(r.msg, "the submission") || r.msg[0] == '\0',
		      "%s", r.msg);
	r = check_src("int main(void) { return 0; }\n" KERNEL, NULL, &open);
	ck_assert_uint_eq(r.found, KB_ELFCHECK_DENIED);
	ck_assert_msg(strstr(r.msg, "the submission defines 'main'"), "%s",
		      r.msg);
}
END_TEST

START_TEST(missing_export)
{
	expect("static float custom_kernel(const float *d) { return d[0]; }\n"
	       "float other(const float *d);\n"
	       "float other(const float *d) { return custom_kernel(d); }\n",
	       KB_ELFCHECK_MISSING | KB_ELFCHECK_EXPORT, "");
	struct kb_elfcheck_result r = check_src(
		"int unrelated_but_static;\n", NULL, &policy);
	ck_assert_uint_eq(r.found, KB_ELFCHECK_EXPORT | KB_ELFCHECK_MISSING);
	r = check_src("static int x;\nint *p(void);\nint *p(void) { return &x; }\n",
		      NULL, &(struct kb_elfcheck_policy){exports, exports, NULL});
	ck_assert_msg(strstr(r.msg, "the submission defines the global symbol 'p'"),
		      "%s", r.msg);
}
END_TEST

START_TEST(linker_sections)
{
	expect("__attribute__((used, section(\".interp\"))) static const char "
	       "i[] = \"/tmp/evil\";\n" KERNEL,
	       KB_ELFCHECK_LINKER, ".interp");
}
END_TEST

START_TEST(findings_counted)
{
	struct kb_elfcheck_result r = check_src(
		"static volatile int v; __attribute__((constructor)) static void f(void) { v = 1; }\n"
		"__attribute__((destructor)) static void g(void) { v = 2; }\n"
		"int main(void) { return 0; }\n" KERNEL,
		NULL, &policy);
	ck_assert_uint_eq(r.found, KB_ELFCHECK_CTOR | KB_ELFCHECK_DTOR |
					   KB_ELFCHECK_DENIED);
	ck_assert_uint_ge(r.nfindings, 3);
}
END_TEST

START_TEST(denied_list)
{
	static const char *const yes[] = {"kbh_x", "kbg_main", "kb_log", "main",
					  "clock_gettime", "GOMP_parallel",
					  "omp_get_wtime", "write", "memcmp",
					  "cudaEventRecord", "_init", NULL};
	static const char *const no[] = {"custom_kernel", "kbx", "mainly",
					 "helper", "clock_gettime2", "Write",
					 NULL};

	for (int i = 0; yes[i]; i++)
		ck_assert_msg(kb_elfcheck_denied(yes[i]), "%s", yes[i]);
	for (int i = 0; no[i]; i++)
		ck_assert_msg(!kb_elfcheck_denied(no[i]), "%s", no[i]);
}
END_TEST

/* ---- malformed input ---------------------------------------------------- */

static int run(const unsigned char *b, size_t len)
{
	struct kb_elfcheck_result r;
	char err[256];
	int rc = kb_elfcheck(b, len, &policy, &r, err, sizeof err);

	ck_assert(rc == 0 || rc == -EINVAL);
	if (rc)
		ck_assert(err[0] != '\0');
	return rc;
}

START_TEST(malformed_basics)
{
	struct kb_elfcheck_result r;
	char err[256] = "";
	static const unsigned char junk[] = "#!/bin/sh\necho hi\n";

	ck_assert_int_eq(kb_elfcheck(NULL, 0, NULL, &r, err, sizeof err),
			 -EINVAL);
	ck_assert_int_eq(kb_elfcheck(junk, sizeof junk, NULL, &r, err,
				     sizeof err),
			 -EINVAL);
	ck_assert_str_eq(err, "not an ELF object");

	struct obj o = compile(KERNEL, NULL);
	ck_assert_int_eq(run(o.b, o.len), 0);
	/* 32-bit class, unknown byte order, an executable */
	unsigned char *c = malloc(o.len);
	memcpy(c, o.b, o.len);
	c[EI_CLASS] = ELFCLASS32;
	ck_assert_int_eq(kb_elfcheck(c, o.len, NULL, &r, err, sizeof err),
			 -EINVAL);
	ck_assert_str_eq(err, "not a 64-bit ELF object");
	memcpy(c, o.b, o.len);
	c[EI_DATA] = 7;
	ck_assert_int_eq(run(c, o.len), -EINVAL);
	memcpy(c, o.b, o.len);
	c[offsetof(Elf64_Ehdr, e_type)] = ET_EXEC;
	ck_assert_int_eq(kb_elfcheck(c, o.len, NULL, &r, err, sizeof err),
			 -EINVAL);
	ck_assert_msg(strstr(err, "relocatable"), "%s", err);
	/* every truncation */
	for (size_t n = 0; n < o.len; n++)
		run(o.b, n);
	free(c);
	free(o.b);
}
END_TEST

static uint64_t rnd(uint64_t *s)
{
	uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

/* Overwrites a field of a header with a value chosen to hurt: 0, all ones,
 * just past the end, a large count, or random. */
static void hurt(unsigned char *b, size_t len, size_t off, unsigned size,
		 uint64_t *s)
{
	uint64_t v;

	switch (rnd(s) % 5) {
	case 0:
		v = 0;
		break;
	case 1:
		v = ~0ull;
		break;
	case 2:
		v = len - rnd(s) % 8;
		break;
	case 3:
		v = 1ull << (rnd(s) % 40);
		break;
	default:
		v = rnd(s);
		break;
	}
	if (off + size <= len)
		memcpy(b + off, &v, size); /* little-endian hosts */
}

START_TEST(malformed_fuzz)
{
	struct obj o = compile("static volatile int v; __attribute__((constructor)) static void f(void) { v = 1; }\n"
			       "int helper;\n" KERNEL,
			       NULL);
	unsigned char *c = malloc(o.len);
	uint64_t s = 42;
	unsigned accepted = 0, refused = 0;

	ck_assert_ptr_nonnull(c);
	const Elf64_Ehdr *eh = (const Elf64_Ehdr *)(const void *)o.b;
	uint64_t shoff = eh->e_shoff, shnum = eh->e_shnum;

	for (int it = 0; it < 6000; it++) {
		memcpy(c, o.b, o.len);
		int kind = (int)(rnd(&s) % 3);
		int edits = 1 + (int)(rnd(&s) % 4);

		for (int e = 0; e < edits; e++) {
			if (kind == 0) {
				/* random bytes anywhere */
				c[rnd(&s) % o.len] = (unsigned char)rnd(&s);
			} else if (kind == 1) {
				/* a section header field */
				size_t sh = shoff + (rnd(&s) % shnum) *
							    sizeof(Elf64_Shdr);
				static const size_t f[][2] = {
					{offsetof(Elf64_Shdr, sh_name), 4},
					{offsetof(Elf64_Shdr, sh_type), 4},
					{offsetof(Elf64_Shdr, sh_offset), 8},
					{offsetof(Elf64_Shdr, sh_size), 8},
					{offsetof(Elf64_Shdr, sh_link), 4},
					{offsetof(Elf64_Shdr, sh_entsize), 8}};
				size_t k = rnd(&s) % 6;
				hurt(c, o.len, sh + f[k][0], (unsigned)f[k][1],
				     &s);
			} else {
				/* an ELF header field */
				static const size_t f[][2] = {
					{offsetof(Elf64_Ehdr, e_shoff), 8},
					{offsetof(Elf64_Ehdr, e_shnum), 2},
					{offsetof(Elf64_Ehdr, e_shstrndx), 2},
					{offsetof(Elf64_Ehdr, e_shentsize), 2}};
				size_t k = rnd(&s) % 4;
				hurt(c, o.len, f[k][0], (unsigned)f[k][1], &s);
			}
		}
		size_t len = rnd(&s) % 8 == 0 ? rnd(&s) % (o.len + 1) : o.len;
		if (run(c, len) == 0)
			accepted++;
		else
			refused++;
	}
	/* both outcomes happen: the fuzzer reaches past the header checks */
	ck_assert_uint_gt(accepted, 100);
	ck_assert_uint_gt(refused, 100);
	free(c);
	free(o.b);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("elfcheck");
	TCase *tc = tcase_create("objects");

	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, honest_ok);
	tcase_add_test(tc, constructor);
	tcase_add_test(tc, destructor);
	tcase_add_test(tc, ifunc);
	tcase_add_test(tc, timing_names);
	tcase_add_test(tc, harness_names);
	tcase_add_test(tc, exports_only);
	tcase_add_test(tc, missing_export);
	tcase_add_test(tc, linker_sections);
	tcase_add_test(tc, findings_counted);
	tcase_add_test(tc, denied_list);
	tcase_add_test(tc, malformed_basics);
	tcase_add_test(tc, malformed_fuzz);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return kb_check_run(suite());
}
