// A wrong matmul_cpu submission (for the tests): reads b as if it were
// column-major, i.e. computes a.b^T.
void custom_kernel(const float *a, const float *b, float *c, int n)
{
	for (int i = 0; i < n; i++)
		for (int j = 0; j < n; j++) {
			float s = 0.0f;
			for (int k = 0; k < n; k++)
				s += a[i * n + k] * b[j * n + k];
			c[i * n + j] = s;
		}
}
