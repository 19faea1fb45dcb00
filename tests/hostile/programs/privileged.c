/* System calls the seccomp list and the dropped privileges must refuse:
 * mounts, namespaces, keyrings, BPF, perf, io_uring, modules, clocks. */
#include "hostile.h"

#include <fcntl.h>
#include <pthread.h>
#include <linux/bpf.h>
#include <linux/perf_event.h>
#include <sched.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/mount.h>
#include <sys/personality.h>
#include <sys/swap.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>

#ifndef __NR_io_uring_setup
#define __NR_io_uring_setup 425
#endif

static void *thread_main(void *arg)
{
	return arg;
}

static int try_clone_ns(unsigned long flags)
{
	pid_t p =
		(pid_t)syscall(SYS_clone, flags | SIGCHLD, NULL, NULL, NULL, 0);
	if (p == 0)
		_exit(0);
	if (p > 0)
		waitpid(p, NULL, 0);
	return p > 0;
}

int main(void)
{
	hostile_start();
	EXPECT_FAIL(mount("none", "/tmp", "tmpfs", 0, NULL) == 0,
		    "mount tmpfs");
	EXPECT_FAIL(mount("/tmp", "/tmp", NULL, MS_BIND, NULL) == 0,
		    "bind mount");
	EXPECT_FAIL(umount2("/proc", MNT_DETACH) == 0, "umount /proc");
	EXPECT_FAIL(unshare(CLONE_NEWUSER) == 0, "unshare(CLONE_NEWUSER)");
	EXPECT_FAIL(unshare(CLONE_NEWNS) == 0, "unshare(CLONE_NEWNS)");
	EXPECT_FAIL(unshare(CLONE_NEWNET) == 0, "unshare(CLONE_NEWNET)");
	EXPECT_FAIL(try_clone_ns(CLONE_NEWUSER), "clone(CLONE_NEWUSER)");
	EXPECT_FAIL(try_clone_ns(CLONE_NEWUSER | CLONE_NEWNS),
		    "clone(CLONE_NEWUSER|CLONE_NEWNS)");
	int fd = open("/proc/1/ns/mnt", O_RDONLY);
	EXPECT_FAIL(fd >= 0 && setns(fd, 0) == 0,
		    "setns(init's mount namespace)");
	EXPECT_FAIL(syscall(SYS_pivot_root, "/tmp", "/tmp") == 0, "pivot_root");
	EXPECT_FAIL(chroot("/tmp") == 0, "chroot");
	EXPECT_FAIL(syscall(SYS_keyctl, 0 /* KEYCTL_GET_KEYRING_ID */, -3, 0) >=
			    0,
		    "keyctl");
	EXPECT_FAIL(syscall(SYS_add_key, "user", "kb", "x", 1, -3) >= 0,
		    "add_key");
	union bpf_attr attr;
	memset(&attr, 0, sizeof(attr));
	attr.map_type = BPF_MAP_TYPE_ARRAY;
	attr.key_size = 4;
	attr.value_size = 4;
	attr.max_entries = 1;
	EXPECT_FAIL(syscall(SYS_bpf, BPF_MAP_CREATE, &attr, sizeof(attr)) >= 0,
		    "bpf(BPF_MAP_CREATE)");
	struct perf_event_attr pe;
	memset(&pe, 0, sizeof(pe));
	pe.size = sizeof(pe);
	pe.type = PERF_TYPE_SOFTWARE;
	pe.config = PERF_COUNT_SW_CPU_CLOCK;
	EXPECT_FAIL(syscall(SYS_perf_event_open, &pe, 0, -1, -1, 0) >= 0,
		    "perf_event_open");
	char params[120];
	memset(params, 0, sizeof(params));
	EXPECT_FAIL(syscall(__NR_io_uring_setup, 4, params) >= 0,
		    "io_uring_setup");
	EXPECT_FAIL(syscall(SYS_userfaultfd, 0) >= 0, "userfaultfd");
	EXPECT_FAIL(syscall(SYS_init_module, NULL, 0, "") == 0 ||
			    errno != EPERM,
		    "init_module");
	EXPECT_FAIL(syscall(SYS_finit_module, 0, "", 0) == 0 || errno != EPERM,
		    "finit_module");
	EXPECT_FAIL(syscall(SYS_delete_module, "loop", 0) == 0 ||
			    errno != EPERM,
		    "delete_module");
	EXPECT_FAIL(syscall(SYS_kexec_load, 0, 0, NULL, 0) == 0 ||
			    errno != EPERM,
		    "kexec_load");
	EXPECT_FAIL(syscall(SYS_reboot, 0, 0, 0, NULL) == 0 || errno != EPERM,
		    "reboot");
	EXPECT_FAIL(swapoff("/dev/zram0") == 0 || errno != EPERM, "swapoff");
	struct timeval tv;
	gettimeofday(&tv, NULL);
	EXPECT_FAIL(settimeofday(&tv, NULL) == 0, "settimeofday");
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	EXPECT_FAIL(clock_settime(CLOCK_REALTIME, &ts) == 0, "clock_settime");
	EXPECT_FAIL(syscall(SYS_open_by_handle_at, AT_FDCWD, NULL, 0) == 0 ||
			    errno != EPERM,
		    "open_by_handle_at");
	EXPECT_FAIL(personality(READ_IMPLIES_EXEC) != -1,
		    "personality(READ_IMPLIES_EXEC)");
	EXPECT_FAIL(sethostname("evil", 4) == 0, "sethostname");
	/* The harmless personality calls must still work. */
	int q = personality(0xffffffff);
	if (q == -1)
		BROKEN("personality query refused: %s", strerror(errno));
	else
		printf("personality query works (0x%x)\n", q);
	if (personality(ADDR_NO_RANDOMIZE) == -1)
		BROKEN("personality(ADDR_NO_RANDOMIZE) refused: %s",
		       strerror(errno));
	/* Threads must work (clone3 falls back to clone). */
	pid_t c = fork();
	if (c == 0)
		_exit(7);
	int st = 0;
	waitpid(c, &st, 0);
	if (!WIFEXITED(st) || WEXITSTATUS(st) != 7)
		BROKEN("fork does not work");
	/* Threads too: glibc tries clone3 first, gets ENOSYS, uses clone. */
	pthread_t t;
	int e = pthread_create(&t, NULL, thread_main, NULL);
	if (e)
		BROKEN("pthread_create: %s", strerror(e));
	else
		pthread_join(t, NULL);
	return hostile_achieved;
}
