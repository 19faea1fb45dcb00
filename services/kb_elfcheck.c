/* kb_elfcheck: see kb_elfcheck.h.
 *
 * Parsing discipline: every offset and size read from the object is
 * checked against the buffer before use, with overflow-safe arithmetic
 * (kb__in), and every field is read with memcpy in the object's byte
 * order, so unaligned or big-endian objects read correctly and nothing is
 * ever dereferenced out of bounds. Strings are used only after a NUL has
 * been found inside their table.
 */
#include "kb_elfcheck.h"
#include "kb_elfcheck_x86.h"

#include <elf.h>
#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#ifndef STB_GNU_UNIQUE
#define STB_GNU_UNIQUE 10
#endif
#ifndef STT_GNU_IFUNC
#define STT_GNU_IFUNC 10
#endif

struct elfrd {
	const unsigned char *b;
	size_t len;
	int msb;
};

/* 1 when [off, off + n) lies inside the buffer. */
static int kb__in(const struct elfrd *r, uint64_t off, uint64_t n)
{
	return off <= r->len && n <= r->len - off;
}

static uint64_t rd(const struct elfrd *r, uint64_t off, unsigned size)
{
	unsigned char v[8];
	uint64_t x = 0;

	memcpy(v, r->b + off, size);
	for (unsigned i = 0; i < size; i++) {
		unsigned k = r->msb ? i : size - 1 - i;

		x = (x << 8) | v[k];
	}
	return x;
}

struct shdr {
	uint32_t name, type;
	uint64_t flags, offset, size;
	uint32_t link, info;
	uint64_t entsize;
};

static void rd_shdr(const struct elfrd *r, uint64_t off, struct shdr *s)
{
	s->name = (uint32_t)rd(r, off + offsetof(Elf64_Shdr, sh_name), 4);
	s->type = (uint32_t)rd(r, off + offsetof(Elf64_Shdr, sh_type), 4);
	s->flags = rd(r, off + offsetof(Elf64_Shdr, sh_flags), 8);
	s->offset = rd(r, off + offsetof(Elf64_Shdr, sh_offset), 8);
	s->size = rd(r, off + offsetof(Elf64_Shdr, sh_size), 8);
	s->link = (uint32_t)rd(r, off + offsetof(Elf64_Shdr, sh_link), 4);
	s->info = (uint32_t)rd(r, off + offsetof(Elf64_Shdr, sh_info), 4);
	s->entsize = rd(r, off + offsetof(Elf64_Shdr, sh_entsize), 8);
}

/* The NUL-terminated string at index idx of a string table section, or
 * NULL when it is out of bounds or unterminated. */
static const char *str_at(const struct elfrd *r, const struct shdr *tab,
			  uint64_t idx)
{
	if (tab->type != SHT_STRTAB || !kb__in(r, tab->offset, tab->size) ||
	    idx >= tab->size)
		return NULL;
	const char *s = (const char *)r->b + tab->offset + idx;

	if (!memchr(s, '\0', tab->size - idx))
		return NULL;
	return s;
}

