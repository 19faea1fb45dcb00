/* sandbox_cgroup: one cgroup per run, for pids.max, a memory limit without
 * swap, and a reliable kill of everything the run started.
 *
 * cgroup v2 is preferred. The base is KB_SANDBOX_CGROUP when set (a
 * delegated directory), else <our cgroup>/kb-sandbox, or — when our cgroup
 * was not given the pids and memory controllers, as under some VM agents —
 * <nearest ancestor that hands them down>/kb-sandbox. cgroup v2 lets a
 * cgroup hand controllers to its children only when it has no processes of
 * its own, so when enabling them on our cgroup fails with EBUSY we move
 * ourselves into <our cgroup>/kb-worker first — the usual arrangement for a
 * service with a delegated subtree (systemd Delegate=yes, a container's
 * cgroup namespace). Runs live in <base>/run-<pid>-<n>.
 *
 * When v2 lacks the pids/memory controllers (hybrid hosts like this
 * project's CI container) the v1 pids and memory hierarchies are used the
 * same way. Without either, callers fall back to RLIMIT_NPROC and say so.
 *
 * All of this runs in the parent (the worker); nothing here is called from
 * the child.
 */
#include "kb_sandbox.h"
#include "sandbox_internal.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static struct {
	int inited;
	int version;           /* 2, 1 or 0 */
	char base[SB_PATH];    /* v2 base, or v1 pids base */
	char membase[SB_PATH]; /* v1 memory base */
	int has_kill;          /* v2 cgroup.kill */
	int has_swap;          /* memory.swap.max / memory.memsw.* */
	unsigned features;
	char desc[SB_PATH + 64];
} G;

/* snprintf through a va_list: paths here are bounded by SB_PATH and a
 * truncated one fails loudly at open/mkdir, so the compiler's truncation
 * analysis (-Wformat-truncation) is noise for this file. */
static int sfmt(char *out, size_t n, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static int sfmt(char *out, size_t n, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	int k = vsnprintf(out, n, fmt, ap);
	va_end(ap);
	return k;
}

static int write_file(const char *dir, const char *file, const char *val)
{
	char path[SB_PATH + 64];
	int fd, rc = 0;

	sfmt(path, sizeof(path), "%s/%s", dir, file);
	if ((fd = open(path, O_WRONLY | O_CLOEXEC)) < 0)
		return -errno;
	size_t len = strlen(val);
	if (write(fd, val, len) != (ssize_t)len)
		rc = -errno;
	close(fd);
	return rc;
}

static int read_file(const char *dir, const char *file, char *buf, size_t n)
{
	char path[SB_PATH + 64];
	int fd;

	sfmt(path, sizeof(path), "%s/%s", dir, file);
	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) < 0)
		return -errno;
	ssize_t k = read(fd, buf, n - 1);
	int e = errno;
	close(fd);
	if (k < 0)
		return -e;
	buf[k] = '\0';
	return (int)k;
}

/* Calls fn for each pid of a cgroup.procs text; returns the sum of what
 * it returns. */
static double each_pid(const char *buf, double (*fn)(long pid))
{
	double sum = 0;

	for (const char *s = buf; *s;) {
		char *end;
		long pid = strtol(s, &end, 10);
		if (end == s)
			break;
		if (pid > 0)
			sum += fn(pid);
		s = end + (*end == '\n');
	}
	return sum;
}

static double kill_pid(long pid)
{
	kill((pid_t)pid, SIGKILL);
	return 0;
}

static int exists(const char *dir, const char *file)
{
	char path[SB_PATH + 64];

	sfmt(path, sizeof(path), "%s/%s", dir, file);
	return access(path, F_OK) == 0;
}

static int has_word(const char *list, const char *word)
{
	size_t n = strlen(word);

	for (const char *s = list; (s = strstr(s, word)); s += n)
		if ((s == list || s[-1] == ' ' || s[-1] == ',') &&
		    (s[n] == '\0' || s[n] == ' ' || s[n] == '\n' ||
		     s[n] == ','))
			return 1;
	return 0;
}

