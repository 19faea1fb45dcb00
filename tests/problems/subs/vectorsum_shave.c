// Hostile: shaving time off every call. Like vectorsum_timer, it finds the
// harness's clock pointer in its own process and replaces it, but with a
// clock that tells the truth about when a call starts and claims every
// call ended 1 us later -- a claim inside the parent's window, so not
// "forged". Each call really takes its sum plus 2 ms of spinning, more
// than the largest slack the harness allows (1 ms), so every claim is
// clamped to the parent's window minus the slack, and the clamps put half
// the samples below their median: the cases end status suspect ("took
// longer by the harness's clock than ... claimed"). The pointer search
// repeats vectorsum_timer.c's on purpose: each submission is one file.
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static int (*real_clock)(clockid_t, struct timespec *);
static unsigned long ticks; /* clock calls since the patch */
static struct timespec start;

/* The harness reads the clock twice per call: t0, then t1. The first read
 * after the patch is the t1 of the call that patched it: told as it is. */
static int shaved(clockid_t id, struct timespec *ts)
{
	int rc = real_clock(id, ts);
	unsigned long k = ticks++;
	if (k == 0)
		return rc;
	if (k % 2 == 1) {
		start = *ts;
		return rc;
	}
	*ts = start;
	ts->tv_nsec += 1000;
	if (ts->tv_nsec >= 1000000000L) {
		ts->tv_nsec -= 1000000000L;
		ts->tv_sec++;
	}
	return rc;
}

static int patch(void)
{
	void *real = dlsym(RTLD_DEFAULT, "clock_gettime");
	char exe[512], line[1024];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
	FILE *f = fopen("/proc/self/maps", "r");
	if (!real || n <= 0 || !f)
		return -1;
	exe[n] = '\0';
	int patched = 0;
	unsigned long exe_end = 0;
	while (fgets(line, sizeof line, f)) {
		unsigned long lo, hi;
		char perms[8], path[512] = "";
		if (sscanf(line, "%lx-%lx %7s %*s %*s %*s %511s", &lo, &hi, perms,
			   path) < 3)
			continue;
		int is_exe = strcmp(path, exe) == 0;
		int is_bss = !path[0] && lo == exe_end;
		if (is_exe)
			exe_end = hi;
		if (!(is_exe || is_bss) || strcmp(perms, "rw-p") != 0)
			continue;
		for (void **p = (void **)lo; (unsigned long)(p + 1) <= hi; p++)
			if (*p == real) {
				*p = (void *)shaved;
				patched++;
			}
	}
	fclose(f);
	/* after the scan, which would have replaced it too */
	real_clock = (int (*)(clockid_t, struct timespec *))real;
	return patched;
}

float custom_kernel(const float *data, size_t n)
{
	static int done;
	if (!done) {
		done = 1;
		fprintf(stderr, "shave: patched %d pointer(s)\n", patch());
	}
	float sum = 0.0f;
	for (size_t i = 0; i < n; i++)
		sum += data[i];
	struct timespec a, b;
	clock_gettime(CLOCK_MONOTONIC, &a);
	do
		clock_gettime(CLOCK_MONOTONIC, &b);
	while ((b.tv_sec - a.tv_sec) * 1000000000L + (b.tv_nsec - a.tv_nsec) <
	       2000000L);
	return sum;
}