static void kb__err(char *errstr, size_t errstr_size, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static void kb__err(char *errstr, size_t errstr_size, const char *fmt, ...)
{
	va_list ap;

	if (!errstr || !errstr_size)
		return;
	va_start(ap, fmt);
	vsnprintf(errstr, errstr_size, fmt, ap);
	va_end(ap);
}

/* ---- names -------------------------------------------------------------- */

static const char *const deny_prefix[] = {
	"kbh_", "kbg_", "kb_", "__kbh", "GOMP_", "__kmpc_", "omp_",
	"pthread_", "_dl_", "__libc_",
};

static const char *const deny_exact[] = {
	/* entry points and start-up hooks */
	"main", "_start", "_init", "_fini", "__gmon_start__",
	"_ITM_registerTMCloneTable", "_ITM_deregisterTMCloneTable",
	"__cxa_atexit", "__cxa_finalize", "atexit", "on_exit", "exit", "_exit",
	"_Exit",
	/* timing */
	"clock_gettime", "clock_getres", "gettimeofday", "time", "clock",
	"times", "getrusage", "timespec_get", "__vdso_clock_gettime",
	"__vdso_gettimeofday", "cudaEventElapsedTime", "cudaEventRecord",
	"cudaEventSynchronize", "cudaEventQuery", "cudaEventCreate",
	"cudaEventCreateWithFlags", "cudaDeviceSynchronize",
	"cudaStreamSynchronize", "cuEventElapsedTime", "cuEventRecord",
	"cuEventSynchronize", "cuCtxSynchronize", "cuStreamSynchronize",
	"hipEventElapsedTime", "hipEventRecord", "hipEventSynchronize",
	"hipDeviceSynchronize", "hipStreamSynchronize",
	/* report, memory, processes */
	"write", "writev", "pwrite", "read", "open", "openat", "close", "dup",
	"dup2", "dup3", "fcntl", "ioctl", "mmap", "munmap", "mprotect",
	"madvise", "fork", "vfork", "clone", "execve", "kill", "raise",
	"signal", "sigaction", "prctl", "ptrace", "syscall", "waitpid",
	"dlopen", "dlsym", "dlvsym", "dladdr", "dl_iterate_phdr", "getenv",
	"setenv", "unsetenv", "malloc", "calloc", "realloc", "free",
	"posix_memalign", "aligned_alloc", "memalign", "memcpy", "memmove",
	"memset", "memcmp", "strlen", "strcmp", "strncmp", "strchr", "memchr",
	"strtol", "strtoul", "strtoull", "snprintf", "vsnprintf", "printf",
	"fprintf", "vfprintf", "fputs", "fwrite", "fflush", "fopen", "fclose",
	"fgets", "fread", "ferror", "strerror", "qsort", "abort",
	"__stack_chk_fail", "__errno_location",
};

#define NELEM(a) (sizeof(a) / sizeof((a)[0]))

int kb_elfcheck_denied(const char *name)
{
	for (size_t i = 0; i < NELEM(deny_prefix); i++)
		if (strncmp(name, deny_prefix[i], strlen(deny_prefix[i])) == 0)
			return 1;
	for (size_t i = 0; i < NELEM(deny_exact); i++)
		if (strcmp(name, deny_exact[i]) == 0)
			return 1;
	return 0;
}

static int is_harness_name(const char *name)
{
	return strncmp(name, "kbh_", 4) == 0 || strncmp(name, "kbg_", 4) == 0 ||
	       strncmp(name, "kb_", 3) == 0 || strncmp(name, "__kbh", 5) == 0;
}

static int in_list(const char *const *list, const char *name)
{
	for (; list && *list; list++)
		if (strcmp(*list, name) == 0)
			return 1;
	return 0;
}

/* A section name equal to base, or base followed by '.' and anything
 * (.init_array.00099, .ctors.65535). */
static int name_is(const char *name, const char *base)
{
	size_t n = strlen(base);

	return strncmp(name, base, n) == 0 &&
	       (name[n] == '\0' || name[n] == '.');
}

/* ---- findings ----------------------------------------------------------- */

struct ctx {
	struct kb_elfcheck_result *res;
	const char *src;
};

static void finding(struct ctx *c, unsigned bit, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static void finding(struct ctx *c, unsigned bit, const char *fmt, ...)
{
	va_list ap;

	c->res->nfindings++;
	if (!c->res->found) {
		va_start(ap, fmt);
		vsnprintf(c->res->msg, sizeof(c->res->msg), fmt, ap);
		va_end(ap);
	}
	c->res->found |= bit;
}

static void check_section(struct ctx *c, const char *name, uint32_t type,
			  int nvcc)
{
	static const char *const ctor[] = {".init_array", ".preinit_array",
					   ".ctors"};
	static const char *const dtor[] = {".fini_array", ".dtors"};
	static const char *const linker[] = {".interp", ".dynamic", ".dynsym",
					     ".dynstr", ".got", ".got.plt",
					     ".plt", ".jcr", ".tm_clone_table"};

	/* nvcc's own constructor: nv_init_array() reads every entry. */
	if (nvcc && strcmp(name, ".init_array") == 0 &&
	    type == SHT_INIT_ARRAY)
		return;
	for (size_t i = 0; i < NELEM(ctor); i++)
		if (name_is(name, ctor[i])) {
			finding(c, KB_ELFCHECK_CTOR,
				"%s has a constructor (section %s): no code "
				"may run before main; remove "
				"__attribute__((constructor))",
				c->src, name);
			return;
		}
	if (strcmp(name, ".init") == 0 || type == SHT_INIT_ARRAY ||
	    type == SHT_PREINIT_ARRAY) {
		finding(c, KB_ELFCHECK_CTOR,
			"%s adds code run before main (section %s); not "
			"allowed",
			c->src, name);
		return;
	}
	for (size_t i = 0; i < NELEM(dtor); i++)
		if (name_is(name, dtor[i])) {
			finding(c, KB_ELFCHECK_DTOR,
				"%s has a destructor (section %s): no code may "
				"run at exit; remove "
				"__attribute__((destructor))",
				c->src, name);
			return;
		}
	if (strcmp(name, ".fini") == 0 || type == SHT_FINI_ARRAY) {
		finding(c, KB_ELFCHECK_DTOR,
			"%s adds code run at exit (section %s); not allowed",
			c->src, name);
		return;
	}
	for (size_t i = 0; i < NELEM(linker); i++)
		if (name_is(name, linker[i])) {
			finding(c, KB_ELFCHECK_LINKER,
				"%s has a section reserved for the linker "
				"(%s); not allowed",
				c->src, name);
			return;
		}
	if (type == SHT_DYNAMIC || type == SHT_DYNSYM)
		finding(c, KB_ELFCHECK_LINKER,
			"%s has a dynamic-linking section (%s); not allowed",
			c->src, name);
}

/* The functions nvcc's registration code calls before main (and at
 * exit): the CUDA runtime's __cudaRegisterFatBinary, ...FatBinaryEnd,
 * ...Function, ...Var, ...ManagedVar, ...LinkedBinary_<id> (-rdc), ...;
 * atexit; and __stack_chk_fail where the host compiler adds stack
 * protection. */
static int nv_runtime(const char *name)
{
	return strncmp(name, "__cudaRegister", 14) == 0 ||
	       strcmp(name, "__cudaUnregisterFatBinary") == 0 ||
	       strcmp(name, "__cudaInitModule") == 0 ||
	       strcmp(name, "atexit") == 0 ||
	       strcmp(name, "__stack_chk_fail") == 0;
}

/* The replaceable global operators new and delete (LP64 mangling): a
 * definition in the executable replaces libstdc++'s for every caller.
 * Placement new and delete (_ZnwmPv, ...) are inline in <new> and may
 * not be replaced, so a submission's object may well hold them. */
static int new_delete(const char *name)
{
	static const char *const rep[] = {
		"_Znwm", "_Znam", "_ZnwmRKSt9nothrow_t", "_ZnamRKSt9nothrow_t",
		"_ZnwmSt11align_val_t", "_ZnamSt11align_val_t",
		"_ZnwmSt11align_val_tRKSt9nothrow_t",
		"_ZnamSt11align_val_tRKSt9nothrow_t", "_ZdlPv", "_ZdaPv",
		"_ZdlPvm", "_ZdaPvm", "_ZdlPvRKSt9nothrow_t",
		"_ZdaPvRKSt9nothrow_t", "_ZdlPvSt11align_val_t",
		"_ZdaPvSt11align_val_t", "_ZdlPvmSt11align_val_t",
		"_ZdaPvmSt11align_val_t", "_ZdlPvSt11align_val_tRKSt9nothrow_t",
		"_ZdaPvSt11align_val_tRKSt9nothrow_t"};

	for (size_t i = 0; i < NELEM(rep); i++)
		if (strcmp(name, rep[i]) == 0)
			return 1;
	return 0;
}

/* nvcc: grouped is 1 when the symbol's section is in a section group
 * (COMDAT: inline functions and templates, which the seal keeps global). */
static void check_symbol(struct ctx *c, const struct kb_elfcheck_policy *p,
			 const char *name, unsigned bind, unsigned type,
			 int defined, int nvcc, int grouped)
{
	const char *exp = p && p->exports && p->exports[0] ? p->exports[0]
							   : "custom_kernel";

	if (type == STT_GNU_IFUNC) {
		finding(c, KB_ELFCHECK_IFUNC,
			"%s defines '%s' as an ifunc (ifunc or "
			"target_clones): its resolver would run before main; "
			"not allowed",
			c->src, name);
		return;
	}
	/* Local too: the seal made the submission's own definitions local,
	 * and nvcc's registration code calls what is local first. */
	if (nvcc && defined && type != STT_SECTION && nv_runtime(name)) {
		finding(c, KB_ELFCHECK_CTOR,
			"%s defines '%s', which nvcc's kernel registration "
			"calls before main (the CUDA runtime's, or libc's): "
			"code before main is not allowed; remove it",
			c->src, name);
		return;
	}
	if (bind == STB_LOCAL || type == STT_FILE || type == STT_SECTION ||
	    !name[0])
		return;
	if (!defined) {
		if (is_harness_name(name))
			finding(c, KB_ELFCHECK_HARNESS,
				"%s refers to '%s', a name internal to the "
				"harness; not allowed",
				c->src, name);
		return;
	}
	if (nvcc && new_delete(name)) {
		finding(c, KB_ELFCHECK_DENIED,
			"%s defines '%s', an operator new or delete with "
			"external linkage: it would replace the C++ runtime's "
			"for the whole program, the harness and code before "
			"main included; not allowed",
			c->src, name);
		return;
	}
	if (nvcc && grouped &&
	    (bind == STB_WEAK || bind == STB_GNU_UNIQUE) &&
	    (strncmp(name, "_Z", 2) == 0 || strncmp(name, "DW.ref.", 7) == 0))
		return;
	if (kb_elfcheck_denied(name)) {
		finding(c, KB_ELFCHECK_DENIED,
			"%s defines '%s', a name the harness or the C library "
			"needs for itself (start-up, timing, reporting or "
			"memory); remove or rename it%s%s%s",
			c->src, name, p && p->exports ? " (only " : "",
			p && p->exports ? exp : "",
			p && p->exports ? " may have external linkage)" : "");
		return;
	}
	if (p && p->exports && !in_list(p->exports, name))
		finding(c, KB_ELFCHECK_EXPORT,
			"%s defines the global symbol '%s': only %s may have "
			"external linkage here; declare '%s' static",
			c->src, name, exp, name);
}

/* ---- the object --------------------------------------------------------- */

struct elf {
	struct elfrd r;
	unsigned machine;
	uint64_t shoff, shnum;
	struct shdr names;   /* the section name table */
	uint64_t symtab;     /* the symbol table's index; 0 = none */
	struct shdr st, strtab;
	uint64_t nsym;
	uint64_t xindex;     /* its SHT_SYMTAB_SHNDX section; 0 = none */
};

static void sec(const struct elf *e, uint64_t i, struct shdr *s)
{
	rd_shdr(&e->r, e->shoff + i * sizeof(Elf64_Shdr), s);
}

/* Reads the headers and validates what the checks rely on: every section
 * has a name and lies inside the object, at most one symbol table, with
 * its string table (and extended index table). Returns 0 or -EINVAL. */
static int elf_open(struct elf *e, const void *obj, size_t len, char *errstr,
		    size_t errstr_size)
{
	struct elfrd *r = &e->r;

	memset(e, 0, sizeof(*e));
	*r = (struct elfrd){obj, len, 0};
	if (!obj || len < sizeof(Elf64_Ehdr) ||
	    memcmp(obj, ELFMAG, SELFMAG) != 0) {
		kb__err(errstr, errstr_size, "not an ELF object");
		return -EINVAL;
	}
	if (r->b[EI_CLASS] != ELFCLASS64) {
		kb__err(errstr, errstr_size, "not a 64-bit ELF object");
		return -EINVAL;
	}
	if (r->b[EI_DATA] != ELFDATA2LSB && r->b[EI_DATA] != ELFDATA2MSB) {
		kb__err(errstr, errstr_size, "unknown ELF byte order");
		return -EINVAL;
	}
	r->msb = r->b[EI_DATA] == ELFDATA2MSB;
	if (rd(r, offsetof(Elf64_Ehdr, e_type), 2) != ET_REL) {
		kb__err(errstr, errstr_size,
			"not a relocatable object (cc -c output)");
		return -EINVAL;
	}
	e->machine = (unsigned)rd(r, offsetof(Elf64_Ehdr, e_machine), 2);
	e->shoff = rd(r, offsetof(Elf64_Ehdr, e_shoff), 8);
	uint64_t shentsize = rd(r, offsetof(Elf64_Ehdr, e_shentsize), 2);
	uint64_t shstrndx = rd(r, offsetof(Elf64_Ehdr, e_shstrndx), 2);

	e->shnum = rd(r, offsetof(Elf64_Ehdr, e_shnum), 2);
	if (shentsize != sizeof(Elf64_Shdr) || e->shoff == 0 ||
	    !kb__in(r, e->shoff, sizeof(Elf64_Shdr))) {
		kb__err(errstr, errstr_size, "bad section header table");
		return -EINVAL;
	}
	/* Extended numbering: the real values live in section 0. */
	struct shdr s0;

	sec(e, 0, &s0);
	if (e->shnum == 0)
		e->shnum = s0.size;
	if (shstrndx == SHN_XINDEX)
		shstrndx = s0.link;
	if (e->shnum == 0 || e->shnum > len / sizeof(Elf64_Shdr) ||
	    !kb__in(r, e->shoff, e->shnum * sizeof(Elf64_Shdr))) {
		kb__err(errstr, errstr_size,
			"section header table outside the object");
		return -EINVAL;
	}
	if (shstrndx >= e->shnum) {
		kb__err(errstr, errstr_size, "bad section name table index");
		return -EINVAL;
	}
	sec(e, shstrndx, &e->names);
	if (e->names.type != SHT_STRTAB ||
	    !kb__in(r, e->names.offset, e->names.size)) {
		kb__err(errstr, errstr_size, "bad section name table");
		return -EINVAL;
	}

	unsigned nsymtab = 0;

	for (uint64_t i = 1; i < e->shnum; i++) {
		struct shdr s;

		sec(e, i, &s);
		const char *name = str_at(r, &e->names, s.name);

		if (!name) {
			kb__err(errstr, errstr_size,
				"section %llu has a bad name",
				(unsigned long long)i);
			return -EINVAL;
		}
		if (s.type != SHT_NOBITS && s.type != SHT_NULL &&
		    !kb__in(r, s.offset, s.size)) {
			kb__err(errstr, errstr_size,
				"section %s lies outside the object", name);
			return -EINVAL;
		}
		if (s.type == SHT_SYMTAB) {
			e->symtab = i;
			nsymtab++;
		}
		if (s.type == SHT_SYMTAB_SHNDX)
			e->xindex = i;
	}
	if (nsymtab > 1) {
		kb__err(errstr, errstr_size, "more than one symbol table");
		return -EINVAL;
	}
	if (!e->symtab)
		return 0;
	sec(e, e->symtab, &e->st);
	if (e->st.entsize != sizeof(Elf64_Sym) ||
	    e->st.size % sizeof(Elf64_Sym) != 0 || e->st.link == 0 ||
	    e->st.link >= e->shnum) {
		kb__err(errstr, errstr_size, "bad symbol table");
		return -EINVAL;
	}
	sec(e, e->st.link, &e->strtab);
	if (e->strtab.type != SHT_STRTAB ||
	    !kb__in(r, e->strtab.offset, e->strtab.size)) {
		kb__err(errstr, errstr_size, "bad symbol name table");
		return -EINVAL;
	}
	e->nsym = e->st.size / sizeof(Elf64_Sym);
	if (e->xindex) {
		struct shdr x;

		sec(e, e->xindex, &x);
		if (x.link != e->symtab || x.size / 4 < e->nsym) {
			kb__err(errstr, errstr_size,
				"bad extended section index table");
			return -EINVAL;
		}
	}
	return 0;
}

struct sym {
	const char *name;
	unsigned bind, type;
	/* The section index, extended indexes resolved; reserved values
	 * (SHN_ABS, SHN_COMMON, ...) are moved above 2^32, so that
	 * 0 < shndx < shnum means "in a section of the object". */
	uint64_t shndx;
	uint64_t value, size;
};

#define SHN_SPECIAL(x) ((uint64_t)1 << 32 | (x))

/* Symbol i of the table (1 <= i < nsym). Returns 0 or -EINVAL. */
static int sym_at(const struct elf *e, uint64_t i, struct sym *s,
		  char *errstr, size_t errstr_size)
{
	const struct elfrd *r = &e->r;
	const uint64_t off = e->st.offset + i * sizeof(Elf64_Sym);
	const unsigned info =
		(unsigned)rd(r, off + offsetof(Elf64_Sym, st_info), 1);

	s->name = str_at(r, &e->strtab,
			 rd(r, off + offsetof(Elf64_Sym, st_name), 4));
	if (!s->name) {
		kb__err(errstr, errstr_size, "symbol %llu has a bad name",
			(unsigned long long)i);
		return -EINVAL;
	}
	s->bind = ELF64_ST_BIND(info);
	s->type = ELF64_ST_TYPE(info);
	s->shndx = rd(r, off + offsetof(Elf64_Sym, st_shndx), 2);
	s->value = rd(r, off + offsetof(Elf64_Sym, st_value), 8);
	s->size = rd(r, off + offsetof(Elf64_Sym, st_size), 8);
	if (s->shndx == SHN_XINDEX) {
		struct shdr x;

		if (!e->xindex) {
			kb__err(errstr, errstr_size,
				"symbol %llu has an extended section index "
				"but the object has no table of them",
				(unsigned long long)i);
			return -EINVAL;
		}
		sec(e, e->xindex, &x);
		s->shndx = rd(r, x.offset + i * 4, 4);
	} else if (s->shndx >= SHN_LORESERVE) {
		s->shndx = SHN_SPECIAL(s->shndx);
	}
	return 0;
}

/* 1 when section i is one of the object's and in a section group (a
 * COMDAT group: inline functions and template instances). */
static int grouped(const struct elf *e, uint64_t i)
{
	struct shdr s;

	if (i == 0 || i >= e->shnum)
		return 0;
	sec(e, i, &s);
	return (s.flags & SHF_GROUP) != 0;
}

/* ---- nvcc objects ------------------------------------------------------- */

#define NV_STI "_ZL24__sti____cudaRegisterAllv"
#define NV_CALLBACK "_ZL31__nv_cudaEntityRegisterCallbackPPv"
#define NV_UNREGISTER "_ZL26__cudaUnregisterBinaryUtilv"
#define NV_SAVE "_ZL37__nv_save_fatbinhandle_for_managed_rtPPv"
#define NV_DUMMY "_ZL22____nv_dummy_param_refPv"
/* -rdc's per-file registration, which calls the callbacks it is given */
#define NV_LINKED "__cudaRegisterLinkedBinary_"
#define NV_INIT_MAX 64     /* .init_array entries read (nvcc makes one) */
#define NV_RELOC_MAX 1024  /* relocations read in one function */

struct rela {
	uint64_t off;
	uint32_t type;
	uint64_t sym;
	uint64_t addend; /* two's complement */
};

/* 1 when section k holds the relocations of section target (*rs gets
 * its header), 0 when it does not, -EINVAL when it does but is not the
 * SHT_RELA, 24-byte-entry, main-symbol-table kind x86-64 objects have. */
static int rela_of(const struct elf *e, uint64_t k, uint64_t target,
		   struct shdr *rs, char *errstr, size_t errstr_size)
{
	sec(e, k, rs);
	if ((rs->type != SHT_RELA && rs->type != SHT_REL) ||
	    rs->info != target)
		return 0;
	if (rs->type != SHT_RELA || rs->entsize != sizeof(Elf64_Rela) ||
	    rs->size % sizeof(Elf64_Rela) != 0 || !e->symtab ||
	    rs->link != e->symtab) {
		kb__err(errstr, errstr_size, "bad relocation section %llu",
			(unsigned long long)k);
		return -EINVAL;
	}
	return 1;
}

static void rela_at(const struct elf *e, const struct shdr *rs, uint64_t j,
		    struct rela *x)
{
	const uint64_t off = rs->offset + j * sizeof(Elf64_Rela);
	const uint64_t info =
		rd(&e->r, off + offsetof(Elf64_Rela, r_info), 8);

	x->off = rd(&e->r, off + offsetof(Elf64_Rela, r_offset), 8);
	x->type = (uint32_t)ELF64_R_TYPE(info);
	x->sym = ELF64_R_SYM(info);
	x->addend = rd(&e->r, off + offsetof(Elf64_Rela, r_addend), 8);
}

/* What a relocation points at: symbol *s (no symbol: an absolute
 * address, shndx SHN_ABS), and *at, the address in s's section
 * (value + addend). Returns 0 or -EINVAL. */
static int rela_target(const struct elf *e, const struct rela *x,
		       struct sym *s, uint64_t *at, char *errstr,
		       size_t errstr_size)
{
	if (x->sym == 0) {
		*s = (struct sym){"", STB_LOCAL, STT_NOTYPE,
				  SHN_SPECIAL(SHN_ABS), 0, 0};
	} else if (x->sym >= e->nsym) {
		kb__err(errstr, errstr_size,
			"a relocation refers to symbol %llu, past the symbol "
			"table", (unsigned long long)x->sym);
		return -EINVAL;
	} else if (sym_at(e, x->sym, s, errstr, errstr_size) < 0) {
		return -EINVAL;
	}
	*at = s->value + x->addend;
	return 0;
}

/* The name of a function that starts at address at of section shndx, or
 * NULL. */
static const char *func_at(const struct elf *e, uint64_t shndx, uint64_t at)
{
	struct sym s;

	for (uint64_t i = 1; i < e->nsym; i++)
		if (sym_at(e, i, &s, NULL, 0) == 0 && s.type == STT_FUNC &&
		    s.shndx == shndx && s.value == at && s.name[0])
			return s.name;
	return NULL;
}

struct nvfn {
	int ok;          /* exactly one, a local function in code */
	unsigned count;  /* symbols of that name */
	uint64_t shndx, value, size;
};

/* Finds nvcc's local function called name. Returns 0 or -EINVAL. */
static int nv_find(const struct elf *e, const char *name, struct nvfn *f,
		   char *errstr, size_t errstr_size)
{
	struct sym s;
	struct shdr sh;

	memset(f, 0, sizeof(*f));
	for (uint64_t i = 1; i < e->nsym; i++) {
		if (sym_at(e, i, &s, errstr, errstr_size) < 0)
			return -EINVAL;
		if (strcmp(s.name, name) != 0)
			continue;
		if (f->count++)
			f->ok = 0;
		else
			f->ok = s.type == STT_FUNC && s.bind == STB_LOCAL &&
				s.shndx > 0 && s.shndx < e->shnum &&
				s.size > 0;
		f->shndx = s.shndx;
		f->value = s.value;
		f->size = s.size;
	}
	if (!f->ok)
		return 0;
	sec(e, f->shndx, &sh);
	f->ok = sh.type == SHT_PROGBITS && (sh.flags & SHF_EXECINSTR) &&
		f->value <= sh.size && f->size <= sh.size - f->value;
	return 0;
}

/* A finding for an .init_array entry that is not nvcc's: named after the
 * function it points at, where there is one. */
static void nv_ctor_finding(struct ctx *c, const struct elf *e,
			    const struct sym *s, uint64_t at)
{
	const char *fn = NULL, *sname = NULL;
	struct shdr sh;

	/* Only the first finding's message is kept: look names up for it
	 * alone (func_at reads every symbol). */
	if (c->res->found) {
		finding(c, KB_ELFCHECK_CTOR, "-");
		return;
	}
	fn = s->type == STT_FUNC && at == s->value && s->name[0]
		     ? s->name
		     : func_at(e, s->shndx, at);

	if (fn && strncmp(fn, "_GLOBAL__sub_I_", 15) == 0) {
		finding(c, KB_ELFCHECK_CTOR,
			"%s defines a constructor (%s: the start-up code of "
			"its namespace-scope objects): code before main is "
			"not allowed; global, static and namespace objects "
			"must need no constructor, dynamic initialiser or "
			"destructor (create them in custom_kernel), and "
			"<iostream> adds one (use <cstdio>)",
			c->src, fn);
		return;
	}
	if (fn) {
		finding(c, KB_ELFCHECK_CTOR,
			"%s defines a constructor (function '%s', in "
			".init_array): code before main is not allowed; "
			"remove __attribute__((constructor))",
			c->src, fn);
		return;
	}
	if (s->shndx > 0 && s->shndx < e->shnum) {
		sec(e, s->shndx, &sh);
		sname = str_at(&e->r, &e->names, sh.name);
	}
	finding(c, KB_ELFCHECK_CTOR,
		"%s defines a constructor (an .init_array entry pointing at "
		"%s%s+%llu): code before main is not allowed",
		c->src, sname ? sname : "", sname ? "" : s->name,
		(unsigned long long)at);
}

/* Section idx, an .init_array: each entry must be nvcc's sti. */
static int nv_init_array(struct ctx *c, const struct elf *e, uint64_t idx,
			 const struct shdr *ia, const struct nvfn *sti,
			 char *errstr, size_t errstr_size)
{
	const uint64_t n = ia->size / 8;
	uint64_t covered = 0; /* one bit per entry */
	struct shdr rs;
	struct rela x;
	struct sym s;
	uint64_t at;
	int rc;

	if (ia->size % 8 != 0 || n > NV_INIT_MAX) {
		finding(c, KB_ELFCHECK_CTOR,
			"%s has an .init_array of %llu bytes, not nvcc's: "
			"code before main is not allowed",
			c->src, (unsigned long long)ia->size);
		return 0;
	}
	for (uint64_t k = 1; k < e->shnum; k++) {
		if ((rc = rela_of(e, k, idx, &rs, errstr, errstr_size)) < 0)
			return rc;
		for (uint64_t j = 0; rc && j < rs.size / sizeof(Elf64_Rela);
		     j++) {
			rela_at(e, &rs, j, &x);
			if (rela_target(e, &x, &s, &at, errstr,
					errstr_size) < 0)
				return -EINVAL;
			if (x.type != R_X86_64_64 || x.off % 8 != 0 ||
			    x.off >= ia->size ||
			    (covered >> (x.off / 8) & 1)) {
				finding(c, KB_ELFCHECK_CTOR,
					"%s has an .init_array relocation "
					"nvcc does not make (type %u at "
					"offset %llu): code before main is "
					"not allowed",
					c->src, (unsigned)x.type,
					(unsigned long long)x.off);
				continue;
			}
			covered |= (uint64_t)1 << (x.off / 8);
			if (!sti->ok || s.shndx != sti->shndx ||
			    at != sti->value)
				nv_ctor_finding(c, e, &s, at);
		}
	}
	if (n && covered != (n == 64 ? ~(uint64_t)0 : ((uint64_t)1 << n) - 1))
		finding(c, KB_ELFCHECK_CTOR,
			"%s has an .init_array entry holding a fixed address: "
			"code before main is not allowed",
			c->src);
	return 0;
}

/* Bytes an x86-64 relocation writes, for the types nvcc's registration
 * code has (any compiler flags); 0 for any other. */
static unsigned nv_width(uint32_t type)
{
	switch (type) {
	case R_X86_64_64:
		return 8;
	case R_X86_64_PC32:
	case R_X86_64_PLT32:
	case R_X86_64_32:
	case R_X86_64_32S:
	case R_X86_64_GOTPCREL:
	case R_X86_64_GOTPCRELX:
	case R_X86_64_REX_GOTPCRELX:
		return 4;
	default:
		return 0;
	}
}

/* 1 when relocation x (at least 4 bytes inside section fs) is the target
 * of a call or jump: call/jmp rel32 (e8/e9), jcc rel32 (0f 8x), call/jmp
 * through the GOT (ff 15, ff 25), or anything @PLT. */
static int nv_is_call(const struct elf *e, const struct shdr *fs,
		      const struct rela *x)
{
	const unsigned p1 =
		x->off >= 1 ? (unsigned)rd(&e->r, fs->offset + x->off - 1, 1)
			    : 0;
	const unsigned p2 =
		x->off >= 2 ? (unsigned)rd(&e->r, fs->offset + x->off - 2, 1)
			    : 0;

	switch (x->type) {
	case R_X86_64_PLT32:
		return 1;
	case R_X86_64_PC32:
		return p1 == 0xe8 || p1 == 0xe9 ||
		       (p2 == 0x0f && (p1 & 0xf0) == 0x80);
	case R_X86_64_GOTPCREL:
	case R_X86_64_GOTPCRELX:
	case R_X86_64_REX_GOTPCRELX:
		return p2 == 0xff && (p1 == 0x15 || p1 == 0x25);
	default:
		return 0;
	}
}

/* Relocation xs[i] of the n inside nvcc's function fname (in section
 * fs): a type nvcc makes, not overlapping an earlier one, a call or jump
 * only to the CUDA runtime. Returns 0 or -EINVAL. */
static int nv_reloc(struct ctx *c, const struct elf *e, const char *fname,
		    const struct shdr *fs, const struct rela *xs, size_t i,
		    char *errstr, size_t errstr_size)
{
	const struct rela *x = &xs[i];
	const unsigned w = nv_width(x->type);
	const char *to;
	struct sym s;
	uint64_t at;

	if (!w || w > fs->size - x->off) {
		finding(c, KB_ELFCHECK_CTOR,
			"%s: nvcc's kernel registration (%s), which runs "
			"before main, holds a relocation nvcc does not make "
			"(type %u): not allowed",
			c->src, fname, (unsigned)x->type);
		return 0;
	}
	for (size_t k = 0; k < i; k++)
		if (x->off < xs[k].off + nv_width(xs[k].type) &&
		    xs[k].off < x->off + w) {
			finding(c, KB_ELFCHECK_CTOR,
				"%s: nvcc's kernel registration (%s) has "
				"overlapping relocations: not allowed",
				c->src, fname);
			return 0;
		}
	if (rela_target(e, x, &s, &at, errstr, errstr_size) < 0)
		return -EINVAL;
	if (s.shndx == SHN_UNDEF) {
		if (!nv_runtime(s.name))
			finding(c, KB_ELFCHECK_CTOR,
				"%s: nvcc's kernel registration (%s), which "
				"runs before main, calls '%s': code before "
				"main is not allowed (an operator& of a "
				"__device__ variable's type, or an asm label "
				"or #pragma redefine_extname on a CUDA runtime "
				"function?)",
				c->src, fname, s.name);
		return 0;
	}
	if (!nv_is_call(e, fs, x))
		return 0;
	/* Only the first finding's message is kept (func_at reads every
	 * symbol). */
	to = s.name[0] || c->res->found ? s.name : func_at(e, s.shndx, at);
	finding(c, KB_ELFCHECK_CTOR,
		"%s: nvcc's kernel registration (%s), which runs before main, "
		"calls the submission's own code (%s): code before main is "
		"not allowed (an operator& of a __device__ variable's type?)",
		c->src, fname, to ? to : "a local function");
	return 0;
}

/* The machine code of nvcc's function f (kb_elfcheck_x86.h): what a
 * user's operator&, inlined there, would add is refused even where it
 * leaves no relocation. xs: the n relocations inside f. */
static int nv_code(struct ctx *c, const struct elf *e, const char *fname,
		   const struct nvfn *f, const struct shdr *fs,
		   const struct rela *xs, size_t n,
		   const struct kb__x86_place *callees, size_t ncallees,
		   char *errstr, size_t errstr_size)
{
	struct kb__x86_reloc rel[NV_RELOC_MAX];
	struct kb__x86_fn fn;
	char why[256];
	struct shdr ts;
	struct sym s;
	uint64_t at;

	for (size_t i = 0; i < n; i++) {
		if (rela_target(e, &xs[i], &s, &at, errstr, errstr_size) < 0)
			return -EINVAL;
		rel[i].off = xs[i].off - f->value;
		rel[i].kind = KB__X86_REL_OTHER;
		rel[i].target = (int64_t)at;
		rel[i].sec_size = 0;
		rel[i].width = nv_width(xs[i].type);
		rel[i].sec = 0;
		if (s.shndx == SHN_UNDEF) {
			if (strcmp(s.name, "__stack_chk_fail") == 0)
				rel[i].kind = KB__X86_REL_NORETURN;
			else if (strncmp(s.name, NV_LINKED,
					 sizeof NV_LINKED - 1) == 0)
				rel[i].kind = KB__X86_REL_LINKED;
			else if (nv_runtime(s.name))
				rel[i].kind = KB__X86_REL_CALL;
		} else if (s.shndx < e->shnum && xs[i].type == R_X86_64_PC32) {
			rel[i].sec = s.shndx;
			sec(e, s.shndx, &ts);
			if (ts.type == SHT_NOBITS && (ts.flags & SHF_WRITE)) {
				rel[i].kind = KB__X86_REL_STORE;
				rel[i].sec_size = ts.size;
			}
		}
	}
	fn.code = e->r.b + fs->offset + f->value;
	fn.n = f->size;
	fn.sec = f->shndx;
	fn.base = f->value;
	fn.callees = callees;
	fn.ncallees = ncallees;
	fn.rel = rel;
	fn.nrel = n;
	if (kb__x86_check(&fn, why, sizeof why) == 0)
		return 0;
	finding(c, KB_ELFCHECK_CTOR,
		"%s: nvcc's kernel registration (%s), which runs before main, "
		"holds %s: code before main is not allowed (an operator& of a "
		"__device__ variable's type, inlined?)",
		c->src, fname, why);
	return 0;
}

/* The relocations inside nvcc's function f (called fname): calls and
 * jumps may go to the CUDA runtime only; the object's own code may only
 * be referred to by address (kernels, the exit handler). */
static int nv_body(struct ctx *c, const struct elf *e, const char *fname,
		   const struct nvfn *f, const struct kb__x86_place *callees,
		   size_t ncallees, char *errstr, size_t errstr_size)
{
	struct rela xs[NV_RELOC_MAX];
	size_t n = 0;
	struct shdr fs, rs;
	int rc;

	sec(e, f->shndx, &fs);
	for (uint64_t k = 1; k < e->shnum; k++) {
		if ((rc = rela_of(e, k, f->shndx, &rs, errstr,
				  errstr_size)) < 0)
			return rc;
		for (uint64_t j = 0; rc && j < rs.size / sizeof(Elf64_Rela);
		     j++) {
			rela_at(e, &rs, j, &xs[n]);
			if (xs[n].off < f->value ||
			    xs[n].off - f->value >= f->size)
				continue;
			if (++n == NV_RELOC_MAX) {
				finding(c, KB_ELFCHECK_CTOR,
					"%s: nvcc's kernel registration (%s) "
					"has %d relocations or more, too many "
					"to check (fewer kernels?)",
					c->src, fname, NV_RELOC_MAX);
				return 0;
			}
		}
	}
	for (size_t i = 0; i < n; i++)
		if (nv_reloc(c, e, fname, &fs, xs, i, errstr, errstr_size) < 0)
			return -EINVAL;
	return nv_code(c, e, fname, f, &fs, xs, n, callees, ncallees, errstr,
		       errstr_size);
}

/* The nvcc policy's checks of constructors (see kb_elfcheck.h). */
static int nv_check(struct ctx *c, const struct elf *e, char *errstr,
		    size_t errstr_size)
{
	/* nvcc's start-up functions; at -O0 the first three call the
	 * other two rather than inlining them */
	static const char *const fns[] = {NV_STI, NV_CALLBACK, NV_UNREGISTER,
					  NV_SAVE, NV_DUMMY};
	struct nvfn f[NELEM(fns)];
	struct kb__x86_place callees[NELEM(fns)];
	size_t ncallees;
	struct shdr s;

	if (e->machine != EM_X86_64) {
		kb__err(errstr, errstr_size,
			"nvcc objects are checked for x86-64 only, not for "
			"machine %u", e->machine);
		return -EINVAL;
	}
	for (size_t i = 0; i < NELEM(fns); i++) {
		if (nv_find(e, fns[i], &f[i], errstr, errstr_size) < 0)
			return -EINVAL;
		if (f[i].count && !f[i].ok)
			finding(c, KB_ELFCHECK_CTOR,
				"%s defines '%s', a name of nvcc's start-up "
				"code, itself: code before main is not "
				"allowed",
				c->src, fns[i]);
	}
	for (uint64_t i = 1; i < e->shnum; i++) {
		sec(e, i, &s);
		if (s.type == SHT_INIT_ARRAY &&
		    strcmp(str_at(&e->r, &e->names, s.name), ".init_array") ==
			    0 &&
		    nv_init_array(c, e, i, &s, &f[0], errstr, errstr_size) < 0)
			return -EINVAL;
	}
	for (size_t i = 0; i < NELEM(fns); i++) {
		if (!f[i].ok)
			continue;
		/* what it may call of nvcc's own: the others (at -O0 the
		 * callback and the handle saver are calls; with -rdc the
		 * callback and the dummy are handed to the linked binary) */
		ncallees = 0;
		for (size_t k = 1; k < NELEM(fns); k++)
			if (k != i && f[k].ok)
				callees[ncallees++] =
					(struct kb__x86_place){f[k].shndx,
							       f[k].value};
		if (nv_body(c, e, fns[i], &f[i], callees, ncallees, errstr,
			    errstr_size) < 0)
			return -EINVAL;
	}
	return 0;
}

/* ---- the check ---------------------------------------------------------- */

static int check(const void *obj, size_t len,
		 const struct kb_elfcheck_policy *policy, int nvcc,
		 struct kb_elfcheck_result *res, char *errstr,
		 size_t errstr_size)
{
	struct ctx c = {res, policy && policy->source_name
				     ? policy->source_name
				     : "the submission"};
	struct elf e;
	struct shdr sh;
	struct sym s;

	memset(res, 0, sizeof(*res));
	if (elf_open(&e, obj, len, errstr, errstr_size) < 0)
		return -EINVAL;
	for (uint64_t i = 1; i < e.shnum; i++) {
		sec(&e, i, &sh);
		check_section(&c, str_at(&e.r, &e.names, sh.name), sh.type,
			      nvcc);
	}

	/* Symbols. */
	int have_required[64] = {0};
	size_t nreq = 0;

	while (policy && policy->required && policy->required[nreq] &&
	       nreq < 64)
		nreq++;
	for (uint64_t i = 1; i < e.nsym; i++) {
		if (sym_at(&e, i, &s, errstr, errstr_size) < 0)
			return -EINVAL;
		const int defined = s.shndx != SHN_UNDEF;

		check_symbol(&c, policy, s.name, s.bind, s.type, defined, nvcc,
			     grouped(&e, s.shndx));
		if (defined && s.bind != STB_LOCAL)
			for (size_t k = 0; k < nreq; k++)
				if (strcmp(policy->required[k], s.name) == 0)
					have_required[k] = 1;
	}
	for (size_t k = 0; k < nreq; k++)
		if (!have_required[k])
			finding(&c, KB_ELFCHECK_MISSING,
				"%s does not define %s (with external "
				"linkage, i.e. not static)",
				c.src, policy->required[k]);
	if (nvcc && nv_check(&c, &e, errstr, errstr_size) < 0)
		return -EINVAL;
	return 0;
}

int kb_elfcheck(const void *obj, size_t len,
		const struct kb_elfcheck_policy *policy,
		struct kb_elfcheck_result *res, char *errstr,
		size_t errstr_size)
{
	return check(obj, len, policy, 0, res, errstr, errstr_size);
}

int kb_elfcheck_nvcc(const void *obj, size_t len,
		     const struct kb_elfcheck_policy *policy,
		     struct kb_elfcheck_result *res, char *errstr,
		     size_t errstr_size)
{
	return check(obj, len, policy, 1, res, errstr, errstr_size);
}
