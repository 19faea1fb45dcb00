/* Tests of the machine-code check of nvcc's registration functions
 * (services/kb_elfcheck_x86.h) on hand-assembled x86-64: what nvcc emits
 * passes, each way out of the frame or the runtime is refused with its
 * reason, and random bytes give a verdict, never a crash. No compiler
 * needed (test_elfcheck_nvcc.c covers real nvcc objects). */
#include <check.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "kb_elfcheck_x86.h"
#include "kb_check_main.h"

#define N(a) (sizeof(a) / sizeof((a)[0]))

/* Checks code with the given relocations and callees; returns the result
 * and leaves the reason in why. */
static char why[256];

/* The function is in section SEC; callees are offsets in it. */
#define SEC 1

static int check(const unsigned char *code, size_t n,
		 const struct kb__x86_reloc *rel, size_t nrel,
		 const uint64_t *callees, size_t ncallees, uint64_t base)
{
	struct kb__x86_place places[8];
	ck_assert_uint_le(ncallees, 8);
	for (size_t i = 0; i < ncallees; i++)
		places[i] = (struct kb__x86_place){SEC, callees[i]};
	struct kb__x86_fn fn = {.code = code,
				.n = n,
				.sec = SEC,
				.base = base,
				.callees = ncallees ? places : NULL,
				.ncallees = ncallees,
				.rel = rel,
				.nrel = nrel};
	return kb__x86_check(&fn, why, sizeof why);
}

#define REL(o, k) {.off = (o), .kind = (k), .width = 4}
#define CALLREL(o) REL(o, KB__X86_REL_CALL)
#define OTHREL(o) REL(o, KB__X86_REL_OTHER)
#define BSSREL(o, t, size)                                                     \
	{.off = (o), .kind = KB__X86_REL_STORE, .target = (t), .sec = 2,       \
	 .sec_size = (size), .width = 4}

/* nvcc -O3 __sti____cudaRegisterAll of one kernel (objdump of a PMPP
 * example), relocation fields zero as in the object. */
static const unsigned char sti_o3[] = {
	0x48, 0x83, 0xec, 0x08,			  /* sub $8,%rsp */
	0x48, 0x8d, 0x3d, 0, 0, 0, 0,		  /* lea fatbin(%rip),%rdi */
	0xe8, 0, 0, 0, 0,			  /* call __cudaRegisterFatBinary */
	0x6a, 0x00,				  /* push $0 */
	0x45, 0x31, 0xc9,			  /* xor %r9d,%r9d */
	0x41, 0xb8, 0xff, 0xff, 0xff, 0xff,	  /* mov $-1,%r8d */
	0x6a, 0x00,				  /* push $0 */
	0x48, 0x8d, 0x15, 0, 0, 0, 0,		  /* lea name(%rip),%rdx */
	0x48, 0x89, 0xc7,			  /* mov %rax,%rdi */
	0x48, 0x8d, 0x35, 0, 0, 0, 0,		  /* lea kernel(%rip),%rsi */
	0x6a, 0x00,				  /* push $0 */
	0x48, 0x89, 0xd1,			  /* mov %rdx,%rcx */
	0x6a, 0x00,				  /* push $0 */
	0x48, 0x89, 0x05, 0, 0, 0, 0,		  /* mov %rax,handle(%rip) */
	0xe8, 0, 0, 0, 0,			  /* call __cudaRegisterFunction */
	0x48, 0x8b, 0x3d, 0, 0, 0, 0,		  /* mov handle(%rip),%rdi */
	0x48, 0x83, 0xc4, 0x20,			  /* add $0x20,%rsp */
	0xe8, 0, 0, 0, 0,			  /* call ...FatBinaryEnd */
	0x48, 0x8d, 0x3d, 0, 0, 0, 0,		  /* lea unregister(%rip),%rdi */
	0x48, 0x83, 0xc4, 0x08,			  /* add $8,%rsp */
	0xe9, 0, 0, 0, 0,			  /* jmp atexit */
};
static const struct kb__x86_reloc sti_o3_rel[] = {
	OTHREL(7), CALLREL(12), OTHREL(32), OTHREL(42),
	BSSREL(56, 0x14 - 4, 0x40), CALLREL(61), OTHREL(68), CALLREL(77),
	OTHREL(84), CALLREL(93),
};

