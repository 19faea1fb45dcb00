// Correct, naive: a 2D grid, one thread per pixel.
#include <hip/hip_runtime.h>
#include "task.h"

__global__ void gray_kernel(const float *rgb, float *gray, int h, int w)
{
	int x = blockIdx.x * blockDim.x + threadIdx.x;
	int y = blockIdx.y * blockDim.y + threadIdx.y;
	if (x < w && y < h) {
		size_t i = (size_t)y * w + x;
		gray[i] = 0.2989f * rgb[3 * i] + 0.5870f * rgb[3 * i + 1] +
			  0.1140f * rgb[3 * i + 2];
	}
}

extern "C" void custom_kernel(const float *rgb, float *gray, int height,
			      int width)
{
	dim3 block(32, 8);
	dim3 grid((width + 31) / 32, (height + 7) / 8);
	gray_kernel<<<grid, block>>>(rgb, gray, height, width);
}
