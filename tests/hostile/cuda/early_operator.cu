// early_operator (vectoradd, test mode).
//
// Attempts: code in the harness's trusted parent, before main. nvcc's
// kernel registration -- a constructor, so it runs before main in the
// process that later writes the report -- takes &v of every __device__
// variable with the type's own operator&. Here that operator is forced
// inline and makes raw system calls with no function call at all: it
// writes an "ACHIEVED" line to stdout and creates a marker file, which is
// what a forger would use to patch the parent's memory (mprotect) or
// start a helper. The kernel itself is honest, so if the code ran
// unnoticed the run would pass.
//
// Expected (policy): compile_error, refused by the machine-code check of
// nvcc's registration functions (services/kb_elfcheck_x86.h). A BAD row
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
		static const char path[] = "/tmp/kbh-marker-early_operator";
		long r = 1; /* write(1, msg, len) */
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
