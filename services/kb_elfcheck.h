/* kb_elfcheck: inspects a compiled submission (an ELF64 relocatable
 * object, cc -c) before it is linked with a harness.
 *
 * Why: the harness runs user code only in a child process it forks first
 * thing in main() (problems/harness/guard.h), so everything depends on no
 * user code running before main() -- or in the harness's own process at
 * all. An object can arrange that in a few ways the linker honours
 * silently; this finds them:
 *
 *   KB_ELFCHECK_CTOR    code run before main: a section named .init_array,
 *                       .preinit_array, .ctors (or any .init_array.N,
 *                       .ctors.N), .init, or of type SHT_INIT_ARRAY /
 *                       SHT_PREINIT_ARRAY (__attribute__((constructor)),
 *                       hand-written asm);
 *   KB_ELFCHECK_DTOR    code run at exit: .fini_array, .dtors, .fini, type
 *                       SHT_FINI_ARRAY (__attribute__((destructor)));
 *   KB_ELFCHECK_IFUNC   an STT_GNU_IFUNC symbol, local or not (ifunc,
 *                       target_clones): its resolver runs inside the
 *                       dynamic loader, before any constructor;
 *   KB_ELFCHECK_LINKER  a section the linker treats as the executable's
 *                       own (.interp, .dynamic, .dynsym, .dynstr, .got*,
 *                       .plt*, .jcr, .tm_clone_table; types SHT_DYNAMIC,
 *                       SHT_DYNSYM);
 *   KB_ELFCHECK_DENIED  a definition (global, weak or unique binding, any
 *                       visibility: hidden still binds inside the link) of
 *                       a denied name, see kb_elfcheck_denied();
 *   KB_ELFCHECK_EXPORT  a definition of any other name not in
 *                       policy->exports. In one executable a definition
 *                       wins over a shared library's for every caller --
 *                       libc's own start-up, libgomp's and the harness's
 *                       included -- so a submission that defines malloc,
 *                       memcmp or write runs code in the trusted process,
 *                       even before main. No deny list can name them all;
 *                       an allow list can (the problem's ABI,
 *                       e.g. custom_kernel; everything else static);
 *   KB_ELFCHECK_HARNESS a reference to a harness-internal name (kbh_*,
 *                       kbg_*, kb_*): hidden visibility keeps harness
 *                       symbols out of dlsym, not out of a static link;
 *   KB_ELFCHECK_MISSING a name of policy->required that the object does
 *                       not define (a friendlier message than the
 *                       linker's).
 *
 * Denied names (always, whatever the exports): the prefixes kbh_, kbg_,
 * kb_, __kbh, GOMP_, __kmpc_, omp_, pthread_, _dl_, __libc_; the entry
 * points and start-up hooks main, _start, _init, _fini, __gmon_start__,
 * _ITM_registerTMCloneTable, _ITM_deregisterTMCloneTable, __cxa_atexit,
 * __cxa_finalize, atexit, on_exit, exit, _exit, _Exit; every timing
 * function a harness uses (clock_gettime, clock_getres, gettimeofday,
 * time, clock, times, getrusage, timespec_get, __vdso_clock_gettime,
 * __vdso_gettimeofday, cudaEventElapsedTime, cudaEventRecord,
 * cudaEventSynchronize, cudaEventQuery, cudaEventCreate,
 * cudaEventCreateWithFlags, cudaDeviceSynchronize,
 * cudaStreamSynchronize, cuEventElapsedTime, cuEventRecord,
 * cuEventSynchronize, cuCtxSynchronize, cuStreamSynchronize,
 * hipEventElapsedTime, hipEventRecord, hipEventSynchronize,
 * hipDeviceSynchronize, hipStreamSynchronize); and the libc calls a
 * harness depends on for its report, memory and processes (write, writev,
 * pwrite, read, open, openat, close, dup, dup2, dup3, fcntl, ioctl, mmap,
 * munmap, mprotect, madvise, fork, vfork, clone, execve, kill, raise,
 * signal, sigaction, prctl, ptrace, syscall, waitpid, dlopen, dlsym,
 * dlvsym, dladdr, dl_iterate_phdr, getenv, setenv, unsetenv, malloc,
 * calloc, realloc, free, posix_memalign, aligned_alloc, memalign, memcpy,
 * memmove, memset, memcmp, strlen, strcmp, strncmp, strchr, memchr, strtol,
 * strtoul, strtoull, snprintf, vsnprintf, printf, fprintf, vfprintf,
 * fputs, fwrite, fflush, fopen, fclose, fgets, fread, ferror, strerror,
 * qsort, abort, __stack_chk_fail, __errno_location). With an allow list
 * these only sharpen the message; without one they are the whole check.
 *
 * Pure: reads the bytes it is given and nothing else; never writes them.
 * Malformed input of any kind (truncated, lying offsets, huge counts,
 * unterminated strings, other ELF classes) gives -EINVAL, never a crash.
 * Thread-safe.
 */
#ifndef KB_ELFCHECK_H
#define KB_ELFCHECK_H

#include <stddef.h>

enum {
	KB_ELFCHECK_CTOR = 1u << 0,
	KB_ELFCHECK_DTOR = 1u << 1,
	KB_ELFCHECK_IFUNC = 1u << 2,
	KB_ELFCHECK_LINKER = 1u << 3,
	KB_ELFCHECK_DENIED = 1u << 4,
	KB_ELFCHECK_EXPORT = 1u << 5,
	KB_ELFCHECK_HARNESS = 1u << 6,
	KB_ELFCHECK_MISSING = 1u << 7,
};

struct kb_elfcheck_policy {
	/* NULL-terminated names the object may define globally, or NULL for
	 * no allow list (only denied names are refused). */
	const char *const *exports;
	/* NULL-terminated names the object must define, or NULL. */
	const char *const *required;
	/* Name to use for the object in messages ("submission.c"); NULL
	 * gives "the submission". */
	const char *source_name;
};

struct kb_elfcheck_result {
	unsigned found;	   /* KB_ELFCHECK_* bits; 0 means the object is fine */
	unsigned nfindings; /* how many findings in all */
	char msg[512];	   /* the first finding, one line for the user; ""
			    * when found == 0 */
};

/* Checks the object in obj[0..len). Returns 0 when it could be read (the
 * verdict is in *res: res->found == 0 means accept), or -EINVAL when it is
 * not a well-formed ELF64 relocatable object (errstr says why; the caller
 * should refuse it too). policy may be NULL (no allow or required list). */
int kb_elfcheck(const void *obj, size_t len,
		const struct kb_elfcheck_policy *policy,
		struct kb_elfcheck_result *res, char *errstr,
		size_t errstr_size);

/* 1 when name is on the deny list above. Pure. */
int kb_elfcheck_denied(const char *name);

#endif
