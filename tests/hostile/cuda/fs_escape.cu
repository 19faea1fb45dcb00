// fs_escape (vectoradd, test mode).
//
// Attempts, from custom_kernel:
//  - reading other submissions: the workdir's parent (other job-*
//    directories), /tmp/kb-worker*/..., the harness object cache;
//    scripts/gpu-hostile.sh plants canary job directories holding
//    "KBH_CANARY" where a worker's jobs live;
//  - the worker's environment: /proc/1/environ, /proc/<ppid>/environ and
//    every /proc/<pid>/{environ,cmdline} it can see (the script starts the
//    worker with KBH_CANARY_ENV=KBH_CANARY... in its environment);
//  - host secrets: /etc/shadow, /root;
//  - writing outside the workdir: marker files "kbh-marker-fs_escape" in
//    /, /etc, /usr, the CUDA toolkit, /tmp, /var/tmp, /dev/shm, the
//    workdir's parent and the cache, and opening a cached harness object
//    for writing (never written).
//
// Expected: nothing readable that belongs to someone else, no marker on
// the host (the script looks), verdict failed (nothing computed), not
// ranked. Any "ACHIEVED" line fails the expectation.
#include <cuda_fp16.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <glob.h>
#include <limits.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "task.h"

#define SAY(...)                                                               \
	do {                                                                   \
		printf(__VA_ARGS__);                                           \
		printf("\n");                                                  \
		fflush(stdout);                                                \
	} while (0)

static const char kCanary[] = "KBH_CANARY";
static const char kMarker[] = "kbh-marker-fs_escape";

/* Reads up to 1 MiB of path; returns the byte count or -errno. NULs become
 * newlines (environ, cmdline). */
static long slurp(const char *path, char *buf, size_t size)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	size_t got = 0;
	ssize_t r;
	while (got + 1 < size && (r = read(fd, buf + got, size - 1 - got)) > 0)
		got += (size_t)r;
	close(fd);
	for (size_t i = 0; i < got; i++)
		if (buf[i] == '\0')
			buf[i] = '\n';
	buf[got] = '\0';
	return (long)got;
}

static char big[1 << 20];

static int has_canary(const char *path)
{
	long n = slurp(path, big, sizeof(big));
	return n > 0 && strstr(big, kCanary) != NULL;
}

static void read_others(void)
{
	char cwd[PATH_MAX] = "", real[PATH_MAX];
	if (!getcwd(cwd, sizeof(cwd)))
		cwd[0] = '\0';
	static const char *const pats[] = {
		"../*",
		"../*/*.cu",
		"../*/*/*.cu",
		"../../*/job-*/*.cu",
		"/tmp/kb*/*.cu",
		"/tmp/kb*/*/*.cu",
		"/tmp/kb*/*/*/*.cu",
		"/tmp/kb*/*/*/*/*.cu",
		"/var/tmp/kb*/*/*.cu",
	};
	int seen_other = 0;
	for (size_t i = 0; i < sizeof(pats) / sizeof(pats[0]); i++) {
		glob_t g;
		if (glob(pats[i], 0, NULL, &g) != 0)
			continue;
		for (size_t j = 0; j < g.gl_pathc; j++) {
			const char *p = g.gl_pathv[j];
			if (!realpath(p, real))
				continue;
			/* Our own job directory is fair game. */
			if (cwd[0] && strncmp(real, cwd, strlen(cwd)) == 0)
				continue;
			if (i == 0) {
				struct stat st;
				if (stat(p, &st) == 0 && S_ISDIR(st.st_mode) &&
				    strstr(p, "job-")) {
					SAY("ACHIEVED: sees another job's directory %s",
					    real);
					seen_other = 1;
				} else {
					SAY("note: the workdir's parent holds %s",
					    real);
				}
				continue;
			}
			if (has_canary(p))
				SAY("ACHIEVED: read another submission: %s (canary found)",
				    real);
			else if (slurp(p, big, sizeof(big)) >= 0)
				SAY("ACHIEVED: read a file outside the workdir: %s",
				    real);
		}
		globfree(&g);
	}
	if (!seen_other)
		SAY("blocked: no other job directory visible from the workdir");
}

