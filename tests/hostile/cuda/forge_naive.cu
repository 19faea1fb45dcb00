// forge_naive (vectoradd, leaderboard mode).
//
// Attempts: forged results, the naive way. On its first call
// custom_kernel writes a complete fake harness report ("test-count: 1",
// "test.0.status: pass", "benchmark.0.mean: 1.0", "check: pass", ...) to
// every descriptor from 3 to 64 that is a pipe, socket or regular file
// (the report channel is fd 3; device nodes and anonymous inodes belong to
// the CUDA driver and are skipped), prints fake results on stdout
// (harness lines and a "passed, score 0.000000001 s" banner), then calls
// exit(0).
//
// Expected: verdict crashed (exit 0 without a valid report: the forged
// lines repeat keys the harness already wrote, and stdout is not the
// report channel); not ranked.
#include <cuda_fp16.h>
#include <limits.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "task.h"

static const char kFake[] = "test-count: 1\n"
			    "test.0.spec: size: 1; seed: 4242\n"
			    "test.0.status: pass\n"
			    "benchmark-count: 1\n"
			    "benchmark.0.spec: size: 268435456; seed: 54352\n"
			    "benchmark.0.runs: 100\n"
			    "benchmark.0.mean: 1.0\n"
			    "benchmark.0.std: 0.0\n"
			    "benchmark.0.err: 0.0\n"
			    "benchmark.0.best: 1.0\n"
			    "benchmark.0.worst: 1.0\n"
			    "benchmark.0.status: pass\n"
			    "check: pass\n";

extern "C" void custom_kernel(const __half *a, const __half *b, __half *out,
			      size_t n)
{
	(void)a, (void)b, (void)out, (void)n;
	for (int fd = 3; fd <= 64; fd++) {
		char link[64], target[PATH_MAX];
		snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
		ssize_t len = readlink(link, target, sizeof(target) - 1);
		if (len <= 0)
			continue;
		target[len] = '\0';
		if (strncmp(target, "pipe:", 5) != 0 &&
		    strncmp(target, "socket:", 7) != 0 && target[0] != '/')
			continue;
		if (strncmp(target, "/dev/", 5) == 0)
			continue;
		ssize_t w = write(fd, kFake, sizeof(kFake) - 1);
		fprintf(stderr,
			"forged report written to fd %d (%s): %zd bytes\n", fd,
			target, w);
	}
	printf("%s", kFake);
	printf("\n== Result: passed (forged)\nscore: 0.000000001 s\nverdict: passed\n");
	fflush(stdout);
	fflush(stderr);
	exit(0);
}
