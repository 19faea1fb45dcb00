/* kb-worker: builds, runs and measures submissions for one device type.
 *
 * Theory of operation
 *
 * A worker serves one physical device (KB_GPU: H100, MI300, CPU, ...). In
 * service mode it is a member of the Kafka consumer group kb-worker.<gpu>
 * on kb.submissions.<gpu> and takes one Submission at a time, because two
 * jobs timed on one device would disturb each other. A Submission carries
 * the user's code, the run's options and, for ranked runs, the secret
 * seed, and names its task (files, config, cases, timeouts) by content
 * hash: the worker reads the task from Redis through a cache of its own
 * (kb_taskstore.h). Redis also holds each job's lease (kb_lease.h), so
 * that one job is evaluated once however often it is delivered.
 *
 * For each job (eval.c): a fresh directory under KB_WORKDIR receives the
 * task files; the language's builder compiles them (compile/); the
 * problem's own harness runs once per entry of the run plan (plan.c, the
 * table in docs/internals.md), each run in the sandbox (kb_sandbox.c) with
 * a minimal environment, a wall-clock limit and a pipe on fd 3 for its
 * report; the reports become a verdict, a fault and maybe a score
 * (verdict.c). Progress events go out as stages start; the Result goes out
 * once, and only when Kafka has acknowledged it is the offset committed
 * (service.c), so a crash anywhere means the job runs again, never that it
 * is lost. Infrastructure failures are retried here before they are
 * reported, and are never charged to the user.
 *
 * The secret seed enters the job directory only as already-combined case
 * seeds of the secret run; the secret run's own output is never reported.
 *
 * SIGTERM (kb_signal) drains: no new job is taken, the current one is
 * finished and published within KB_DRAIN_GRACE_S or abandoned with its
 * offset uncommitted, then the producer is flushed and the consumer leaves
 * the group. A second signal exits at once.
 *
 * A GPU worker reads its device at start through its family's entry of
 * the device table (device/device.h; NVIDIA: libcuda, in a child
 * process; AMD: amdgpu's sysfs files): the device gives the build target
 * of its language (KB_CUDA_ARCH / KB_HIP_ARCH override it; the KB_GPU
 * name is the last resort), the variable that names it to runs
 * (CUDA_VISIBLE_DEVICES: its UUID) and the one device node of its own
 * that the sandbox binds into runs (/dev/nvidiaN, /dev/dri/renderDN), so
 * each worker's submissions see its GPU alone. Builds never get the GPU.
 *
 * With KB_METRICS_PORT set, a small listener serves Prometheus metrics on
 * /metrics (kb_metrics_http): the job counters service.c keeps, Kafka
 * errors, and the device's SM clock, temperature and power read at scrape
 * time (absent on CPU workers and where the device cannot be read).
 *
 * `kb-worker eval` runs the same evaluation once, without Kafka, on a
 * problem directory and a file, and prints the report users would see.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "device.h"
#include "eval.h"
#include "eval_ready.h"
#include "jobdir.h"
#include "kb_config.h"
#include "kb_lang.h"
#include "kb_log.h"
#include "kb_metrics.h"
#include "kb_metrics_process.h"
#include "kb_metrics_http.h"
#include "kb_mode.h"
#include "kb_report.h"
#include "kb_sandbox.h"
#include "kb_signal.h"
#include "kb_task.h"
#include "kb_util.h"
#include "pbjson.h"
#include "python.h"
#include "selftest.h"
#include "service.h"
#include "submission.h"

#ifndef KB_DEFAULT_PROBLEMS
#define KB_DEFAULT_PROBLEMS "problems"
#endif

#define SUBMISSION_MAX (1u << 20)
#define GPU_PROBE_TIMEOUT_S 60.0

static struct {
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
} cfg;

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
	{"KB_GPU_LD_LIBRARY_PATH", KB_CFG_STRING, "", 0, 0, 0,
	 &cfg.gpu_ld_path,
	 "LD_LIBRARY_PATH of GPU runs; empty: <KB_CUDA_HOME>/lib64:"
	 KB_EVAL_GPU_LD_PATH},
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
	 &cfg.harness_dir, "our harnesses (python.yml, python/), for sealed "
	 "upstream problems"},
	{"KB_SELFTEST", KB_CFG_BOOL, "1", 0, 0, 0, &cfg.selftest,
	 "before serving, pass one example per language of KB_PROBLEMS and "
	 "build every problem's harness"},
	{"KB_METRICS_PORT", KB_CFG_INT, "0", 0, 65535, 0, &cfg.metrics_port,
	 "port of the Prometheus /metrics listener; 0: none"},
	{"KB_METRICS_ADDR", KB_CFG_STRING, "127.0.0.1", 0, 0, 0,
	 &cfg.metrics_addr, "address of the /metrics listener (0.0.0.0 in a pod)"},
};

/* The interpreter of Python tasks, or why there is none. */
static struct kb_python python;
static char python_why[512];

