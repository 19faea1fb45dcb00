// grayscale template: gray[y*width + x] = 0.2989 R + 0.5870 G + 0.1140 B,
// with rgb interleaved (3 floats per pixel, row-major). Device pointers;
// launch on the default stream (0); rgb is read-only.
#include <hip/hip_runtime.h>
#include "task.h"

__global__ void grayscale_kernel(const float *rgb, float *gray, int height,
				 int width)
{
	// TODO: your kernel
}

extern "C" void custom_kernel(const float *rgb, float *gray, int height,
			      int width)
{
	// TODO: launch your kernel
}