/* Our path in the hierarchy whose /proc/self/cgroup entry matches. For v2
 * ctrl is "" (the "0::" line). */
static int own_path(const char *ctrl, char *out, size_t n)
{
	char line[SB_PATH];
	FILE *f = fopen("/proc/self/cgroup", "re");
	int rc = -ENOENT;

	if (!f)
		return -errno;
	while (fgets(line, sizeof(line), f)) {
		line[strcspn(line, "\n")] = '\0';
		char *c1 = strchr(line, ':');
		char *c2 = c1 ? strchr(c1 + 1, ':') : NULL;
		if (!c2)
			continue;
		*c1 = *c2 = '\0';
		const char *ctrls = c1 + 1;
		if ((ctrl[0] == '\0' && ctrls[0] == '\0' &&
		     strncmp(line, "0", 2) == 0) ||
		    (ctrl[0] && has_word(ctrls, ctrl))) {
			sfmt(out, n, "%s", c2 + 1);
			rc = 0;
			break;
		}
	}
	fclose(f);
	return rc;
}

/* The mount point and root of the cgroup2 mount (ctrl "") or of the v1
 * hierarchy holding ctrl, from /proc/self/mountinfo. */
static int find_mount(const char *ctrl, char *mnt, size_t mn, char *root,
		      size_t rn)
{
	char line[SB_PATH * 2];
	FILE *f = fopen("/proc/self/mountinfo", "re");
	int rc = -ENOENT;

	if (!f)
		return -errno;
	while (fgets(line, sizeof(line), f)) {
		char r[SB_PATH], m[SB_PATH], fstype[64], super[512];
		const char *dash = strstr(line, " - ");
		if (!dash ||
		    sscanf(line, "%*s %*s %*s %4095s %4095s", r, m) != 2 ||
		    sscanf(dash + 3, "%63s %*s %511s", fstype, super) != 2)
			continue;
		if ((ctrl[0] == '\0' && strcmp(fstype, "cgroup2") == 0) ||
		    (ctrl[0] && strcmp(fstype, "cgroup") == 0 &&
		     has_word(super, ctrl))) {
			sfmt(mnt, mn, "%s", m);
			sfmt(root, rn, "%s", r);
			rc = 0;
			break;
		}
	}
	fclose(f);
	return rc;
}

/* mount point + our path relative to the mount's root. */
static int own_dir(const char *ctrl, char *out, size_t n)
{
	char mnt[SB_PATH], root[SB_PATH], path[SB_PATH];
	int rc;

	if ((rc = find_mount(ctrl, mnt, sizeof(mnt), root, sizeof(root))) < 0 ||
	    (rc = own_path(ctrl, path, sizeof(path))) < 0)
		return rc;
	const char *rel = path;
	size_t rl = strlen(root);
	if (strcmp(root, "/") != 0 && strncmp(path, root, rl) == 0)
		rel = path + rl;
	if (strcmp(rel, "/") == 0)
		rel = "";
	if ((size_t)sfmt(out, n, "%s%s", mnt, rel) >= n)
		return -ENAMETOOLONG;
	return 0;
}

static int wait_empty(const char *dir, int timeout_ms);

/* Removes run cgroups left by workers that died: run-<pid>-<n> whose pid
 * is gone (a live worker's cgroup is empty between mkdir and attach). */
static void sweep(const char *base)
{
	DIR *d = opendir(base);
	struct dirent *e;
	char path[SB_PATH + 300];

	if (!d)
		return;
	while ((e = readdir(d))) {
		long pid = 0;
		if (sscanf(e->d_name, "run-%ld-", &pid) != 1 || pid <= 0)
			continue;
		if (kill((pid_t)pid, 0) == 0 || errno != ESRCH)
			continue;
		sfmt(path, sizeof(path), "%s/%s", base, e->d_name);
		wait_empty(path, 100);
		rmdir(path);
	}
	closedir(d);
}

