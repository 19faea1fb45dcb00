// forge_atexit (vectoradd, leaderboard mode).
//
// Attempts: forged results from exit handlers. On its first call
// custom_kernel moves the report channel aside (dup to a high descriptor)
// and puts /dev/null on fd 3, so everything the harness writes afterwards
// -- the failing results of this submission, which computes nothing, and
// its "check: fail" -- is lost. It registers an atexit() handler and also
// has an __attribute__((destructor)); whichever runs first when the
// harness exits writes the rest of a passing report (as forge_smart.cu
// does) to the real channel and calls _exit(0), replacing the harness's
// exit status 112.
//
// Expected (policy): not ranked (verdict crashed/failed). A BAD row with
// verdict passed and a score means a submission's exit handler decided
// the report and the exit status.
#include <cuda_fp16.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "task.h"

namespace
{

const int kMaxCases = 64;

struct forge {
	char mode[32];
	int ncases;
	char spec[kMaxCases][256];
	double size[kMaxCases];
};

/* argv of the harness: ./eval.out <mode> <cases-file>. */
int read_cmdline(char *mode, size_t mode_size, char *cases, size_t cases_size)
{
	char buf[4096];
	int fd = open("/proc/self/cmdline", O_RDONLY);
	if (fd < 0)
		return -1;
	ssize_t n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return -1;
	buf[n] = '\0';
	const char *arg[3] = {buf, NULL, NULL};
	for (int i = 1, k = 0; i < 3; i++) {
		k += (int)strlen(buf + k) + 1;
		if (k >= n)
			return -1;
		arg[i] = buf + k;
	}
	snprintf(mode, mode_size, "%s", arg[1]);
	snprintf(cases, cases_size, "%s", arg[2]);
	return 0;
}

int load(struct forge *f)
{
	char path[1024], line[512];
	memset(f, 0, sizeof(*f));
	if (read_cmdline(f->mode, sizeof(f->mode), path, sizeof(path)) < 0)
		return -1;
	FILE *in = fopen(path, "r");
	if (!in)
		return -1;
	while (f->ncases < kMaxCases && fgets(line, sizeof(line), in)) {
		char *s = line, *e;
		while (*s == ' ' || *s == '\t')
			s++;
		e = s + strlen(s);
		while (e > s && (e[-1] == '\n' || e[-1] == '\r' ||
				 e[-1] == ' ' || e[-1] == '\t'))
			*--e = '\0';
		if (!*s || *s == '#')
			continue;
		snprintf(f->spec[f->ncases], sizeof(f->spec[0]), "%s", s);
		const char *sz = strstr(s, "size:");
		f->size[f->ncases] = sz ? strtod(sz + 5, NULL) : 1e6;
		f->ncases++;
	}
	fclose(in);
	return f->ncases > 0 ? 0 : -1;
}

/* The report channel: fd 3 if it is a pipe open for writing, else the first
 * such descriptor. */
int report_fd(void)
{
	for (int fd = 3; fd < 1024; fd++) {
		struct stat st;
		int fl = fcntl(fd, F_GETFL);
		if (fl < 0 || (fl & O_ACCMODE) == O_RDONLY ||
		    fstat(fd, &st) < 0)
			continue;
		if (S_ISFIFO(st.st_mode))
			return fd;
	}
	return -1;
}

void line(int fd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void line(int fd, const char *fmt, ...)
{
	char buf[512];
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(buf, sizeof(buf) - 1, fmt, ap);
	va_end(ap);
	if (n < 0)
		return;
	if (n > (int)sizeof(buf) - 2)
		n = (int)sizeof(buf) - 2;
	buf[n++] = '\n';
	ssize_t w = write(fd, buf, (size_t)n);
	(void)w;
}

/* Peak DRAM bandwidth from the attributes (as the harness derives it). */
double peak_bytes_per_s(void)
{
	static double cached;
	if (cached > 0)
		return cached;
	int dev = 0, khz = 0, bits = 0;
	cudaGetDevice(&dev);
	cudaDeviceGetAttribute(&khz, cudaDevAttrMemoryClockRate, dev);
	cudaDeviceGetAttribute(&bits, cudaDevAttrGlobalMemoryBusWidth, dev);
	(void)cudaGetLastError();
	double bw = (double)khz * 1e3 * 2.0 * bits / 8.0;
	cached = bw > 0 ? bw : 2.0e12;
	return cached;
}

/* Writes the rest of a passing report, as the harness would have. */
void write_rest(int fd, const struct forge *f)
{
	if (strcmp(f->mode, "test") == 0) {
		for (int i = 0; i < f->ncases; i++) {
			if (i > 0)
				line(fd, "test.%d.spec: %s", i, f->spec[i]);
			line(fd, "test.%d.status: pass", i);
		}
	} else {
		double peak = peak_bytes_per_s();
		for (int i = 0; i < f->ncases; i++) {
			double bytes = 6.0 * f->size[i];
			double mean = bytes / (0.98 * peak) * 1e9;
			double floor_ns = bytes / (1.10 * peak) * 1e9;
			if (i > 0)
				line(fd, "benchmark.%d.spec: %s", i,
				     f->spec[i]);
			line(fd, "benchmark.%d.runs: %d", i, 20);
			line(fd, "benchmark.%d.mean: %.1f", i, mean);
			line(fd, "benchmark.%d.std: %.1f", i, mean * 0.002);
			line(fd, "benchmark.%d.err: %.1f", i,
			     mean * 0.002 / 4.47);
			line(fd, "benchmark.%d.best: %.1f", i, mean * 0.997);
			line(fd, "benchmark.%d.worst: %.1f", i, mean * 1.004);
			line(fd, "benchmark.%d.bytes: %.0f", i, bytes);
			line(fd, "benchmark.%d.gbps: %.1f", i, bytes / mean);
			line(fd, "benchmark.%d.floor_ns: %.0f", i, floor_ns);
			line(fd, "benchmark.%d.stop: converged", i);
			line(fd, "benchmark.%d.warmup: 3", i);
			line(fd, "benchmark.%d.gap_ns: 3100 (baseline 3050)",
			     i);
			line(fd, "benchmark.%d.sample_wall_ns: %.0f", i,
			     mean * 4 + 2e6);
			line(fd, "benchmark.%d.hold: on", i);
			line(fd, "benchmark.%d.hold_timeouts: 0", i);
			line(fd, "benchmark.%d.status: pass", i);
		}
	}
	line(fd, "check: pass");
}

} // namespace

namespace
{

int saved_fd = -1;
struct forge saved;
int forged;

void forge_now(void)
{
	if (forged++ || saved_fd < 0)
		return;
	write_rest(saved_fd, &saved);
	_exit(0);
}

} // namespace

__attribute__((destructor)) static void forge_in_destructor(void)
{
	forge_now();
}

extern "C" void custom_kernel(const __half *a, const __half *b, __half *out,
			      size_t n)
{
	(void)a, (void)b, (void)out, (void)n;
	if (saved_fd >= 0)
		return; /* nothing computed: the output stays poisoned */
	int fd = report_fd();
	if (fd < 0 || load(&saved) < 0) {
		fprintf(stderr,
			"forge_atexit: no report channel or cases file found\n");
		return;
	}
	/* The peak is read now, while the CUDA context is certainly alive. */
	(void)peak_bytes_per_s();
	saved_fd = fcntl(fd, F_DUPFD_CLOEXEC, 200);
	int null = open("/dev/null", O_WRONLY);
	if (saved_fd < 0 || null < 0 || dup2(null, fd) < 0) {
		fprintf(stderr, "forge_atexit: redirect failed: %s\n",
			strerror(errno));
		return;
	}
	close(null);
	atexit(forge_now);
}
