// For the GPU check of the worker's device plumbing (not a CTest input):
// a correct vectoradd submission that also prints, once, what it can see
// of the machine from inside the sandbox: the CUDA devices, the device
// nodes and CUDA_VISIBLE_DEVICES. A worker serving one GPU of several must
// show exactly one device (its own) and one /dev/nvidiaN.
#include <cuda_fp16.h>
#include <dirent.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "task.h"

__global__ void add_kernel(const __half *a, const __half *b, __half *out,
			   size_t n)
{
	size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n)
		out[i] = __hadd(a[i], b[i]);
}

static void report_once(void)
{
	static int done;
	int n = -1, d = -1;
	char pci[32] = "?";
	DIR *dev;
	struct dirent *e;

	if (done++)
		return;
	cudaGetDeviceCount(&n);
	cudaGetDevice(&d);
	cudaDeviceGetPCIBusId(pci, sizeof pci, d);
	fprintf(stderr, "kb-devices: count=%d current=%d pci=%s "
		"CUDA_VISIBLE_DEVICES=%s nodes:", n, d, pci,
		getenv("CUDA_VISIBLE_DEVICES") ? getenv("CUDA_VISIBLE_DEVICES")
					       : "(unset)");
	if ((dev = opendir("/dev"))) {
		while ((e = readdir(dev)))
			if (strncmp(e->d_name, "nvidia", 6) == 0)
				fprintf(stderr, " %s", e->d_name);
		closedir(dev);
	}
	fprintf(stderr, "\n");
}

extern "C" void custom_kernel(const __half *a, const __half *b, __half *out,
			      size_t n)
{
	const unsigned threads = 256;

	report_once();
	add_kernel<<<(unsigned)((n + threads - 1) / threads), threads>>>(
		a, b, out, n);
}
