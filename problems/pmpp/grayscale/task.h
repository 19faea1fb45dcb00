/* grayscale: RGB (fp32, interleaved) to luminance (fp32).
 *
 *     extern "C" void custom_kernel(const float *rgb, float *gray,
 *                                   int height, int width);
 *
 * rgb holds height x width pixels, row-major, 3 floats each (R, G, B);
 * gray holds height x width floats:
 *     gray[y*width + x] = 0.2989 R + 0.5870 G + 0.1140 B.
 * Device pointers; launch on the legacy default stream (0); rgb is
 * read-only.
 */
#ifndef GRAYSCALE_TASK_H
#define GRAYSCALE_TASK_H

extern "C" void custom_kernel(const float *rgb, float *gray, int height,
			      int width);

#endif
