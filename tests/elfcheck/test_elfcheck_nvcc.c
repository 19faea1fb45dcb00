/* Tests of kb_elfcheck_nvcc (services/kb_elfcheck.h) on real nvcc objects,
 * compiled at test time with the worker's flags and sealed with
 * problems/harness/cuda/kbg_seal.sh, as the cu builder does:
 *
 *  - every PMPP example (problems/pmpp/<p>/{submission_ok,
 *    submission_wrong,template}.cu, found at run time) passes;
 *  - an honest submission with device, constant and managed variables,
 *    template and namespace kernels passes at other optimisation levels,
 *    with -fPIC, -fno-plt, stack protection and -rdc=true (nvcc's
 *    registration code differs);
 *  - hostile ones are refused with a message naming what runs before main;
 *    two that nvcc itself refuses to compile are shown to fail there;
 *  - edits of a real object (the .init_array relocation moved, retyped or
 *    made symbolic; relocations of the registration function retargeted
 *    or overlapping) and random mutations give a verdict or -EINVAL,
 *    never a crash (run under the ASan build for out-of-bounds reads).
 *
 * Without nvcc the suite prints why and exits 77, which CTest shows as
 * skipped (SKIP_RETURN_CODE), not as passed. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <check.h>
#include <dirent.h>
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

#define SKIP 77
#define PMPP KB_SOURCE_DIR "/problems/pmpp"
#define SEAL KB_SOURCE_DIR "/problems/harness/cuda/kbg_seal.sh"
#define WORKER_FLAGS "-O3 -std=c++17 -lineinfo"
#define MAX_EXAMPLES 256

static const char *nvcc;
static char examples[MAX_EXAMPLES][512]; /* "<problem>/<file>.cu" */
static int nexamples;

static const char *const exports[] = {"custom_kernel", NULL};
static const struct kb_elfcheck_policy policy = {exports, exports,
						 "submission.cu"};

struct obj {
	unsigned char *b;
	size_t len;
};

/* Compiles src (or the file at path, when src is NULL) as submission.cu
 * with flags and the sm_90a gencode, -I inc, and seals it. Returns the
 * shell's status; on 0, *o holds the object's bytes. */
static int nvcc_seal(const char *src, const char *path, const char *flags,
		     const char *inc, struct obj *o)
{
	char dir[] = "/tmp/kb-elfcheck-nvcc-XXXXXX";
	char file[128], cmd[2048];
	FILE *f;
	int rc;

	ck_assert_ptr_nonnull(mkdtemp(dir));
	snprintf(file, sizeof file, "%s/submission.cu", dir);
	if (src) {
		ck_assert_ptr_nonnull((f = fopen(file, "w")));
		fputs(src, f);
		fclose(f);
	} else {
		snprintf(cmd, sizeof cmd, "cp '%s' '%s'", path, file);
		ck_assert_int_eq(system(cmd), 0);
	}
	snprintf(cmd, sizeof cmd,
		 "cd %s && '%s' %s -gencode=arch=compute_90a,code=sm_90a "
		 "-I'%s' -c submission.cu -o submission.o 2> log && sh '%s' "
		 "submission.o custom_kernel 2>> log || { cat log >&2; "
		 "exit 1; }",
		 dir, nvcc, flags, inc ? inc : ".", SEAL);
	rc = system(cmd);
	if (rc == 0) {
		snprintf(file, sizeof file, "%s/submission.o", dir);
		ck_assert_ptr_nonnull((f = fopen(file, "rb")));
		fseek(f, 0, SEEK_END);
		o->len = (size_t)ftell(f);
		fseek(f, 0, SEEK_SET);
		ck_assert_ptr_nonnull((o->b = malloc(o->len)));
		ck_assert_uint_eq(fread(o->b, 1, o->len, f), o->len);
		fclose(f);
	}
	snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
	ck_assert_int_eq(system(cmd), 0);
	return rc;
}

static struct obj compile(const char *src, const char *flags)
{
	struct obj o = {NULL, 0};

	ck_assert_msg(nvcc_seal(src, NULL, flags, NULL, &o) == 0,
		      "nvcc %s failed for:\n%s", flags, src);
	return o;
}

