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
 * For each job (run/eval.c): a fresh directory under KB_WORKDIR receives
 * the task files; the language's builder compiles them (compile/); the
 * problem's own harness runs once per entry of the run plan (run/plan.c,
 * the table in docs/internals.md), each run in the sandbox (sandbox/) with
 * a minimal environment, a wall-clock limit and a pipe on fd 3 for its
 * report; the reports become a verdict, a fault and maybe a score
 * (run/verdict.c). Progress events go out as stages start; the Result
 * goes out once, and only when Kafka has acknowledged it is the offset
 * committed (service/service.c), so a crash anywhere means the job runs
 * again, never that it is lost. Infrastructure failures are retried here before they are
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
 * `kb-worker eval` (eval_cmd.c) runs the same evaluation once, without
 * Kafka, on a problem directory and a file, and prints the report users
 * would see. The settings (one table) and the start-up steps every
 * command takes are setup.c's.
 */
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "eval_cmd.h"
#include "eval_ready.h"
#include "kb_log.h"
#include "kb_metrics.h"
#include "kb_metrics_process.h"
#include "kb_metrics_http.h"
#include "kb_signal.h"
#include "kb_util.h"
#include "service.h"
#include "setup.h"

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

/* Device telemetry at scrape time: the SM clock, temperature and power of
 * a GPU worker's device, as its family reads them (NVML on NVIDIA);
 * nothing for a CPU worker or when they cannot be read (the series are
 * then absent, not zero). */
static void collect_device(kb_metrics *m, void *ctx)
{
	static kb_metric_family *clock, *temp, *power;
	const struct kb_setup_cfg *cfg = kb_setup_settings();
	const struct kb_device *dev = kb_setup_get_device();
	struct kb_device_sample smp;

	(void)ctx;
	if (!clock) {
		clock = kb_metrics_gauge(m, "kb_worker_device_sm_clock_hertz",
					 "SM clock of the worker's GPU (NVML).",
					 "gpu");
		temp = kb_metrics_gauge(
			m, "kb_worker_device_temperature_celsius",
			"Temperature of the worker's GPU (NVML).", "gpu");
		power = kb_metrics_gauge(
			m, "kb_worker_device_power_watts",
			"Power draw of the worker's GPU (NVML).", "gpu");
	}
	if (!dev->info.ok || dev->family->sample(&dev->info, &smp) < 0)
		return;
	if (smp.sm_mhz >= 0)
		kb_gauge_set(kb_metric_get1(clock, cfg->gpu), smp.sm_mhz * 1e6);
	if (smp.temp_c >= 0)
		kb_gauge_set(kb_metric_get1(temp, cfg->gpu), smp.temp_c);
	if (smp.power_mw >= 0)
		kb_gauge_set(kb_metric_get1(power, cfg->gpu),
			     smp.power_mw / 1000.0);
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
	const struct kb_setup_cfg *cfg = kb_setup_settings();
	kb_metrics *m = kb_metrics_default();
	char err[256];

	*out = NULL;
	if (cfg->metrics_port == 0)
		return 0;
	kb_gauge_set(
		kb_metric_get2(kb_metrics_gauge(m, "kb_worker_info",
						"Always 1; labels name the "
						"worker and its device type.",
						"gpu,worker"),
			       cfg->gpu, cfg->worker),
		1);
	kb_metrics_on_collect(m, collect_device, NULL);
	kb_metrics_process(m, "worker");
	*out = kb_metrics_serve(m, cfg->metrics_addr, (int)cfg->metrics_port,
				err, sizeof(err));
	if (!*out) {
		kb_error("%s", err);
		return -1;
	}
	kb_info("metrics on http://%s:%ld/metrics", cfg->metrics_addr,
		cfg->metrics_port);
	return 0;
}

