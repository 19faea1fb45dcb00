/* kb_elfcheck_x86: see kb_elfcheck_x86.h for what is accepted and why.
 *
 * One pass in address order. The stack state (depth below the entry rsp,
 * and whether rbp holds a frame base) is carried along the fall-through
 * path; a forward jump records the state it leaves with at its target,
 * and the pass checks that the target is an instruction start reached
 * with that same state. Since no jump goes backward, every path is seen
 * in this one pass, and code that no path reaches is refused rather than
 * guessed at. */
#include "kb_elfcheck_x86.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define X_MAX_TARGETS 256

enum { R_SP = 4, R_BP = 5, B_NONE = -1, B_RIP = -2 };

struct frame {
	int64_t depth;	   /* bytes below the entry rsp (the return address) */
	int rbp_frame;	   /* rbp == rsp as it was at rbp_depth */
	int64_t rbp_depth;
};

struct target {
	uint64_t at;
	struct frame f;
	int reached;
};

/* What a register or frame slot is known to hold: the address of a
 * function, by section and offset (for calls through a register and the
 * callbacks handed to REL_LINKED). */
struct tag {
	int known;
	uint64_t sec, addr; /* section index, offset in it */
};

#define X_SLOTS 16

struct x86 {
	const unsigned char *c;
	size_t n;
	const struct kb__x86_fn *fn;
	const struct kb__x86_reloc *rel;
	size_t nrel;
	unsigned char *placed; /* rel[i] sits on a field of its width */
	struct tag reg[16];
	struct {
		int used;
		int64_t disp; /* [rbp + disp], 8 bytes */
		struct tag t;
	} slot[X_SLOTS];
	char *why;
	size_t why_size;
	struct target t[X_MAX_TARGETS];
	size_t nt;
	struct frame f;
	int live; /* the current instruction is reached by fall-through */
	int fs;	  /* the current instruction has an %fs override */
};

struct modrm {
	unsigned mod, reg, rm; /* reg and rm with their REX bits */
	int mem;	       /* a memory operand (mod != 3) */
	int base, index;       /* register numbers, B_NONE or B_RIP */
	int64_t disp;
	size_t disp_off; /* offset of a 4-byte displacement, or 0 */
	size_t len;	 /* bytes: modrm, sib, displacement */
};