/* The verdict on o (freed). */
static struct kb_elfcheck_result verdict(struct obj o)
{
	struct kb_elfcheck_result r;
	char err[256] = "";
	int rc = kb_elfcheck_nvcc(o.b, o.len, &policy, &r, err, sizeof err);

	ck_assert_msg(rc == 0, "kb_elfcheck_nvcc: %d (%s)", rc, err);
	free(o.b);
	return r;
}

#define KERNEL                                                                 \
	"__global__ void k(float *p) { p[threadIdx.x] = 1.0f; }\n"             \
	"extern \"C\" void custom_kernel(float *p) { k<<<1, 32>>>(p); }\n"

/* ---- what must pass ----------------------------------------------------- */

START_TEST(pmpp_examples_pass)
{
	char path[700], inc[700];
	struct obj o = {NULL, 0};
	struct kb_elfcheck_result r;

	snprintf(path, sizeof path, "%s/%s", PMPP, examples[_i]);
	snprintf(inc, sizeof inc, "%s", path);
	*strrchr(inc, '/') = '\0';
	ck_assert_msg(nvcc_seal(NULL, path, WORKER_FLAGS, inc, &o) == 0,
		      "%s does not build", examples[_i]);
	r = verdict(o);
	ck_assert_msg(r.found == 0, "%s refused: %s", examples[_i], r.msg);
	ck_assert_uint_eq(r.nfindings, 0);
}
END_TEST

static const char honest[] =
	"#include <cstdio>\n#include <vector>\n#include <cuda_fp16.h>\n"
	"__device__ int counter;\n"
	"__constant__ float coef[16];\n"
	"__managed__ int flag;\n"
	"struct P { int x, y; };\n"
	"__device__ P pt;\n"
	"template <typename T> __global__ void scale(T *p, T s)\n"
	"{ p[threadIdx.x] *= s; (void)coef[0]; atomicAdd(&counter, 1); }\n"
	"namespace ns { __global__ void other(float *p) { p[0] = pt.x; } }\n"
	"static std::vector<float> *cache;\n"
	"extern \"C\" void custom_kernel(float *p)\n"
	"{\n"
	"  if (!cache) cache = new std::vector<float>(16);\n"
	"  scale<float><<<1, 32>>>(p, 2.0f);\n"
	"  scale<__half><<<1, 32>>>((__half *)p, __float2half(2.0f));\n"
	"  ns::other<<<1, 1>>>(p);\n"
	"  printf(\"%zu\\n\", cache->size());\n"
	"}\n";

static const char *const honest_flags[] = {
	WORKER_FLAGS,
	"-O0 -std=c++17",
	"-O0 -g -G -std=c++17",
	"-O1 -std=c++17",
	"-O3 -std=c++17 -Xcompiler -fPIC",
	"-O2 -std=c++17 -Xcompiler -fno-plt",
	"-O3 -std=c++17 -Xcompiler -fstack-protector-all",
	"-O3 -std=c++17 -rdc=true",
};

START_TEST(honest_variants_pass)
{
	struct obj o = compile(honest, honest_flags[_i]);
	struct kb_elfcheck_result r;
	char err[256];

	/* It has nvcc's constructor: the C policy refuses it... */
	ck_assert_int_eq(kb_elfcheck(o.b, o.len, &policy, &r, err, sizeof err),
			 0);
	ck_assert_msg(r.found & KB_ELFCHECK_CTOR, "%s: %#x", honest_flags[_i],
		      r.found);
	/* ...and the nvcc policy accepts it. */
	r = verdict(o);
	ck_assert_msg(r.found == 0, "%s: refused: %s", honest_flags[_i], r.msg);
}
END_TEST

/* ---- what must be refused ----------------------------------------------- */

