// vectoradd. <iostream>, a file-scope std::unordered_map used as a cache of
// launch configurations, and a global object with a constructor and a
// destructor: code that runs when the object is loaded and at exit.
#include <iostream>
#include <unordered_map>

#include "task.h"

static std::unordered_map<size_t, unsigned> blocks_for;

static struct Announce {
	Announce()
	{
		std::cerr << "global_objects: loaded\n";
	}
	~Announce()
	{
		std::cerr << "global_objects: unloaded\n";
	}
} announce;

__global__ static void add(const __half *a, const __half *b, __half *out,
			   size_t n)
{
	size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;

	for (; i < n; i += (size_t)gridDim.x * blockDim.x)
		out[i] = __hadd(a[i], b[i]);
}

extern "C" void custom_kernel(const __half *a, const __half *b, __half *out,
			      size_t n)
{
	auto it = blocks_for.find(n);

	if (it == blocks_for.end())
		it = blocks_for
			     .emplace(n, (unsigned)((n + 255) / 256 < 8192
							    ? (n + 255) / 256
							    : 8192))
			     .first;
	add<<<it->second, 256>>>(a, b, out, n);
}