static int refuse(struct x86 *x, size_t at, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static int refuse(struct x86 *x, size_t at, const char *fmt, ...)
{
	char what[160];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(what, sizeof what, fmt, ap);
	va_end(ap);
	snprintf(x->why, x->why_size, "%s at +%#zx", what, at);
	return 1;
}

static int64_t rd_signed(const unsigned char *p, unsigned size)
{
	if (size == 1)
		return (int8_t)p[0];
	if (size == 2)
		return (int16_t)(p[0] | p[1] << 8);
	return (int32_t)((uint32_t)p[0] | (uint32_t)p[1] << 8 |
			 (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24);
}

/* Decodes the ModRM byte at `at` (and SIB, displacement). 0, or -1 when
 * it runs past the end. */
static int rd_modrm(const struct x86 *x, size_t at, unsigned rex,
		    struct modrm *m)
{
	unsigned b, dsize = 0;

	if (at >= x->n)
		return -1;
	b = x->c[at];
	memset(m, 0, sizeof *m);
	m->mod = b >> 6;
	m->reg = ((b >> 3) & 7) | (rex & 4 ? 8 : 0);
	m->rm = (b & 7) | (rex & 1 ? 8 : 0);
	m->len = 1;
	m->base = m->index = B_NONE;
	m->mem = m->mod != 3;
	if (!m->mem)
		return 0;
	if ((b & 7) == 4) {
		unsigned s, idx;

		if (at + 1 >= x->n)
			return -1;
		s = x->c[at + 1];
		m->len = 2;
		idx = ((s >> 3) & 7) | (rex & 2 ? 8 : 0);
		m->index = idx == R_SP ? B_NONE : (int)idx;
		if ((s & 7) == 5 && m->mod == 0) {
			m->base = B_NONE;
			dsize = 4;
		} else {
			m->base = (int)((s & 7) | (rex & 1 ? 8 : 0));
		}
	} else if ((b & 7) == 5 && m->mod == 0) {
		m->base = B_RIP;
		dsize = 4;
	} else {
		m->base = (int)m->rm;
	}
	if (m->mod == 1)
		dsize = 1;
	else if (m->mod == 2)
		dsize = 4;
	if (at + m->len + dsize > x->n)
		return -1;
	if (dsize) {
		m->disp = rd_signed(x->c + at + m->len, dsize);
		if (dsize == 4)
			m->disp_off = at + m->len;
		m->len += dsize;
	}
	return 0;
}

static const struct kb__x86_reloc *reloc_at(const struct x86 *x, size_t off)
{
	for (size_t i = 0; i < x->nrel; i++)
		if (x->rel[i].off == off)
			return &x->rel[i];
	return NULL;
}

/* The instruction has a field (displacement, branch offset, immediate)
 * of width bytes at off: a relocation there is in its place. */
static void field(struct x86 *x, size_t off, unsigned width)
{
	for (size_t i = 0; i < x->nrel; i++)
		if (x->rel[i].off == off && x->rel[i].width == width)
			x->placed[i] = 1;
}

static void forget_slots(struct x86 *x)
{
	memset(x->slot, 0, sizeof x->slot);
}

static void forget_all(struct x86 *x)
{
	memset(x->reg, 0, sizeof x->reg);
	memset(x->slot, 0, sizeof x->slot);
}

/* After a call: the caller-saved registers hold anything. */
static void forget_scratch(struct x86 *x)
{
	static const unsigned r[] = {0, 1, 2, 6, 7, 8, 9, 10, 11};
	for (size_t i = 0; i < sizeof r / sizeof r[0]; i++)
		x->reg[r[i]].known = 0;
}

/* A store of size bytes to m: the frame slots it touches are forgotten
 * (all of them for a store not relative to rbp). */
static void forget_stored(struct x86 *x, const struct modrm *m, unsigned size)
{
	for (int i = 0; i < X_SLOTS; i++)
		if (x->slot[i].used &&
		    (m->base != R_BP ||
		     (m->disp < x->slot[i].disp + 8 &&
		      x->slot[i].disp < m->disp + (int64_t)size)))
			x->slot[i].used = 0;
}

/* The tag of the 8-byte slot at [rbp + disp], or an unknown one. */
static struct tag slot_get(const struct x86 *x, int64_t disp)
{
	static const struct tag none;
	for (int i = 0; i < X_SLOTS; i++)
		if (x->slot[i].used && x->slot[i].disp == disp)
			return x->slot[i].t;
	return none;
}

static void slot_put(struct x86 *x, int64_t disp, struct tag t)
{
	for (int i = 0; i < X_SLOTS; i++)
		if (!x->slot[i].used) {
			x->slot[i].used = 1;
			x->slot[i].disp = disp;
			x->slot[i].t = t;
			return;
		}
}

static int callee_ok(const struct x86 *x, struct tag t)
{
	if (!t.known)
		return 0;
	for (size_t i = 0; i < x->fn->ncallees; i++)
		if (x->fn->callees[i].sec == t.sec &&
		    x->fn->callees[i].off == t.addr)
			return 1;
	return 0;
}

/* A store of size bytes to m, the instruction ending at next. */
static int store_ok(const struct x86 *x, const struct modrm *m,
		    unsigned size, size_t next)
{
	const struct kb__x86_reloc *r;
	int64_t ea;

	if (m->index != B_NONE || x->fs)
		return 0;
	if (m->base == R_SP)
		return m->disp >= 0 && m->disp + (int64_t)size <= x->f.depth;
	if (m->base == R_BP)
		return x->f.rbp_frame && m->disp + (int64_t)size <= 0;
	if (m->base != B_RIP || !m->disp_off)
		return 0;
	r = reloc_at(x, m->disp_off);
	if (!r || r->kind != KB__X86_REL_STORE)
		return 0;
	/* field = S + A - P, so the address is next + field = S + A +
	 * (next - P), an offset in the relocation's section */
	ea = r->target + (int64_t)(next - m->disp_off);
	return ea >= 0 && (uint64_t)ea + size <= r->sec_size;
}

/* The instruction writes register reg (size bytes). 0 refuses. from_rsp:
 * the value is rsp itself (`mov %rsp,%rbp`). */
static int write_reg(struct x86 *x, unsigned reg, unsigned size, int rex,
		     int from_rsp)
{
	if (size == 1 && !rex && reg >= 4 && reg < 8) {
		x->reg[reg - 4].known = 0; /* ah, ch, dh, bh */
		return 1;
	}
	x->reg[reg & 15].known = 0;
	if (reg == R_SP)
		return 0;
	if (reg == R_BP) {
		x->f.rbp_frame = from_rsp && size == 8;
		x->f.rbp_depth = x->f.depth;
	}
	return 1;
}

/* Two paths meet with the same stack (rbp's depth matters only while it
 * holds a frame). */
static int same_frame(const struct frame *a, const struct frame *b)
{
	return a->depth == b->depth && a->rbp_frame == b->rbp_frame &&
	       (!a->rbp_frame || a->rbp_depth == b->rbp_depth);
}

/* Records a local jump from the instruction at `at` to dest (relative to
 * the function's start). 0, or 1 with why set. */
static int jump_to(struct x86 *x, size_t at, int64_t dest)
{
	if (dest <= (int64_t)at || (uint64_t)dest >= x->n)
		return refuse(x, at, "a jump %s",
			      dest <= (int64_t)at ? "backward (a loop?)"
						  : "out of the function");
	for (size_t i = 0; i < x->nt; i++)
		if (x->t[i].at == (uint64_t)dest) {
			if (!same_frame(&x->t[i].f, &x->f))
				return refuse(x, at,
					      "jumps reaching one place with "
					      "different stacks");
			return 0;
		}
	if (x->nt == X_MAX_TARGETS)
		return refuse(x, at, "too many jumps");
	x->t[x->nt].at = (uint64_t)dest;
	x->t[x->nt].f = x->f;
	x->t[x->nt].reached = 0;
	x->nt++;
	return 0;
}

/* At the start of the instruction at `at`: joins the paths that jump here
 * with the fall-through path. */
static int arrive(struct x86 *x, size_t at)
{
	for (size_t i = 0; i < x->nt; i++) {
		if (x->t[i].at != at)
			continue;
		x->t[i].reached = 1;
		forget_all(x);
		if (!x->live) {
			x->f = x->t[i].f;
			x->live = 1;
		} else if (!same_frame(&x->t[i].f, &x->f)) {
			return refuse(x, at, "a jump and the code before it "
					     "reaching one place with "
					     "different stacks");
		}
	}
	if (!x->live)
		return refuse(x, at, "code that no path reaches");
	return 0;
}

/* A call or jump through the relocation at field offset off: 0 not
 * allowed, 1 the runtime, 2 the runtime and it never returns. */
static int via_runtime(const struct x86 *x, size_t off)
{
	const struct kb__x86_reloc *r = reloc_at(x, off);
	if (!r)
		return 0;
	if (r->kind == KB__X86_REL_LINKED)
		/* rdi and rcx: the callbacks it will call */
		return callee_ok(x, x->reg[7]) && callee_ok(x, x->reg[1]);
	return r->kind == KB__X86_REL_CALL ? 1
	       : r->kind == KB__X86_REL_NORETURN ? 2
						 : 0;
}

/* After a call through the runtime (v from via_runtime) or of nvcc's own
 * function (v 1: it returns). */
static void called(struct x86 *x, int v)
{
	forget_scratch(x);
	forget_slots(x);
	if (v == 2)
		x->live = 0;
}

/* A call, or (jump set) a tail jump, through the runtime: v from
 * via_runtime. A tail jump must leave the stack as the function found
 * it. 0, or 1 with why set. */
static int runtime_transfer(struct x86 *x, size_t start, int v, int jump)
{
	if (!jump) {
		called(x, v);
		return 0;
	}
	if (x->f.depth != 0)
		return refuse(x, start,
			      "a tail jump with the stack not restored");
	x->live = 0;
	return 0;
}

/* ALU operations "op r/m, r" and "op r, r/m" of the 0x00-0x3f block that
 * nvcc's code may use: add, or, and, sub, xor, cmp. */
static int alu_op(unsigned op)
{
	unsigned row = op >> 3, col = op & 7;
	return (row == 0 || row == 1 || row == 4 || row == 5 || row == 6 ||
		row == 7) &&
	       col <= 3;
}

/* One instruction at *pat; advances *pat. 0, or 1 with why set. */
static int step(struct x86 *x, size_t *pat)
{
	const size_t start = *pat;
	size_t at = start;
	unsigned rex = 0, op, size;
	int o16 = 0, seg = 0, rep = 0;
	struct modrm m;

	/* %fs is only read from (the stack protector's canary, fs:0x28);
	 * store_ok refuses any store with it. */
	x->fs = 0;
	for (;;) {
		if (at >= x->n || at - start >= 14)
			return refuse(x, start, "an instruction cut short");
		op = x->c[at];
		if (op == 0x66) /* repeated in long nops */
			o16 = 1;
		else if ((op == 0x2e || op == 0x3e) && !seg)
			seg = 1;
		else if (op == 0xf3 && !rep)
			rep = 1;
		else if (op == 0x64 && !x->fs)
			x->fs = 1;
		else
			break;
		at++;
	}
	if (op >= 0x40 && op <= 0x4f) {
		rex = op;
		if (++at >= x->n)
			return refuse(x, start, "an instruction cut short");
		op = x->c[at];
	}
	at++;
	size = rex & 8 ? 8 : o16 ? 2 : 4;
	if ((seg || rep) && !(op == 0x0f || (rep && op == 0xc3)))
		return refuse(x, start, "a prefixed instruction (%#x %#x)",
			      x->c[start], op);
	/* 16-bit forms of the stack and control-flow instructions move rsp
	 * by 2 (push, pop, leave) or take a 16-bit target: the depth kept
	 * here counts in 8s, so they are refused rather than tracked. */
	if (o16 && ((op >= 0x50 && op <= 0x5f) || op == 0x68 || op == 0x6a ||
		    op == 0xc3 || op == 0xc9 || op == 0xe8 || op == 0xe9 ||
		    op == 0xeb || (op >= 0x70 && op <= 0x7f) || op == 0xff))
		return refuse(x, start, "a 16-bit stack or jump instruction");

#define NEED(k)                                                                \
	do {                                                                   \
		if (at + (k) > x->n)                                           \
			return refuse(x, start, "an instruction cut short");   \
	} while (0)
#define MODRM()                                                                \
	do {                                                                   \
		if (rd_modrm(x, at, rex, &m))                                  \
			return refuse(x, start, "an instruction cut short");   \
		if (m.disp_off)                                                \
			field(x, m.disp_off, 4);                               \
		at += m.len;                                                   \
	} while (0)
#define IMM(k) field(x, at, (k))

	if (op == 0x0f) {
		NEED(1);
		op = 0x100 | x->c[at++];
		if (rep) {
			/* endbr64 only */
			if (op != 0x11e || at >= x->n || x->c[at] != 0xfa)
				return refuse(x, start, "a prefixed instruction");
			*pat = at + 1;
			return 0;
		}
		if (seg && op != 0x11f)
			return refuse(x, start, "a prefixed instruction");
		if (op == 0x11f) { /* nop r/m */
			MODRM();
		} else if (op >= 0x180 && op <= 0x18f) { /* jcc rel32 */
			if (o16)
				return refuse(x, start, "a 16-bit stack or "
							"jump instruction");
			NEED(4);
			IMM(4);
			if (reloc_at(x, at))
				return refuse(x, start, "a conditional jump "
							"out of the function");
			int64_t d = rd_signed(x->c + at, 4);
			at += 4;
			if (jump_to(x, start, (int64_t)at + d))
				return 1;
		} else if ((op >= 0x140 && op <= 0x14f) || op == 0x1af ||
			   op == 0x1b6 || op == 0x1b7 || op == 0x1be ||
			   op == 0x1bf) { /* cmov, imul, movzx, movsx */
			MODRM();
			if (!write_reg(x, m.reg, size, rex, 0))
				return refuse(x, start, "a write to rsp");
		} else if (op >= 0x190 && op <= 0x19f) { /* setcc */
			MODRM();
			if (m.mem ? !store_ok(x, &m, 1, at)
				  : !write_reg(x, m.rm, 1, rex, 0))
				return refuse(x, start,
					      "a store outside the frame");
			if (m.mem)
				forget_stored(x, &m, 1);
		} else {
			return refuse(x, start, "an instruction nvcc's "
						"registration code does not "
						"contain (0f %02x)",
				      op & 0xff);
		}
		*pat = at;
		return 0;
	}

	if (rep) { /* rep ret */
		if (x->f.depth != 0)
			return refuse(x, start, "a return with the stack "
						"not restored");
		x->live = 0;
		*pat = at;
		return 0;
	}

	if (op >= 0x50 && op <= 0x57) { /* push */
		/* a push writes below rsp, where a frame slot may lie once
		 * rsp has moved back up: forget them all */
		x->f.depth += 8;
		forget_slots(x);
	} else if (op >= 0x58 && op <= 0x5f) { /* pop */
		unsigned r = (op & 7) | (rex & 1 ? 8 : 0);
		if (x->f.depth < 8)
			return refuse(x, start, "a pop above the frame");
		x->f.depth -= 8;
		if (!write_reg(x, r, 8, rex, 0))
			return refuse(x, start, "a write to rsp");
	} else if (op == 0x6a || op == 0x68) { /* push imm */
		NEED(op == 0x6a ? 1 : 4);
		IMM(op == 0x6a ? 1 : 4);
		at += op == 0x6a ? 1 : 4;
		x->f.depth += 8;
		forget_slots(x);
	} else if (op == 0x90) {
		/* nop */
	} else if (op == 0xc3) { /* ret */
		if (x->f.depth != 0)
			return refuse(x, start, "a return with the stack "
						"not restored");
		x->live = 0;
	} else if (op == 0xc9) { /* leave */
		if (!x->f.rbp_frame || x->f.rbp_depth < 8)
			return refuse(x, start, "a leave without a frame");
		x->f.depth = x->f.rbp_depth - 8;
		x->f.rbp_frame = 0;
		forget_all(x);
	} else if (op == 0xe8 || op == 0xe9) { /* call/jmp rel32 */
		NEED(4);
		IMM(4);
		int v = via_runtime(x, at);
		if (v) {
			if (runtime_transfer(x, start, v, op == 0xe9))
				return 1;
			at += 4;
		} else if (op == 0xe8 && !reloc_at(x, at) &&
			   callee_ok(x, (struct tag){
						1, x->fn->sec,
						x->fn->base + at + 4 +
							(uint64_t)rd_signed(
								x->c + at,
								4)})) {
			/* nvcc's own function, in this section */
			at += 4;
			called(x, 1);
		} else if (reloc_at(x, at) || op == 0xe8) {
			return refuse(x, start, "a call of code other than "
						"the CUDA runtime");
		} else {
			int64_t d = rd_signed(x->c + at, 4);
			at += 4;
			if (jump_to(x, start, (int64_t)at + d))
				return 1;
			x->live = 0;
		}
	} else if (op == 0xeb || (op >= 0x70 && op <= 0x7f)) { /* rel8 */
		NEED(1);
		int64_t d = rd_signed(x->c + at, 1);
		at += 1;
		if (jump_to(x, start, (int64_t)at + d))
			return 1;
		if (op == 0xeb)
			x->live = 0;
	} else if (op == 0xff) { /* call/jmp through the GOT only */
		MODRM();
		if ((m.reg & 7) != 2 && (m.reg & 7) != 4)
			return refuse(x, start, "an instruction nvcc's "
						"registration code does not "
						"contain (ff /%u)",
				      m.reg & 7);
		if (!m.mem && (m.reg & 7) == 2 && callee_ok(x, x->reg[m.rm])) {
			/* nvcc's own function, its address taken above */
			called(x, 1);
		} else {
			int v = m.base == B_RIP ? via_runtime(x, m.disp_off) : 0;
			if (!v)
				return refuse(x, start,
					      "an indirect call or jump");
			if (runtime_transfer(x, start, v, (m.reg & 7) == 4))
				return 1;
		}
	} else if (alu_op(op) || op == 0x84 || op == 0x85 || op == 0x88 ||
		   op == 0x89 || op == 0x8a || op == 0x8b || op == 0x8d ||
		   op == 0x63) {
		unsigned osz = (op == 0x88 || op == 0x8a || op == 0x84 ||
				(alu_op(op) && !(op & 1)))
				       ? 1
				       : size;
		/* d = 0: r/m is the destination; cmp (0x38-0x3b) and test
		 * write nothing */
		int to_rm = (op < 0x40 && !(op & 2)) || op == 0x88 ||
			    op == 0x89;
		int writes = !(op >= 0x38 && op <= 0x3b) && op != 0x84 &&
			     op != 0x85;
		MODRM();
		if (op == 0x8d && !m.mem)
			return refuse(x, start, "an invalid lea");
		if (!writes)
			;
		else if (to_rm && m.mem) {
			if (!store_ok(x, &m, osz, at))
				return refuse(x, start,
					      "a store outside the frame");
		} else if (!write_reg(x, to_rm ? m.rm : m.reg, osz, rex,
				      op == 0x89 && !m.mem && m.reg == R_SP)) {
			return refuse(x, start, "a write to rsp");
		}
		if (writes && to_rm && m.mem)
			forget_stored(x, &m, osz);
		/* the flow of a function's address, for calls through a
		 * register: lea, register moves, the rbp frame's slots */
		const struct kb__x86_reloc *lr =
			op == 0x8d && m.base == B_RIP ? reloc_at(x, m.disp_off)
						      : NULL;
		if (osz == 8 && op == 0x8d && m.base == B_RIP && !lr) {
			x->reg[m.reg].known = 1;
			x->reg[m.reg].sec = x->fn->sec;
			x->reg[m.reg].addr =
				x->fn->base + at + (uint64_t)m.disp;
		} else if (osz == 8 && lr && lr->sec && lr->width == 4) {
			/* field = S + A - P: the address is S + A + (at - P) */
			x->reg[m.reg].known = 1;
			x->reg[m.reg].sec = lr->sec;
			x->reg[m.reg].addr =
				(uint64_t)lr->target + (at - m.disp_off);
		} else if (osz == 8 && op == 0x89 && !m.mem) {
			x->reg[m.rm] = x->reg[m.reg];
		} else if (osz == 8 && op == 0x89 && m.base == R_BP &&
			   m.index == B_NONE && x->f.rbp_frame) {
			slot_put(x, m.disp, x->reg[m.reg]);
		} else if (osz == 8 && op == 0x8b && m.base == R_BP &&
			   m.index == B_NONE && x->f.rbp_frame) {
			x->reg[m.reg] = slot_get(x, m.disp);
		}
	} else if ((op < 0x40 && ((op & 7) == 4 || (op & 7) == 5) &&
		    alu_op(op & ~4u)) ||
		   op == 0xa8 || op == 0xa9) { /* op al/eax, imm */
		unsigned isz = !(op & 1) ? 1 : o16 ? 2 : 4;
		NEED(isz);
		IMM(isz);
		at += isz;
		if (op < 0x38 && !write_reg(x, 0, (op & 1) ? size : 1, rex, 0))
			return refuse(x, start, "a write to rsp");
	} else if (op >= 0xb8 && op <= 0xbf) { /* mov imm to reg */
		unsigned isz = rex & 8 ? 8 : o16 ? 2 : 4;
		NEED(isz);
		IMM(isz);
		at += isz;
		if (!write_reg(x, (op & 7) | (rex & 1 ? 8 : 0), size, rex, 0))
			return refuse(x, start, "a write to rsp");
	} else if (op == 0xc6 || op == 0xc7) { /* mov imm to r/m */
		unsigned osz = op == 0xc6 ? 1 : size;
		unsigned isz = op == 0xc6 ? 1 : o16 ? 2 : 4;
		MODRM();
		if ((m.reg & 7) != 0)
			return refuse(x, start, "an instruction nvcc's "
						"registration code does not "
						"contain (%02x /%u)",
				      op, m.reg & 7);
		NEED(isz);
		IMM(isz);
		at += isz;
		if (m.mem ? !store_ok(x, &m, osz, at)
			  : !write_reg(x, m.rm, osz, rex, 0))
			return refuse(x, start, "a store outside the frame");
		if (m.mem)
			forget_stored(x, &m, osz);
	} else if (op == 0x80 || op == 0x81 || op == 0x83) { /* alu imm */
		unsigned osz = op == 0x80 ? 1 : size;
		unsigned isz = op == 0x81 ? (o16 ? 2 : 4) : 1;
		unsigned ext;
		MODRM();
		ext = m.reg & 7;
		NEED(isz);
		IMM(isz);
		int64_t imm = rd_signed(x->c + at, isz);
		at += isz;
		if (ext == 2 || ext == 3) /* adc, sbb */
			return refuse(x, start, "an instruction nvcc's "
						"registration code does not "
						"contain (%02x /%u)",
				      op, ext);
		if (ext == 7) {
			/* cmp: reads only */
		} else if (m.mem) {
			if (!store_ok(x, &m, osz, at))
				return refuse(x, start,
					      "a store outside the frame");
			forget_stored(x, &m, osz);
		} else if (m.rm == R_SP) {
			if (osz != 8 || (ext != 0 && ext != 5))
				return refuse(x, start, "a write to rsp");
			x->f.depth += ext == 5 ? imm : -imm;
			forget_slots(x);
			if (x->f.depth < 0)
				return refuse(x, start, "rsp moved above the "
							"frame");
		} else if (!write_reg(x, m.rm, osz, rex, 0)) {
			return refuse(x, start, "a write to rsp");
		}
	} else if (op == 0xc1 || op == 0xd1 || op == 0xf7) {
		/* shifts; test, not, neg: registers only */
		unsigned ext;
		MODRM();
		ext = m.reg & 7;
		if (op == 0xf7 && ext != 0 && ext != 2 && ext != 3)
			return refuse(x, start, "an instruction nvcc's "
						"registration code does not "
						"contain (f7 /%u)",
				      ext);
		if (op == 0xc1 || (op == 0xf7 && ext == 0)) {
			NEED(op == 0xc1 ? 1 : o16 ? 2 : 4);
			IMM(op == 0xc1 ? 1 : o16 ? 2 : 4);
			at += op == 0xc1 ? 1 : o16 ? 2 : 4;
		}
		if (m.mem || (!(op == 0xf7 && ext == 0) &&
			      !write_reg(x, m.rm, size, rex, 0)))
			return refuse(x, start, "a store outside the frame");
	} else {
		return refuse(x, start,
			      "an instruction nvcc's registration code does "
			      "not contain (%02x)",
			      op);
	}
#undef NEED
#undef MODRM
#undef IMM
	*pat = at;
	return 0;
}

/* The pass itself (kb__x86_check's theory). */
static int walk(struct x86 *x)
{
	size_t at = 0;

	while (at < x->n)
		if (arrive(x, at) || step(x, &at))
			return 1;
	if (x->live)
		return refuse(x, x->n, "the function running off its end");
	for (size_t i = 0; i < x->nt; i++)
		if (!x->t[i].reached)
			return refuse(x, x->t[i].at,
				      "a jump into the middle of an "
				      "instruction");
	for (size_t i = 0; i < x->nrel; i++)
		if (!x->placed[i])
			return refuse(x, x->rel[i].off,
				      "a relocation that is not an "
				      "instruction's address or immediate");
	return 0;
}

int kb__x86_check(const struct kb__x86_fn *fn, char *why, size_t why_size)
{
	static struct x86 zero;
	struct x86 x = zero;

	if (!fn || !fn->code || !why || !why_size || (fn->nrel && !fn->rel) ||
	    (fn->ncallees && !fn->callees))
		return -1;
	why[0] = '\0';
	x.c = fn->code;
	x.n = fn->n;
	x.fn = fn;
	x.rel = fn->rel;
	x.nrel = fn->nrel;
	x.why = why;
	x.why_size = why_size;
	x.live = 1;
	if (x.nrel && !(x.placed = calloc(x.nrel, 1)))
		return -1;
	int rc = walk(&x);
	free(x.placed);
	return rc;
}
