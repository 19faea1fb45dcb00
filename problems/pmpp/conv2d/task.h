/* conv2d: 2D convolution (cross-correlation, as torch.nn.functional.conv2d),
 * fp32, NCHW, no padding, stride 1, as many output as input channels.
 *
 *     extern "C" void custom_kernel(const float *input, const float *kernel,
 *                                   float *output, int batch, int channels,
 *                                   int size, int ksize);
 *
 * input  [batch][channels][size][size]
 * kernel [channels (out)][channels (in)][ksize][ksize]
 * output [batch][channels][size-ksize+1][size-ksize+1]
 * output[b][co][y][x] = sum over ci, ky, kx of
 *     input[b][ci][y+ky][x+kx] * kernel[co][ci][ky][kx]
 * Device pointers; launch on the legacy default stream (0); input and
 * kernel are read-only.
 */
#ifndef CONV2D_TASK_H
#define CONV2D_TASK_H

extern "C" void custom_kernel(const float *input, const float *kernel,
			      float *output, int batch, int channels, int size,
			      int ksize);

#endif