static int enable_controllers(const char *dir)
{
	char have[256];
	int rc = write_file(dir, "cgroup.subtree_control", "+pids +memory");

	if (rc < 0 &&
	    read_file(dir, "cgroup.subtree_control", have, sizeof(have)) > 0 &&
	    has_word(have, "pids") && has_word(have, "memory"))
		rc = 0;
	return rc;
}

/* Whether we may make cgroups below dir (it may be someone else's). */
static int can_create(const char *dir)
{
	char path[SB_PATH + 64];

	sfmt(path, sizeof(path), "%s/probe-%ld", dir, (long)getpid());
	if (mkdir(path, 0755) < 0)
		return 0;
	rmdir(path);
	return 1;
}

/* The nearest proper ancestor of dir (within the cgroup2 mount) whose
 * subtree_control hands down pids and memory, into out. */
static int delegating_ancestor(const char *dir, char *out, size_t n)
{
	char mnt[SB_PATH], root[SB_PATH], ctrls[256];
	size_t ml;

	if (find_mount("", mnt, sizeof(mnt), root, sizeof(root)) < 0)
		return -ENOENT;
	ml = strlen(mnt);
	sfmt(out, n, "%s", dir);
	for (;;) {
		char *slash = strrchr(out, '/');
		if (!slash || (size_t)(slash - out) < ml)
			return -ENOENT;
		*slash = '\0';
		if (read_file(out, "cgroup.subtree_control", ctrls,
			      sizeof(ctrls)) > 0 &&
		    has_word(ctrls, "pids") && has_word(ctrls, "memory"))
			return 0;
	}
}

/* <own>/kb-sandbox with the controllers enabled in <own>, moving ourselves
 * into <own>/kb-worker when our own processes block that. */
static int base_below(const char *own, char *why, size_t wn)
{
	char self[SB_PATH + 32], pid[32];
	int rc;

	if ((rc = enable_controllers(own)) == -EBUSY) {
		sfmt(self, sizeof(self), "%s/kb-worker", own);
		sfmt(pid, sizeof(pid), "%ld", (long)getpid());
		if ((mkdir(self, 0755) == 0 || errno == EEXIST) &&
		    write_file(self, "cgroup.procs", pid) == 0)
			rc = enable_controllers(own);
	}
	if (rc < 0) {
		sfmt(why, wn, "cannot enable pids/memory below %s: %s", own,
		     strerror(-rc));
		return rc;
	}
	sfmt(G.base, sizeof(G.base), "%s/kb-sandbox", own);
	return 0;
}

static int init_v2(char *why, size_t wn)
{
	char own[SB_PATH], anc[SB_PATH], ctrls[256];
	const char *env = getenv("KB_SANDBOX_CGROUP");
	int rc;

	if (env && env[0]) {
		sfmt(G.base, sizeof(G.base), "%s", env);
	} else {
		if ((rc = own_dir("", own, sizeof(own))) < 0) {
			sfmt(why, wn, "no cgroup2 mount");
			return rc;
		}
		if (read_file(own, "cgroup.controllers", ctrls, sizeof(ctrls)) >
			    0 &&
		    has_word(ctrls, "pids") && has_word(ctrls, "memory")) {
			if ((rc = base_below(own, why, wn)) < 0)
				return rc;
		} else if (delegating_ancestor(own, anc, sizeof(anc)) == 0) {
			/* Our cgroup was not given the controllers (a VM agent's
			 * cgroup, say): runs go below the nearest ancestor that
			 * hands them down, still inside our cgroup namespace. */
			sfmt(G.base, sizeof(G.base), "%s/kb-sandbox", anc);
		} else {
			sfmt(why, wn, "cgroup2 at %s lacks pids/memory", own);
			return -ENOTSUP;
		}
	}
	if (mkdir(G.base, 0755) < 0 && errno != EEXIST) {
		sfmt(why, wn, "mkdir %s: %s", G.base, strerror(errno));
		return -errno;
	}
	if ((rc = enable_controllers(G.base)) < 0) {
		sfmt(why, wn, "cannot enable pids/memory in %s: %s", G.base,
		     strerror(-rc));
		return rc;
	}
	if (!can_create(
		    G.base)) { /* someone else's (e.g. root's, and we are not) */
		sfmt(why, wn, "cannot create cgroups in %s", G.base);
		return -EACCES;
	}
	sweep(G.base);
	G.version = 2;
	G.has_kill = exists(G.base, "cgroup.kill");
	G.features = KB_SANDBOX_CG_PIDS | KB_SANDBOX_CG_MEMORY |
		     (G.has_kill ? KB_SANDBOX_CG_KILL : 0);
	return 0;
}

