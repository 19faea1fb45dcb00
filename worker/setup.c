/* kb-worker's settings and the start-up steps its commands share: see
 * setup.h. */
#include "setup.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "jobdir.h"
#include "kb_config.h"
#include "kb_lang.h"
#include "kb_log.h"
#include "kb_sandbox.h"
#include "kb_util.h"
#include "python.h"
#include "selftest.h"

#ifndef KB_DEFAULT_PROBLEMS
#define KB_DEFAULT_PROBLEMS "problems"
#endif

#define GPU_PROBE_TIMEOUT_S 60.0

static struct kb_setup_cfg cfg;

static const struct kb_cfg_entry cfg_table[] = {
	{"KB_KAFKA_BROKERS", KB_CFG_STRING, "127.0.0.1:9092", 0, 0, 0,
	 &cfg.brokers, "Kafka bootstrap servers"},
	{"KB_GPU", KB_CFG_STRING, "CPU", 0, 0, 0, &cfg.gpu,
	 "device type this worker serves"},
	{"KB_WORKER_NAME", KB_CFG_STRING, "", 0, 0, 0, &cfg.worker,
	 "name in results and logs; empty: <hostname>-<gpu>-<pid>"},
	{"KB_WORKDIR", KB_CFG_STRING, "/tmp/kb-worker", 0, 0, 0, &cfg.workdir,
	 "parent of the per-job directories"},
	{"KB_PROBLEMS", KB_CFG_STRING, KB_DEFAULT_PROBLEMS, 0, 0, 0,
	 &cfg.problems, "problem set, for `eval <leaderboard name>`"},
	{"KB_LOG_LEVEL", KB_CFG_STRING, "info", 0, 0, 0, &cfg.log_level,
	 "debug, info, warn or error"},
	{"KB_LOG_JSON", KB_CFG_BOOL, "0", 0, 0, 0, &cfg.log_json,
	 "log one JSON object per line"},
	{"KB_CONSUMER_EXTRA", KB_CFG_STRING, "", 0, 0, 1, &cfg.consumer_extra,
	 "extra librdkafka consumer settings, key=value,key=value"},
	{"KB_BUILD_TIMEOUT_S", KB_CFG_INT, "60", 1, 3600, 0,
	 &cfg.build_timeout_s, "wall-clock limit of a build"},
	{"KB_RUN_TIMEOUT_CAP_S", KB_CFG_INT, "900", 1, 86400, 0,
	 &cfg.run_timeout_cap_s, "cap on a task's run timeouts"},
	{"KB_MEMORY_LIMIT_MB", KB_CFG_INT, "16384", 0, 1L << 22, 0,
	 &cfg.memory_limit_mb,
	 "memory limit per sandboxed command (its /tmp and /dev/shm "
	 "included), 0 = none"},
	{"KB_SANDBOX_ISOLATE", KB_CFG_BOOL, "1", 0, 0, 0, &cfg.isolate,
	 "namespaces, seccomp and an unprivileged uid for user code"},
	{"KB_KEEP_WORKDIR", KB_CFG_BOOL, "0", 0, 0, 0, &cfg.keep_workdir,
	 "keep job directories (debugging)"},
	{"KB_DRAIN_GRACE_S", KB_CFG_INT, "20", 0, 3600, 0, &cfg.drain_grace_s,
	 "on SIGTERM, how long the current job may still take"},
	{"KB_HEARTBEAT_S", KB_CFG_INT, "5", 0, 3600, 0, &cfg.heartbeat_s,
	 "between the heartbeats that tell gateways this worker serves "
	 "(0: none; gateways take a worker for gone after KB_WORKER_STALE_S)"},
	{"KB_INFRA_ATTEMPTS", KB_CFG_INT, "3", 1, 10, 0, &cfg.infra_attempts,
	 "evaluations of a job before an infra_error is reported"},
	{"KB_JOB_ATTEMPTS", KB_CFG_INT, "3", 1, 20, 0, &cfg.job_attempts,
	 "workers a job may stop (crash, hang) before it is given up"},
	{"KB_REDIS_URL", KB_CFG_STRING, "redis://127.0.0.1:6379", 0, 0, 1,
	 &cfg.redis_url,
	 "Redis URL (may hold a password: masked): job leases and task files"},
	{"KB_LEASE_TTL_S", KB_CFG_INT, "30", 3, 3600, 0, &cfg.lease_ttl_s,
	 "a job's lease ends this long after its worker last renewed it "
	 "(renewed every quarter of it); then another worker may take the job "
	 "over"},
	{"KB_LEASE_KEEP_S", KB_CFG_INT, "604800", 60, 31536000, 0,
	 &cfg.lease_keep_s,
	 "a finished job's lease says so this long: at least the submissions "
	 "topics' retention"},
	{"KB_CUDA_ARCH", KB_CFG_STRING, "", 0, 0, 0, &cfg.cuda_arch,
	 "nvcc target of cu builds (90a, 80, ...); empty: the device's own"},
	{"KB_CUDA_HOME", KB_CFG_STRING, "/usr/local/cuda", 0, 0, 0,
	 &cfg.cuda_home, "CUDA toolkit (nvcc is <KB_CUDA_HOME>/bin/nvcc)"},
	{"KB_HIP_ARCH", KB_CFG_STRING, "", 0, 0, 0, &cfg.hip_arch,
	 "hipcc target of hip builds (gfx942, gfx90a, ...); empty: the "
	 "device's own"},
	{"KB_HIP_HOME", KB_CFG_STRING, "/usr", 0, 0, 0, &cfg.hip_home,
	 "ROCm root (hipcc is <KB_HIP_HOME>/bin/hipcc; /opt/rocm for AMD's "
	 "packages)"},
	{"KB_CACHE_DIR", KB_CFG_STRING, "", 0, 0, 0, &cfg.cache_dir,
	 "compiled harness objects; empty: <KB_WORKDIR>/cache"},
	{"KB_GPU_LD_LIBRARY_PATH", KB_CFG_STRING, "", 0, 0, 0, &cfg.gpu_ld_path,
	 "LD_LIBRARY_PATH of GPU runs; empty: <KB_CUDA_HOME>/lib64:" KB_EVAL_GPU_LD_PATH},
	{"KB_GPU_REQUIRE", KB_CFG_BOOL, "1", 0, 0, 0, &cfg.gpu_require,
	 "an NVIDIA worker whose device cannot be read refuses to start"},
	{"KB_GPU_RESTRICT", KB_CFG_BOOL, "1", 0, 0, 0, &cfg.gpu_restrict,
	 "runs get this worker's /dev/nvidiaN alone (0: every GPU node)"},
	{"KB_PYTHON", KB_CFG_STRING, "python3", 0, 0, 0, &cfg.python,
	 "interpreter of Python tasks (name in PATH or path), resolved at "
	 "start"},
	{"KB_PYTHON_READY", KB_CFG_BOOL, "1", 0, 0, 0, &cfg.python_ready,
	 "start the next Python job's first run ahead, its interpreter with "
	 "torch imported, in a sandbox of its own (0: at the job)"},
	{"KB_PY_SENTINEL", KB_CFG_BOOL, "0", 0, 0, 0, &cfg.py_sentinel,
	 "Python benchmark and leaderboard runs on NVIDIA GPUs timed by the "
	 "harness's sentinel (not yet the default)"},
	/* Read again by the task loader from the environment (kb_seal.h):
	 * here they are checked and logged once. */
	{"KB_SEAL_UPSTREAM", KB_CFG_BOOL, "1", 0, 0, 0, &cfg.seal_upstream,
	 "upstream Python problems with a standard eval.py run under our "
	 "harness (0: as upstream runs them)"},
	{"KB_HARNESS_DIR", KB_CFG_STRING, KB_DEFAULT_HARNESS_DIR, 0, 0, 0,
	 &cfg.harness_dir,
	 "our harnesses (python.yml, python/), for sealed "
	 "upstream problems"},
	{"KB_SELFTEST", KB_CFG_BOOL, "1", 0, 0, 0, &cfg.selftest,
	 "before serving, pass one example per language of KB_PROBLEMS and "
	 "build every problem's harness"},
	{"KB_METRICS_PORT", KB_CFG_INT, "0", 0, 65535, 0, &cfg.metrics_port,
	 "port of the Prometheus /metrics listener; 0: none"},
	{"KB_METRICS_ADDR", KB_CFG_STRING, "127.0.0.1", 0, 0, 0,
	 &cfg.metrics_addr,
	 "address of the /metrics listener (0.0.0.0 in a pod)"},
};

