/* sandbox_mount: builds the isolated run's file system and pivots into it.
 *
 * Runs in the run's init, in its new mount namespace, before the program is
 * started; malloc-free like the rest of the child (see sandbox_child.c).
 *
 * The layout, all on fresh mounts that nothing of the host can see:
 *
 *   /                 tmpfs, read-only once built
 *   /usr /lib* /bin /sbin and extra ro_paths
 *                     read-only, nosuid, nodev bind mounts (recursive, so
 *                     the driver libraries a GPU container runtime binds
 *                     into /usr are there too, read-only as well)
 *   /etc              generated passwd/group/hosts plus read-only binds of a
 *                     curated list (ld.so.cache, alternatives, ssl, ...):
 *                     no shadow, no machine secrets
 *   /dev              tmpfs with null zero full random urandom, fd/std*
 *                     links, a private /dev/shm, and the GPU nodes
 *                     (nvidia*, kfd, dri) only for GPU runs
 *   /proc             a new proc of the run's own PID namespace
 *   /sys              only /sys/devices/system/cpu (all of /sys, read-only,
 *                     for GPU runs: CUDA and NCCL read the PCI topology)
 *   /tmp              private tmpfs (size-capped; charged to the memcg)
 *   <workdir>         the workdir, read-write, at its host path so that
 *                     absolute paths in the worker's commands work
 *
 * Technique (as bubblewrap): mount a tmpfs over /tmp of our private
 * namespace, pivot_root into it so the old root appears at /oldroot, build
 * /newroot from /oldroot's pieces, drop /oldroot, and pivot into /newroot.
 */
#include "sandbox_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/syscall.h>
#include <unistd.h>

#ifndef MOUNT_ATTR_RDONLY
#define MOUNT_ATTR_RDONLY 0x00000001
#define MOUNT_ATTR_NOSUID 0x00000002
#define MOUNT_ATTR_NODEV 0x00000004
#define MOUNT_ATTR_NOEXEC 0x00000008
struct mount_attr {
	unsigned long long attr_set, attr_clr, propagation, userns_fd;
};
#endif
#ifndef AT_RECURSIVE
#define AT_RECURSIVE 0x8000
#endif

#define ERR(what, arg, e)                                                      \
	do {                                                                   \
		kb__sb_fmt_err(msg, msg_size, (what), (arg), (e));             \
		return -(e);                                                   \
	} while (0)

static int join(char *out, size_t n, const char *a, const char *b)
{
	if (kb__sb_strlcpy(out, a, n) >= n || kb__sb_strlcat(out, b, n) >= n)
		return -ENAMETOOLONG;
	return 0;
}

/* mkdir -p of an absolute path. */
static int mkdir_p(const char *path, mode_t mode)
{
	char buf[SB_PATH];

	if (kb__sb_strlcpy(buf, path, sizeof(buf)) >= sizeof(buf))
		return -ENAMETOOLONG;
	for (char *s = buf + 1;; s++) {
		if (*s == '/' || *s == '\0') {
			char c = *s;
			*s = '\0';
			if (mkdir(buf, mode) < 0 && errno != EEXIST)
				return -errno;
			*s = c;
			if (c == '\0')
				break;
		}
	}
	return 0;
}

/* The directories made only to hold a bind mount (e.g. /root/x for a
 * worker installed under /root) are 0711: a run may pass through them to
 * what is bound, but not list them (fs_escape listed /root on the H100
 * host and saw the worker's directory name). */
static int mkdir_parent(const char *path)
{
	char buf[SB_PATH];

	kb__sb_strlcpy(buf, path, sizeof(buf));
	char *s = strrchr(buf, '/');
	if (!s || s == buf)
		return 0;
	*s = '\0';
	return mkdir_p(buf, 0711);
}

/* Applies attributes to a mount and everything below it: mount_setattr(2)
 * (5.12+), else a remount of the top mount that keeps the flags the kernel
 * insists on keeping (locked flags in a user namespace). */
