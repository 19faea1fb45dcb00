// One empty kernel per call: the launch and event floor.
#include "task.h"

__global__ void empty_kernel()
{
}

extern "C" void custom_kernel(const void *, void *)
{
	empty_kernel<<<1, 32>>>();
}