/* The interpreter of Python tasks, or why there is none. */
static struct kb_python python;
static char python_why[512];

/* What the worker found out about its device (kb_device_setup). */
static struct kb_device dev;

/* Loads the table and derives what depends on other settings. Returns 0,
 * or -1 after printing why. */
int kb_setup_load(void)
{
	char err[512];

	if (kb_config_load(cfg_table, KB_ARRAY_LEN(cfg_table), err,
			   sizeof(err)) < 0) {
		fprintf(stderr, "kb-worker: %s\n", err);
		return -1;
	}
	if (kb_log_level_parse(cfg.log_level) < 0) {
		fprintf(stderr,
			"kb-worker: KB_LOG_LEVEL must be debug, info, warn or "
			"error, not \"%s\"\n",
			cfg.log_level);
		return -1;
	}
	return 0;
}

void kb_setup_free(void)
{
	kb_config_free(cfg_table, KB_ARRAY_LEN(cfg_table));
}

void kb_setup_log_config(void)
{
	kb_config_log(cfg_table, KB_ARRAY_LEN(cfg_table));
}

const struct kb_setup_cfg *kb_setup_settings(void)
{
	return &cfg;
}

void kb_setup_usage(FILE *f)
{
	fprintf(f,
		"usage: kb-worker [--gpu GPU]\n"
		"       kb-worker eval <problem-dir|leaderboard> <file> --mode "
		"<test|benchmark|profile|leaderboard>\n"
		"                 [--gpu GPU] [--seed N] [--json]\n"
		"                 [--benchmark-index N] [--ncu-kernel-name K]\n"
		"                 [--ncu-kernel-name-base B] "
		"[--ncu-launch-count N]\n"
		"                 [--trace-dir DIR]   (profile mode: "
		"popcorn-cli's\n"
		"                 /profile fields; each run's trace as "
		"DIR/<run>.zip)\n"
		"                 [--repeat N]   (N jobs in one worker, each "
		"timed; with\n"
		"                 KB_PYTHON_READY a Python job waits for its held "
		"run first)\n"
		"       kb-worker selftest [--gpu GPU]   (the start-up checks "
		"alone)\n"
		"\nenvironment:\n");
	for (size_t i = 0; i < KB_ARRAY_LEN(cfg_table); i++)
		fprintf(f, "  %-22s %s (default \"%s\")\n", cfg_table[i].env,
			cfg_table[i].help,
			cfg_table[i].def ? cfg_table[i].def : "");
}