static int restrict_mount(const char *path, unsigned long long attrs,
			  int recursive)
{
	struct mount_attr a;

	memset(&a, 0, sizeof(a));
	a.attr_set = attrs;
#ifdef SYS_mount_setattr
	if (syscall(SYS_mount_setattr, AT_FDCWD, path,
		    recursive ? AT_RECURSIVE : 0, &a, sizeof(a)) == 0)
		return 0;
	if (errno != ENOSYS)
		return -errno;
#endif
	struct statvfs sv;
	unsigned long fl = MS_REMOUNT | MS_BIND;
	if (statvfs(path, &sv) == 0) {
		if (sv.f_flag & ST_NOSUID)
			fl |= MS_NOSUID;
		if (sv.f_flag & ST_NODEV)
			fl |= MS_NODEV;
		if (sv.f_flag & ST_NOEXEC)
			fl |= MS_NOEXEC;
		if (sv.f_flag & ST_RDONLY)
			fl |= MS_RDONLY;
		if (sv.f_flag & ST_NOATIME)
			fl |= MS_NOATIME;
		if (sv.f_flag & ST_NODIRATIME)
			fl |= MS_NODIRATIME;
		if (sv.f_flag & ST_RELATIME)
			fl |= MS_RELATIME;
	}
	if (attrs & MOUNT_ATTR_RDONLY)
		fl |= MS_RDONLY;
	if (attrs & MOUNT_ATTR_NOSUID)
		fl |= MS_NOSUID;
	if (attrs & MOUNT_ATTR_NODEV)
		fl |= MS_NODEV;
	if (attrs & MOUNT_ATTR_NOEXEC)
		fl |= MS_NOEXEC;
	return mount(NULL, path, NULL, fl, NULL) < 0 ? -errno : 0;
}

static int do_bind(const struct kb__sb_bind *b, char *msg, size_t msg_size)
{
	char src[SB_PATH], dst[SB_PATH], target[SB_PATH];
	struct stat st;
	int rc;

	if (join(src, sizeof(src), "/oldroot", b->src) < 0 ||
	    join(dst, sizeof(dst), "/newroot", b->dst) < 0)
		ERR("path too long", b->src, ENAMETOOLONG);
	if (lstat(src, &st) < 0) {
		if (b->optional &&
		    (errno == ENOENT || errno == ENOTDIR || errno == EACCES))
			return 0;
		ERR("bind source", b->src, errno);
	}
	if ((rc = mkdir_parent(dst)) < 0)
		ERR("mkdir", dst + 8, -rc);
	if (S_ISLNK(st.st_mode)) {
		/* /bin -> usr/bin and the like: recreate the link. */
		ssize_t n = readlink(src, target, sizeof(target) - 1);
		if (n < 0)
			ERR("readlink", b->src, errno);
		target[n] = '\0';
		if (symlink(target, dst) < 0 && errno != EEXIST)
			ERR("symlink", dst + 8, errno);
		return 0;
	}
	if (S_ISDIR(st.st_mode)) {
		if ((rc = mkdir_p(dst, 0755)) < 0)
			ERR("mkdir", dst + 8, -rc);
	} else {
		int fd = open(dst, O_WRONLY | O_CREAT | O_CLOEXEC, 0444);
		if (fd < 0)
			ERR("mount point", dst + 8, errno);
		close(fd);
	}
	if (mount(src, dst, NULL, MS_BIND | MS_REC, NULL) < 0)
		ERR("bind mount", b->src, errno);
	unsigned long long attrs = MOUNT_ATTR_NOSUID;
	if (b->kind == SB_BIND_RO)
		attrs |= MOUNT_ATTR_RDONLY | MOUNT_ATTR_NODEV;
	else if (b->kind == SB_BIND_RW)
		attrs |= MOUNT_ATTR_NODEV;
	else
		attrs |= MOUNT_ATTR_NOEXEC;
	if ((rc = restrict_mount(dst, attrs, 1)) < 0)
		ERR("restrict mount", b->dst, -rc);
	return 0;
}

static int write_text(const char *path, const char *text, char *msg,
		      size_t msg_size)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);

	if (fd < 0)
		ERR("create", path, errno);
	size_t len = strlen(text);
	if (write(fd, text, len) != (ssize_t)len) {
		int e = errno;
		close(fd);
		ERR("write", path, e);
	}
	close(fd);
	return 0;
}