START_TEST(nvcc_o3_passes)
{
	ck_assert_msg(check(sti_o3, sizeof sti_o3, sti_o3_rel, N(sti_o3_rel),
			    NULL, 0, 0) == 0,
		      "refused: %s", why);
}
END_TEST

/* nvcc -O0: a frame, the callback's address through a frame slot and a
 * call through a register; the function starts at 0x464 of its section,
 * the callback at 0x402. */
static const unsigned char sti_o0[] = {
	0x55,			      /* push %rbp */
	0x48, 0x89, 0xe5,	      /* mov %rsp,%rbp */
	0x48, 0x83, 0xec, 0x10,	      /* sub $16,%rsp */
	0x48, 0x8d, 0x05, 0x79, 0xff, 0xff, 0xff, /* lea cb(%rip),%rax */
	0x48, 0x89, 0x45, 0xf8,	      /* mov %rax,-8(%rbp) */
	0x48, 0x8b, 0x55, 0xf8,	      /* mov -8(%rbp),%rdx */
	0xff, 0xd2,		      /* call *%rdx */
	0x90,			      /* nop */
	0xc9,			      /* leave */
	0xc3,			      /* ret */
};

START_TEST(nvcc_o0_passes)
{
	/* lea at 0x464 + 8, 7 bytes: next = 0x473, 0x473 - 0x87 = 0x3ec...
	 * computed below from the bytes instead of by hand */
	uint64_t cb = 0x464 + 15 + (uint64_t)(int64_t)(int32_t)0xffffff79;
	ck_assert_msg(check(sti_o0, sizeof sti_o0, NULL, 0, &cb, 1, 0x464) ==
			      0,
		      "refused: %s", why);
	/* the same call through a register to any other address */
	uint64_t other = cb + 16;
	ck_assert_int_eq(check(sti_o0, sizeof sti_o0, NULL, 0, &other, 1,
			       0x464),
			 1);
	ck_assert_msg(strstr(why, "indirect call"), "%s", why);
}
END_TEST

static const struct {
	const char *what;
	unsigned char code[32];
	size_t n;
	const char *needle;
} refused[] = {
	{"syscall", {0x0f, 0x05, 0xc3}, 3, "(0f 05)"},
	{"int 0x80", {0xcd, 0x80, 0xc3}, 3, "(cd)"},
	{"store over the return address",
	 {0x48, 0xc7, 0x04, 0x24, 0, 0, 0, 0, 0xc3}, 9, "outside the frame"},
	{"store above a small frame",
	 {0x48, 0x83, 0xec, 0x08, 0x48, 0x89, 0x44, 0x24, 0x08, 0x48, 0x83,
	  0xc4, 0x08, 0xc3},
	 14, "outside the frame"},
	{"store through another register", {0x48, 0x89, 0x07, 0xc3}, 4,
	 "outside the frame"},
	{"store with an index", {0x48, 0x89, 0x04, 0x0c, 0xc3}, 5,
	 "outside the frame"},
	{"rip-relative store without a relocation",
	 {0x48, 0x89, 0x05, 0, 0, 0, 0, 0xc3}, 8, "outside the frame"},
	{"%fs store", {0x64, 0x48, 0x89, 0x04, 0x25, 0x28, 0, 0, 0, 0xc3}, 10,
	 "outside the frame"},
	{"pop above the frame", {0x58, 0xc3}, 2, "pop above"},
	{"rsp moved above the frame", {0x48, 0x83, 0xc4, 0x08, 0xc3}, 5,
	 "above the frame"},
	{"mov to rsp", {0x48, 0x89, 0xc4, 0xc3}, 4, "write to rsp"},
	{"lea to rsp", {0x48, 0x8d, 0x64, 0x24, 0x08, 0xc3}, 6,
	 "write to rsp"},
	{"and on rsp", {0x48, 0x83, 0xe4, 0xf0, 0xc3}, 5, "write to rsp"},
	{"ret with the stack not restored", {0x50, 0xc3}, 2, "not restored"},
	{"leave without a frame", {0xc9, 0xc3}, 2, "without a frame"},
	{"call without a relocation", {0xe8, 0, 0, 0, 0, 0xc3}, 6,
	 "other than the CUDA runtime"},
	{"indirect call", {0xff, 0xd0, 0xc3}, 3, "indirect call"},
	{"indirect jump", {0xff, 0xe0}, 2, "indirect call or jump"},
	{"backward jump", {0x90, 0xeb, 0xfd}, 3, "backward"},
	{"jump out of the function", {0xeb, 0x10, 0xc3}, 3,
	 "out of the function"},
	{"jump into an instruction", {0x74, 0x01, 0x48, 0x31, 0xc0, 0xc3}, 6,
	 "middle of an instruction"},
	{"paths meeting with different stacks",
	 {0x74, 0x01, 0x50, 0x58, 0xc3}, 5, "different stacks"},
	{"running off the end", {0x90, 0x90}, 2, "off its end"},
	{"code no path reaches", {0xc3, 0x90}, 2, "no path reaches"},
	{"lock prefix", {0xf0, 0x48, 0x01, 0x07, 0xc3}, 5, "(f0)"},
	{"string instruction", {0xf3, 0xaa, 0xc3}, 3, "prefixed"},
	{"cut short", {0x48, 0x8b}, 2, "cut short"},
	/* push %ax moves rsp by 2: counted as 8, the store after it would
	 * reach the return address */
	{"16-bit push", {0x66, 0x50, 0x48, 0x89, 0x04, 0x24, 0x66, 0x58, 0xc3},
	 9, "16-bit"},
	{"16-bit ret", {0x66, 0xc3}, 2, "16-bit"},
};