static int init_v1(char *why, size_t wn)
{
	char own[SB_PATH];

	if (own_dir("pids", own, sizeof(own)) == 0) {
		sfmt(G.base, sizeof(G.base), "%s/kb-sandbox", own);
		if ((mkdir(G.base, 0755) == 0 || errno == EEXIST) &&
		    can_create(G.base) && exists(G.base, "pids.max"))
			G.features |= KB_SANDBOX_CG_PIDS;
		else
			G.base[0] = '\0';
	}
	if (own_dir("memory", own, sizeof(own)) == 0) {
		sfmt(G.membase, sizeof(G.membase), "%s/kb-sandbox", own);
		if ((mkdir(G.membase, 0755) == 0 || errno == EEXIST) &&
		    can_create(G.membase) &&
		    exists(G.membase, "memory.limit_in_bytes")) {
			G.features |= KB_SANDBOX_CG_MEMORY;
			G.has_swap = exists(G.membase,
					    "memory.memsw.limit_in_bytes");
		} else {
			G.membase[0] = '\0';
		}
	}
	if (!G.features) {
		sfmt(why, wn, "no writable v1 pids/memory hierarchy");
		return -ENOTSUP;
	}
	if (G.base[0])
		sweep(G.base);
	if (G.membase[0])
		sweep(G.membase);
	G.version = 1;
	return 0;
}

int kb__sb_cgroup_init(char *desc, size_t desc_size, unsigned *features)
{
	char why2[256] = "", why1[256] = "";

	if (!G.inited) {
		G.inited = 1;
		if (init_v2(why2, sizeof(why2)) == 0) {
			sfmt(G.desc, sizeof(G.desc), "v2 %s%s", G.base,
			     G.has_kill ? " (cgroup.kill)" : "");
		} else {
			G.base[0] = '\0';
			if (init_v1(why1, sizeof(why1)) == 0)
				sfmt(G.desc, sizeof(G.desc),
				     "v1 (%s%s%s) [v2: %s]",
				     G.features & KB_SANDBOX_CG_PIDS ? "pids"
								     : "",
				     G.features & KB_SANDBOX_CG_MEMORY
					     ? " memory"
					     : "",
				     G.has_swap ? "+memsw" : "", why2);
			else
				sfmt(G.desc, sizeof(G.desc),
				     "none [v2: %s; v1: %s]", why2, why1);
		}
	}
	sfmt(desc, desc_size, "%s", G.desc);
	*features = G.features;
	return 0;
}

static int wait_empty(const char *dir, int timeout_ms)
{
	char buf[4096];

	for (int i = 0;; i++) {
		int k = read_file(dir, "cgroup.procs", buf, sizeof(buf));
		if (k <= 0)
			return k;
		if (i * 1 >= timeout_ms)
			return -EBUSY;
		/* Someone is still in there: kill it again (forks race us). */
		each_pid(buf, kill_pid);
		struct timespec ts = {0, 1000000};
		nanosleep(&ts, NULL);
	}
}

