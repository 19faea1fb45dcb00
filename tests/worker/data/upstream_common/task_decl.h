// The interface (C++ linkage, as upstream's tasks declare it).
#pragma once
void custom_kernel(const int *in, int *out, int n);
