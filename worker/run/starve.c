/* kb_starve: see starve.h. */
#include "starve.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kb_util.h"

#define CPU_SHARE_MAX 0.5    /* the run got less CPU than this share */
#define CPU_PRESSURE_MIN 0.5 /* tasks waited for a CPU this share */
#define HOST_BUSY_MIN 0.9    /* without pressure figures: host this busy */
#define MEM_PRESSURE_MIN 0.5 /* a timeout under this memory pressure */
#define MEM_KILL_MIN 0.25    /* a kill under this memory pressure */

/* The "some ... total=N" figure of a pressure file, or -1. */
static int read_some_total(const char *path, uint64_t *out)
{
	char *text = NULL, *p;
	size_t len;
	int rc = -1;

	if (kb_read_file(path, 4096, &text, &len) != 0)
		return -1;
	if (strncmp(text, "some ", 5) == 0 && (p = strstr(text, " total=")) &&
	    sscanf(p + 7, "%" SCNu64, out) == 1)
		rc = 0;
	free(text);
	return rc;
}

static int read_stat(uint64_t *busy, uint64_t *total)
{
	char *text = NULL;
	size_t len;
	uint64_t v[8] = {0};
	int n, rc = -1;

	if (kb_read_file("/proc/stat", 1 << 16, &text, &len) != 0)
		return -1;
	/* cpu user nice system idle iowait irq softirq steal */
	n = sscanf(text,
		   "cpu %" SCNu64 " %" SCNu64 " %" SCNu64 " %" SCNu64
		   " %" SCNu64 " %" SCNu64 " %" SCNu64 " %" SCNu64,
		   &v[0], &v[1], &v[2], &v[3], &v[4], &v[5], &v[6], &v[7]);
	if (n >= 4) {
		*total = 0;
		for (int i = 0; i < n; i++)
			*total += v[i];
		*busy = *total - v[3] - (n > 4 ? v[4] : 0);
		rc = 0;
	}
	free(text);
	return rc;
}

void kb_starve_sample(struct kb_starve_sample *s)
{
	memset(s, 0, sizeof(*s));
	s->psi = read_some_total("/proc/pressure/cpu", &s->cpu_some_us) == 0 &&
		 read_some_total("/proc/pressure/memory", &s->mem_some_us) == 0;
	s->stat = read_stat(&s->busy, &s->total) == 0;
}

static double share(uint64_t a, uint64_t b, double whole)
{
	return whole > 0 && b >= a ? (double)(b - a) / whole : 0;
}

int kb_starve_judge(const struct kb_starve_sample *before,
		    const struct kb_starve_sample *after,
		    const struct kb_starve_run *run, char *why, size_t why_size)
{
	const int psi = before->psi && after->psi;
	const double wall_us = run->wall_s * 1e6;
	const double cpu =
		psi ? share(before->cpu_some_us, after->cpu_some_us, wall_us)
		    : 0;
	const double mem =
		psi ? share(before->mem_some_us, after->mem_some_us, wall_us)
		    : 0;
	const double busy =
		before->stat && after->stat && after->total > before->total
			? share(before->busy, after->busy,
				(double)(after->total - before->total))
			: 0;
	const int little_cpu = run->cpu_s < CPU_SHARE_MAX * run->wall_s;

	if (run->wall_s <= 0)
		return 0;
	if (run->timed_out && little_cpu && psi && cpu >= CPU_PRESSURE_MIN) {
		snprintf(why, why_size,
			 "the host starved the run: it got %.1f s of CPU in "
			 "%.1f s while other tasks kept the CPUs busy (CPU "
			 "pressure %.0f %%)",
			 run->cpu_s, run->wall_s, 100 * cpu);
		return 1;
	}
	if (run->timed_out && little_cpu && !psi && busy >= HOST_BUSY_MIN) {
		snprintf(why, why_size,
			 "the host starved the run: it got %.1f s of CPU in "
			 "%.1f s while the host's CPUs were %.0f %% busy",
			 run->cpu_s, run->wall_s, 100 * busy);
		return 1;
	}
	if (run->timed_out && psi && !run->at_limit &&
	    mem >= MEM_PRESSURE_MIN) {
		snprintf(why, why_size,
			 "the host starved the run of memory (memory pressure "
			 "%.0f %% of its %.1f s)",
			 100 * mem, run->wall_s);
		return 1;
	}
	if (run->killed && !run->oom && !run->at_limit && psi &&
	    mem >= MEM_KILL_MIN) {
		snprintf(why, why_size,
			 "the host ran out of memory and killed the run "
			 "(memory pressure %.0f %% of its %.1f s)",
			 100 * mem, run->wall_s);
		return 1;
	}
	return 0;
}
