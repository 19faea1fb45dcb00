// matmul_cpu: c = a.b for row-major n x n float matrices.
// a and b are read-only; c holds garbage (NaN) on entry: write every
// element. See the task description for the full contract.
void custom_kernel(const float *a, const float *b, float *c, int n)
{
	for (int i = 0; i < n; i++)
		for (int j = 0; j < n; j++) {
			float s = 0.0f;
			for (int k = 0; k < n; k++)
				s += a[i * n + k] * b[k * n + j];
			c[i * n + j] = s;
		}
}
