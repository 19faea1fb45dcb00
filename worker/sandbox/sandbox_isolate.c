/* sandbox_isolate: the parent's part of an isolated run — choosing the
 * run's uid, listing what gets bound into its root, generating its /etc
 * files, handing the workdir to the run's uid and back, writing the id maps
 * in user-namespace mode.
 *
 * Per-run uids (root mode): KB_SANDBOX_UID_BASE + slot, slot in
 * [0, KB_SANDBOX_UIDS). A slot is held with flock(2) on
 * /run/kb-sandbox/uid-<slot>.lock for the whole run, so concurrent workers
 * on one host (one per GPU) never share a uid — and so never share
 * RLIMIT_NPROC counts or could signal each other's programs. Slots rotate
 * so consecutive runs get different uids.
 */
#include "kb_sandbox.h"
#include "sandbox_internal.h"

#include "device.h"
#include "kb_log.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

/* System directories: read-only, missing ones skipped. */
static const char *const sys_dirs[] = {
	"/usr", "/lib", "/lib64", "/lib32", "/libx32", "/bin", "/sbin",
};

/* What a compiler, Python or CUDA may read in /etc; nothing secret. */
static const char *const etc_entries[] = {
	"ld.so.cache",
	"ld.so.conf",
	"ld.so.conf.d",
	"alternatives",
	"localtime",
	"timezone",
	"nsswitch.conf",
	"host.conf",
	"gai.conf",
	"protocols",
	"services",
	"mime.types",
	"ssl",
	"ca-certificates",
	"ca-certificates.conf",
	"os-release",
	"lsb-release",
	"debian_version",
	"OpenCL",
	"vulkan",
	"nvidia",
	"glvnd",
	"fonts",
	"perl",
	"gcc",
	"cuda",
};

static const char *arena_dup(struct kb__sb_plan *p, const char *s)
{
	size_t n = strlen(s) + 1;

	if (p->arena_used + n > sizeof(p->arena))
		return NULL;
	char *d = p->arena + p->arena_used;
	memcpy(d, s, n);
	p->arena_used += n;
	return d;
}

static int add_bind(struct kb__sb_plan *p, const char *src, const char *dst,
		    int kind, int optional)
{
	if (p->nbinds >= SB_MAX_BINDS)
		return -E2BIG;
	const char *s = arena_dup(p, src);
	const char *d = strcmp(src, dst) == 0 ? s : arena_dup(p, dst);
	if (!s || !d)
		return -E2BIG;
	p->binds[p->nbinds++] = (struct kb__sb_bind){s, d, kind, optional};
	return 0;
}

static int add_path_list(struct kb__sb_plan *p, const char *list)
{
	char buf[4096];
	int rc;

	snprintf(buf, sizeof(buf), "%s", list);
	for (char *save = NULL, *t = strtok_r(buf, ":", &save); t;
	     t = strtok_r(NULL, ":", &save))
		if (t[0] == '/' && (rc = add_bind(p, t, t, SB_BIND_RO, 1)) < 0)
			return rc;
	return 0;
}

/* The device nodes present on this host that a GPU run gets, as the
 * device table names them (kb_device_dev_node): each family's shared
 * nodes, and its per-device nodes (with restrict, only the worker's own
 * of its own family). */
static int add_gpu_nodes(struct kb__sb_plan *p, const struct kb_sandbox_opts *o)
{
	DIR *d = opendir("/dev");
	struct dirent *e;
	char path[300];
	int rc = 0;

	if (!d)
		return -errno;
	while (rc == 0 && (e = readdir(d)))
		if (kb_device_dev_node(o->gpu_family, o->gpu_restrict,
				       o->gpu_index, e->d_name, path,
				       sizeof(path)))
			rc = add_bind(p, path, path, SB_BIND_DEV, 1);
	closedir(d);
	return rc;
}

static int env_int(const char *name, int def, int lo, int hi)
{
	const char *v = getenv(name);
	char *end;

	if (!v || !*v)
		return def;
	long x = strtol(v, &end, 10);
	return (*end || x < lo || x > hi) ? def : (int)x;
}

