// Hostile: timer interposition from the inside. Defining clock_gettime
// does not reach the harness (it calls libc's through a pointer resolved
// at start), so on its first call this submission finds that pointer in
// its own process's memory and points it at a clock that stands still:
// every later call seems to take no time at all. The harness's parent
// measures with its own clock, in a process this code cannot reach: the
// claims fall outside its measurement and the cases end status suspect.
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static int frozen(clockid_t id, struct timespec *ts)
{
	(void)id;
	ts->tv_sec = 1;
	ts->tv_nsec = 0;
	return 0;
}

/* Replaces every copy of libc's clock_gettime address in the executable's
 * writable data (.data, .bss) with frozen's. */
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
		if (sscanf(line, "%lx-%lx %7s %*s %*s %*s %511s", &lo, &hi,
			   perms, path) < 3)
			continue;
		int is_exe = strcmp(path, exe) == 0;
		int is_bss = !path[0] && lo == exe_end;
		if (is_exe)
			exe_end = hi;
		if (!(is_exe || is_bss) || strcmp(perms, "rw-p") != 0)
			continue;
		for (void **p = (void **)lo; (unsigned long)(p + 1) <= hi; p++)
			if (*p == real) {
				*p = (void *)frozen;
				patched++;
			}
	}
	fclose(f);
	return patched;
}

float custom_kernel(const float *data, size_t n)
{
	static int done;
	if (!done) {
		done = 1;
		fprintf(stderr, "timer: patched %d pointer(s)\n", patch());
	}
	float sum = 0.0f;
	for (size_t i = 0; i < n; i++)
		sum += data[i];
	return sum;
}
