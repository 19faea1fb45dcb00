// Defines custom_kernel with C++ linkage (no extern "C", no task.h): the
// harness cannot find it. The build must fail with a clear message (the
// linker's "required symbol `custom_kernel' not defined"; exit 1 from
// kbg_build.sh: a compile error charged to the user).
#include <cuda_fp16.h>
#include <stddef.h>

void custom_kernel(const __half *a, const __half *b, __half *out, size_t n)
{
}