START_TEST(hostile_refused)
{
	ck_assert_int_eq(check(refused[_i].code, refused[_i].n, NULL, 0,
			       NULL, 0, 0),
			 1);
	ck_assert_msg(strstr(why, refused[_i].needle),
		      "%s: reason '%s' lacks '%s'", refused[_i].what, why,
		      refused[_i].needle);
}
END_TEST

/* A relocation must be an instruction's field: one two bytes into a lea's
 * displacement would change, at link time, the address the decoder
 * thought it knew. */
START_TEST(misplaced_relocation_refused)
{
	static const unsigned char lea[] = {0x48, 0x8d, 0x05, 0, 0, 0, 0,
					    0xc3};
	struct kb__x86_reloc at_field = OTHREL(3);
	struct kb__x86_reloc inside = OTHREL(5);
	struct kb__x86_reloc wide = {.off = 3, .kind = KB__X86_REL_OTHER, .width = 8};

	ck_assert_msg(check(lea, sizeof lea, &at_field, 1, NULL, 0, 0) == 0,
		      "%s", why);
	ck_assert_int_eq(check(lea, sizeof lea, &inside, 1, NULL, 0, 0), 1);
	ck_assert_msg(strstr(why, "relocation"), "%s", why);
	ck_assert_int_eq(check(lea, sizeof lea, &wide, 1, NULL, 0, 0), 1);
}
END_TEST

/* A tail jump into the runtime, direct or through the GOT, leaves the
 * function for good: the stack must be as the function found it. */
START_TEST(tail_jump_needs_restored_stack)
{
	static const unsigned char jmp[] = {0xe9, 0, 0, 0, 0};
	static const unsigned char push_jmp[] = {0x50, 0xe9, 0, 0, 0, 0};
	static const unsigned char got[] = {0xff, 0x25, 0, 0, 0, 0};
	static const unsigned char push_got[] = {0x50, 0xff, 0x25, 0, 0, 0, 0};
	struct kb__x86_reloc at1 = CALLREL(1), at2 = CALLREL(2),
			     at3 = CALLREL(3);

	ck_assert_msg(check(jmp, sizeof jmp, &at1, 1, NULL, 0, 0) == 0, "%s",
		      why);
	ck_assert_msg(check(got, sizeof got, &at2, 1, NULL, 0, 0) == 0, "%s",
		      why);
	ck_assert_int_eq(check(push_jmp, sizeof push_jmp, &at2, 1, NULL, 0, 0),
			 1);
	ck_assert_msg(strstr(why, "tail jump"), "%s", why);
	ck_assert_int_eq(check(push_got, sizeof push_got, &at3, 1, NULL, 0, 0),
			 1);
	ck_assert_msg(strstr(why, "tail jump"), "%s", why);
}
END_TEST

