#pragma once

inline void custom_kernel(const int *in, int *out, int n)
{
	for (int i = 0; i < n; i++)
		out[i] = 2 * in[i];
}
