// early_operator (vectoradd, test mode).
//
// Attempts: code in the harness's trusted parent, before main. nvcc's
// kernel registration -- a constructor, so it runs before main in
// whatever process maps the submission -- takes &v of every __device__
// variable with the type's own operator&. Here that operator is forced
// inline and makes raw system calls with no function call at all. It
// asks whether descriptor 3 (the report channel, POPCORN_FD) is open:
// only the trusted parent holds it, the guard's child has every
// descriptor above 2 but its own pipe closed before it loads the
// submission. If it is, it writes an "ACHIEVED" line to stdout and
// creates a marker file, which is what a forger would use to patch the
// parent's memory (mprotect) or start a helper; if not, a "contained"
// line. The kernel itself is honest.
//
// Expected (policy): the submission is mapped only by the confined child
// (issue 16), so the constructor runs there: "contained" in the output,
// never "ACHIEVED"; test mode passes (the kernel is correct). A BAD row
// means code of the submission ran before main in the trusted parent.
#include <cuda_fp16.h>
#include <stddef.h>

#include "task.h"

struct Early {
	int x;
	__host__ __device__ __forceinline__ Early *operator&()
	{
#ifndef __CUDA_ARCH__
		static const char msg[] =
			"ACHIEVED: code before main in the harness parent\n";
		static const char held[] =
			"contained: the constructor ran without the report "
			"channel (the confined child)\n";
		static const char path[] = "/tmp/kbh-marker-early_operator";
		long r = 72; /* fcntl(3, F_GETFD) */
		__asm__ volatile("syscall"
				 : "+a"(r)
				 : "D"(3L), "S"(1L)
				 : "rcx", "r11", "memory");
		if (r < 0) {
			r = 1; /* write(1, held, len) */
			__asm__ volatile("syscall"
					 : "+a"(r)
					 : "D"(1L), "S"(held), "d"(sizeof held - 1)
					 : "rcx", "r11", "memory");
			x = 0;
			return this;
		}
		r = 1; /* write(1, msg, len) */
		__asm__ volatile("syscall"
				 : "+a"(r)
				 : "D"(1L), "S"(msg), "d"(sizeof msg - 1)
				 : "rcx", "r11", "memory");
		r = 85; /* creat(path, 0644) */
		__asm__ volatile("syscall"
				 : "+a"(r)
				 : "D"(path), "S"(0644L)
				 : "rcx", "r11", "memory");
		x = (int)r;
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
	add_kernel<<<(unsigned)((n + threads - 1) / threads), threads>>>(a, b,
									out, n);
}
