/* `kb-worker eval`: one evaluation without Kafka or Redis, on a problem
 * directory (or a leaderboard of KB_PROBLEMS) and a file, printing the
 * report users would see (or the Result as JSON). The same evaluation
 * as the service's (eval.h), with the same settings and start-up steps
 * (setup.h), except that a device that cannot be read is only a warning
 * (building without a GPU). --repeat N times N jobs in one process, with
 * the held Python run (eval_ready.h) a warm worker would have.
 */
#include "eval_cmd.h"

#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "eval.h"
#include "eval_ready.h"
#include "kb_lang.h"
#include "kb_log.h"
#include "kb_mode.h"
#include "kb_report.h"
#include "kb_task.h"
#include "kb_util.h"
#include "pbjson.h"
#include "setup.h"
#include "submission.h"

#define SUBMISSION_MAX (1u << 20)

static void eval_progress(void *ctx, Kb__Stage stage, const char *message,
			  int64_t elapsed_ms)
{
	fprintf(stderr, "[%7.2f s] %s\n", (double)elapsed_ms / 1000.0, message);
}

/* Resolves a problem directory, or a leaderboard name of KB_PROBLEMS, into
 * *t. Returns 0 or -1 after printing why. */
static int load_task(const char *arg, struct kb_task *t)
{
	const struct kb_setup_cfg *cfg = kb_setup_settings();
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
	if (kb_problemset_load(cfg->problems, &ps, err, sizeof(err)) < 0) {
		fprintf(stderr,
			"kb-worker: %s is no directory, and KB_PROBLEMS "
			"does not load: %s\n",
			arg, err);
		return -1;
	}
	found = kb_problemset_find(&ps, arg);
	if (!found || !found->dir) {
		fprintf(stderr,
			"kb-worker: %s is neither a directory nor a "
			"leaderboard of KB_PROBLEMS\n",
			arg);
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
			fprintf(stderr,
				"kb-worker: the result does not dump as JSON\n");
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
	const struct kb_setup_cfg *cfg = kb_setup_settings();
	Kb__Result *r = NULL;

	if (n > 1 && cfg->python_ready)
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
			fprintf(stderr,
				"kb-worker: job %u/%u: %s in %.3f s "
				"(build %.3f s, harness %.3f s%s)\n",
				i, n, kb_report_verdict_name(r->verdict),
				kb_mono_s() - t0, r->build_s, r->harness_s,
				eo->ready && kb_eval_ready_taken(eo->ready) >
							taken
					? ", held run"
					: "");
	}
	kb_eval_ready_free(eo->ready);
	eo->ready = NULL;
	return r;
}

int kb_eval_cmd(int argc, char **argv)
{
	const struct kb_setup_cfg *cfg = kb_setup_settings();
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

	while ((c = getopt_long(argc, argv, "m:g:s:jh", longopts, NULL)) !=
	       -1) {
		switch (c) {
		case 'B':
		case 'C': {
			uint64_t v;

			if (parse_seed(optarg, &v) < 0 || v > UINT32_MAX) {
				fprintf(stderr,
					"kb-worker: --%s needs an "
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
				fprintf(stderr,
					"kb-worker: --repeat needs 1 to "
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
			kb_setup_set_gpu(optarg);
			break;
		case 's':
			seed = optarg;
			break;
		case 'j':
			json = 1;
			break;
		default:
			kb_setup_usage(c == 'h' ? stdout : stderr);
			return c == 'h' ? 0 : 2;
		}
	}
	a.mode = (Kb__Mode)kb_mode_parse(mode);
	if (argc - optind != 2 || a.mode == KB__MODE__MODE_UNSPECIFIED) {
		kb_setup_usage(stderr);
		return 2;
	}
	if (seed && parse_seed(seed, &a.secret_seed) < 0) {
		fprintf(stderr,
			"kb-worker: --seed needs an unsigned integer\n");
		return 2;
	}
	if (kb_util_init() < 0) {
		fprintf(stderr, "kb-worker: cannot initialize libsodium\n");
		return 1;
	}
	kb_setup_name_worker();
	/* One-shot runs keep stderr for progress unless asked for logs. */
	kb_log_init("worker",
		    getenv("KB_LOG_LEVEL") ? kb_log_level_parse(cfg->log_level)
					   : KB_LOG_WARN,
		    cfg->log_json);
	kb_setup_log_config();
	if (kb_setup_check_sandbox() < 0 || load_task(argv[optind], &t) < 0 ||
	    kb_setup_device(0) < 0)
		return 1;
	kb_setup_sweep_workdir();
	if (kb_lang_find(t.lang) && kb_lang_find(t.lang)->python)
		kb_setup_python();
	rc = kb_read_file(argv[optind + 1], SUBMISSION_MAX, &code, &code_len);
	if (rc < 0) {
		fprintf(stderr, "kb-worker: %s: %s\n", argv[optind + 1],
			strerror(-rc));
		kb_task_clear(&t);
		return 1;
	}
	snprintf(file, sizeof(file), "%s", argv[optind + 1]);
	a.gpu = cfg->gpu;
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
	if (t.ngpus && !kb_task_has_gpu(&t, cfg->gpu))
		fprintf(stderr, "kb-worker: warning: %s does not list gpu %s\n",
			t.name, cfg->gpu);
	kb_task_clear(&t);
	if (!sub) {
		fprintf(stderr, "kb-worker: %s\n", err);
		return 1;
	}
	eo = kb_setup_eval_opts();
	eo.progress = eval_progress;
	r = eval_repeat(&eo, sub, repeat);
	kb__submission__free_unpacked(sub, NULL);
	if (trace_dir)
		write_traces(r, trace_dir);
	rc = print_result(r, json) < 0 ||
	     r->verdict != KB__VERDICT__VERDICT_PASSED;
	kb__result__free_unpacked(r, NULL);
	return rc;
}