int kb__sb_mount_setup(const struct kb__sb_plan *p, char *msg, size_t msg_size)
{
	static const char *const devs[] = {"null", "zero", "full", "random",
					   "urandom"};
	static const char *const links[][2] = {
		{"/newroot/dev/fd", "/proc/self/fd"},
		{"/newroot/dev/stdin", "/proc/self/fd/0"},
		{"/newroot/dev/stdout", "/proc/self/fd/1"},
		{"/newroot/dev/stderr", "/proc/self/fd/2"},
	};
	int rc;

	/* Nothing we mount may propagate back to the host. */
	if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0)
		ERR("make / private", NULL, errno);
	if (mount("kb-sandbox", "/tmp", "tmpfs", MS_NOSUID | MS_NODEV,
		  "mode=0755,size=16m") < 0)
		ERR("mount base tmpfs", NULL, errno);
	if (chdir("/tmp") < 0)
		ERR("chdir", "/tmp", errno);
	if (mkdir("newroot", 0755) < 0 || mkdir("oldroot", 0755) < 0)
		ERR("mkdir", "newroot", errno);
	if (syscall(SYS_pivot_root, "/tmp", "/tmp/oldroot") < 0)
		ERR("pivot_root", NULL, errno);
	if (chdir("/") < 0)
		ERR("chdir", "/", errno);
	if (mount("newroot", "newroot", NULL, MS_BIND | MS_REC, NULL) < 0)
		ERR("bind newroot", NULL, errno);

	/* /etc first (generated files), /dev, /proc, /tmp: fresh mounts. */
	if (mkdir("/newroot/etc", 0755) < 0)
		ERR("mkdir", "/etc", errno);
	if ((rc = write_text("/newroot/etc/passwd", p->etc_passwd, msg,
			     msg_size)) < 0 ||
	    (rc = write_text("/newroot/etc/group", p->etc_group, msg,
			     msg_size)) < 0 ||
	    (rc = write_text(
		     "/newroot/etc/hosts",
		     "127.0.0.1\tlocalhost kb-sandbox\n::1\tlocalhost ip6-localhost\n",
		     msg, msg_size)) < 0 ||
	    (rc = write_text("/newroot/etc/hostname", "kb-sandbox\n", msg,
			     msg_size)) < 0)
		return rc;

	if (mkdir("/newroot/dev", 0755) < 0)
		ERR("mkdir", "/dev", errno);
	if (mount("kb-dev", "/newroot/dev", "tmpfs",
		  MS_NOSUID | MS_NODEV | MS_NOEXEC, "mode=0755,size=64k") < 0)
		ERR("mount", "/dev", errno);
	for (size_t i = 0; i < sizeof(devs) / sizeof(devs[0]); i++) {
		char path[64];
		kb__sb_strlcpy(path, "/dev/", sizeof(path));
		kb__sb_strlcat(path, devs[i], sizeof(path));
		struct kb__sb_bind b = {path, path, SB_BIND_DEV, 0};
		if ((rc = do_bind(&b, msg, msg_size)) < 0)
			return rc;
	}
	for (size_t i = 0; i < sizeof(links) / sizeof(links[0]); i++)
		if (symlink(links[i][1], links[i][0]) < 0)
			ERR("symlink", links[i][0] + 8, errno);
	if (mkdir("/newroot/dev/shm", 01777) < 0 ||
	    mount("kb-shm", "/newroot/dev/shm", "tmpfs", MS_NOSUID | MS_NODEV,
		  p->shm_opts) < 0)
		ERR("mount", "/dev/shm", errno);

	if (mkdir("/newroot/proc", 0555) < 0 ||
	    mount("proc", "/newroot/proc", "proc",
		  MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL) < 0)
		ERR("mount", "/proc", errno);
	if (mkdir("/newroot/tmp", 01777) < 0 ||
	    mount("kb-tmp", "/newroot/tmp", "tmpfs", MS_NOSUID | MS_NODEV,
		  p->tmp_opts) < 0)
		ERR("mount", "/tmp", errno);

	/* System directories, /etc entries, devices, extra paths, the workdir. */
	for (int i = 0; i < p->nbinds; i++)
		if ((rc = do_bind(&p->binds[i], msg, msg_size)) < 0)
			return rc;

	/* /dev itself read-only (its nodes, /dev/shm stay writable): in user
	 * namespace mode the program shares init's uid and would otherwise
	 * own it. */
	if ((rc = restrict_mount("/newroot/dev",
				 MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID |
					 MOUNT_ATTR_NODEV | MOUNT_ATTR_NOEXEC,
				 0)) < 0)
		ERR("read-only /dev", NULL, -rc);

	/* Let go of the host's tree and make the new root the root. */
	if (umount2("/oldroot", MNT_DETACH) < 0)
		ERR("umount", "/oldroot", errno);
	if (chdir("/newroot") < 0)
		ERR("chdir", "/newroot", errno);
	if (syscall(SYS_pivot_root, ".", ".") < 0)
		ERR("pivot_root", "(second)", errno);
	if (umount2(".", MNT_DETACH) < 0)
		ERR("umount", "(old base)", errno);
	if (chdir("/") < 0)
		ERR("chdir", "/", errno);
	/* Only the root mount itself: /tmp, /dev/shm and the workdir stay
	 * writable. */
	if ((rc = restrict_mount("/",
				 MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID |
					 MOUNT_ATTR_NODEV,
				 0)) < 0)
		ERR("read-only root", NULL, -rc);
	return 0;
}