/* Cached task files live beside the compiled harnesses. */
static void task_cache_dir(char *buf, size_t size)
{
	const struct kb_setup_cfg *cfg = kb_setup_settings();
	char parent[PATH_MAX];

	if (cfg->cache_dir[0])
		snprintf(parent, sizeof(parent), "%s", cfg->cache_dir);
	else
		snprintf(parent, sizeof(parent), "%s/cache", cfg->workdir);
	mkdir(cfg->workdir, 0755);
	mkdir(parent, 0755);
	snprintf(buf, size, "%s/tasks", parent);
}

static int cmd_service(int argc, char **argv)
{
	const struct kb_setup_cfg *cfg = kb_setup_settings();
	char task_cache[PATH_MAX + 16];
	struct kb_service_opts so;
	kb_metrics_server *metrics = NULL;
	const char **extra;
	const char *bad = NULL;
	char err[512];
	int c, rc;

	while ((c = getopt_long(argc, argv, "g:h", gpu_longopts, NULL)) != -1) {
		if (c == 'g') {
			kb_setup_set_gpu(optarg);
		} else {
			kb_setup_usage(c == 'h' ? stdout : stderr);
			return c == 'h' ? 0 : 2;
		}
	}
	if (optind != argc) {
		kb_setup_usage(stderr);
		return 2;
	}
	kb_setup_name_worker();
	kb_log_init("worker", kb_log_level_parse(cfg->log_level),
		    cfg->log_json);
	kb_setup_log_config();
	if (kb_setup_check_sandbox() < 0 ||
	    kb_setup_device(cfg->gpu_require) < 0)
		return 1;
	kb_setup_sweep_workdir();
	kb_setup_python();
	if (kb_setup_selftest(0) < 0)
		return 1;
	extra = split_extra(cfg->consumer_extra, &bad);
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
		.brokers = cfg->brokers,
		.gpu = cfg->gpu,
		.worker = cfg->worker,
		.consumer_extra = extra,
		.drain_grace_s = (double)cfg->drain_grace_s,
		.heartbeat_s = (double)cfg->heartbeat_s,
		.infra_attempts = (int)cfg->infra_attempts,
		.job_attempts = (int)cfg->job_attempts,
		.redis_url = cfg->redis_url,
		.lease_ttl_s = (double)cfg->lease_ttl_s,
		.lease_keep_s = (double)cfg->lease_keep_s,
		.task_cache_dir = task_cache,
		.eval = kb_setup_eval_opts(),
	};
	/* The first before serving; then the service starts the next
	 * whenever it is idle (a job waits for one still starting). */
	if (cfg->python_ready) {
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
	const struct kb_setup_cfg *cfg = kb_setup_settings();
	int c;

	while ((c = getopt_long(argc, argv, "g:h", gpu_longopts, NULL)) != -1) {
		if (c == 'g') {
			kb_setup_set_gpu(optarg);
		} else {
			kb_setup_usage(c == 'h' ? stdout : stderr);
			return c == 'h' ? 0 : 2;
		}
	}
	if (kb_util_init() < 0)
		return 1;
	kb_setup_name_worker();
	kb_log_init("worker", kb_log_level_parse(cfg->log_level),
		    cfg->log_json);
	if (kb_setup_check_sandbox() < 0 ||
	    kb_setup_device(cfg->gpu_require) < 0)
		return 1;
	kb_setup_sweep_workdir();
	kb_setup_python();
	return kb_setup_selftest(1) < 0 ? 1 : 0;
}

int main(int argc, char **argv)
{
	int rc;

	if (argc > 1 &&
	    (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0)) {
		kb_setup_usage(stdout);
		return 0;
	}
	if (kb_setup_load() < 0)
		return 2;
	if (argc > 1 && strcmp(argv[1], "eval") == 0)
		rc = kb_eval_cmd(argc - 1, argv + 1);
	else if (argc > 1 && strcmp(argv[1], "selftest") == 0)
		rc = cmd_selftest(argc - 1, argv + 1);
	else
		rc = cmd_service(argc, argv);
	kb_setup_free();
	return rc;
}
