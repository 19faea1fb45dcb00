/* sandbox_seccomp: the seccomp deny list of isolated runs.
 *
 * Policy: allow by default (compilers, Python, CUDA and PyTorch use a long
 * and changing tail of system calls), refuse with EPERM what a benchmark
 * never needs and what widens the kernel attack surface or reaches outside
 * the run: debugging other processes, mounts and namespaces, kernel
 * modules, keyrings, BPF, perf events, io_uring, clocks, swap, reboot,
 * handle-based opens, userfaultfd.
 *
 * Sockets: the run has its own network namespace with only loopback, so
 * AF_INET/AF_INET6 reach nothing outside the run (and stay allowed because
 * NCCL and torch.distributed bootstrap over loopback). AF_UNIX is allowed
 * (multiprocessing), AF_NETLINK only for NETLINK_ROUTE (getifaddrs). Every
 * other family is refused with EAFNOSUPPORT — in particular AF_VSOCK, which
 * network namespaces do not isolate, and AF_PACKET/AF_ALG/AF_KEY, which are
 * frequent sources of kernel bugs.
 *
 * clone(2) with a namespace flag is refused; clone3(2), whose flags sit in
 * memory where a filter cannot read them, answers ENOSYS so that the C
 * library falls back to clone(2). personality(2) is limited to the harmless
 * values by a small second filter written by hand (libseccomp cannot put
 * two comparisons on one argument).
 *
 * The program is compiled once in the parent with libseccomp and exported
 * as BPF, so that the child only makes the seccomp(2) call.
 */
#include "sandbox_internal.h"

#include <errno.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sched.h>
#include <seccomp.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

static const char *const deny_eperm[] = {
	"ptrace",
	"process_vm_readv",
	"process_vm_writev",
	"pidfd_getfd",
	"kcmp",
	"mount",
	"umount",
	"umount2",
	"pivot_root",
	"chroot",
	"unshare",
	"setns",
	"fsopen",
	"fsconfig",
	"fsmount",
	"fspick",
	"move_mount",
	"open_tree",
	"mount_setattr",
	"keyctl",
	"add_key",
	"request_key",
	"bpf",
	"perf_event_open",
	"kexec_load",
	"kexec_file_load",
	"init_module",
	"finit_module",
	"delete_module",
	"create_module",
	"reboot",
	"swapon",
	"swapoff",
	"userfaultfd",
	"open_by_handle_at",
	"name_to_handle_at",
	"clock_settime",
	"clock_adjtime",
	"settimeofday",
	"adjtimex",
	"stime",
	"io_uring_setup",
	"io_uring_enter",
	"io_uring_register",
	"acct",
	"quotactl",
	"quotactl_fd",
	"syslog",
	"vhangup",
	"lookup_dcookie",
	"nfsservctl",
	"uselib",
	"iopl",
	"ioperm",
	"fanotify_init",
	"sethostname",
	"setdomainname",
	"get_kernel_syms",
	"query_module",
	"sysfs",
	"_sysctl",
	"ustat",
};

static const unsigned long clone_ns_flags[] = {
	CLONE_NEWNS,  CLONE_NEWUSER, CLONE_NEWPID,    CLONE_NEWNET,
	CLONE_NEWIPC, CLONE_NEWUTS,  CLONE_NEWCGROUP,
};

#if defined(__x86_64__)
#define SB_AUDIT_ARCH AUDIT_ARCH_X86_64
#elif defined(__aarch64__)
#define SB_AUDIT_ARCH AUDIT_ARCH_AARCH64
#else
#error "sandbox_seccomp: add this architecture's AUDIT_ARCH"
#endif

/* personality(2): allow PER_LINUX, PER_LINUX32, ADDR_NO_RANDOMIZE (gdb,
 * sanitizers), UNAME26 and the query 0xffffffff; refuse the rest (e.g.
 * READ_IMPLIES_EXEC, MMAP_PAGE_ZERO). Architectures other than ours are
 * left to the libseccomp filter, which kills them. */
static const struct sock_filter personality_filter[] = {
	BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch)),
	BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SB_AUDIT_ARCH, 0, 8),
	BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
	BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_personality, 0, 6),
	BPF_STMT(BPF_LD | BPF_W | BPF_ABS,
		 offsetof(struct seccomp_data, args[0])),
	BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, 0x0, 4, 0),
	BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, 0x0008, 3, 0),
	BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, 0x0040000, 2, 0),
	BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, 0xffffffff, 1, 0),
	BPF_STMT(BPF_RET | BPF_K,
		 SECCOMP_RET_ERRNO | (EPERM & SECCOMP_RET_DATA)),
	BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
};

static struct sock_filter *prog_cache;
static unsigned short prog_len;

