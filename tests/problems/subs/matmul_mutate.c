// Hostile: a correct product, but it then uses a as scratch space (zeroes
// its first row). The harness must notice that its input changed.
void custom_kernel(const float *a, const float *b, float *c, int n)
{
	for (int i = 0; i < n; i++)
		for (int j = 0; j < n; j++) {
			float s = 0.0f;
			for (int k = 0; k < n; k++)
				s += a[i * n + k] * b[k * n + j];
			c[i * n + j] = s;
		}
	float *scratch = (float *)a;
	for (int k = 0; k < n; k++)
		scratch[k] = 0.0f;
}