static const struct hostile {
	const char *what, *flags, *src;
	unsigned bit;
	const char *needle;
} hostile[] = {
	{"constructor", WORKER_FLAGS,
	 "#include <unistd.h>\n"
	 "__attribute__((constructor)) static void f(void) { (void)dup(3); }\n",
	 KB_ELFCHECK_CTOR, "defines a constructor (function '_ZL1fv'"},
	{"constructor with a priority", WORKER_FLAGS,
	 "#include <unistd.h>\n"
	 "__attribute__((constructor(101))) static void f(void) "
	 "{ (void)dup(3); }\n",
	 KB_ELFCHECK_CTOR, ".init_array.00101"},
	{"namespace-scope object with a constructor", WORKER_FLAGS,
	 "#include <unistd.h>\n"
	 "struct A { A() { (void)dup(3); } };\nstatic A a;\n",
	 KB_ELFCHECK_CTOR, "_GLOBAL__sub_I_"},
	{"dynamic initialiser", WORKER_FLAGS,
	 "#include <unistd.h>\nstatic int x = dup(3);\n"
	 "int use(void) { return x; }\n",
	 KB_ELFCHECK_CTOR, "namespace-scope objects"},
	{"static object with a destructor", WORKER_FLAGS,
	 "#include <unistd.h>\n"
	 "struct B { ~B() { (void)dup(3); } };\nstatic B b;\n",
	 KB_ELFCHECK_CTOR, "code before main is not allowed"},
	{"<iostream>", WORKER_FLAGS, "#include <iostream>\n", KB_ELFCHECK_CTOR,
	 "<iostream> adds one"},
	{"destructor", WORKER_FLAGS,
	 "#include <unistd.h>\n"
	 "__attribute__((destructor)) static void f(void) { (void)dup(3); }\n",
	 KB_ELFCHECK_DTOR, ".fini_array"},
	{"constructor named like nvcc's", WORKER_FLAGS,
	 "#include <unistd.h>\n"
	 "namespace x { __attribute__((constructor)) static void "
	 "__sti____cudaRegisterAll(void) { (void)dup(3); } }\n",
	 KB_ELFCHECK_CTOR, "'_ZN1xL24__sti____cudaRegisterAllEv'"},
	{"ifunc", WORKER_FLAGS,
	 "static int one(void) { return 1; }\n"
	 "extern \"C\" int (*res(void))(void) { return one; }\n"
	 "static int pick(void) __attribute__((ifunc(\"res\")));\n"
	 "int use(void) { return pick(); }\n",
	 KB_ELFCHECK_IFUNC, "ifunc"},
	{"a CUDA runtime function defined", WORKER_FLAGS,
	 "#include <unistd.h>\n"
	 "extern \"C\" void **__cudaRegisterFatBinary(void *p)\n"
	 "{ (void)dup(3); return (void **)p; }\n",
	 KB_ELFCHECK_CTOR, "defines '__cudaRegisterFatBinary'"},
	{"atexit defined", WORKER_FLAGS,
	 "#include <unistd.h>\n"
	 "extern \"C\" int atexit(void (*f)(void)) throw()\n"
	 "{ (void)f; return (int)dup(3); }\n",
	 KB_ELFCHECK_CTOR, "defines 'atexit'"},
	{"asm label on a CUDA runtime function", WORKER_FLAGS,
	 "extern \"C\" void **__cudaRegisterFatBinary(void *p) "
	 "__asm__(\"fork\");\n",
	 KB_ELFCHECK_CTOR, "calls 'fork'"},
	{"#pragma redefine_extname", WORKER_FLAGS,
	 "#pragma redefine_extname __cudaRegisterFatBinary fork\n",
	 KB_ELFCHECK_CTOR, "calls 'fork'"},
	/* nvcc's registration takes &v with the type's own operator& */
	{"operator& of a __device__ variable's type, inlined", WORKER_FLAGS,
	 "#include <unistd.h>\n"
	 "struct S { int x;\n"
	 "  __host__ __device__ S *operator&() { (void)getpid(); "
	 "return this; } };\n"
	 "__device__ S v;\n",
	 KB_ELFCHECK_CTOR, "calls 'getpid'"},
	{"operator& of a __device__ variable's type, called",
	 "-O0 -std=c++17",
	 "#include <unistd.h>\n"
	 "struct S { int x;\n"
	 "  __host__ __device__ S *operator&() { (void)getpid(); "
	 "return this; } };\n"
	 "__device__ S v;\n",
	 KB_ELFCHECK_CTOR, "calls the submission's own code (_ZN1SadEv)"},
	/* ...and inlined with no call at all: only the machine code shows
	 * it (kb_elfcheck_x86.h) */
	{"inlined operator& making a raw system call", WORKER_FLAGS,
	 "struct S { int x;\n"
	 "  __host__ __device__ __forceinline__ S *operator&() {\n"
	 "#ifndef __CUDA_ARCH__\n"
	 "    long r = 39;\n"
	 "    __asm__ volatile(\"syscall\" : \"+a\"(r) : : \"rcx\", \"r11\", "
	 "\"memory\");\n"
	 "    x = (int)r;\n"
	 "#endif\n"
	 "    return this; } };\n"
	 "__device__ S v;\n",
	 KB_ELFCHECK_CTOR, "does not contain (0f 05)"},
	{"inlined operator& overwriting the return address", WORKER_FLAGS,
	 "struct S { int x;\n"
	 "  __host__ __device__ __forceinline__ S *operator&() {\n"
	 "#ifndef __CUDA_ARCH__\n"
	 "    __asm__ volatile(\"movq $0, 0x1000(%%rsp)\" : : : \"memory\");\n"
	 "#endif\n"
	 "    return this; } };\n"
	 "__device__ S v;\n",
	 KB_ELFCHECK_CTOR, "a store outside the frame"},
	{"inlined operator& storing through a pointer", WORKER_FLAGS,
	 "struct S { int x;\n"
	 "  __host__ __device__ __forceinline__ S *operator&() {\n"
	 "#ifndef __CUDA_ARCH__\n"
	 "    *(volatile long *)(0x400000 + (long)x) = 1;\n"
	 "#endif\n"
	 "    return this; } };\n"
	 "__device__ S v;\n",
	 KB_ELFCHECK_CTOR, "a store outside the frame"},
	{"inlined operator& spinning in a loop", WORKER_FLAGS,
	 "struct S { int x;\n"
	 "  __host__ __device__ __forceinline__ S *operator&() {\n"
	 "#ifndef __CUDA_ARCH__\n"
	 "    for (volatile int i = 0; i < 1000; i++) ;\n"
	 "#endif\n"
	 "    return this; } };\n"
	 "__device__ S v;\n",
	 KB_ELFCHECK_CTOR, "backward"},
	{"inlined operator& calling through a pointer", WORKER_FLAGS,
	 "static void (*volatile hook)(void);\n"
	 "struct S { int x;\n"
	 "  __host__ __device__ __forceinline__ S *operator&() {\n"
	 "#ifndef __CUDA_ARCH__\n"
	 "    hook();\n"
	 "#endif\n"
	 "    return this; } };\n"
	 "__device__ S v;\n",
	 KB_ELFCHECK_CTOR, "indirect call"},
	{"weak operator new", WORKER_FLAGS,
	 "#include <cstdlib>\n"
	 "__attribute__((weak)) void *operator new(std::size_t n) "
	 "{ return malloc(n); }\n",
	 KB_ELFCHECK_DENIED, "'_Znwm'"},
	{"weak C++ function", WORKER_FLAGS,
	 "__attribute__((weak)) int helper(int x) { return x + 1; }\n",
	 KB_ELFCHECK_EXPORT, "'_Z6helperi'"},
	{"a harness name", WORKER_FLAGS,
	 "#include <stdint.h>\n"
	 "extern \"C\" uint64_t kbh_now_ns(void);\n"
	 "__global__ void k2(uint64_t *p, uint64_t t) { *p = t; }\n"
	 "extern \"C\" void custom_kernel2(uint64_t *p) "
	 "{ k2<<<1, 1>>>(p, kbh_now_ns()); }\n",
	 KB_ELFCHECK_HARNESS, "'kbh_now_ns'"},
};

