/* attacks.h: what a submission can try between the runs of one job
 * (test, ranked, secret), from inside custom_kernel, against the files the
 * worker uses next. Included by the crossrun submissions; every attempt is
 * logged to stderr as "crossrun: <attempt>: <outcome>".
 *
 * The job's layout (worker/run/jobdir.h): the run's working directory is its
 * own scratch; ../task and ../out hold the task's files and the build's
 * outputs; $HOME is the job's, kept across its commands. VICTIM (defined
 * by the including file) is a host path the worker must never write.
 *
 * C17, no dependencies; the CUDA variants include it from host code. */
#ifndef KB_CROSSRUN_ATTACKS_H
#define KB_CROSSRUN_ATTACKS_H

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static void crossrun_log(const char *what, int rc)
{
	fprintf(stderr, "crossrun: %s: %s\n", what,
		rc == 0 ? "done" : strerror(errno));
}

/* A harness that reports a passing ranked run at 1.23 us a call. */
static const char crossrun_fake_harness[] =
	"#!/bin/sh\n"
	"printf 'benchmark-count: 1\\nbenchmark.0.spec: size: 1; seed: 1\\n"
	"benchmark.0.runs: 100\\nbenchmark.0.mean: 1230.0\\n"
	"benchmark.0.std: 1.0\\nbenchmark.0.err: 0.1\\nbenchmark.0.best: 1200\\n"
	"benchmark.0.worst: 1300\\ntest-count: 1\\ntest.0.spec: size: 1\\n"
	"test.0.status: pass\\ncheck: pass\\n' >&${POPCORN_FD:-3}\n";

static void crossrun_write(const char *path, const char *text, int mode)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, mode);

	if (fd >= 0) {
		ssize_t w = write(fd, text, strlen(text));
		(void)w;
		close(fd);
	}
}

/* The cases file of the next run, the harness of the next run, the task's
 * files, and links in the job's home that the worker will walk. */
static void crossrun_links(void)
{
	char path[4096];
	const char *home = getenv("HOME");

	crossrun_log("unlink cases.txt", unlink("cases.txt"));
	crossrun_log("symlink cases.txt -> victim",
		     symlink(VICTIM, "cases.txt"));
	crossrun_write("fake.sh", crossrun_fake_harness, 0755);
	crossrun_log("rename over ./eval.out", rename("fake.sh", "eval.out"));
	crossrun_write("fake.sh", crossrun_fake_harness, 0755);
	crossrun_log("rename over ../out/eval.out",
		     rename("fake.sh", "../out/eval.out"));
	crossrun_log("unlink ../out/eval.out", unlink("../out/eval.out"));
	crossrun_log("symlink ../out/eval.out",
		     symlink("/bin/true", "../out/eval.out"));
	crossrun_log("truncate ../task/problem.c",
		     truncate("../task/problem.c", 0));
	crossrun_log("mkdir ../step2", mkdir("../step2", 0777));
	if (home) {
		snprintf(path, sizeof(path), "%s/victim-link", home);
		crossrun_log("symlink $HOME/victim-link -> victim",
			     symlink(VICTIM, path));
		snprintf(path, sizeof(path), "%s/cases.txt", home);
		crossrun_log("symlink $HOME/cases.txt -> victim",
			     symlink(VICTIM, path));
	}
}

/* A FIFO where the next run's cases file goes: a worker that opens it
 * blocks for good. */
static void crossrun_fifo(void)
{
	crossrun_log("unlink cases.txt", unlink("cases.txt"));
	crossrun_log("mkfifo cases.txt", mkfifo("cases.txt", 0666));
	crossrun_log("mkfifo ../out/eval.out", mkfifo("../out/eval.out", 0666));
}

#endif
