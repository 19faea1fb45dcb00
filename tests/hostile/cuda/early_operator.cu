// early_operator (vectoradd, test mode).
//
// Attempts: code in the harness's trusted parent, before main. nvcc's
// kernel registration -- a constructor, so it runs before main in
// whatever process maps the submission -- takes &v of every __device__
// variable with the type's own operator&, here forced inline into that
// constructor. (Until issue 16 the submission was linked into eval.out
// and this ran in the parent; a machine-code check had to refuse it.)
// The operator tells where it runs: the trusted parent holds the report
// pipe on descriptor 3 and is not under the guard's filter, so
// pidfd_open(2) works there; the guard's child closed every descriptor
// above 2 before loading the submission (CUDA's device files may take 3
// again) and its filter refuses pidfd_open with EPERM. In the parent it
// writes an "ACHIEVED" line and creates a marker file, which is what a
// forger would use to patch the parent's memory or start a helper;
// elsewhere a "contained" line with what it saw. The kernel is honest.
//
// Expected (policy): the submission is mapped only by the confined child,
// so the constructor runs there: "contained" in the output, never
// "ACHIEVED"; test mode passes. A BAD row means code of the submission ran
// before main in the trusted parent.
#include <cuda_fp16.h>
#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "task.h"

struct Early {
	int x;
	__host__ __device__ __forceinline__ Early *operator&()
	{
#ifndef __CUDA_ARCH__
		struct stat st;
		int fifo = fstat(3, &st) == 0 && S_ISFIFO(st.st_mode);
		long fd = syscall(SYS_pidfd_open, (long)getpid(), 0L);
		int err = fd < 0 ? errno : 0;
		char line[160];
		int n;

		if (fd >= 0)
			close((int)fd);
		if (fifo && fd >= 0) {
			n = snprintf(line, sizeof line,
				     "ACHIEVED: code before "
				     "main in the harness parent\n");
			x = creat("/tmp/kbh-marker-early_operator", 0644);
		} else {
			n = snprintf(line, sizeof line,
				     "contained: constructor "
				     "ran with fd 3 %s, pidfd_open %s\n",
				     fifo ? "a pipe" : "not a pipe",
				     fd >= 0 ? "allowed" : strerror(err));
			x = 0;
		}
		if (n > 0)
			(void)!write(1, line, (size_t)n);
#endif
		return this;
	}
};

__device__ Early early_var;

__global__ void add_kernel(const __half *a, const __half *b, __half *out,
			   size_t n)
{
	size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n)
		out[i] = __hadd(a[i], b[i]);
}

extern "C" void custom_kernel(const __half *a, const __half *b, __half *out,
			      size_t n)
{
	const unsigned threads = 256;
	add_kernel<<<(unsigned)((n + threads - 1) / threads), threads>>>(
		a, b, out, n);
}