static void remove_dir(const char *dir)
{
	for (int i = 0; i < 100; i++) {
		if (rmdir(dir) == 0 || errno == ENOENT)
			return;
		if (errno != EBUSY)
			break;
		wait_empty(dir, 20);
	}
}

int kb__sb_cgroup_create(struct kb__sb_cgroup *cg, const char *name,
			 long memory_mb, int max_procs, char *errstr,
			 size_t errstr_size)
{
	char val[64];
	int rc;

	memset(cg, 0, sizeof(*cg));
	if (!G.inited) {
		char d[16];
		unsigned f;
		kb__sb_cgroup_init(d, sizeof(d), &f);
	}
	if (!G.version)
		return 0;
	if (G.base[0]) {
		sfmt(cg->dir, sizeof(cg->dir), "%s/%s", G.base, name);
		rc = mkdir(cg->dir, 0755);
		if (rc < 0 && errno == EEXIST) {
			remove_dir(cg->dir); /* a leftover of a dead worker */
			rc = mkdir(cg->dir, 0755);
		}
		if (rc < 0) {
			rc = -errno;
			sfmt(errstr, errstr_size, "sandbox: mkdir %s: %s",
			     cg->dir, strerror(errno));
			cg->dir[0] = '\0';
			return rc;
		}
		cg->version = G.version;
		sfmt(val, sizeof(val), "%d", max_procs);
		if ((rc = write_file(cg->dir, "pids.max", val)) < 0)
			goto err;
		cg->active |= KB_SANDBOX_CG_PIDS;
		if (G.version == 2) {
			if (memory_mb > 0) {
				sfmt(val, sizeof(val), "%lld",
				     (long long)memory_mb << 20);
				if ((rc = write_file(cg->dir, "memory.max",
						     val)) < 0)
					goto err;
				cg->active |= KB_SANDBOX_CG_MEMORY;
			}
			/* No swap: a swapping benchmark measures the disk. */
			write_file(cg->dir, "memory.swap.max", "0");
			if (G.has_kill)
				cg->active |= KB_SANDBOX_CG_KILL;
		}
	}
	if (G.version == 1 && G.membase[0]) {
		sfmt(cg->memdir, sizeof(cg->memdir), "%s/%s", G.membase, name);
		rc = mkdir(cg->memdir, 0755);
		if (rc < 0 && errno == EEXIST) {
			remove_dir(cg->memdir);
			rc = mkdir(cg->memdir, 0755);
		}
		if (rc < 0) {
			rc = -errno;
			cg->memdir[0] = '\0';
			goto err;
		}
		cg->version = 1;
		if (memory_mb > 0) {
			sfmt(val, sizeof(val), "%lld",
			     (long long)memory_mb << 20);
			if ((rc = write_file(cg->memdir,
					     "memory.limit_in_bytes", val)) < 0)
				goto err;
			if (G.has_swap)
				write_file(cg->memdir,
					   "memory.memsw.limit_in_bytes", val);
			cg->active |= KB_SANDBOX_CG_MEMORY;
		}
	}
	return 0;
err:
	sfmt(errstr, errstr_size, "sandbox: cgroup limits in %s: %s",
	     cg->dir[0] ? cg->dir : cg->memdir, strerror(-rc));
	kb__sb_cgroup_destroy(cg);
	return rc;
}

int kb__sb_cgroup_attach(const struct kb__sb_cgroup *cg, pid_t pid)
{
	char val[32];
	int rc;

	sfmt(val, sizeof(val), "%ld", (long)pid);
	if (cg->dir[0] && (rc = write_file(cg->dir, "cgroup.procs", val)) < 0)
		return rc;
	if (cg->memdir[0] &&
	    (rc = write_file(cg->memdir, "cgroup.procs", val)) < 0)
		return rc;
	return 0;
}

