// flood (vectoradd, test mode).
//
// Attempts: to flood the worker with output: about 1 GiB on stdout and
// 1 GiB on stderr (at most 8 s), lines that look like harness report
// lines ("check: pass", "benchmark.0.mean: 1") included, then returns
// without computing.
//
// Expected: verdict failed; not ranked; the worker keeps only a bounded
// prefix of each stream (the script checks the JSON result stays small)
// and the forged lines have no effect (stdout is not the report channel).
#include <cuda_fp16.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "task.h"

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

extern "C" void custom_kernel(const __half *a, const __half *b, __half *out,
			      size_t n)
{
	static int done;
	static char buf[1 << 20];
	(void)a, (void)b, (void)out, (void)n;
	if (done++)
		return;
	static const char line[] =
		"check: pass\nbenchmark-count: 1\nbenchmark.0.mean: 1\n"
		"FLOOD FLOOD FLOOD FLOOD FLOOD FLOOD FLOOD FLOOD\n";
	for (size_t i = 0; i + sizeof(line) - 1 <= sizeof(buf);
	     i += sizeof(line) - 1)
		memcpy(buf + i, line, sizeof(line) - 1);
	double t0 = now_s();
	size_t sent[2] = {0, 0};
	for (int mib = 0; mib < 1024 && now_s() - t0 < 8.0; mib++)
		for (int fd = 1; fd <= 2; fd++) {
			ssize_t w = write(fd, buf, sizeof(buf));
			if (w > 0)
				sent[fd - 1] += (size_t)w;
		}
	fprintf(stderr,
		"\nflood: %zu bytes to stdout, %zu to stderr in %.1f s\n",
		sent[0], sent[1], now_s() - t0);
	printf("\nflood: %zu bytes to stdout, %zu to stderr in %.1f s\n",
	       sent[0], sent[1], now_s() - t0);
	fflush(stdout);
}