/* Takes a free uid slot; returns the locked fd. */
static int take_slot(int count, int *slot, char *errstr, size_t errstr_size)
{
	static unsigned next;
	const char *dirs[] = {"/run/kb-sandbox", "/tmp/kb-sandbox-slots"};
	char path[256];

	for (size_t d = 0; d < 2; d++) {
		struct stat st;
		if (mkdir(dirs[d], 0700) < 0 && errno != EEXIST)
			continue;
		/* Only a directory of ours (not a planted link) will do. */
		if (lstat(dirs[d], &st) < 0 || !S_ISDIR(st.st_mode) ||
		    st.st_uid != geteuid())
			continue;
		if (!next)
			next = (unsigned)getpid() * 7919u;
		for (int i = 0; i < count; i++) {
			int s = (int)(next++ % (unsigned)count);
			snprintf(path, sizeof(path), "%s/uid-%d.lock", dirs[d],
				 s);
			int fd = open(path,
				      O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW,
				      0600);
			if (fd < 0)
				break;
			if (flock(fd, LOCK_EX | LOCK_NB) == 0) {
				*slot = s;
				return fd;
			}
			close(fd);
		}
	}
	snprintf(errstr, errstr_size, "sandbox: no free uid slot (%d in use)",
		 count);
	return -EAGAIN;
}

int kb__sb_isolate_prepare(const struct kb_sandbox_opts *o,
			   struct kb__sb_plan *p, int *slot_fd, char *errstr,
			   size_t errstr_size)
{
	int base = env_int("KB_SANDBOX_UID_BASE", 60000, 1000, 2000000000);
	int count = env_int("KB_SANDBOX_UIDS", 1000, 1, 100000);
	int rc;

	p->isolate = 1;
	if (p->userns) {
		/* One uid is all an unprivileged user can map: ours, seen as
		 * <base> inside. */
		p->uid = (uid_t)base;
		p->gid = (gid_t)base;
	} else {
		int slot = 0;
		if ((*slot_fd = take_slot(count, &slot, errstr, errstr_size)) <
		    0)
			return *slot_fd;
		p->uid = (uid_t)(base + slot);
		p->gid = (gid_t)(base + slot);
	}
	if ((rc = kb__sb_seccomp_program(&p->bpf, &p->bpf_len, errstr,
					 errstr_size)) < 0)
		return rc;
	p->bpf2 = kb__sb_seccomp_second(&p->bpf2_len);

	snprintf(p->etc_passwd, sizeof(p->etc_passwd),
		 "root:x:0:0:root:/root:/bin/sh\n"
		 "kb:x:%u:%u:kb sandbox:/tmp:/bin/sh\n"
		 "nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n",
		 (unsigned)p->uid, (unsigned)p->gid);
	snprintf(p->etc_group, sizeof(p->etc_group),
		 "root:x:0:\nkb:x:%u:\nnogroup:x:65534:\n", (unsigned)p->gid);
	/* /tmp and /dev/shm live in memory: cap them (the memory cgroup caps
	 * them too, where there is one). */
	long mb = o->memory_limit_mb > 0 ? o->memory_limit_mb : 4096;
	snprintf(p->tmp_opts, sizeof(p->tmp_opts),
		 "mode=1777,size=%ldm,nr_inodes=65536", mb);
	snprintf(p->shm_opts, sizeof(p->shm_opts),
		 "mode=1777,size=%ldm,nr_inodes=4096", mb);

	for (size_t i = 0; i < sizeof(sys_dirs) / sizeof(sys_dirs[0]); i++)
		if ((rc = add_bind(p, sys_dirs[i], sys_dirs[i], SB_BIND_RO,
				   1)) < 0)
			goto toomany;
	for (size_t i = 0; i < sizeof(etc_entries) / sizeof(etc_entries[0]);
	     i++) {
		char path[128];
		snprintf(path, sizeof(path), "/etc/%s", etc_entries[i]);
		if ((rc = add_bind(p, path, path, SB_BIND_RO, 1)) < 0)
			goto toomany;
	}
	/* Python's per-version directories (/etc/python3.12, ...). */
	DIR *d = opendir("/etc");
	if (d) {
		struct dirent *e;
		char path[300];
		while ((e = readdir(d)))
			if (strncmp(e->d_name, "python", 6) == 0) {
				snprintf(path, sizeof(path), "/etc/%s",
					 e->d_name);
				add_bind(p, path, path, SB_BIND_RO, 1);
			}
		closedir(d);
	}
	if (o->ro_paths)
		for (char *const *s = o->ro_paths; *s; s++)
			if ((*s)[0] == '/' &&
			    (rc = add_bind(p, *s, *s, SB_BIND_RO, 1)) < 0)
				goto toomany;
	if (getenv("KB_SANDBOX_RO_PATHS") &&
	    (rc = add_path_list(p, getenv("KB_SANDBOX_RO_PATHS"))) < 0)
		goto toomany;
	if (o->gpu) {
		if ((rc = add_gpu_nodes(p, o)) < 0)
			goto toomany;
		if ((rc = add_bind(p, "/sys", "/sys", SB_BIND_RO, 1)) < 0)
			goto toomany;
	} else if ((rc = add_bind(p, "/sys/devices/system/cpu",
				  "/sys/devices/system/cpu", SB_BIND_RO, 1)) <
		   0) {
		goto toomany;
	}
	/* Last, so that nothing is mounted over them. */
	for (char *const *s = p->rw; s && *s; s++)
		if ((rc = add_bind(p, *s, *s, SB_BIND_RW, 0)) < 0)
			goto toomany;
	if ((rc = add_bind(p, p->workdir, p->workdir, SB_BIND_RW, 0)) < 0)
		goto toomany;
	return 0;
toomany:
	snprintf(errstr, errstr_size, "sandbox: too many bind mounts (max %d)",
		 SB_MAX_BINDS);
	return rc;
}