static int add_rules(scmp_filter_ctx ctx, char *errstr, size_t errstr_size)
{
	int rc;

	for (size_t i = 0; i < sizeof(deny_eperm) / sizeof(deny_eperm[0]);
	     i++) {
		int nr = seccomp_syscall_resolve_name(deny_eperm[i]);
		if (nr == __NR_SCMP_ERROR)
			continue; /* not on this architecture */
		if ((rc = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), nr, 0)) <
			    0 &&
		    rc != -EEXIST) {
			snprintf(errstr, errstr_size, "seccomp rule %s: %s",
				 deny_eperm[i], strerror(-rc));
			return rc;
		}
	}
	for (size_t i = 0;
	     i < sizeof(clone_ns_flags) / sizeof(clone_ns_flags[0]); i++) {
		rc = seccomp_rule_add(
			ctx, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(clone), 1,
			SCMP_A0(SCMP_CMP_MASKED_EQ, clone_ns_flags[i],
				clone_ns_flags[i]));
		if (rc < 0) {
			snprintf(errstr, errstr_size, "seccomp rule clone: %s",
				 strerror(-rc));
			return rc;
		}
	}
	if ((rc = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(ENOSYS),
				   SCMP_SYS(clone3), 0)) < 0) {
		snprintf(errstr, errstr_size, "seccomp rule clone3: %s",
			 strerror(-rc));
		return rc;
	}
	/* Socket families: refuse all but AF_UNIX (1), AF_INET (2), AF_INET6
	 * (10), AF_NETLINK (16). */
	for (int fam = 0; fam < 16; fam++) {
		if (fam == AF_UNIX || fam == AF_INET || fam == AF_INET6)
			continue;
		if ((rc = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EAFNOSUPPORT),
					   SCMP_SYS(socket), 1,
					   SCMP_A0(SCMP_CMP_EQ,
						   (scmp_datum_t)fam, 0))) < 0)
			goto sock_err;
	}
	if ((rc = seccomp_rule_add(
		     ctx, SCMP_ACT_ERRNO(EAFNOSUPPORT), SCMP_SYS(socket), 1,
		     SCMP_A0(SCMP_CMP_GE, (scmp_datum_t)AF_NETLINK + 1, 0))) <
	    0)
		goto sock_err;
	if ((rc = seccomp_rule_add(
		     ctx, SCMP_ACT_ERRNO(EAFNOSUPPORT), SCMP_SYS(socket), 2,
		     SCMP_A0(SCMP_CMP_EQ, (scmp_datum_t)AF_NETLINK, 0),
		     SCMP_A2(SCMP_CMP_NE, 0 /* NETLINK_ROUTE */, 0))) < 0)
		goto sock_err;
	return 0;
sock_err:
	snprintf(errstr, errstr_size, "seccomp rule socket: %s", strerror(-rc));
	return rc;
}

int kb__sb_seccomp_program(const struct sock_filter **prog, unsigned short *len,
			   char *errstr, size_t errstr_size)
{
	int rc, fd = -1;

	if (prog_cache) {
		*prog = prog_cache;
		*len = prog_len;
		return 0;
	}
	scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_ALLOW);
	if (!ctx) {
		snprintf(errstr, errstr_size, "seccomp_init failed");
		return -ENOMEM;
	}
	/* Foreign ABIs (i386 int 0x80, x32) would bypass the rules: kill. */
	seccomp_attr_set(ctx, SCMP_FLTATR_ACT_BADARCH, SCMP_ACT_KILL_PROCESS);
	if ((rc = add_rules(ctx, errstr, errstr_size)) < 0)
		goto out;
	if ((fd = memfd_create("kb-seccomp", MFD_CLOEXEC)) < 0) {
		rc = -errno;
		snprintf(errstr, errstr_size, "memfd_create: %s",
			 strerror(errno));
		goto out;
	}
	if ((rc = seccomp_export_bpf(ctx, fd)) < 0) {
		snprintf(errstr, errstr_size, "seccomp_export_bpf: %s",
			 strerror(-rc));
		goto out;
	}
	off_t size = lseek(fd, 0, SEEK_END);
	size_t n = (size_t)size / sizeof(struct sock_filter);
	if (size <= 0 || size % (off_t)sizeof(struct sock_filter) ||
	    n > BPF_MAXINSNS) {
		rc = -EINVAL;
		snprintf(errstr, errstr_size, "seccomp: odd BPF size %lld",
			 (long long)size);
		goto out;
	}
	struct sock_filter *buf = calloc(n, sizeof(*buf));
	if (!buf) {
		rc = -ENOMEM;
		goto out;
	}
	if (pread(fd, buf, (size_t)size, 0) != size) {
		rc = -EIO;
		free(buf);
		snprintf(errstr, errstr_size,
			 "seccomp: reading the BPF back failed");
		goto out;
	}
	prog_cache = buf;
	prog_len = (unsigned short)n;
	*prog = prog_cache;
	*len = prog_len;
	rc = 0;
out:
	if (fd >= 0)
		close(fd);
	seccomp_release(ctx);
	return rc;
}

const struct sock_filter *kb__sb_seccomp_second(unsigned short *len)
{
	*len = sizeof(personality_filter) / sizeof(personality_filter[0]);
	return personality_filter;
}
