// conv2d template (fp32, NCHW, valid, stride 1, cross-correlation):
// output[b][co][y][x] = sum_{ci,ky,kx} input[b][ci][y+ky][x+kx]
//                                      * kernel[co][ci][ky][kx]
// with output size (size - ksize + 1)^2 per channel. Device pointers;
// launch on the default stream (0); input and kernel are read-only.
#include <hip/hip_runtime.h>
#include "task.h"

__global__ void conv2d_kernel(const float *input, const float *kernel,
			      float *output, int batch, int channels, int size,
			      int ksize)
{
	// TODO: your kernel
}

extern "C" void custom_kernel(const float *input, const float *kernel,
			      float *output, int batch, int channels, int size,
			      int ksize)
{
	// TODO: launch your kernel
}
