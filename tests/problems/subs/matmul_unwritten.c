// Hostile: computes only the first half of the rows of c and leaves the
// rest as it found it. The NaN poison must make it fail.
void custom_kernel(const float *a, const float *b, float *c, int n)
{
	for (int i = 0; i < n / 2; i++)
		for (int j = 0; j < n; j++) {
			float s = 0.0f;
			for (int k = 0; k < n; k++)
				s += a[i * n + k] * b[k * n + j];
			c[i * n + j] = s;
		}
}