START_TEST(hostile_refused)
{
	const struct hostile *h = &hostile[_i];
	char src[2048];
	struct kb_elfcheck_result r;

	snprintf(src, sizeof src, "%s%s", h->src, KERNEL);
	r = verdict(compile(src, h->flags));
	ck_assert_msg(r.found & h->bit, "%s: want %#x, got %#x (%s)", h->what,
		      h->bit, r.found, r.msg);
	ck_assert_msg(strstr(r.msg, h->needle), "%s: message '%s' lacks '%s'",
		      h->what, r.msg, h->needle);
	ck_assert_msg(strstr(r.msg, "submission.cu"), "%s: '%s'", h->what,
		      r.msg);
}
END_TEST

/* Two ways to pass for nvcc's function that nvcc (or the assembler)
 * refuses before the check could see them. */
START_TEST(nvcc_refuses_a_second_sti)
{
	static const char *const srcs[] = {
		"extern \"C\" __attribute__((constructor)) void "
		"__sti____cudaRegisterAll(void) {}\n" KERNEL,
		"__attribute__((constructor, section(\".text.evil\"))) static "
		"void f(void) __asm__(\"_ZL24__sti____cudaRegisterAllv\");\n"
		"static void f(void) { __asm__ volatile(\"nop\"); }\n" KERNEL,
	};
	struct obj o = {NULL, 0};

	ck_assert_int_ne(nvcc_seal(srcs[_i], NULL, WORKER_FLAGS, NULL, &o), 0);
	ck_assert_ptr_null(o.b);
}
END_TEST

