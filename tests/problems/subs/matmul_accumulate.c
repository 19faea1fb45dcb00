// Hostile: c += a.b instead of c = a.b (assumes c starts zeroed).
void custom_kernel(const float *a, const float *b, float *c, int n)
{
	for (int i = 0; i < n; i++)
		for (int k = 0; k < n; k++)
			for (int j = 0; j < n; j++)
				c[i * n + j] += a[i * n + k] * b[k * n + j];
}