/* Resolves KB_PYTHON once. A worker without one still serves the other
 * languages; its Python jobs end as infra errors saying why, and the
 * self-test refuses to serve when its problems need Python. */
static void setup_python(void)
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

/* What the worker found out about its device (kb_device_setup). */
static struct kb_device dev;

static void usage(FILE *f)
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

static void set_gpu(const char *gpu)
{
	free(cfg.gpu);
	cfg.gpu = strdup(gpu);
}

/* Loads the table and derives what depends on other settings. Returns 0,
 * or -1 after printing why. */
static int load_config(void)
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
			"error, not \"%s\"\n", cfg.log_level);
		return -1;
	}
	return 0;
}

static void name_worker(void)
{
	char host[256] = "localhost";

	if (cfg.worker[0])
		return;
	gethostname(host, sizeof(host) - 1);
	free(cfg.worker);
	if (asprintf(&cfg.worker, "%s-%s-%ld", host, cfg.gpu, (long)getpid()) < 0)
		cfg.worker = NULL;
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
static int setup_device(int required)
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

static struct kb_eval_opts eval_opts(void)
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
static int run_selftest(void)
{
	struct kb_eval_opts eo;
	char err[1024];
	double t0 = kb_mono_s();
	int n;

	if (!cfg.selftest)
		return 0;
	eo = eval_opts();
	n = kb_selftest_run(&eo, cfg.problems, err, sizeof(err));
	if (n < 0) {
		kb_error("self-test failed, not serving: %s (KB_SELFTEST=0 "
			 "skips it)", err);
		return -1;
	}
	kb_info("self-test: %d problem%s checked in %.1f s", n,
		n == 1 ? "" : "s", kb_mono_s() - t0);
	return 0;
}

/* Splits "k=v,k=v" in place into a NULL-terminated "k", "v" list. Returns
 * NULL with *bad set to the offending entry when one has no '='. */
static const char **split_extra(char *s, const char **bad)
{
	size_t n = 0, cap = 1;
	const char **out;

	for (const char *p = s; *p; p++)
		cap += *p == ',';
	out = calloc(2 * cap + 1, sizeof(*out));
	for (char *save = NULL, *tok = strtok_r(s, ",", &save); out && tok;
	     tok = strtok_r(NULL, ",", &save)) {
		char *eq = strchr(tok, '=');

		if (!eq || eq == tok) {
			*bad = tok;
			free(out);
			return NULL;
		}
		*eq = '\0';
		out[n++] = tok;
		out[n++] = eq + 1;
	}
	return out;
}

/* Removes the job directories of workers that were killed (their lock is
 * free); those of live workers sharing KB_WORKDIR stay. */
static void sweep_workdir(void)
{
	int n = kb_jobdir_sweep(cfg.workdir);

	if (n < 0)
		kb_warn("cannot sweep %s: %s", cfg.workdir, strerror(-n));
	else if (n > 0)
		kb_info("removed %d stale job director%s from %s", n,
			n == 1 ? "y" : "ies", cfg.workdir);
}

/* With KB_SANDBOX_ISOLATE on, a host that cannot isolate user code must
 * not serve: refuse to start rather than run submissions unconfined.
 * Returns 0 or -1 after logging why. */
static int check_sandbox(void)
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

/* Device telemetry at scrape time: the SM clock, temperature and power of
 * a GPU worker's device, as its family reads them (NVML on NVIDIA);
 * nothing for a CPU worker or when they cannot be read (the series are
 * then absent, not zero). */
static void collect_device(kb_metrics *m, void *ctx)
{
	static kb_metric_family *clock, *temp, *power;
	struct kb_device_sample smp;

	(void)ctx;
	if (!clock) {
		clock = kb_metrics_gauge(m, "kb_worker_device_sm_clock_hertz",
					 "SM clock of the worker's GPU (NVML).", "gpu");
		temp = kb_metrics_gauge(m, "kb_worker_device_temperature_celsius",
					"Temperature of the worker's GPU (NVML).", "gpu");
		power = kb_metrics_gauge(m, "kb_worker_device_power_watts",
					 "Power draw of the worker's GPU (NVML).", "gpu");
	}
	if (!dev.info.ok || dev.family->sample(&dev.info, &smp) < 0)
		return;
	if (smp.sm_mhz >= 0)
		kb_gauge_set(kb_metric_get1(clock, cfg.gpu), smp.sm_mhz * 1e6);
	if (smp.temp_c >= 0)
		kb_gauge_set(kb_metric_get1(temp, cfg.gpu), smp.temp_c);
	if (smp.power_mw >= 0)
		kb_gauge_set(kb_metric_get1(power, cfg.gpu), smp.power_mw / 1000.0);
}

/* The options of the service and of `selftest`. */
static const struct option gpu_longopts[] = {
	{"gpu", required_argument, NULL, 'g'},
	{"help", no_argument, NULL, 'h'},
	{NULL, 0, NULL, 0},
};

/* Starts the /metrics listener when KB_METRICS_PORT is set. Returns 0
 * (*out NULL when off) or -1 after logging why. */
static int start_metrics(kb_metrics_server **out)
{
	kb_metrics *m = kb_metrics_default();
	char err[256];

	*out = NULL;
	if (cfg.metrics_port == 0)
		return 0;
	kb_gauge_set(kb_metric_get2(kb_metrics_gauge(m, "kb_worker_info",
						     "Always 1; labels name the "
						     "worker and its device type.",
						     "gpu,worker"),
				    cfg.gpu, cfg.worker),
		     1);
	kb_metrics_on_collect(m, collect_device, NULL);
	kb_metrics_process(m, "worker");
	*out = kb_metrics_serve(m, cfg.metrics_addr, (int)cfg.metrics_port, err,
				sizeof(err));
	if (!*out) {
		kb_error("%s", err);
		return -1;
	}
	kb_info("metrics on http://%s:%ld/metrics", cfg.metrics_addr,
		cfg.metrics_port);
	return 0;
}

/* Cached task files live beside the compiled harnesses. */
static void task_cache_dir(char *buf, size_t size)
{
	char parent[PATH_MAX];

	if (cfg.cache_dir[0])
		snprintf(parent, sizeof(parent), "%s", cfg.cache_dir);
	else
		snprintf(parent, sizeof(parent), "%s/cache", cfg.workdir);
	mkdir(cfg.workdir, 0755);
	mkdir(parent, 0755);
	snprintf(buf, size, "%s/tasks", parent);
}

static int cmd_service(int argc, char **argv)
{
	char task_cache[PATH_MAX + 16];
	struct kb_service_opts so;
	kb_metrics_server *metrics = NULL;
	const char **extra;
	const char *bad = NULL;
	char err[512];
	int c, rc;

	while ((c = getopt_long(argc, argv, "g:h", gpu_longopts, NULL)) != -1) {
		if (c == 'g') {
			set_gpu(optarg);
		} else {
			usage(c == 'h' ? stdout : stderr);
			return c == 'h' ? 0 : 2;
		}
	}
	if (optind != argc) {
		usage(stderr);
		return 2;
	}
	name_worker();
	kb_log_init("worker", kb_log_level_parse(cfg.log_level), cfg.log_json);
	kb_config_log(cfg_table, KB_ARRAY_LEN(cfg_table));
	if (check_sandbox() < 0 || setup_device(cfg.gpu_require) < 0)
		return 1;
	sweep_workdir();
	setup_python();
	if (run_selftest() < 0)
		return 1;
	extra = split_extra(cfg.consumer_extra, &bad);
	if (!extra) {
		kb_error("KB_CONSUMER_EXTRA: \"%s\" is not key=value",
			 bad ? bad : "");
		return 1;
	}
	if (kb_signal_install() < 0) {
		kb_error("cannot install signal handlers");
		free(extra);
		return 1;
	}
	if (start_metrics(&metrics) < 0) {
		free(extra);
		return 1;
	}
	task_cache_dir(task_cache, sizeof(task_cache));
	so = (struct kb_service_opts){
		.brokers = cfg.brokers,
		.gpu = cfg.gpu,
		.worker = cfg.worker,
		.consumer_extra = extra,
		.drain_grace_s = (double)cfg.drain_grace_s,
		.heartbeat_s = (double)cfg.heartbeat_s,
		.infra_attempts = (int)cfg.infra_attempts,
		.job_attempts = (int)cfg.job_attempts,
		.redis_url = cfg.redis_url,
		.lease_ttl_s = (double)cfg.lease_ttl_s,
		.lease_keep_s = (double)cfg.lease_keep_s,
		.task_cache_dir = task_cache,
		.eval = eval_opts(),
	};
	/* The first before serving; then the service starts the next
	 * whenever it is idle (a job waits for one still starting). */
	if (cfg.python_ready) {
		so.eval.ready = kb_eval_ready_new();
		kb_eval_ready_start(so.eval.ready, &so.eval);
	}
	rc = kb_service_run(&so, err, sizeof(err));
	kb_eval_ready_free(so.eval.ready);
	kb_metrics_server_stop(metrics);
	free(extra);
	if (rc < 0) {
		kb_error("worker failed: %s", err);
		return 1;
	}
	kb_info("worker stopped");
	return 0;
}

/* `kb-worker selftest`: the start-up checks of the service (the examples
 * of KB_PROBLEMS, every harness built), then exit: checks a host before
 * it serves, and fills the harness cache. */
static int cmd_selftest(int argc, char **argv)
{
	int c;

	while ((c = getopt_long(argc, argv, "g:h", gpu_longopts, NULL)) != -1) {
		if (c == 'g') {
			set_gpu(optarg);
		} else {
			usage(c == 'h' ? stdout : stderr);
			return c == 'h' ? 0 : 2;
		}
	}
	if (kb_util_init() < 0)
		return 1;
	name_worker();
	kb_log_init("worker", kb_log_level_parse(cfg.log_level), cfg.log_json);
	if (check_sandbox() < 0 || setup_device(cfg.gpu_require) < 0)
		return 1;
	sweep_workdir();
	setup_python();
	cfg.selftest = 1;
	return run_selftest() < 0 ? 1 : 0;
}

static void eval_progress(void *ctx, Kb__Stage stage, const char *message,
			  int64_t elapsed_ms)
{
	fprintf(stderr, "[%7.2f s] %s\n", (double)elapsed_ms / 1000.0, message);
}

/* Resolves a problem directory, or a leaderboard name of KB_PROBLEMS, into
 * *t. Returns 0 or -1 after printing why. */
static int load_task(const char *arg, struct kb_task *t)
{
	struct kb_problemset ps = {0};
	const struct kb_task *found;
	char path[PATH_MAX], err[512];
	struct stat st;

	if (stat(arg, &st) == 0 && S_ISDIR(st.st_mode)) {
		if (!realpath(arg, path)) {
			perror(arg);
			return -1;
		}
		if (kb_task_load_dir(path, basename(path), t, err,
				     sizeof(err)) < 0) {
			fprintf(stderr, "kb-worker: %s: %s\n", arg, err);
			return -1;
		}
		return 0;
	}
	if (kb_problemset_load(cfg.problems, &ps, err, sizeof(err)) < 0) {
		fprintf(stderr, "kb-worker: %s is no directory, and KB_PROBLEMS "
			"does not load: %s\n", arg, err);
		return -1;
	}
	found = kb_problemset_find(&ps, arg);
	if (!found || !found->dir) {
		fprintf(stderr, "kb-worker: %s is neither a directory nor a "
			"leaderboard of KB_PROBLEMS\n", arg);
		kb_problemset_clear(&ps);
		return -1;
	}
	snprintf(path, sizeof(path), "%s", found->dir);
	kb_problemset_clear(&ps);
	if (kb_task_load_dir(path, arg, t, err, sizeof(err)) < 0) {
		fprintf(stderr, "kb-worker: %s: %s\n", path, err);
		return -1;
	}
	return 0;
}

static int parse_seed(const char *s, uint64_t *out)
{
	char *end;

	errno = 0;
	*out = strtoull(s, &end, 0);
	return errno || end == s || *end || s[0] == '-' ? -1 : 0;
}

static uint64_t random_seed(void)
{
	char hex[17];

	kb_random_hex(hex, 8);
	return strtoull(hex, NULL, 16);
}

static int print_result(Kb__Result *r, int json)
{
	char *text;

	if (json) {
		json_t *j;

		kb_report_redact(r);
		j = kb_pbjson(&r->base);
		text = j ? json_dumps(j, JSON_INDENT(2)) : NULL;
		if (j && !text)
			fprintf(stderr, "kb-worker: the result does not dump as JSON\n");
		json_decref(j);
	} else {
		text = kb_report_render(r);
	}
	if (!text) {
		fprintf(stderr, "kb-worker: out of memory\n");
		return -1;
	}
	fputs(text, stdout);
	if (json)
		fputc('\n', stdout);
	free(text);
	return 0;
}

/* `eval --trace-dir`: each profile run's trace as DIR/<run key>.zip. */
static void write_traces(const Kb__Result *r, const char *dir)
{
	char path[PATH_MAX];
	int rc;

	for (size_t i = 0; i < r->n_runs; i++) {
		const Kb__Profile *pf = r->runs[i]->profile;

		if (!pf || !pf->trace.len)
			continue;
		snprintf(path, sizeof(path), "%s/%s.zip", dir, r->runs[i]->key);
		rc = kb_write_file(path, pf->trace.data, pf->trace.len, 0644);
		if (rc < 0)
			fprintf(stderr, "kb-worker: %s: %s\n", path,
				strerror(-rc));
	}
}

/* `eval --repeat N`: the job N times in this process, each timed from
 * its start to its Result on stderr; a Python job first waits (up to
 * 120 s) for the held run to be ready, as a warm worker's would be.
 * Returns the last Result. */
static Kb__Result *eval_repeat(struct kb_eval_opts *eo,
			       const Kb__Submission *sub, uint32_t n)
{
	Kb__Result *r = NULL;

	if (n > 1 && cfg.python_ready)
		eo->ready = kb_eval_ready_new();
	for (uint32_t i = 1; i <= n; i++) {
		unsigned taken = 0;
		double t0;

		if (r)
			kb__result__free_unpacked(r, NULL);
		if (eo->ready) {
			kb_eval_ready_start(eo->ready, eo);
			kb_eval_ready_wait(eo->ready, 120);
			taken = kb_eval_ready_taken(eo->ready);
		}
		t0 = kb_mono_s();
		eo->t0 = t0;
		r = kb_eval_run(eo, sub);
		if (n > 1)
			fprintf(stderr, "kb-worker: job %u/%u: %s in %.3f s "
				"(build %.3f s, harness %.3f s%s)\n", i, n,
				kb_report_verdict_name(r->verdict), kb_mono_s() - t0,
				r->build_s, r->harness_s,
				eo->ready && kb_eval_ready_taken(eo->ready) > taken
					? ", held run" : "");
	}
	kb_eval_ready_free(eo->ready);
	eo->ready = NULL;
	return r;
}

static int cmd_eval(int argc, char **argv)
{
	static const struct option longopts[] = {
		{"mode", required_argument, NULL, 'm'},
		{"gpu", required_argument, NULL, 'g'},
		{"seed", required_argument, NULL, 's'},
		{"json", no_argument, NULL, 'j'},
		{"benchmark-index", required_argument, NULL, 'B'},
		{"ncu-kernel-name", required_argument, NULL, 'K'},
		{"ncu-kernel-name-base", required_argument, NULL, 'N'},
		{"ncu-launch-count", required_argument, NULL, 'C'},
		{"trace-dir", required_argument, NULL, 'T'},
		{"repeat", required_argument, NULL, 'R'},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	struct kb_submission_args a = {.user_id = "local",
				       .user_name = "local"};
	struct kb_task t = {0};
	struct kb_eval_opts eo;
	Kb__Submission *sub;
	Kb__Result *r;
	const char *mode = NULL, *seed = NULL, *trace_dir = NULL;
	Kb__ProfileRequest pr = KB__PROFILE_REQUEST__INIT;
	char *code = NULL, err[512], file[PATH_MAX];
	size_t code_len;
	int c, json = 0, rc;
	uint32_t repeat = 1;

	while ((c = getopt_long(argc, argv, "m:g:s:jh", longopts, NULL)) != -1) {
		switch (c) {
		case 'B':
		case 'C': {
			uint64_t v;

			if (parse_seed(optarg, &v) < 0 || v > UINT32_MAX) {
				fprintf(stderr, "kb-worker: --%s needs an "
					"unsigned integer\n",
					c == 'B' ? "benchmark-index"
						 : "ncu-launch-count");
				return 2;
			}
			if (c == 'B') {
				pr.has_benchmark_index = 1;
				pr.benchmark_index = (uint32_t)v;
			} else {
				pr.ncu_launch_count = (uint32_t)v;
			}
			break;
		}
		case 'K':
			pr.ncu_kernel_name = optarg;
			break;
		case 'N':
			pr.ncu_kernel_name_base = optarg;
			break;
		case 'T':
			trace_dir = optarg;
			break;
		case 'R': {
			uint64_t v;

			if (parse_seed(optarg, &v) < 0 || v < 1 || v > 1000) {
				fprintf(stderr, "kb-worker: --repeat needs 1 to "
					"1000\n");
				return 2;
			}
			repeat = (uint32_t)v;
			break;
		}
		case 'm':
			mode = optarg;
			break;
		case 'g':
			set_gpu(optarg);
			break;
		case 's':
			seed = optarg;
			break;
		case 'j':
			json = 1;
			break;
		default:
			usage(c == 'h' ? stdout : stderr);
			return c == 'h' ? 0 : 2;
		}
	}
	a.mode = (Kb__Mode)kb_mode_parse(mode);
	if (argc - optind != 2 || a.mode == KB__MODE__MODE_UNSPECIFIED) {
		usage(stderr);
		return 2;
	}
	if (seed && parse_seed(seed, &a.secret_seed) < 0) {
		fprintf(stderr, "kb-worker: --seed needs an unsigned integer\n");
		return 2;
	}
	if (kb_util_init() < 0) {
		fprintf(stderr, "kb-worker: cannot initialize libsodium\n");
		return 1;
	}
	name_worker();
	/* One-shot runs keep stderr for progress unless asked for logs. */
	kb_log_init("worker",
		    getenv("KB_LOG_LEVEL") ? kb_log_level_parse(cfg.log_level)
					   : KB_LOG_WARN,
		    cfg.log_json);
	kb_config_log(cfg_table, KB_ARRAY_LEN(cfg_table));
	if (check_sandbox() < 0 || load_task(argv[optind], &t) < 0 ||
	    setup_device(0) < 0)
		return 1;
	sweep_workdir();
	if (kb_lang_find(t.lang) && kb_lang_find(t.lang)->python)
		setup_python();
	rc = kb_read_file(argv[optind + 1], SUBMISSION_MAX, &code, &code_len);
	if (rc < 0) {
		fprintf(stderr, "kb-worker: %s: %s\n", argv[optind + 1],
			strerror(-rc));
		kb_task_clear(&t);
		return 1;
	}
	snprintf(file, sizeof(file), "%s", argv[optind + 1]);
	a.gpu = cfg.gpu;
	a.file_name = basename(file);
	a.code = code;
	a.code_len = code_len;
	a.has_secret_seed = a.mode == KB__MODE__MODE_LEADERBOARD;
	if (a.has_secret_seed && !seed)
		a.secret_seed = random_seed();
	a.submitted_at_ms = kb_now_ms();
	a.profile = &pr;
	sub = kb_submission_build(&t, &a, err, sizeof(err));
	free(code);
	if (t.ngpus && !kb_task_has_gpu(&t, cfg.gpu))
		fprintf(stderr, "kb-worker: warning: %s does not list gpu %s\n",
			t.name, cfg.gpu);
	kb_task_clear(&t);
	if (!sub) {
		fprintf(stderr, "kb-worker: %s\n", err);
		return 1;
	}
	eo = eval_opts();
	eo.progress = eval_progress;
	r = eval_repeat(&eo, sub, repeat);
	kb__submission__free_unpacked(sub, NULL);
	if (trace_dir)
		write_traces(r, trace_dir);
	rc = print_result(r, json) < 0 || r->verdict != KB__VERDICT__VERDICT_PASSED;
	kb__result__free_unpacked(r, NULL);
	return rc;
}

int main(int argc, char **argv)
{
	int rc;

	if (argc > 1 && (strcmp(argv[1], "--help") == 0 ||
			 strcmp(argv[1], "-h") == 0)) {
		usage(stdout);
		return 0;
	}
	if (load_config() < 0)
		return 2;
	if (argc > 1 && strcmp(argv[1], "eval") == 0)
		rc = cmd_eval(argc - 1, argv + 1);
	else if (argc > 1 && strcmp(argv[1], "selftest") == 0)
		rc = cmd_selftest(argc - 1, argv + 1);
	else
		rc = cmd_service(argc, argv);
	kb_config_free(cfg_table, KB_ARRAY_LEN(cfg_table));
	return rc;
}