/* ---- edits of a real object --------------------------------------------- */

/* Little-endian hosts: the object's structures read in place. */
static Elf64_Shdr *shdr(const struct obj *o, size_t i)
{
	const Elf64_Ehdr *eh = (const Elf64_Ehdr *)(const void *)o->b;

	return (Elf64_Shdr *)(void *)(o->b + eh->e_shoff +
				      i * sizeof(Elf64_Shdr));
}

static size_t nsections(const struct obj *o)
{
	return ((const Elf64_Ehdr *)(const void *)o->b)->e_shnum;
}

static size_t section(const struct obj *o, const char *name)
{
	const Elf64_Ehdr *eh = (const Elf64_Ehdr *)(const void *)o->b;
	const char *names =
		(const char *)o->b + shdr(o, eh->e_shstrndx)->sh_offset;

	for (size_t i = 1; i < nsections(o); i++)
		if (strcmp(names + shdr(o, i)->sh_name, name) == 0)
			return i;
	ck_abort_msg("no section %s", name);
	return 0;
}

static Elf64_Sym *symbols(const struct obj *o, size_t *n)
{
	const Elf64_Shdr *st = shdr(o, section(o, ".symtab"));

	*n = st->sh_size / sizeof(Elf64_Sym);
	return (Elf64_Sym *)(void *)(o->b + st->sh_offset);
}

static size_t symbol(const struct obj *o, const char *name)
{
	size_t n;
	const Elf64_Sym *s = symbols(o, &n);
	const char *str = (const char *)o->b +
			  shdr(o, shdr(o, section(o, ".symtab"))->sh_link)
				  ->sh_offset;

	for (size_t i = 1; i < n; i++)
		if (strcmp(str + s[i].st_name, name) == 0)
			return i;
	ck_abort_msg("no symbol %s", name);
	return 0;
}

static Elf64_Rela *relas(const struct obj *o, const char *sec, size_t *n)
{
	const Elf64_Shdr *rs = shdr(o, section(o, sec));

	*n = rs->sh_size / sizeof(Elf64_Rela);
	return (Elf64_Rela *)(void *)(o->b + rs->sh_offset);
}

static struct obj base; /* vectoradd's sealed submission_ok.o */

static struct obj copy_base(void)
{
	struct obj o = {malloc(base.len), base.len};

	ck_assert_ptr_nonnull(o.b);
	memcpy(o.b, base.b, base.len);
	return o;
}

static void load_base(void)
{
	if (base.b)
		return;
	ck_assert_int_eq(nvcc_seal(NULL, PMPP "/vectoradd/submission_ok.cu",
				   WORKER_FLAGS, PMPP "/vectoradd", &base),
			 0);
}

/* The verdict on an edited copy, which must be refused with needle. */
static void expect_edit(struct obj o, const char *what, const char *needle)
{
	struct kb_elfcheck_result r = verdict(o);

	ck_assert_msg(r.found & KB_ELFCHECK_CTOR, "%s: accepted (%#x)", what,
		      r.found);
	ck_assert_msg(strstr(r.msg, needle), "%s: '%s' lacks '%s'", what,
		      r.msg, needle);
}