/* The -O0 pattern with a push between the slot's store and its load: once
 * rsp is back at rbp (the pop) the push overwrites the slot, so the
 * register loaded from it is no longer known to hold the callback. */
START_TEST(stale_slot_refused)
{
	static const unsigned char code[] = {
		0x55,				    /* push %rbp */
		0x48, 0x89, 0xe5,		    /* mov %rsp,%rbp */
		0x50,				    /* push %rax */
		0x48, 0x8d, 0x05, 0, 0, 0, 0,	    /* lea cb(%rip),%rax */
		0x48, 0x89, 0x45, 0xf8,		    /* mov %rax,-8(%rbp) */
		0x59,				    /* pop %rcx */
		0x48, 0x8d, 0x0d, 0x40, 0, 0, 0,    /* lea elsewhere,%rcx */
		0x51,				    /* push %rcx: over -8(%rbp) */
		0x48, 0x8b, 0x55, 0xf8,		    /* mov -8(%rbp),%rdx */
		0xff, 0xd2,			    /* call *%rdx */
		0x59,				    /* pop %rcx */
		0xc9,				    /* leave */
		0xc3,				    /* ret */
	};
	uint64_t cb = 12; /* lea's next instruction + 0 */

	ck_assert_int_eq(check(code, sizeof code, NULL, 0, &cb, 1, 0), 1);
	ck_assert_msg(strstr(why, "indirect call"), "%s", why);
}
END_TEST

/* nvcc -O3 -rdc=true: the registration tail-calls the linked binary's
 * registration with nvcc's callback in rdi and nvcc's dummy in rcx, both
 * in .text (section SEC) while this function is elsewhere (.text.startup,
 * section 3); the linked binary calls them, so they must be nvcc's. */
START_TEST(rdc_linked_binary)
{
	static const unsigned char code[] = {
		0x48, 0x8d, 0x0d, 0, 0, 0, 0, /* lea .text-4(%rip),%rcx */
		0x48, 0x8d, 0x15, 0, 0, 0, 0, /* lea module_id(%rip),%rdx */
		0x48, 0x8d, 0x35, 0, 0, 0, 0, /* lea fatbinwrap(%rip),%rsi */
		0x48, 0x8d, 0x3d, 0, 0, 0, 0, /* lea .text+0xc(%rip),%rdi */
		0xe9, 0, 0, 0, 0,	      /* jmp __cudaRegisterLinked... */
	};
	struct kb__x86_reloc rel[] = {
		{.off = 3, .kind = KB__X86_REL_OTHER, .target = -4, .sec = SEC,
		 .width = 4},
		OTHREL(10), OTHREL(17),
		{.off = 24, .kind = KB__X86_REL_OTHER, .target = 0xc,
		 .sec = SEC, .width = 4},
		REL(29, KB__X86_REL_LINKED),
	};
	struct kb__x86_place places[] = {{SEC, 0x0}, {SEC, 0x10}};
	struct kb__x86_fn fn = {.code = code,
				.n = sizeof code,
				.sec = 3,
				.callees = places,
				.ncallees = 2,
				.rel = rel,
				.nrel = sizeof rel / sizeof rel[0]};

	ck_assert_msg(kb__x86_check(&fn, why, sizeof why) == 0, "%s", why);
	/* the callback pointed anywhere else (say the submission's own
	 * function) */
	rel[3].target = 0x40;
	ck_assert_int_eq(kb__x86_check(&fn, why, sizeof why), 1);
	ck_assert_msg(strstr(why, "other than the CUDA runtime"), "%s", why);
	/* or rcx left unknown */
	rel[3].target = 0xc;
	rel[0].sec = 0;
	ck_assert_int_eq(kb__x86_check(&fn, why, sizeof why), 1);
}
END_TEST