static uid_t chown_uid;
static gid_t chown_gid;
static int chown_failed;

static int chown_one(const char *path, const struct stat *st, int flag,
		     struct FTW *ftw)
{
	if (flag == FTW_NS || flag == FTW_DNR) {
		chown_failed++;
		return 0;
	}
	if (lchown(path, chown_uid, chown_gid) < 0)
		chown_failed++;
	/* Never hand back a set-id file: chown clears the bits on files, not
	 * on directories. */
	if (S_ISDIR(st->st_mode) && (st->st_mode & (S_ISUID | S_ISGID)))
		chmod(path, st->st_mode & 0777);
	return 0;
}

/* Recursive lchown that never follows symbolic links (a program may plant
 * links to host files in its workdir) nor crosses into other mounts. Only
 * the workdir itself must succeed: entries a previous run made unwalkable
 * (nesting past PATH_MAX, say) are the program's problem, not an infra
 * error that would be retried forever. before: the chown to the run's uid
 * (logged when entries fail). Returns 0 or -errno. */
int kb__sb_isolate_chown(const char *workdir, uid_t uid, gid_t gid, int before)
{
	if (lchown(workdir, uid, gid) < 0)
		return -errno;
	chown_uid = uid;
	chown_gid = gid;
	chown_failed = 0;
	nftw(workdir, chown_one, 32, FTW_PHYS | FTW_MOUNT);
	if (chown_failed)
		kb_warn("sandbox: chown of %s to %u: %d entries failed (%s the run)",
			workdir, (unsigned)uid, chown_failed,
			before ? "before" : "after");
	return 0;
}

static int write_proc(pid_t pid, const char *file, const char *text)
{
	char path[64];
	int fd, rc = 0;

	snprintf(path, sizeof(path), "/proc/%ld/%s", (long)pid, file);
	if ((fd = open(path, O_WRONLY | O_CLOEXEC)) < 0)
		return -errno;
	if (write(fd, text, strlen(text)) != (ssize_t)strlen(text))
		rc = -errno;
	close(fd);
	return rc;
}

int kb__sb_isolate_write_idmaps(pid_t pid, const struct kb__sb_plan *p,
				char *errstr, size_t errstr_size)
{
	char map[64];
	int rc;

	if ((rc = write_proc(pid, "setgroups", "deny")) < 0 && rc != -ENOENT)
		goto err;
	snprintf(map, sizeof(map), "%u %u 1\n", (unsigned)p->uid,
		 (unsigned)geteuid());
	if ((rc = write_proc(pid, "uid_map", map)) < 0)
		goto err;
	snprintf(map, sizeof(map), "%u %u 1\n", (unsigned)p->gid,
		 (unsigned)getegid());
	if ((rc = write_proc(pid, "gid_map", map)) < 0)
		goto err;
	return 0;
err:
	snprintf(errstr, errstr_size, "sandbox: writing id maps: %s",
		 strerror(-rc));
	return rc;
}
