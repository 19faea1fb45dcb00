#include "kb_metrics_process.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#ifndef KB_REVISION
#define KB_REVISION "unknown"
#endif

struct proc_families {
	kb_metric_family *start, *rss, *vsize, *fds, *max_fds;
};
static struct proc_families P;

/* Seconds since the epoch at which the system booted. */
static double boot_time(void)
{
	struct timespec real, boot;

	clock_gettime(CLOCK_REALTIME, &real);
	clock_gettime(CLOCK_BOOTTIME, &boot);
	return (double)(real.tv_sec - boot.tv_sec) +
	       (double)(real.tv_nsec - boot.tv_nsec) / 1e9;
}

/* Fields 22 (starttime, clock ticks after boot), 23 (vsize, bytes) and 24
 * (rss, pages) of /proc/self/stat. Returns 0 or -1. */
static int read_stat(unsigned long long *start, unsigned long long *vsize,
		     long long *rss)
{
	char buf[1024];
	FILE *f = fopen("/proc/self/stat", "re");
	size_t n = f ? fread(buf, 1, sizeof(buf) - 1, f) : 0;
	char *p;

	if (f)
		fclose(f);
	buf[n] = '\0';
	/* The command name (field 2) may hold spaces: start after its ')'. */
	p = strrchr(buf, ')');
	if (!p || sscanf(p + 2,
			 "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %*u %*u "
			 "%*d %*d %*d %*d %*d %*d %llu %llu %lld",
			 start, vsize, rss) != 3)
		return -1;
	return 0;
}

static long count_fds(void)
{
	DIR *d = opendir("/proc/self/fd");
	struct dirent *e;
	long n = 0;

	if (!d)
		return -1;
	while ((e = readdir(d)))
		n += e->d_name[0] != '.';
	closedir(d);
	return n - 1; /* the directory's own descriptor */
}

static void collect(kb_metrics *m, void *ctx)
{
	unsigned long long start, vsize;
	long long rss;
	long fds = count_fds();
	struct rlimit rl;

	if (read_stat(&start, &vsize, &rss) == 0) {
		kb_gauge_set(kb_metric_get0(P.start),
			     boot_time() +
				     (double)start /
					     (double)sysconf(_SC_CLK_TCK));
		kb_gauge_set(kb_metric_get0(P.vsize), (double)vsize);
		kb_gauge_set(kb_metric_get0(P.rss),
			     (double)rss * (double)sysconf(_SC_PAGESIZE));
	}
	if (fds >= 0)
		kb_gauge_set(kb_metric_get0(P.fds), (double)fds);
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY)
		kb_gauge_set(kb_metric_get0(P.max_fds), (double)rl.rlim_cur);
}

int kb_metrics_process(kb_metrics *m, const char *service)
{
	kb_metric_family *info;

	if (!m || !service)
		return -EINVAL;
	P.start = kb_metrics_gauge(
		m, "process_start_time_seconds",
		"Start time of the process since the Unix epoch, "
		"in seconds.",
		NULL);
	P.rss = kb_metrics_gauge(m, "process_resident_memory_bytes",
				 "Resident memory size in bytes.", NULL);
	P.vsize = kb_metrics_gauge(m, "process_virtual_memory_bytes",
				   "Virtual memory size in bytes.", NULL);
	P.fds = kb_metrics_gauge(m, "process_open_fds",
				 "Number of open file descriptors.", NULL);
	P.max_fds = kb_metrics_gauge(m, "process_max_fds",
				     "Maximum number of open file descriptors.",
				     NULL);
	info = kb_metrics_gauge(
		m, "kb_build_info",
		"Always 1; labels name the service and the source "
		"revision its build was configured from.",
		"service,revision");
	if (!P.start || !P.rss || !P.vsize || !P.fds || !P.max_fds || !info)
		return -EINVAL;
	kb_gauge_set(kb_metric_get2(info, service, KB_REVISION), 1);
	return kb_metrics_on_collect(m, collect, NULL);
}
