/* kb_elfcheck_x86: the machine-code half of kb_elfcheck_nvcc (internal to
 * kb_elfcheck.c; kb__ names).
 *
 * Why: nvcc's registration functions run before main, in the harness's
 * trusted process, and take &v of every __device__ variable with the
 * type's own operator&. Inlined there, a user's operator& leaves no
 * relocation for the relocation check to see: its body is plain
 * instructions (a raw syscall, a store over the return address). So the
 * bodies of those functions are decoded, and only what nvcc's
 * registration code is made of is accepted; anything else, or anything
 * the decoder does not know, is refused (fail closed):
 *
 *   - register moves and arithmetic, lea, loads from anywhere, nops,
 *     endbr64, compare and test;
 *   - push and pop, add/sub of a constant to rsp, `mov %rsp,%rbp` and
 *     leave, tracked so that the stack depth is known at every
 *     instruction: never below the entry depth (nothing above the frame
 *     is popped or overwritten), every store to [rsp+d] or [rbp-d] inside
 *     the frame, ret only at depth 0;
 *   - stores only to the frame and, rip-relative, to a writable NOBITS
 *     section of the object (nvcc's fat binary handle), in bounds;
 *   - calls and jumps through a relocation the caller has approved (the
 *     CUDA runtime), tail jumps only at depth 0; local jumps only forward,
 *     to an instruction start, reaching it with the same stack state;
 *   - a call of one of nvcc's own functions (kb_elfcheck.c checks their
 *     bodies the same way), directly or through a register holding the
 *     address the code itself took (what nvcc emits at -O0);
 *   - with -rdc, a call of __cudaRegisterLinkedBinary_* only with nvcc's
 *     own functions as its two callbacks (it calls them).
 *
 * No syscall, int, other indirect call or jump, string
 * instruction, store through another register, write to rsp other than
 * the above, or backward jump (so no loop) is accepted.
 *
 * Thread-safety: pure, reentrant. */
#ifndef KB_ELFCHECK_X86_H
#define KB_ELFCHECK_X86_H

#include <stddef.h>
#include <stdint.h>

enum kb__x86_rel {
	KB__X86_REL_CALL,     /* may be called or jumped to (the runtime) */
	KB__X86_REL_LINKED,   /* may be called or jumped to if rdi and rcx
			       * hold nvcc's own functions: -rdc's
			       * __cudaRegisterLinkedBinary_*, which calls
			       * the callbacks it is given */
	KB__X86_REL_NORETURN, /* may be called, and never returns
			       * (__stack_chk_fail) */
	KB__X86_REL_STORE,    /* a writable NOBITS section: may be stored to */
	KB__X86_REL_OTHER,    /* may be taken the address of or loaded from */
};

/* A relocation field inside the function. Every one must be exactly an
 * instruction's displacement, branch offset or immediate of its width
 * (else the bytes the decoder reads are not the ones that run). */
struct kb__x86_reloc {
	uint64_t off;	    /* field offset from the function's start */
	enum kb__x86_rel kind;
	int64_t target;	    /* symbol offset in its section + addend */
	uint64_t sec;	    /* that section's index; 0 when undefined */
	uint64_t sec_size;  /* REL_STORE: the section's size */
	unsigned width;	    /* bytes the relocation writes: 4 or 8 */
};

/* A function of nvcc's own, by section index and offset. */
struct kb__x86_place {
	uint64_t sec, off;
};

struct kb__x86_fn {
	const unsigned char *code; /* the function's bytes */
	size_t n;
	uint64_t sec;  /* its section's index */
	uint64_t base; /* its offset in its section */
	/* nvcc's other functions, which it may call (nvcc at -O0 calls them
	 * instead of inlining them): with a direct call, or through a
	 * register that holds an address taken by a rip-relative lea of one
	 * of them (with or without a relocation), directly or through an
	 * 8-byte slot of the rbp frame; and which it may hand to
	 * REL_LINKED. */
	const struct kb__x86_place *callees;
	size_t ncallees;
	const struct kb__x86_reloc *rel; /* relocation fields inside it */
	size_t nrel;
};

/* Decodes fn as one x86-64 function. Returns 0 when every instruction is
 * accepted, 1 when one is not (why gets a phrase naming it and its
 * offset), -1 on bad arguments. */
int kb__x86_check(const struct kb__x86_fn *fn, char *why, size_t why_size);

#endif
