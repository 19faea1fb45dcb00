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
 * nvcc objects (kb_elfcheck_nvcc): nvcc adds one constructor to every
 * .cu file, a local function it names
 * __sti____cudaRegisterAll (symbol _ZL24__sti____cudaRegisterAllv; at -O2
 * and above in .text.startup, else in .text) that registers the file's
 * kernels and variables with the CUDA runtime; .init_array holds one
 * R_X86_64_64 relocation against its section plus its offset. The object
 * is expected sealed (problems/harness/cuda/kbg_seal.sh: every global but
 * the exports made local, C++ COMDAT definitions kept). Then, instead of
 * refusing .init_array outright:
 *
 *   - a section named exactly .init_array, of type SHT_INIT_ARRAY, is
 *     accepted when every 8-byte entry has exactly one R_X86_64_64
 *     relocation and each resolves (by symbol, or by section and offset)
 *     to the start of that one function: the only local FUNC of that
 *     name, in an executable section. Anything else in it is
 *     KB_ELFCHECK_CTOR, named after the function it points at (with a
 *     hint for g++'s _GLOBAL__sub_I_*: namespace-scope objects that need
 *     a constructor, dynamic initialiser or destructor, or <iostream>);
 *   - the relocations inside that function, inside nvcc's registration
 *     callback (_ZL31__nv_cudaEntityRegisterCallbackPPv, a separate
 *     function below -O2 or with -rdc) and inside the exit handler it
 *     installs (_ZL26__cudaUnregisterBinaryUtilv) may refer to undefined
 *     symbols only if they are the CUDA runtime's registration functions
 *     (__cudaRegister*, __cudaUnregisterFatBinary, __cudaInitModule),
 *     atexit or __stack_chk_fail (-fstack-protector), and to the object's
 *     own code only by address (kernels for __cudaRegisterFunction),
 *     never as a call or jump target; overlapping relocations are
 *     refused. This catches C++ that nvcc's generated code
 *     runs (an operator& of a __device__ variable's class type: the
 *     registration takes &var) when it calls anything, and an asm label or
 *     #pragma redefine_extname that renames a runtime function. Any
 *     definition, local included, of one of those runtime names is
 *     KB_ELFCHECK_CTOR too (after the seal a submission's own
 *     __cudaRegisterFatBinary or atexit would be the one the registration
 *     calls);
 *   - besides exports, global definitions are allowed only where the seal
 *     keeps them: weak or unique C++ names (_Z...) and DW.ref.* that sit in
 *     a COMDAT group (inline functions, templates). A weak _Z definition
 *     outside a group (__attribute__((weak))) is KB_ELFCHECK_EXPORT; one of
 *     the replaceable global operators new and delete (_Znwm, _ZdlPv and
 *     their nothrow, sized and aligned forms; not placement new), in a
 *     group or not, is KB_ELFCHECK_DENIED: it would replace the C++
 *     runtime's for the whole program, before main included. Not caught:
 *     an inline definition of another function libstdc++ exports (say
 *     namespace std { inline void __throw_bad_alloc() {...} }) is a COMDAT
 *     definition like any template's and replaces libstdc++'s too.
 *
 *   - the machine code of those functions, and of the two helpers nvcc
 *     calls from them below -O1 (_ZL37__nv_save_fatbinhandle_for_managed_
 *     rtPPv, _ZL22____nv_dummy_param_refPv), is decoded and must be
 *     made only of what nvcc's registration code is made of
 *     (kb_elfcheck_x86.h: no system call, no store outside the frame or
 *     the object's .bss, no indirect call but to those functions, no
 *     loop, the stack balanced). This catches code inlined there that
 *     calls nothing, e.g. inline asm making a system call in the
 *     operator& of a __device__ variable's type; and, with -rdc=true, a
 *     call of __cudaRegisterLinkedBinary_* (which calls the callbacks
 *     it is given) with anything but nvcc's own functions as those
 *     callbacks. Not caught: such code calling atexit or
 *     __cudaRegisterFatBinary with arguments of its own (see
 *     problems/harness/cuda/README.md, "Code before main").
 *
 * Everything else is as for C: .fini_array, .init_array.N (a constructor
 * priority), .preinit_array, .ctors, ifuncs, linker sections, harness
 * names.
 * x86-64 objects only: kb_elfcheck_nvcc gives -EINVAL for other machines.
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

/* kb_elfcheck for a sealed nvcc object (nvcc -c, then kbg_seal.sh): the
 * same verdicts, except that nvcc's own constructor is allowed and what
 * it runs is checked, and the seal's C++ COMDAT globals are allowed (see
 * above). Same returns; -EINVAL also for an object that is not x86-64.
 * Pure, thread-safe. */
int kb_elfcheck_nvcc(const void *obj, size_t len,
		     const struct kb_elfcheck_policy *policy,
		     struct kb_elfcheck_result *res, char *errstr,
		     size_t errstr_size);

/* 1 when name is on the deny list above. Pure. */
int kb_elfcheck_denied(const char *name);

#endif
