/* ipc_probe.cu: can the guard's confined child (guard.h: seccomp, no fds
 * above 2, non-dumpable parent) open device memory the parent exported
 * with cudaIpcGetMemHandle, and what does one guarded GPU request cost?
 * Feasibility check for moving the CUDA driver's checking into the
 * parent. Usage: ./ipc_probe [requests]; in the worker's sandbox:
 * kb-sandbox-exec --gpu 0 DIR ./ipc_probe (the binary copied into DIR).
 * Build (from the repository root, H = problems/harness):
 *   gcc -O2 -c -I$H $H/guard.c $H/harness.c
 *   nvcc -O2 -arch=sm_90a -I$H bench/gpu/ipc_probe/ipc_probe.cu guard.o \
 *        harness.o -o ipc_probe -lm
 * Seen on the H100 host, 2026-11-22, bare and sandboxed: the child opened
 * the handle and the parent read back every value; an empty guarded
 * request's window p50 17-19 us, p95 19-24 us; a 4 MiB fill 25-27 us. */
#include <cuda_runtime.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <errno.h>
extern "C" {
#include "harness.h"
#include "guard.h"
}

enum { OP_OPEN = KBH_GUARD_OP_USER, OP_FILL, OP_EMPTY };

struct child_state {
	unsigned *p;
	cudaEvent_t a, b;
	float last_ms;
};
static struct child_state g_cs;

__global__ void fill(unsigned *p, unsigned v, size_t n)
{
	size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
	if (i < n)
		p[i] = v + (unsigned)i;
}

static int child_op(void *ctx, uint32_t op, const void *arg, size_t n,
		    uint64_t *t0, uint64_t *t1)
{
	struct child_state *cs = (struct child_state *)ctx;
	cudaError_t e = cudaSuccess;
	if (op == OP_OPEN) {
		cudaIpcMemHandle_t h;
		memcpy(&h, arg, sizeof h);
		e = cudaIpcOpenMemHandle((void **)&cs->p, h,
					 cudaIpcMemLazyEnablePeerAccess);
		if (e == cudaSuccess)
			e = cudaEventCreate(&cs->a);
		if (e == cudaSuccess)
			e = cudaEventCreate(&cs->b);
		if (e != cudaSuccess)
			fprintf(stderr, "child: %s\n", cudaGetErrorString(e));
		return (int)e;
	}
	unsigned v;
	memcpy(&v, arg, sizeof v);
	*t0 = kbh_now_ns();
	cudaEventRecord(cs->a, cudaStreamLegacy);
	if (op == OP_FILL)
		fill<<<4096, 256>>>(cs->p, v, 1u << 20);
	cudaEventRecord(cs->b, cudaStreamLegacy);
	e = cudaDeviceSynchronize();
	*t1 = kbh_now_ns();
	cudaEventElapsedTime(&cs->last_ms, cs->a, cs->b);
	return (int)e;
}

static int cmp(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
	char err[256];
	int n = argc > 1 ? atoi(argv[1]) : 200;
	if (kbh_trusted_init(err, sizeof err)) {
		fprintf(stderr, "init: %s\n", err);
		return 1;
	}
	struct kbh_guard *g;
	if (kbh_guard_start(&g, 64u << 20, child_op, &g_cs, err, sizeof err)) {
		fprintf(stderr, "guard: %s\n", err);
		return 1;
	}
	printf("child %d confined=%d\n", kbh_guard_pid(g),
	       kbh_guard_confined(g));
	unsigned *d;
	size_t bytes = (1u << 20) * sizeof(unsigned);
	if (cudaMalloc(&d, bytes) != cudaSuccess || cudaMemset(d, 0, bytes)) {
		fprintf(stderr, "parent cudaMalloc failed\n");
		return 1;
	}
	cudaIpcMemHandle_t h;
	cudaError_t e = cudaIpcGetMemHandle(&h, d);
	printf("parent export: %s\n", cudaGetErrorString(e));
	struct kbh_guard_window w;
	int rc = kbh_guard_request(g, OP_OPEN, &h, sizeof h, &w);
	printf("child open: rc=%d status=%d\n", rc, w.status);
	if (rc || w.status)
		return 2;
	uint64_t *win = (uint64_t *)calloc(n, 8),
		 *claim = (uint64_t *)calloc(n, 8);
	for (int k = 0; k < 2; k++) {
		for (int i = 0; i < n; i++) {
			unsigned v = 1000u * i;
			rc = kbh_guard_request(g, k ? OP_FILL : OP_EMPTY, &v,
					       sizeof v, &w);
			if (rc || w.status) {
				printf("request %d: rc=%d status=%d\n", i, rc,
				       w.status);
				return 3;
			}
			win[i] = w.t_seen - w.t_go;
			claim[i] = w.t1 - w.t0;
			if (k) {
				unsigned got[2];
				cudaMemcpy(got, d + 12345, sizeof got,
					   cudaMemcpyDeviceToHost);
				if (got[0] != v + 12345 ||
				    got[1] != v + 12346) {
					printf("request %d: parent read %u, want %u\n",
					       i, got[0], v + 12345);
					return 4;
				}
			}
		}
		qsort(win, n, 8, cmp);
		qsort(claim, n, 8, cmp);
		printf("%s: window p50 %.1f us p95 %.1f us max %.1f us; "
		       "child host claim p50 %.1f us\n",
		       k ? "fill 4 MiB" : "empty", win[n / 2] / 1e3,
		       win[n * 95 / 100] / 1e3, win[n - 1] / 1e3,
		       claim[n / 2] / 1e3);
	}
	printf("parent saw every value the child wrote: ok\n");
	kbh_guard_stop(g);
	return 0;
}