void kb_setup_set_gpu(const char *gpu)
{
	free(cfg.gpu);
	cfg.gpu = strdup(gpu);
}

void kb_setup_name_worker(void)
{
	char host[256] = "localhost";

	if (cfg.worker[0])
		return;
	gethostname(host, sizeof(host) - 1);
	free(cfg.worker);
	if (asprintf(&cfg.worker, "%s-%s-%ld", host, cfg.gpu, (long)getpid()) <
	    0)
		cfg.worker = NULL;
}

/* With KB_SANDBOX_ISOLATE on, a host that cannot isolate user code must
 * not serve: refuse to start rather than run submissions unconfined.
 * Returns 0 or -1 after logging why. */
int kb_setup_check_sandbox(void)
{
	struct kb_sandbox_caps caps;
	char err[256] = "";

	if (!cfg.isolate)
		return 0;
	if (kb_sandbox_probe(&caps, err, sizeof(err)) < 0 || !caps.isolate_ok) {
		kb_error("KB_SANDBOX_ISOLATE=1 but this host cannot isolate "
			 "submissions: %s (KB_SANDBOX_ISOLATE=0 runs them "
			 "unconfined: only for trusted code)",
			 err[0] ? err : caps.why);
		return -1;
	}
	return 0;
}

/* The value of the string setting named env, "" when there is none. */
static const char *setting(const char *env)
{
	for (size_t i = 0; env && i < KB_ARRAY_LEN(cfg_table); i++)
		if (cfg_table[i].type == KB_CFG_STRING &&
		    strcmp(cfg_table[i].env, env) == 0)
			return *(char **)cfg_table[i].dst;
	return "";
}

