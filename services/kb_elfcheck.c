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

static void check_section(struct ctx *c, const char *name, uint32_t type)
{
	static const char *const ctor[] = {".init_array", ".preinit_array",
					   ".ctors"};
	static const char *const dtor[] = {".fini_array", ".dtors"};
	static const char *const linker[] = {".interp", ".dynamic", ".dynsym",
					     ".dynstr", ".got", ".got.plt",
					     ".plt", ".jcr", ".tm_clone_table"};

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

static void check_symbol(struct ctx *c, const struct kb_elfcheck_policy *p,
			 const char *name, unsigned bind, unsigned type,
			 int defined)
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

int kb_elfcheck(const void *obj, size_t len,
		const struct kb_elfcheck_policy *policy,
		struct kb_elfcheck_result *res, char *errstr,
		size_t errstr_size)
{
	struct elfrd r = {obj, len, 0};
	struct ctx c = {res, policy && policy->source_name
				     ? policy->source_name
				     : "the submission"};

	memset(res, 0, sizeof(*res));
	if (!obj || len < sizeof(Elf64_Ehdr) ||
	    memcmp(obj, ELFMAG, SELFMAG) != 0) {
		kb__err(errstr, errstr_size, "not an ELF object");
		return -EINVAL;
	}
	if (r.b[EI_CLASS] != ELFCLASS64) {
		kb__err(errstr, errstr_size, "not a 64-bit ELF object");
		return -EINVAL;
	}
	if (r.b[EI_DATA] != ELFDATA2LSB && r.b[EI_DATA] != ELFDATA2MSB) {
		kb__err(errstr, errstr_size, "unknown ELF byte order");
		return -EINVAL;
	}
	r.msb = r.b[EI_DATA] == ELFDATA2MSB;
	if (rd(&r, offsetof(Elf64_Ehdr, e_type), 2) != ET_REL) {
		kb__err(errstr, errstr_size,
			"not a relocatable object (cc -c output)");
		return -EINVAL;
	}
	uint64_t shoff = rd(&r, offsetof(Elf64_Ehdr, e_shoff), 8);
	uint64_t shentsize = rd(&r, offsetof(Elf64_Ehdr, e_shentsize), 2);
	uint64_t shnum = rd(&r, offsetof(Elf64_Ehdr, e_shnum), 2);
	uint64_t shstrndx = rd(&r, offsetof(Elf64_Ehdr, e_shstrndx), 2);

	if (shentsize != sizeof(Elf64_Shdr) || shoff == 0 ||
	    !kb__in(&r, shoff, sizeof(Elf64_Shdr))) {
		kb__err(errstr, errstr_size, "bad section header table");
		return -EINVAL;
	}
	/* Extended numbering: the real values live in section 0. */
	struct shdr s0;

	rd_shdr(&r, shoff, &s0);
	if (shnum == 0)
		shnum = s0.size;
	if (shstrndx == SHN_XINDEX)
		shstrndx = s0.link;
	if (shnum == 0 || shnum > len / sizeof(Elf64_Shdr) ||
	    !kb__in(&r, shoff, shnum * sizeof(Elf64_Shdr))) {
		kb__err(errstr, errstr_size,
			"section header table outside the object");
		return -EINVAL;
	}
	if (shstrndx >= shnum) {
		kb__err(errstr, errstr_size, "bad section name table index");
		return -EINVAL;
	}
	struct shdr names;

	rd_shdr(&r, shoff + shstrndx * sizeof(Elf64_Shdr), &names);
	if (names.type != SHT_STRTAB || !kb__in(&r, names.offset, names.size)) {
		kb__err(errstr, errstr_size, "bad section name table");
		return -EINVAL;
	}

	/* Sections, and where the symbol table is. */
	uint64_t symtab = 0;
	unsigned nsymtab = 0;

	for (uint64_t i = 1; i < shnum; i++) {
		struct shdr s;

		rd_shdr(&r, shoff + i * sizeof(Elf64_Shdr), &s);
		const char *name = str_at(&r, &names, s.name);

		if (!name) {
			kb__err(errstr, errstr_size,
				"section %llu has a bad name",
				(unsigned long long)i);
			return -EINVAL;
		}
		if (s.type != SHT_NOBITS && s.type != SHT_NULL &&
		    !kb__in(&r, s.offset, s.size)) {
			kb__err(errstr, errstr_size,
				"section %s lies outside the object", name);
			return -EINVAL;
		}
		check_section(&c, name, s.type);
		if (s.type == SHT_SYMTAB) {
			symtab = i;
			nsymtab++;
		}
	}
	if (nsymtab > 1) {
		kb__err(errstr, errstr_size, "more than one symbol table");
		return -EINVAL;
	}

	/* Symbols. */
	int have_required[64] = {0};
	size_t nreq = 0;

	while (policy && policy->required && policy->required[nreq] &&
	       nreq < 64)
		nreq++;
	if (symtab) {
		struct shdr st, strtab;

		rd_shdr(&r, shoff + symtab * sizeof(Elf64_Shdr), &st);
		if (st.entsize != sizeof(Elf64_Sym) ||
		    st.size % sizeof(Elf64_Sym) != 0 || st.link == 0 ||
		    st.link >= shnum) {
			kb__err(errstr, errstr_size, "bad symbol table");
			return -EINVAL;
		}
		rd_shdr(&r, shoff + (uint64_t)st.link * sizeof(Elf64_Shdr),
			&strtab);
		if (strtab.type != SHT_STRTAB ||
		    !kb__in(&r, strtab.offset, strtab.size)) {
			kb__err(errstr, errstr_size, "bad symbol name table");
			return -EINVAL;
		}
		uint64_t n = st.size / sizeof(Elf64_Sym);

		for (uint64_t i = 1; i < n; i++) {
			uint64_t off = st.offset + i * sizeof(Elf64_Sym);
			uint32_t nm = (uint32_t)rd(
				&r, off + offsetof(Elf64_Sym, st_name), 4);
			unsigned info = (unsigned)rd(
				&r, off + offsetof(Elf64_Sym, st_info), 1);
			unsigned shndx = (unsigned)rd(
				&r, off + offsetof(Elf64_Sym, st_shndx), 2);
			const char *name = str_at(&r, &strtab, nm);

			if (!name) {
				kb__err(errstr, errstr_size,
					"symbol %llu has a bad name",
					(unsigned long long)i);
				return -EINVAL;
			}
			unsigned bind = ELF64_ST_BIND(info);
			unsigned type = ELF64_ST_TYPE(info);
			int defined = shndx != SHN_UNDEF;

			check_symbol(&c, policy, name, bind, type, defined);
			if (defined && bind != STB_LOCAL)
				for (size_t k = 0; k < nreq; k++)
					if (strcmp(policy->required[k],
						   name) == 0)
						have_required[k] = 1;
		}
	}
	for (size_t k = 0; k < nreq; k++)
		if (!have_required[k])
			finding(&c, KB_ELFCHECK_MISSING,
				"%s does not define %s (with external "
				"linkage, i.e. not static)",
				c.src, policy->required[k]);
	return 0;
}