/* Signals only; kb__sb_cgroup_destroy() waits until the cgroup is empty. */
void kb__sb_cgroup_kill(const struct kb__sb_cgroup *cg)
{
	char buf[8192];
	const char *dir = cg->dir[0] ? cg->dir : cg->memdir;

	if (!dir[0])
		return;
	if (cg->version == 2 && G.has_kill &&
	    write_file(dir, "cgroup.kill", "1") == 0)
		return;
	if (read_file(dir, "cgroup.procs", buf, sizeof(buf)) > 0)
		each_pid(buf, kill_pid);
}

/* CPU time of one process (its threads and the children it reaped), from
 * /proc/<pid>/stat, in seconds; 0 when gone. */
static double proc_cpu_s(long pid)
{
	char dir[64], buf[1024];
	unsigned long long t[4] = {0};
	char *p;

	snprintf(dir, sizeof(dir), "/proc/%ld", pid);
	if (read_file(dir, "stat", buf, sizeof(buf)) <= 0 ||
	    !(p = strrchr(buf, ')')))
		return 0;
	/* After the name: state and ten fields, then utime stime cutime
	 * cstime (fields 14-17). */
	if (sscanf(p + 2,
		   "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu %llu %llu",
		   &t[0], &t[1], &t[2], &t[3]) != 4)
		return 0;
	return (double)(t[0] + t[1] + t[2] + t[3]) /
	       (double)sysconf(_SC_CLK_TCK);
}

double kb__sb_cgroup_cpu_s(const struct kb__sb_cgroup *cg, pid_t leader)
{
	char buf[8192];
	const char *dir = cg->dir[0] ? cg->dir : cg->memdir;

	if (cg->version == 2 &&
	    read_file(cg->dir, "cpu.stat", buf, sizeof(buf)) > 0 &&
	    strncmp(buf, "usage_usec ", 11) == 0)
		return (double)strtoull(buf + 11, NULL, 10) / 1e6;
	if (!dir[0] || read_file(dir, "cgroup.procs", buf, sizeof(buf)) <= 0)
		return proc_cpu_s((long)leader);
	return each_pid(buf, proc_cpu_s);
}

/* Reads the memory controller's file (v2: the group's v2file; v1: the
 * memory group's v1file) into buf: > 0, or <= 0 when there is none. */
static int read_mem_file(const struct kb__sb_cgroup *cg, const char *v2file,
			 const char *v1file, char *buf, size_t n)
{
	const char *dir = cg->version == 2 ? cg->dir : cg->memdir;

	if (!dir[0])
		return 0;
	return read_file(dir, cg->version == 2 ? v2file : v1file, buf, n);
}

int kb__sb_cgroup_oom_kills(const struct kb__sb_cgroup *cg)
{
	char buf[1024];

	if (read_mem_file(cg, "memory.events", "memory.oom_control", buf,
			  sizeof(buf)) <= 0)
		return 0;
	const char *s = strstr(buf, "oom_kill ");
	return s ? atoi(s + 9) : 0;
}

int kb__sb_cgroup_mem_at_limit(const struct kb__sb_cgroup *cg)
{
	char buf[1024];

	if (read_mem_file(cg, "memory.events", "memory.failcnt", buf,
			  sizeof(buf)) <= 0)
		return 0;
	if (cg->version != 2)
		return atoi(buf) > 0;
	/* "max N": times the group hit memory.max and reclaimed */
	for (const char *s = buf; (s = strstr(s, "max ")) != NULL; s += 4)
		if (s == buf || s[-1] == '\n')
			return atoi(s + 4) > 0;
	return 0;
}

void kb__sb_cgroup_destroy(struct kb__sb_cgroup *cg)
{
	if (!cg || !cg->version)
		return;
	kb__sb_cgroup_kill(cg);
	if (cg->dir[0]) {
		wait_empty(cg->dir, 2000);
		remove_dir(cg->dir);
	}
	if (cg->memdir[0]) {
		wait_empty(cg->memdir, 2000);
		remove_dir(cg->memdir);
	}
	cg->version = 0;
}
