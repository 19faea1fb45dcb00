// exit_infra (vectoradd, leaderboard mode).
//
// Attempts: to pass its own failure off as the platform's. custom_kernel
// prints what the harness prints for a broken device ("eval.out: CUDA
// error ... cudaErrorECCUncorrectable") and exits with the harness's
// "device API error" status, 110. An infrastructure error is retried and
// never charged to the user, so a submission that can raise one at will
// gets free retries and hides its failures.
//
// Expected (policy): verdict crashed or failed, fault user; not ranked.
// A BAD row with verdict infra_error means exit status 110 from user code
// is taken for a platform fault.
#include <cuda_fp16.h>
#include <stddef.h>
#include <stdio.h>
#include <unistd.h>

#include "task.h"

extern "C" void custom_kernel(const __half *a, const __half *b, __half *out,
			      size_t n)
{
	(void)a, (void)b, (void)out, (void)n;
	fprintf(stderr,
		"eval.out: CUDA error running custom_kernel: uncorrectable ECC error "
		"encountered (cudaErrorECCUncorrectable)\n");
	fflush(stderr);
	_exit(110);
}