START_TEST(edited_objects)
{
	struct obj o;
	Elf64_Rela *ra;
	size_t n, sti, i;

	load_base();
	o = copy_base();
	ck_assert_uint_eq(verdict(o).found, 0);

	/* nvcc's .init_array relocation: .text.startup + 0. By the function's
	 * own symbol instead, it is still nvcc's. */
	o = copy_base();
	ra = relas(&o, ".rela.init_array", &n);
	ck_assert_uint_eq(n, 1);
	sti = symbol(&o, "_ZL24__sti____cudaRegisterAllv");
	ra[0].r_info = ELF64_R_INFO(sti, R_X86_64_64);
	ra[0].r_addend = 0;
	ck_assert_uint_eq(verdict(o).found, 0);

	/* Past its first byte. */
	o = copy_base();
	relas(&o, ".rela.init_array", &n)[0].r_addend += 1;
	expect_edit(o, "addend + 1", "defines a constructor (an .init_array");

	/* Another type. */
	o = copy_base();
	ra = relas(&o, ".rela.init_array", &n);
	ra[0].r_info = ELF64_R_INFO(ELF64_R_SYM(ra[0].r_info), R_X86_64_PC64);
	expect_edit(o, "R_X86_64_PC64", "relocation nvcc does not make");

	/* A second entry with no relocation: a fixed address. */
	o = copy_base();
	shdr(&o, section(&o, ".init_array"))->sh_size = 16;
	expect_edit(o, "two entries", "fixed address");

	/* The function's symbol made an object's: not nvcc's. */
	o = copy_base();
	sti = symbol(&o, "_ZL24__sti____cudaRegisterAllv");
	symbols(&o, &n)[sti].st_info = ELF64_ST_INFO(STB_LOCAL, STT_OBJECT);
	expect_edit(o, "sti not a function", "a name of nvcc's start-up code");

	/* Its call of __cudaRegisterFunction made a call of another
	 * undefined function, then of the submission's own code. */
	o = copy_base();
	ra = relas(&o, ".rela.text.startup", &n);
	for (i = 0; i < n; i++)
		if (ELF64_R_SYM(ra[i].r_info) ==
		    symbol(&o, "__cudaRegisterFunction"))
			break;
	ck_assert_uint_lt(i, n);
	ra[i].r_info = ELF64_R_INFO(symbol(&o, "__cxa_guard_acquire"),
				    R_X86_64_PLT32);
	expect_edit(o, "other callee", "calls '__cxa_guard_acquire'");
	o = copy_base();
	ra = relas(&o, ".rela.text.startup", &n);
	ra[i].r_info = ELF64_R_INFO(symbol(&o, "custom_kernel"),
				    R_X86_64_PLT32);
	expect_edit(o, "own callee", "own code (custom_kernel)");

	/* Two relocations on the same bytes. */
	o = copy_base();
	ra = relas(&o, ".rela.text.startup", &n);
	ra[1].r_offset = ra[0].r_offset + 2;
	expect_edit(o, "overlap", "overlapping relocations");
}
END_TEST

/* 62 random bits from a fixed seed: the same edits every run. */
static uint64_t rnd(unsigned short xs[3])
{
	return (uint64_t)nrand48(xs) << 31 ^ (uint64_t)nrand48(xs);
}

/* Random bytes anywhere, or random fields of the relocations that only
 * the nvcc policy reads: a verdict or -EINVAL, never a crash. */
