/* kb-sandbox-exec: runs one command in the worker's sandbox, as a run of
 * the worker would (isolated, per-run uid, seccomp, cgroups where
 * available), and prints what came back. For checking what a program can
 * and cannot do in there (bench/gpu/ipc_probe) and for debugging "works
 * outside, fails in the sandbox".
 *
 * Usage: kb-sandbox-exec [--gpu N] [--timeout S] DIR PROGRAM [ARG...]
 *   --gpu N gives the run NVIDIA GPU N (/dev/nvidiaN) alone.
 *   DIR becomes the run's writable work directory and cwd (PROGRAM may
 *   live there: ./prog). The environment is PATH, and LD_LIBRARY_PATH
 *   when set. Needs root (or user namespaces) like the worker.
 */
#include "device.h"
#include "kb_sandbox.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char **argv)
{
	struct kb_sandbox_opts o;
	int i = 1;

	memset(&o, 0, sizeof o);
	o.isolate = 1;
	o.wall_timeout_s = 60;
	o.want_report = 1;
	for (; i + 1 < argc && argv[i][0] == '-'; i += 2) {
		if (!strcmp(argv[i], "--gpu")) {
			o.gpu = o.gpu_restrict = 1;
			o.gpu_index = atoi(argv[i + 1]);
			o.gpu_family = &kb_device_nvidia;
		} else if (!strcmp(argv[i], "--timeout")) {
			o.wall_timeout_s = atof(argv[i + 1]);
		} else {
			break;
		}
	}
	if (argc - i < 2) {
		fprintf(stderr,
			"usage: kb-sandbox-exec [--gpu N] [--timeout S] "
			"DIR PROGRAM [ARG...]\n");
		return 2;
	}
	static char path[4096], ldp[4096];
	const char *lp = getenv("LD_LIBRARY_PATH");
	snprintf(path, sizeof path, "PATH=/usr/local/bin:/usr/bin:/bin");
	char *env[3] = {path, NULL, NULL};
	if (lp) {
		snprintf(ldp, sizeof ldp, "LD_LIBRARY_PATH=%s", lp);
		env[1] = ldp;
	}
	o.workdir = argv[i];
	o.argv = argv + i + 1;
	o.env = env;

	struct kb_sandbox_result r;
	char err[512];
	int rc = kb_sandbox_run(&o, &r, err, sizeof err);
	if (rc) {
		fprintf(stderr, "kb-sandbox-exec: %s\n", err);
		kb_sandbox_result_clear(&r);
		return 125;
	}
	fwrite(r.out, 1, r.out_len, stdout);
	fwrite(r.err, 1, r.err_len, stderr);
	fprintf(stderr,
		"kb-sandbox-exec: exited=%d code=%d signaled=%d signal=%d "
		"timed_out=%d wall %.3f s active=0x%x\n",
		r.exited, r.exit_code, r.signaled, r.signal, r.timed_out,
		r.wall_s, r.active);
	int code = r.exited ? r.exit_code : 128 + r.signal;
	kb_sandbox_result_clear(&r);
	return code;
}