START_TEST(store_bounds)
{
	/* mov %rax,sym(%rip): the address is S + A + 4 past the field */
	static const unsigned char st[] = {0x48, 0x89, 0x05, 0, 0, 0, 0, 0xc3};
	struct kb__x86_reloc in = BSSREL(3, 0x10 - 4, 0x18);
	struct kb__x86_reloc edge = BSSREL(3, 0x14 - 4, 0x18);
	struct kb__x86_reloc other = {.off = 3, .kind = KB__X86_REL_OTHER, .sec_size = 0x100, .width = 4};

	ck_assert_msg(check(st, sizeof st, &in, 1, NULL, 0, 0) == 0, "%s",
		      why);
	ck_assert_int_eq(check(st, sizeof st, &edge, 1, NULL, 0, 0), 1);
	ck_assert_int_eq(check(st, sizeof st, &other, 1, NULL, 0, 0), 1);
}
END_TEST

START_TEST(stack_protector_passes)
{
	/* mov %fs:0x28,%rax; mov %rax,8(%rsp) in a 16-byte frame; the
	 * epilogue compares and calls __stack_chk_fail on a mismatch */
	static const unsigned char sp[] = {
		0x48, 0x83, 0xec, 0x18,				/* sub $24,%rsp */
		0x64, 0x48, 0x8b, 0x04, 0x25, 0x28, 0, 0, 0,	/* mov %fs:.. */
		0x48, 0x89, 0x44, 0x24, 0x08,			/* mov %rax,8(%rsp) */
		0x31, 0xc0,					/* xor %eax,%eax */
		0x48, 0x8b, 0x44, 0x24, 0x08,			/* mov 8(%rsp),%rax */
		0x64, 0x48, 0x2b, 0x04, 0x25, 0x28, 0, 0, 0,	/* sub %fs:.. */
		0x75, 0x05,					/* jne +5 */
		0x48, 0x83, 0xc4, 0x18,				/* add $24,%rsp */
		0xc3,						/* ret */
		0xe8, 0, 0, 0, 0,				/* call chk_fail */
	};
	struct kb__x86_reloc fail = REL(42, KB__X86_REL_NORETURN);
	struct kb__x86_reloc plain = CALLREL(42);

	ck_assert_msg(check(sp, sizeof sp, &fail, 1, NULL, 0, 0) == 0, "%s",
		      why);
	/* a call that returns would run off the end */
	ck_assert_int_eq(check(sp, sizeof sp, &plain, 1, NULL, 0, 0), 1);
}
END_TEST

START_TEST(random_bytes_never_crash)
{
	unsigned char b[64];
	unsigned seed = 12345;
	struct kb__x86_reloc rel[4];
	uint64_t callee = 7;
	int ok = 0;

	for (int it = 0; it < 200000; it++) {
		size_t n = 1 + (size_t)(rand_r(&seed) % (int)sizeof b);
		for (size_t i = 0; i < n; i++)
			b[i] = (unsigned char)rand_r(&seed);
		for (size_t i = 0; i < N(rel); i++) {
			rel[i].off = (uint64_t)(rand_r(&seed) % 70);
			rel[i].kind = (enum kb__x86_rel)(rand_r(&seed) % 5);
			rel[i].sec = (uint64_t)(rand_r(&seed) % 3);
			rel[i].target = rand_r(&seed) % 64 - 8;
			rel[i].sec_size = (uint64_t)(rand_r(&seed) % 64);
			rel[i].width = rand_r(&seed) % 2 ? 4 : 8;
		}
		int rc = check(b, n, rel, N(rel), &callee, 1,
			       (uint64_t)(rand_r(&seed) % 16));
		ck_assert(rc == 0 || rc == 1);
		ok += rc == 0;
	}
	/* mostly refused, as random code should be */
	ck_assert_int_lt(ok, 200000 / 10);
	ck_assert_int_eq(check(NULL, 1, NULL, 0, NULL, 0, 0), -1);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("elfcheck_x86");
	TCase *tc = tcase_create("x86");

	tcase_add_test(tc, nvcc_o3_passes);
	tcase_add_test(tc, nvcc_o0_passes);
	tcase_add_loop_test(tc, hostile_refused, 0, (int)N(refused));
	tcase_add_test(tc, misplaced_relocation_refused);
	tcase_add_test(tc, tail_jump_needs_restored_stack);
	tcase_add_test(tc, stale_slot_refused);
	tcase_add_test(tc, rdc_linked_binary);
	tcase_add_test(tc, store_bounds);
	tcase_add_test(tc, stack_protector_passes);
	tcase_add_test(tc, random_bytes_never_crash);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return kb_check_run(suite());
}
