/* kb_setup: kb-worker's settings and the start-up steps its commands
 * share.
 *
 * The settings are one table (setup.c: the KB_* variables, their types,
 * bounds, defaults and help), loaded once by main() and read through
 * kb_setup_settings(). Each command (main.c: the service and `selftest`;
 * eval_cmd.c: `eval`) then takes the steps it needs, in this order: name
 * the worker, check that the sandbox can isolate, read the device
 * through the device table (device.h), resolve Python, sweep stale job
 * directories, and run the self-test; kb_setup_eval_opts() derives the
 * evaluation options (eval.h) from all of it.
 *
 * Steps return 0, or -1 after logging why (then the command exits 1);
 * kb_setup_load() prints to stderr instead, as logging is not set up
 * yet. Thread-safety: none; main's thread calls these before any other
 * thread starts (kb_setup_device may fork).
 */
#ifndef KB_SETUP_H
#define KB_SETUP_H

#include <stdio.h>

#include "device.h"
#include "eval.h"

/* The settings' values (setup.c's table says what each is). Strings are
 * owned by the table until kb_setup_free(). */
struct kb_setup_cfg {
	char *brokers, *gpu, *worker, *workdir, *problems, *log_level;
	char *consumer_extra;
	char *cuda_arch, *cuda_home, *cache_dir, *gpu_ld_path, *python;
	char *hip_arch, *hip_home;
	char *metrics_addr;
	long metrics_port;
	int log_json, isolate, keep_workdir, gpu_require, gpu_restrict;
	int selftest;
	int py_sentinel;
	int seal_upstream;
	char *harness_dir;
	int python_ready;
	long build_timeout_s, run_timeout_cap_s, memory_limit_mb;
	long drain_grace_s, infra_attempts, job_attempts, heartbeat_s;
	char *redis_url;
	long lease_ttl_s, lease_keep_s;
};

/* Loads the table from the environment. Returns 0, or -1 after printing
 * why to stderr. */
int kb_setup_load(void);

/* Frees what kb_setup_load() allocated. */
void kb_setup_free(void);

/* Logs the effective settings once, secrets masked. */
void kb_setup_log_config(void);

/* The settings; valid from kb_setup_load() to kb_setup_free(). */
const struct kb_setup_cfg *kb_setup_settings(void);

/* Prints the commands' usage and every setting with its help. */
void kb_setup_usage(FILE *f);

/* --gpu: replaces KB_GPU. */
void kb_setup_set_gpu(const char *gpu);

/* KB_WORKER_NAME, or <hostname>-<gpu>-<pid> when it is empty. */
void kb_setup_name_worker(void);

/* With KB_SANDBOX_ISOLATE on, a host that cannot isolate user code must
 * not run it: -1 (logged) refuses to start. */
int kb_setup_check_sandbox(void);

/* Reads the worker's device through its family's table entry
 * (kb_device_setup) with KB_GPU, the family's arch setting and
 * KB_GPU_RESTRICT. required: a device that cannot be read stops the
 * command (-1); otherwise (`eval`) it is a warning. */
int kb_setup_device(int required);

/* What kb_setup_device() decided (zeroed before it). */
const struct kb_device *kb_setup_get_device(void);

/* Resolves KB_PYTHON once. A worker without one still serves the other
 * languages; its Python jobs end as infra errors saying why. */
void kb_setup_python(void);

/* Removes the job directories of killed workers from KB_WORKDIR. */
void kb_setup_sweep_workdir(void);

/* The evaluation options of this worker: the settings, the device, the
 * interpreter. Strings point into the settings. */
struct kb_eval_opts kb_setup_eval_opts(void);

/* The self-test (selftest.h) when KB_SELFTEST is on or force is set.
 * Returns 0, or -1 after logging why. */
int kb_setup_selftest(int force);

#endif
