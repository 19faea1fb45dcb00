#include "eval.h"
#include "eval_int.h"

#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "build.h"
#include "jobdir.h"
#include "kb_cases.h"
#include "kb_lang.h"
#include "kb_log.h"
#include "kb_popcorn.h"
#include "kb_util.h"
#include "pbutil.h"
#include "plan.h"
#include "profile.h"
#include "profile_collect.h"
#include "python.h"
#include "starve.h"
#include "sysinfo.h"
#include "verdict.h"

static int cancelled(const struct job *j)
{
	return j->o->cancel && atomic_load(j->o->cancel);
}

static void progress(const struct job *j, Kb__Stage stage, const char *msg)
{
	if (j->o->progress)
		j->o->progress(j->o->progress_ctx, stage, msg,
			       (int64_t)((kb_mono_s() - j->o->t0) * 1000.0));
}

static void set_infra(struct job *j, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
static void set_infra(struct job *j, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(j->infra, sizeof(j->infra), fmt, ap);
	va_end(ap);
	j->vin.infra = j->infra;
}

static const struct kb_device_family *family(const struct job *j)
{
	return kb_device_family_for(j->o->gpu);
}

static int is_gpu(const struct job *j)
{
	return family(j)->has_device;
}

static const char *cuda_home(const struct job *j)
{
	return j->o->cuda_home && j->o->cuda_home[0] ? j->o->cuda_home
						     : "/usr/local/cuda";
}

static void python_env(const struct job *j, struct env *e, size_t *n)
{
	static const char *const caches[][2] = {
		{"XDG_CACHE_HOME", ".cache"},
		{"TORCH_EXTENSIONS_DIR", "torch_extensions"},
		{"TRITON_CACHE_DIR", "triton"},
		{"CUDA_CACHE_PATH", "nv"},
	};

	for (size_t i = 0; i < 4; i++) {
		snprintf(e->cache[i], sizeof(e->cache[i]), "%s=%s/%s",
			 caches[i][0], j->jd.home, caches[i][1]);
		e->v[(*n)++] = e->cache[i];
	}
	e->v[(*n)++] = "PYTHONNOUSERSITE=1";
	e->v[(*n)++] = "PYTHONDONTWRITEBYTECODE=1";
	if (is_gpu(j)) {
		snprintf(e->cuda, sizeof(e->cuda), "CUDA_HOME=%s",
			 cuda_home(j));
		e->v[(*n)++] = e->cuda;
	}
}

static void make_env(const struct job *j, int harness, int gpu, struct env *e)
{
	const char *pybin = j->python && j->o->python ? j->o->python->bindir
						      : NULL;
	size_t n = 0;

	snprintf(e->home, sizeof(e->home), "HOME=%s", j->jd.home);
	snprintf(e->tmpdir, sizeof(e->tmpdir), "TMPDIR=%s", j->jd.step);
	snprintf(e->path, sizeof(e->path),
		 "PATH=%s%s%s%s/usr/local/bin:/usr/bin:/bin",
		 pybin ? pybin : "", pybin ? ":" : "",
		 is_gpu(j) ? cuda_home(j) : "", is_gpu(j) ? "/bin:" : "");
	e->v[n++] = e->path;
	e->v[n++] = e->home;
	e->v[n++] = e->tmpdir;
	e->v[n++] = "LANG=C.UTF-8";
	if (j->python)
		python_env(j, e, &n);
	if (gpu) {
		if (j->o->gpu_ld_path)
			snprintf(e->ld, sizeof(e->ld), "LD_LIBRARY_PATH=%s",
				 j->o->gpu_ld_path);
		else
			snprintf(e->ld, sizeof(e->ld),
				 "LD_LIBRARY_PATH=%s/lib64:%s", cuda_home(j),
				 KB_EVAL_GPU_LD_PATH);
		e->v[n++] = e->ld;
		if (j->o->gpu_visible && j->o->gpu_visible[0] &&
		    family(j)->run_env) {
			snprintf(e->visible, sizeof(e->visible), "%s=%s",
				 family(j)->run_env, j->o->gpu_visible);
			e->v[n++] = e->visible;
		}
	}
	if (harness) {
		e->v[n++] = "POPCORN_FD=3";
		if (j->loads_submission) {
			snprintf(e->sub, sizeof(e->sub),
				 "KBH_SUBMISSION=%s/" KB_BUILD_SUBMISSION_SO,
				 j->jd.out);
			e->v[n++] = e->sub;
		}
		/* Upstream's flag for harnesses that behave differently
		 * under Nsight Compute (ours: no hold kernel in the
		 * profiled calls). */
		if (j->ncu_env)
			e->v[n++] = "POPCORN_NCU=1";
		if (j->seed_env) {
			snprintf(e->seed, sizeof(e->seed), "POPCORN_SEED=%llu",
				 (unsigned long long)kb_seed_env(
					 j->s->secret_seed));
			e->v[n++] = e->seed;
		}
		/* Our harnesses remove the cases file once loaded, before
		 * user code runs (kbh_cases_consume). */
		e->v[n++] = "KBH_CASES_UNLINK=1";
		if (j->python && j->o->py_sentinel)
			e->v[n++] = "KBH_SENTINEL=1";
		/* CPU harness (problems/harness/guard.h): the submission's
		 * process is stopped between calls, and OpenMP threads that
		 * spin-wait (libgomp's default) made the median call 100x
		 * slower on a 16-core host (bench/RESULTS.md); sleeping waits
		 * cost tens of us per parallel region instead. Read by libgomp
		 * before main, so it must come from here. */
		if (!is_gpu(j))
			e->v[n++] = "OMP_WAIT_POLICY=passive";
	}
	e->v[n] = NULL;
	e->n = n;
}

static long online_cpus(void)
{
	const long online = sysconf(_SC_NPROCESSORS_ONLN);

	return online > 0 ? online : 1;
}

/* The options of argv with J/step as its writable scratch, starting in
 * cwd (NULL = J/step). Every command sees J/task and J/out read-only and
 * J/home read-write (Python tasks also the interpreter's directories,
 * read-only); the GPU only when gpu is set: builds never get it,
 * compiling needs none. */
void kb__eval_sandbox_args(const struct job *j, const struct kb_argv *argv,
			   const char *cwd, double timeout_s, int want_report,
			   int gpu, size_t output_limit, struct sb_args *a)
{
	const long ncpu = online_cpus();
	const char *home = cuda_home(j);
	char **ro = a->ro;
	size_t nro = 3;

	ro[0] = (char *)j->jd.task;
	ro[1] = (char *)j->jd.out;
	ro[2] = (char *)j->jd.harness;
	a->rw[0] = (char *)j->jd.home;
	a->rw[1] = NULL;
	a->so = (struct kb_sandbox_opts){
		.workdir = j->jd.step,
		.cwd = cwd,
		.argv = argv->v,
		.env = a->e.v,
		.want_report = want_report,
		.wall_timeout_s = timeout_s,
		/* RLIMIT_CPU counts every thread: OpenMP runs use them all. */
		.cpu_timeout_s = timeout_s * (double)ncpu + 1.0,
		.report_limit = KB_EVAL_REPORT_MAX,
		.output_limit = output_limit,
		.memory_limit_mb = j->o->memory_limit_mb,
		/* Python's compilers (Triton, load_inline) start processes,
		 * and torch starts a thread per core in several pools. */
		.max_processes = (int)(ncpu * (j->python ? 8 : 2) + 256),
		.gpu = gpu && is_gpu(j),
		.isolate = j->o->isolate,
		.ro_paths = ro,
		.rw_paths = a->rw,
		.gpu_restrict = gpu && is_gpu(j) && j->o->gpu_restrict,
		.gpu_index = j->o->gpu_index,
		.gpu_family = family(j),
	};

	/* A toolkit outside /usr must be bound into isolated runs (the task,
	 * output and harness folders, CUDA, ncu, HIP, Python: ro's size). */
	if (is_gpu(j) && strncmp(home, "/usr/", 5) != 0)
		ro[nro++] = (char *)home;
	if (j->ncu_root[0])
		ro[nro++] = (char *)j->ncu_root;
	if (is_gpu(j) && j->o->hip_home && strcmp(j->o->hip_home, "/usr") &&
	    strncmp(j->o->hip_home, "/usr/", 5) != 0)
		ro[nro++] = (char *)j->o->hip_home;
	for (size_t i = 0; j->python && j->o->python && j->o->python->dirs[i];
	     i++)
		ro[nro++] = j->o->python->dirs[i];
	ro[nro] = NULL;
	make_env(j, want_report, a->so.gpu, &a->e);
}

/* Runs argv as kb__eval_sandbox_args() describes it. */
static int sandbox(const struct job *j, const struct kb_argv *argv,
		   const char *cwd, double timeout_s, int want_report, int gpu,
		   size_t output_limit, struct kb_sandbox_result *r, char *err,
		   size_t err_size)
{
	kb_eval_sandbox_fn run = j->o->sandbox ? j->o->sandbox : kb_sandbox_run;
	struct sb_args a;

	kb__eval_sandbox_args(j, argv, cwd, timeout_s, want_report, gpu,
			      output_limit, &a);
	memset(r, 0, sizeof(*r));
	return run(&a.so, r, err, err_size);
}

static int build_exec(void *ctx, const struct kb_build_cmd *cmd,
		      struct kb_sandbox_result *r, char *err, size_t err_size)
{
	struct job *j = ctx;

	return sandbox(j, cmd->argv, cmd->cwd ? cmd->cwd : j->jd.task,
		       cmd->timeout_s, 0, cmd->gpu, 0, r, err, err_size);
}

static size_t output_max(const struct job *j)
{
	return j->o->output_max ? j->o->output_max : KB_EVAL_OUTPUT_MAX;
}

static void build(struct job *j, const struct kb_builder *b)
{
	struct kb_build_ctx c = {
		.task = j->t,
		.code = &j->s->code,
		.jd = &j->jd,
		.gpu = j->o->gpu,
		.timeout_s = j->o->build_timeout_s,
		.output_max = output_max(j),
		.exec = build_exec,
		.exec_ctx = j,
		.cache_dir = j->cache,
		.user = j->s->user_id,
		.cuda_arch = j->o->cuda_arch,
		.cuda_home = j->o->cuda_home,
		.hip_arch = j->o->hip_arch,
		.hip_home = j->o->hip_home,
		.python = j->o->python ? j->o->python->exe : NULL,
		.toolkit = j->toolkit,
		.toolkit_size = sizeof(j->toolkit),
	};
	Kb__CompileResult *cr = kb__xcalloc(1, sizeof(*cr));

	kb__compile_result__init(cr);
	j->r->compile = cr;
	progress(j, KB__STAGE__STAGE_COMPILING, "compiling");
	j->vin.build = b->build(&c, cr, j->build_msg, sizeof(j->build_msg));
	j->loads_submission = c.loads_submission;
	j->vin.build_exit_code = cr->exit_code;
	j->vin.build_timeout_s = c.timeout_s;
	j->vin.build_msg = j->build_msg;
	j->r->build_s = cr->duration_s;
	if (j->vin.build == KB_BUILD_NONE) {
		/* Nothing to build (a Python task that needs no warm-up). */
		kb__compile_result__free_unpacked(cr, NULL);
		j->r->compile = NULL;
		j->vin.build = KB_BUILD_OK;
		return;
	}
	kb_debug("build sub=%" PRIu64 " state=%d exit=%d wall=%.3f", j->s->id,
		 j->vin.build, cr->exit_code, cr->duration_s);
	if (j->vin.build == KB_BUILD_INFRA) {
		/* Nothing was compiled: the error line says why. */
		kb__compile_result__free_unpacked(cr, NULL);
		j->r->compile = NULL;
	}
}

static const char *infra_exit_name(int code)
{
	switch (code) {
	case 2:
		return "harness usage error";
	case 110:
		return "device API error";
	case 111:
		return "harness got no POPCORN_FD";
	case 113:
		return "bad test spec";
	default:
		return "harness error";
	}
}

static void add_kv(Kb__RunResult *rr, const char *key, const char *value)
{
	Kb__KeyValue *kv = kb__xcalloc(1, sizeof(*kv));

	kb__key_value__init(kv);
	kv->key = kb__xstrdup(key);
	kv->value = kb__xstrdup(value);
	kb__pb_append(&rr->result, &rr->n_result, kv);
}

/* Why the host, not the run, ended a run that timed out or was killed
 * (starve.h), into why; "" when it did not. */
static void judge_starved(const struct kb_starve_sample *before,
			  const struct kb_starve_sample *after,
			  const struct kb_sandbox_result *sr,
			  const struct kb_run_outcome *o, char *why,
			  size_t why_size)
{
	struct kb_starve_run run = {
		.wall_s = sr->wall_s,
		.cpu_s = sr->cpu_s,
		.timed_out = o->end == KB_RUN_TIMEOUT,
		.killed = o->end == KB_RUN_CRASHED && sr->signaled &&
			  sr->signal == SIGKILL,
		.oom = sr->oom_killed,
		.at_limit = sr->mem_at_limit,
	};

	why[0] = '\0';
	if (!kb_starve_judge(before, after, &run, why, why_size))
		why[0] = '\0';
}

/* Turns a finished sandbox run into the run's outcome and RunResult.
 * fault: evidence of a device fault during the run, or "". before and
 * after: the host around the run, for runs it may have starved. */
static void finish_run(struct job *j, const struct kb_plan_run *p,
		       const struct kb_sandbox_result *sr, const char *fault,
		       const struct kb_starve_sample *before,
		       const struct kb_starve_sample *after,
		       struct kb_run_outcome *o, Kb__RunResult *rr)
{
	char starved[192];

	const int secret = p->secret;
	struct kb_popcorn rep = {0};
	char perr[256] = "";
	int report_ok = 0;

	if (sr->report && sr->report_dropped == 0 &&
	    kb_popcorn_parse(sr->report, sr->report_len, &rep, perr,
			     sizeof(perr)) == 0)
		report_ok = 1;
	else if (sr->report_dropped)
		snprintf(perr, sizeof(perr), "report longer than %d bytes",
			 KB_EVAL_REPORT_MAX);
	o->key = p->key;
	o->label = p->label;
	o->timeout_s = p->timeout_s;
	o->exited = !sr->signaled && !sr->timed_out;
	o->exit_code = sr->exit_code;
	o->signal = sr->signaled ? sr->signal : 0;
	o->oom = sr->oom_killed;
	o->bad_report = !report_ok;
	/* Searched in the raw bytes: a report garbled after the line was
	 * written still says that user code ran. */
	o->user_started = kb_run_user_started(sr->report, sr->report_len);
	o->end = kb_run_classify_started(sr->signaled, sr->exit_code,
					 sr->timed_out, report_ok,
					 report_ok ? rep.check : -1,
					 o->user_started);
	/* The device's own report of a fault outranks whatever the run's
	 * process did or said: unlike an exit code, the submission cannot
	 * fake it. */
	if (fault[0]) {
		o->end = KB_RUN_INFRA;
		snprintf(o->why, sizeof(o->why), "GPU device fault: %s", fault);
	} else if (o->end == KB_RUN_INFRA) {
		snprintf(o->why, sizeof(o->why), "exit status %d (%s)",
			 sr->exit_code, infra_exit_name(sr->exit_code));
	}
	/* A time limit, ours or the harness's own watchdog (exit 114): one
	 * cause, the time it fired, on every surface. */
	if (o->end == KB_RUN_TIMEOUT && !sr->timed_out && !secret)
		o->timeout_s = sr->wall_s;
	/* A run the host starved is the platform's fault: retried, never
	 * charged. */
	judge_starved(before, after, sr, o, starved, sizeof(starved));
	if (starved[0]) {
		kb_warn("run sub=%" PRIu64 " key=%s: %s", j->s->id, p->key,
			starved);
		o->end = KB_RUN_INFRA;
		snprintf(o->why, sizeof(o->why), "%s", starved);
	}
	/* The CUDA harness's relay says why it ended a run as crashed
	 * (exit 115: forged report, exit from user code). */
	if (o->end == KB_RUN_CRASHED && report_ok && !secret &&
	    kb_popcorn_get(&rep, "crash"))
		snprintf(o->why, sizeof(o->why), "%s",
			 kb_popcorn_get(&rep, "crash"));
	if (o->end == KB_RUN_OK)
		o->suspect = kb_verdict_suspect(&rep, sr->wall_s, o->why,
						sizeof(o->why));
	if (o->end == KB_RUN_OK && strcmp(p->key, "leaderboard") == 0) {
		int n = kb_popcorn_means(&rep, &o->means);

		o->nmeans = n > 0 ? (size_t)n : 0;
	}
	if (!report_ok && !secret && o->end != KB_RUN_TIMEOUT)
		kb_warn("run sub=%" PRIu64 " key=%s: no valid report: %s",
			j->s->id, p->key, perr[0] ? perr : "empty");

	rr->key = kb__xstrdup(p->key);
	rr->success = o->end == KB_RUN_OK || o->end == KB_RUN_FAILED;
	rr->passed = o->end == KB_RUN_OK;
	rr->exit_code = o->exited ? sr->exit_code : -1;
	rr->duration_s = sr->wall_s;
	rr->timed_out = sr->timed_out || o->end == KB_RUN_TIMEOUT;
	rr->signal = o->signal;
	/* The secret run's output may quote its seeds: it stays here. */
	if (!secret) {
		rr->stdout = kb__pb_output(sr->out, sr->out_len,
					   sr->out_dropped, output_max(j));
		rr->stderr = kb__pb_output(sr->err, sr->err_len,
					   sr->err_dropped, output_max(j));
	}
	for (size_t i = 0; report_ok && i < rep.n; i++)
		if (!secret || kb_verdict_private_key_ok(rep.kv[i].key))
			add_kv(rr, rep.kv[i].key, rep.kv[i].value);
	kb_popcorn_clear(&rep);
}

/* Makes the run's fresh scratch and writes its cases file there. Returns
 * 0, or -1 with the infra error set. */
int kb__eval_prepare_run(struct job *j, const struct kb_plan_run *p)
{
	char err[256] = "";
	size_t n;
	char *const *cases = kb_plan_cases(p, j->t, &n);
	char *text;
	int rc;

	if (n == 0) {
		set_infra(j, "the task has no cases for the %s", p->label);
		return -1;
	}
	/* Python harnesses (upstream's eval.py, ours) combine the seeds
	 * themselves from POPCORN_SEED; ours in C get them combined. */
	j->seed_env = p->secret && j->python;
	text = kb_cases_render(cases, n, p->secret && !j->python,
			       j->s->secret_seed, err, sizeof(err));
	if (!text) {
		set_infra(j, "bad case in the task: %s", err);
		return -1;
	}
	/* A held run's J/step was made fresh for it before the job came. */
	rc = j->held ? 0 : kb_jobdir_step_begin(&j->jd, err, sizeof(err));
	if (rc == 0)
		rc = kb_jobdir_step_put(&j->jd, KB_JOBDIR_CASES, text,
					strlen(text), 0444);
	explicit_bzero(text, strlen(text));
	free(text);
	if (rc < 0) {
		set_infra(j, "cases for the %s: %s", p->label,
			  err[0] ? err : strerror(-rc));
		return -1;
	}
	return 0;
}

/* The device fault watch of a GPU run (device.h), or NULL. Without one,
 * runs are judged by what the harness says alone. */
static struct kb_device_watch *start_watch(const struct job *j)
{
	static atomic_int warned;
	struct kb_device_watch *w;
	char err[256] = "";

	if (!is_gpu(j))
		return NULL;
	w = family(j)->watch_start(j->o->device, err, sizeof(err));
	if (!w && !atomic_exchange(&warned, 1))
		kb_warn("gpu=%s: no device fault watch: %s; a device fault "
			"after user code started is charged to the user",
			j->o->gpu, err);
	return w;
}

/* Ends the watch; fault gets the evidence of a device fault, else "". */
static void end_watch(const struct job *j, const struct kb_plan_run *p,
		      struct kb_device_watch *w, char *fault, size_t fault_size)
{
	char why[160];

	fault[0] = '\0';
	if (!w)
		return;
	switch (kb_device_watch_end(w, why, sizeof(why))) {
	case KB_DEVICE_WATCH_FAULT:
		snprintf(fault, fault_size, "%s", why);
		kb_warn("run sub=%" PRIu64 " key=%s gpu=%s: device fault: %s",
			j->s->id, p->key, j->o->gpu, why);
		break;
	case KB_DEVICE_WATCH_UNKNOWN:
		kb_warn("run sub=%" PRIu64 " key=%s gpu=%s: device fault "
			"watch failed: %s",
			j->s->id, p->key, j->o->gpu, why);
		break;
	case KB_DEVICE_WATCH_CLEAN:
		if (why[0])
			kb_info("run sub=%" PRIu64 " key=%s gpu=%s: %s",
				j->s->id, p->key, j->o->gpu, why);
		break;
	}
}

/* Profile mode of a cu task: the harness run under Nsight Compute. */
int kb__eval_under_ncu(const struct job *j, const struct kb_plan_run *p)
{
	return p->profile && j->ncu[0];
}

static void wrap_ncu(const struct job *j, struct kb_argv *argv)
{
	struct kb_argv app = *argv;

	memset(argv, 0, sizeof(*argv));
	kb_profile_ncu_argv(argv, j->ncu, j->s->profile, j->loads_submission,
			    app.v);
	kb_argv_free(&app);
}

static int profile_exec(void *ctx, const struct kb_argv *argv,
			size_t output_limit, struct kb_sandbox_result *r,
			char *err, size_t err_size)
{
	struct job *j = ctx;

	return sandbox(j, argv, j->jd.step, 120.0, 0, 0, output_limit, r, err,
		       err_size);
}

/* The run's Profile, from what it left in J/step (before it goes). */
static void collect_profile(struct job *j, size_t i,
			    const struct kb_sandbox_result *sr,
			    Kb__RunResult *rr)
{
	const struct kb_plan_run *p = &j->plan[i];
	struct kb_profile_ctx c = {
		.jd = &j->jd,
		.ncu = j->ncu,
		.exec = profile_exec,
		.exec_ctx = j,
		/* What is left, shared by this run and the later ones. */
		.trace_max = j->trace_left / (j->nplan - i),
	};
	Kb__Profile *pf = kb__xcalloc(1, sizeof(*pf));

	kb__profile__init(pf);
	rr->profile = pf;
	if (kb__eval_under_ncu(j, p))
		kb_profile_collect_ncu(&c, sr, pf);
	else if (j->python)
		kb_profile_collect_torch(&c, rr, pf);
	else if (!is_gpu(j))
		kb__pb_set_str(&pf->error, KB_PROFILE_NO_CPU_PROFILER);
	else
		kb__pb_take_str(&pf->error,
				kb__xasprintf("no profiler for %s problems on "
					      "this worker",
					      j->t->lang));
	j->trace_left -= pf->trace.len < j->trace_left ? pf->trace.len
						       : j->trace_left;
}

/* One harness run through the sandbox, the device watched. Returns 0, or
 * -1 with the infra error set (the run never finished). */
static int run_one(struct job *j, const struct kb_builder *b, size_t i)
{
	const struct kb_plan_run *p = &j->plan[i];
	struct kb_run_outcome *o = &j->runs[i];
	struct kb_sandbox_result sr;
	struct kb_argv argv = {0};
	struct kb_device_watch *watch;
	struct kb_starve_sample before, after;
	char err[256] = "", fault[160];
	Kb__RunResult *rr;
	int rc, held;

	if (b->run_argv(j->t, j->o->python ? j->o->python->exe : NULL,
			p->harness_mode, KB_JOBDIR_CASES, &argv, err,
			sizeof(err)) < 0) {
		set_infra(j, "%s", err);
		kb_argv_free(&argv);
		return -1;
	}
	if (kb__eval_prepare_run(j, p) < 0) {
		kb_argv_free(&argv);
		return -1;
	}
	if (kb__eval_under_ncu(j, p))
		wrap_ncu(j, &argv);
	j->ncu_env = kb__eval_under_ncu(j, p);
	progress(j, p->stage, p->progress);
	watch = start_watch(j);
	kb_starve_sample(&before);
	held = j->held ? kb__eval_held_release(j, p, &argv) : 0;
	if (held < 0) {
		end_watch(j, p, watch, fault, sizeof(fault));
		kb_argv_free(&argv);
		return -1;
	}
	rc = held ? kb__eval_held_join(j, &sr, err, sizeof(err))
		  : sandbox(j, &argv, j->jd.step, p->timeout_s, 1, 1, 0, &sr,
			    err, sizeof(err));
	kb_starve_sample(&after);
	end_watch(j, p, watch, fault, sizeof(fault));
	j->ncu_env = 0;
	kb_argv_free(&argv);
	j->r->harness_s += sr.wall_s;
	if (rc < 0 || sr.infra_error) {
		kb_jobdir_step_end(&j->jd);
		set_infra(j, "%s", err[0] ? err : sr.infra_msg);
		kb_sandbox_result_clear(&sr);
		return -1;
	}
	rr = kb__xcalloc(1, sizeof(*rr));
	kb__run_result__init(rr);
	finish_run(j, p, &sr, fault, &before, &after, o, rr);
	if (p->profile && o->end != KB_RUN_TIMEOUT && o->end != KB_RUN_INFRA)
		collect_profile(j, i, &sr, rr);
	kb_jobdir_step_end(&j->jd);
	kb_sandbox_result_clear(&sr);
	kb__pb_append(&j->r->runs, &j->r->n_runs, rr);
	j->vin.nruns = i + 1;
	kb_debug("run sub=%" PRIu64 " key=%s end=%d wall=%.3f", j->s->id,
		 p->key, o->end, rr->duration_s);
	return 0;
}

static void run_all(struct job *j, const struct kb_builder *b)
{
	for (size_t i = 0; i < j->nplan && !cancelled(j); i++)
		if (run_one(j, b, i) < 0 || j->runs[i].end != KB_RUN_OK)
			return;
}

static int executable(const char *dir, const char *name, char *out, size_t size)
{
	return snprintf(out, size, "%s/%s", dir, name) < (int)size &&
	       access(out, X_OK) == 0;
}

/* Nsight Compute for the profile runs of a cu task: <cuda_home>/bin/ncu,
 * else the first ncu on the worker's PATH; where that is the toolkit's
 * launcher script, the installation it would run (kb_profile_ncu_locate:
 * the script's own search finds nothing in the sandbox). Its installation
 * is bound into the sandbox when it lies outside /usr (as the toolkit
 * is). Returns 0, or -1 with the infra error set: a CUDA worker without
 * ncu cannot profile, which is the platform's fault. */
static int find_ncu(struct job *j)
{
	const char *path = getenv("PATH");
	char bin[PATH_MAX], real[PATH_MAX], *slash;
	int found;

	snprintf(bin, sizeof(bin), "%s/bin", cuda_home(j));
	found = executable(bin, "ncu", j->ncu, sizeof(j->ncu));
	while (!found && path && *path) {
		size_t n = strcspn(path, ":");

		snprintf(bin, sizeof(bin), "%.*s", (int)n, path);
		found = n && executable(bin, "ncu", j->ncu, sizeof(j->ncu));
		path += n + (path[n] == ':');
	}
	if (!found || !realpath(j->ncu, real)) {
		j->ncu[0] = '\0';
		set_infra(j,
			  "profile mode needs Nsight Compute: no ncu in "
			  "%s/bin or on PATH",
			  cuda_home(j));
		return -1;
	}
	if (kb_profile_ncu_locate(real, KB_EVAL_NCU_OPT_DIR, j->ncu,
				  sizeof(j->ncu)) < 0) {
		j->ncu[0] = '\0';
		set_infra(j, "profile mode: the path of ncu is too long");
		return -1;
	}
	snprintf(real, sizeof(real), "%s", j->ncu);
	slash = strrchr(real, '/');
	if (strncmp(real, "/usr/", 5) != 0 && slash && slash != real) {
		*slash = '\0';
		snprintf(j->ncu_root, sizeof(j->ncu_root), "%s", real);
	}
	return 0;
}

/* Checks what the gateway should have guaranteed. Returns the builder, or
 * NULL with the infra error set. */
static const struct kb_builder *check_submission(struct job *j)
{
	const Kb__Submission *s = j->s;
	const struct kb_builder *b;
	int n;

	if (!j->t) {
		set_infra(j, "the submission carries no task");
		return NULL;
	}
	if (s->gpu && s->gpu[0] && strcmp(s->gpu, j->o->gpu) != 0) {
		set_infra(j, "a submission for gpu %s reached a %s worker",
			  s->gpu, j->o->gpu);
		return NULL;
	}
	if (s->mode == KB__MODE__MODE_PROFILE &&
	    kb_profile_request_check(s->profile, j->rejected,
				     sizeof(j->rejected)) < 0) {
		j->vin.rejected = j->rejected;
		return NULL;
	}
	n = kb_plan_make(s->mode, j->t, s->profile, j->o->run_timeout_cap_s,
			 j->plan);
	if (n == -ERANGE) {
		if (j->t->n_benchmarks == 0)
			set_infra(j, "the task has no benchmark cases to "
				     "profile");
		else {
			snprintf(j->rejected, sizeof(j->rejected),
				 "benchmark_index %u: the task has %zu "
				 "benchmark cases (0..%zu)",
				 s->profile->benchmark_index,
				 j->t->n_benchmarks, j->t->n_benchmarks - 1);
			j->vin.rejected = j->rejected;
		}
		return NULL;
	}
	if (n < 0) {
		set_infra(j, "unknown mode %d", (int)s->mode);
		return NULL;
	}
	j->nplan = (size_t)n;
	j->vin.nplanned = j->nplan;
	if (s->mode == KB__MODE__MODE_LEADERBOARD && !s->has_secret_seed) {
		set_infra(j, "a ranked submission without a secret seed");
		return NULL;
	}
	b = kb_builder_find(j->t->lang);
	if (!b)
		set_infra(j, "unknown task language \"%s\"", j->t->lang);
	return b;
}

static Kb__Result *new_result(const struct kb_eval_opts *o,
			      const Kb__Submission *s)
{
	Kb__Result *r = kb__xcalloc(1, sizeof(*r));

	kb__result__init(r);
	r->submission_id = s->id;
	r->leaderboard = kb__xstrdup(s->leaderboard);
	r->gpu = kb__xstrdup(s->gpu && s->gpu[0] ? s->gpu : o->gpu);
	r->mode = s->mode;
	r->user_id = kb__xstrdup(s->user_id);
	r->submitted_at_ms = s->submitted_at_ms;
	r->started_at_ms = kb_now_ms();
	r->worker = kb__xstrdup(o->worker);
	r->system = kb__xcalloc(1, sizeof(*r->system));
	kb__system_info__init(r->system);
	return r;
}

static void finish(struct job *j)
{
	Kb__Result *r = j->r;
	struct kb_verdict v;

	j->vin.runs = j->runs;
	kb_verdict_assemble(&j->vin, &v);
	r->verdict = v.verdict;
	r->fault = v.fault;
	r->has_score = v.has_score;
	r->score = v.score;
	kb__pb_set_str(&r->error, v.error);
	r->finished_at_ms = kb_now_ms();
	for (size_t i = 0; i < KB_PLAN_MAX; i++)
		kb_run_outcome_clear(&j->runs[i]);
}

Kb__Result *kb_eval_run(const struct kb_eval_opts *opts,
			const Kb__Submission *s)
{
	struct kb_eval_opts o = *opts;
	struct job j = {.o = &o, .s = s, .t = s->task};
	const struct kb_builder *b;
	char err[256] = "";
	int rc;

	if (o.t0 <= 0)
		o.t0 = kb_mono_s();
	j.jd.fd = -1;
	j.r = new_result(&o, s);
	j.vin.mode = s->mode;
	j.vin.ranking_by = j.t ? j.t->ranking_by : NULL;
	kb_sysinfo_start(o.gpu, o.device, j.r->system);
	if (o.cache_dir && o.cache_dir[0])
		snprintf(j.cache, sizeof(j.cache), "%s", o.cache_dir);
	else
		snprintf(j.cache, sizeof(j.cache), "%s/cache", o.workdir);
	b = check_submission(&j);
	if (!b)
		goto done;
	j.python = kb_lang_get(b->lang)->python;
	if (j.python && !o.python && o.python_why) {
		set_infra(&j, "no Python runtime on this worker: %s",
			  o.python_why);
		goto done;
	}
	j.trace_left = KB_PROFILE_TRACE_BUDGET;
	if (s->mode == KB__MODE__MODE_PROFILE && is_gpu(&j) &&
	    kb_lang_get(b->lang)->ncu && find_ncu(&j) < 0)
		goto done;
	if (o.ready)
		kb__eval_ready_settle(o.ready);
	if (o.ready && kb__eval_ready_fits(&j, b))
		kb__eval_ready_take(o.ready, &j);
	if (!j.held &&
	    kb_jobdir_open(&j.jd, o.workdir, s->id, err, sizeof(err)) < 0) {
		set_infra(&j, "%s", err);
		goto done;
	}
	if (kb_jobdir_materialize(&j.jd, j.t, &s->code, -1, 1, err,
				  sizeof(err)) < 0) {
		set_infra(&j, "%s", err);
		goto done;
	}
	if (b->build && !cancelled(&j)) {
		build(&j, b);
		if (j.vin.build != KB_BUILD_OK)
			goto done;
	}
	if (o.build_only) {
		j.vin.nplanned = 0;
		goto done;
	}
	run_all(&j, b);
done:
	kb__eval_held_drop(&j);
	kb_sysinfo_end(o.gpu, o.device, j.r->system);
	kb_sysinfo_apply_report(j.r->system, j.r->runs, j.r->n_runs);
	if (!j.r->system->runtime[0] && j.toolkit[0])
		kb__pb_set_str(&j.r->system->runtime, j.toolkit);
	finish(&j);
	if (o.build_only && j.vin.build == KB_BUILD_OK && !j.vin.infra) {
		/* Built: all that was asked. */
		j.r->verdict = KB__VERDICT__VERDICT_PASSED;
		j.r->fault = KB__FAULT__FAULT_NONE;
		kb__pb_set_str(&j.r->error, "");
	}
	if (j.jd.fd >= 0 && (rc = kb_jobdir_close(&j.jd, o.keep_workdir)) < 0)
		kb_warn("cannot remove %s: %s sub=%" PRIu64, j.jd.path,
			strerror(-rc), s->id);
	return j.r;
}

Kb__Result *kb_eval_given_up(const struct kb_eval_opts *o,
			     const Kb__Submission *s, const char *why)
{
	Kb__Result *r = new_result(o, s);

	r->verdict = KB__VERDICT__VERDICT_INFRA_ERROR;
	r->fault = KB__FAULT__FAULT_INFRA;
	kb__pb_set_str(&r->error, why);
	r->finished_at_ms = kb_now_ms();
	return r;
}