static void read_procs(void)
{
	char path[64];
	DIR *d = opendir("/proc");
	int visible = 0;
	if (!d) {
		SAY("blocked: /proc (%s)", strerror(errno));
		return;
	}
	struct dirent *e;
	while ((e = readdir(d)) != NULL) {
		char *end;
		long pid = strtol(e->d_name, &end, 10);
		if (*end || pid <= 0)
			continue;
		visible++;
		snprintf(path, sizeof(path), "/proc/%ld/environ", pid);
		if (has_canary(path))
			SAY("ACHIEVED: the worker's environment (canary) in %s%s",
			    path,
			    pid == (long)getpid()
				    ? " (our own: the worker's environment leaked "
				      "into the run)"
				    : "");
		snprintf(path, sizeof(path), "/proc/%ld/cmdline", pid);
		if (slurp(path, big, sizeof(big)) > 0 &&
		    (strstr(big, "kb-worker") || strstr(big, "kb-gateway") ||
		     strstr(big, "redis") || strstr(big, "kafka")))
			SAY("ACHIEVED: sees a platform process: pid %ld: %.80s",
			    pid, big);
	}
	closedir(d);
	SAY("note: %d processes visible in /proc", visible);
	long n = slurp("/proc/1/environ", big, sizeof(big));
	SAY("note: /proc/1/environ: %s",
	    n >= 0 ? "readable" : strerror((int)-n));
	snprintf(path, sizeof(path), "/proc/%ld/environ", (long)getppid());
	n = slurp(path, big, sizeof(big));
	SAY("note: %s (parent): %s", path,
	    n >= 0 ? "readable" : strerror((int)-n));
	n = slurp("/proc/self/environ", big, sizeof(big));
	if (n > 0)
		SAY("note: own environment: %.300s", big);
}

static void read_secrets(void)
{
	long n = slurp("/etc/shadow", big, sizeof(big));
	if (n > 0)
		SAY("ACHIEVED: read /etc/shadow (%ld bytes)", n);
	else
		SAY("blocked: /etc/shadow (%s)",
		    n < 0 ? strerror((int)-n) : "empty");
	DIR *d = opendir("/root");
	if (d) {
		struct dirent *e;
		int k = 0;
		while ((e = readdir(d)) != NULL)
			k += e->d_name[0] != '.';
		closedir(d);
		if (k)
			SAY("ACHIEVED: lists /root (%d entries)", k);
		else
			SAY("note: /root is visible but empty");
	} else {
		SAY("blocked: /root (%s)", strerror(errno));
	}
	n = slurp("cases.txt", big, sizeof(big));
	if (n > 0)
		SAY("note: cases.txt is readable in the workdir (%ld bytes): the run's "
		    "seeds are known to the submission",
		    n);
}

static int create(const char *dir)
{
	char path[PATH_MAX];
	snprintf(path, sizeof(path), "%s/%s", dir, kMarker);
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0)
		return -errno;
	static const char msg[] =
		"written by tests/hostile/cuda/fs_escape.cu\n";
	ssize_t w = write(fd, msg, sizeof(msg) - 1);
	(void)w;
	close(fd);
	return 0;
}

static void write_outside(void)
{
	/* Read-only in an isolated run: creating there is an escape. */
	static const char *const ro[] = {"/",
					 "/etc",
					 "/usr",
					 "/usr/local",
					 "/usr/local/cuda",
					 "/usr/local/cuda/bin",
					 "/bin",
					 "/lib"};
	for (size_t i = 0; i < sizeof(ro) / sizeof(ro[0]); i++) {
		int rc = create(ro[i]);
		if (rc == 0)
			SAY("ACHIEVED: created %s/%s", ro[i], kMarker);
		else
			SAY("blocked: create in %s (%s)", ro[i], strerror(-rc));
	}
	/* Private in an isolated run: creating is allowed there; the script
	 * checks that nothing appears on the host. */
	static const char *const priv[] = {"/tmp", "/var/tmp", "/dev/shm",
					   "..",   "../cache", "../.."};
	for (size_t i = 0; i < sizeof(priv) / sizeof(priv[0]); i++) {
		int rc = create(priv[i]);
		SAY("note: create in %s: %s", priv[i],
		    rc == 0 ? "done (must not reach the host)" : strerror(-rc));
	}
	glob_t g;
	if (glob("../cache/cu-*/*.o", 0, NULL, &g) == 0) {
		for (size_t j = 0; j < g.gl_pathc; j++) {
			int fd = open(g.gl_pathv[j],
				      O_WRONLY | O_APPEND | O_CLOEXEC);
			if (fd >= 0) {
				SAY("ACHIEVED: may write the cached harness object %s",
				    g.gl_pathv[j]);
				close(fd);
			} else {
				SAY("blocked: write %s (%s)", g.gl_pathv[j],
				    strerror(errno));
			}
		}
		globfree(&g);
	} else {
		SAY("blocked: no harness object cache visible at ../cache");
	}
}

extern "C" void custom_kernel(const __half *a, const __half *b, __half *out,
			      size_t n)
{
	static int done;
	(void)a, (void)b, (void)out, (void)n;
	if (done++)
		return;
	read_others();
	read_procs();
	read_secrets();
	write_outside();
	/* Nothing is computed: the output stays poisoned. */
}