START_TEST(malformed_fuzz)
{
	static const char *const rsecs[] = {".rela.init_array",
					    ".rela.text.startup", ".rela.text"};
	size_t at[3], n[3]; /* where the base's relocations are, how many */
	unsigned short s[3] = {7, 7, 7};
	unsigned accepted = 0, refused = 0, invalid = 0;

	load_base();
	for (size_t k = 0; k < 3; k++) {
		const void *p = relas(&base, rsecs[k], &n[k]);

		at[k] = (size_t)((const unsigned char *)p - base.b);
	}
	for (int it = 0; it < 4000; it++) {
		struct obj o = copy_base();
		struct kb_elfcheck_result r;
		char err[256] = "";

		for (int e = 0, edits = 1 + (int)(rnd(s) % 3); e < edits;
		     e++) {
			const size_t k = rnd(s) % 3;
			Elf64_Rela x;
			unsigned char *p =
				o.b + at[k] + rnd(s) % n[k] * sizeof(x);
			const uint64_t v = rnd(s) % 4 == 0 ? rnd(s)
							    : rnd(s) % 64;

			if (rnd(s) % 3 == 0) {
				o.b[rnd(s) % o.len] = (unsigned char)rnd(s);
				continue;
			}
			memcpy(&x, p, sizeof(x));
			switch (rnd(s) % 4) {
			case 0:
				x.r_offset = v;
				break;
			case 1:
				x.r_info = ELF64_R_INFO(v, ELF64_R_TYPE(
								   x.r_info));
				break;
			case 2:
				x.r_info = ELF64_R_INFO(ELF64_R_SYM(x.r_info),
							(uint32_t)v);
				break;
			default:
				x.r_addend = (int64_t)v;
				break;
			}
			memcpy(p, &x, sizeof(x));
		}
		int rc = kb_elfcheck_nvcc(o.b, o.len, &policy, &r, err,
					  sizeof err);

		ck_assert(rc == 0 || rc == -EINVAL);
		if (rc) {
			ck_assert(err[0] != '\0');
			invalid++;
		} else if (r.found) {
			refused++;
		} else {
			accepted++;
		}
		free(o.b);
	}
	/* all three outcomes: the edits reach the relocation checks */
	ck_assert_uint_gt(accepted, 50);
	ck_assert_uint_gt(refused, 50);
	ck_assert_uint_gt(invalid, 50);
}
END_TEST

/* ---- the suite ---------------------------------------------------------- */

static int by_name(const void *a, const void *b)
{
	return strcmp(a, b);
}

/* Every problems/pmpp/<p>/{submission_ok,submission_wrong,template}.cu. */
static void find_examples(void)
{
	static const char *const files[] = {"submission_ok.cu",
					    "submission_wrong.cu",
					    "template.cu"};
	DIR *d = opendir(PMPP);
	struct dirent *e;

	while (d && (e = readdir(d)))
		for (size_t i = 0; e->d_name[0] != '.' && i < 3; i++) {
			char path[1024];

			snprintf(path, sizeof path, "%s/%s/%s", PMPP, e->d_name,
				 files[i]);
			if (nexamples < MAX_EXAMPLES && access(path, R_OK) == 0)
				snprintf(examples[nexamples++],
					 sizeof examples[0], "%s/%s",
					 e->d_name, files[i]);
		}
	if (d)
		closedir(d);
	qsort(examples, (size_t)nexamples, sizeof examples[0], by_name);
}

static Suite *suite(void)
{
	Suite *s = suite_create("elfcheck_nvcc");
	TCase *tc = tcase_create("nvcc");

	tcase_set_timeout(tc, 300);
	tcase_add_loop_test(tc, pmpp_examples_pass, 0, nexamples);
	tcase_add_loop_test(tc, honest_variants_pass, 0,
			    (int)(sizeof honest_flags /
				  sizeof honest_flags[0]));
	tcase_add_loop_test(tc, hostile_refused, 0,
			    (int)(sizeof hostile / sizeof hostile[0]));
	tcase_add_loop_test(tc, nvcc_refuses_a_second_sti, 0, 2);
	tcase_add_test(tc, edited_objects);
	tcase_add_test(tc, malformed_fuzz);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{

	nvcc = getenv("KB_NVCC") ? getenv("KB_NVCC") : KB_TEST_NVCC;
	if (!nvcc[0] || access(nvcc, X_OK) != 0) {
		printf("SKIP elfcheck_nvcc: no nvcc (\"%s\"; set KB_NVCC or "
		       "install the CUDA toolkit)\n", nvcc);
		return SKIP;
	}
	find_examples();
	if (nexamples < 3) {
		printf("elfcheck_nvcc: no PMPP examples under %s\n", PMPP);
		return EXIT_FAILURE;
	}
	printf("elfcheck_nvcc: %s, %d PMPP examples\n", nvcc, nexamples);
	return kb_check_run(suite());
}