/* Reads the worker's device and decides what builds target and what runs
 * see, through its family's table (device.h). required: a device that
 * cannot be read stops the worker (the service); otherwise (`eval`, for
 * building without a GPU) it is a warning. Returns 0, or -1 after logging
 * why. */
int kb_setup_device(int required)
{
	struct kb_device_cfg c = {
		.gpu = cfg.gpu,
		.arch = setting(kb_device_family_for(cfg.gpu)->arch_setting),
		.required = required,
		.restrict_ = cfg.gpu_restrict,
		.probe_timeout_s = GPU_PROBE_TIMEOUT_S,
	};

	return kb_device_setup(&c, &dev);
}

const struct kb_device *kb_setup_get_device(void)
{
	return &dev;
}

/* Resolves KB_PYTHON once. A worker without one still serves the other
 * languages; its Python jobs end as infra errors saying why, and the
 * self-test refuses to serve when its problems need Python. */
void kb_setup_python(void)
{
	if (kb_python_resolve(cfg.python, 60, &python, python_why,
			      sizeof(python_why)) < 0) {
		kb_warn("%s: Python tasks cannot run", python_why);
		return;
	}
	size_t n = 0;

	python_why[0] = '\0';
	while (python.dirs[n])
		n++;
	kb_info("python %s %s, torch %s, %zu extra director%s bound",
		python.exe, python.version,
		python.torch[0] ? python.torch : "(none)", n,
		n == 1 ? "y" : "ies");
}

/* Removes the job directories of workers that were killed (their lock is
 * free); those of live workers sharing KB_WORKDIR stay. */
void kb_setup_sweep_workdir(void)
{
	int n = kb_jobdir_sweep(cfg.workdir);

	if (n < 0)
		kb_warn("cannot sweep %s: %s", cfg.workdir, strerror(-n));
	else if (n > 0)
		kb_info("removed %d stale job director%s from %s", n,
			n == 1 ? "y" : "ies", cfg.workdir);
}

struct kb_eval_opts kb_setup_eval_opts(void)
{
	return (struct kb_eval_opts){
		.workdir = cfg.workdir,
		.worker = cfg.worker,
		.gpu = cfg.gpu,
		.build_timeout_s = (double)cfg.build_timeout_s,
		.run_timeout_cap_s = (double)cfg.run_timeout_cap_s,
		.memory_limit_mb = cfg.memory_limit_mb,
		.isolate = cfg.isolate,
		.keep_workdir = cfg.keep_workdir,
		.cuda_arch = kb_device_arch(&dev, KB_LANG_NVIDIA),
		.cuda_home = cfg.cuda_home,
		.cache_dir = cfg.cache_dir[0] ? cfg.cache_dir : NULL,
		.gpu_ld_path = cfg.gpu_ld_path[0] ? cfg.gpu_ld_path : NULL,
		.gpu_visible = dev.visible[0] ? dev.visible : NULL,
		.gpu_restrict = dev.restrict_,
		.gpu_index = dev.node,
		.hip_arch = kb_device_arch(&dev, KB_LANG_AMD),
		.hip_home = cfg.hip_home,
		.device = dev.info.ok ? &dev.info : NULL,
		.python = python_why[0] ? NULL : &python,
		.python_why = python_why[0] ? python_why : NULL,
		.py_sentinel = cfg.py_sentinel,
	};
}

/* KB_SELFTEST: before serving, the worker proves it can build and run
 * each language of its problems (selftest.h). Returns 0 or -1 after
 * logging why. */
int kb_setup_selftest(int force)
{
	struct kb_eval_opts eo;
	char err[1024];
	double t0 = kb_mono_s();
	int n;

	if (!cfg.selftest && !force)
		return 0;
	eo = kb_setup_eval_opts();
	n = kb_selftest_run(&eo, cfg.problems, err, sizeof(err));
	if (n < 0) {
		kb_error("self-test failed, not serving: %s (KB_SELFTEST=0 "
			 "skips it)",
			 err);
		return -1;
	}
	kb_info("self-test: %d problem%s checked in %.1f s", n,
		n == 1 ? "" : "s", kb_mono_s() - t0);
	return 0;
}
