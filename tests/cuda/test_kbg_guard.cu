/* test_kbg_guard: the CUDA driver's parent side of the split (kbg_main.cu,
 * kbg_parent.cpp, kbg_case.cpp over ../guard.h), no GPU.
 *
 * The driver's four files are included whole (kbg_main.cu's main
 * renamed), so that their file-local functions can be called too. Each
 * scenario runs in a forked process that does what main() does up to the
 * first timed call -- the report on a temporary file at fd 3, the guard
 * split -- but with a fake child (fake_op) in place of the driver's
 * kbg__child_op, which needs a GPU: it answers INIT and the calibration's
 * empty calls like the real one and misbehaves on the timed CALL as the
 * scenario says (lies about its times, sends a malformed or no reply,
 * reports CUDA errors, exits, crashes, writes to the report's descriptor,
 * tries to leave its confinement). The parent is the driver's real code:
 * kbg__init_child, kbg__calibrate, run_call (request, reply validation,
 * forgery check), crash_exit and finish; checked are its verdict, its
 * message, the report it leaves and its exit status. Plus the pure checks
 * (reply_ok, kbg__claim_forged) directly.
 *
 *     nvcc -I problems/harness -I problems/harness/cuda tests/cuda/test_kbg_guard.cu \
 *          problems/harness/cuda/kbg_{dev.cu,model.c,sys.c} problems/harness/{harness,guard}.c -ldl
 */
/* The sentinel (the timed modes' default) needs a GPU: its model is
 * tests/cuda/test_kbg_model.c, its runs bench/gpu/timing.sh. Here the
 * timed modes run the claim path, whose reply checks every mode keeps. */
#define KBG_NO_SENTINEL 1
#include "kbg_child.cpp"
#include "kbg_parent.cpp"
#include "kbg_case.cpp"
#define main kbg_main_under_test
#include "kbg_main.cu"
#undef main

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

extern "C" {
static int t_setup(const struct kbh_case *, void *, struct kbg_layout *, char *,
		   size_t)
{
	return -1;
}
static int t_generate(const void *, uint64_t, void *const[])
{
	return -1;
}
static int t_reference(const void *, const void *const[], void *, void *)
{
	return -1;
}
static int t_check(const void *, const void *const[], const void *const[],
		   const void *, void *, char *, size_t)
{
	return -1;
}
static void t_call(const void *, void *const[], void *const[])
{
}
const struct kbg_problem kbg_problem_def = {"guard-test", 8,
					    NULL,         t_setup,
					    t_generate,   t_reference,
					    t_check,      t_call};
}

static int failures;

#define EXPECT(cond, ...)                                                      \
	do {                                                                   \
		if (!(cond)) {                                                 \
			fprintf(stderr, "FAIL %s:%d: ", __FILE__, __LINE__);   \
			fprintf(stderr, __VA_ARGS__);                          \
			fputc('\n', stderr);                                   \
			failures++;                                            \
		}                                                              \
	} while (0)

enum scenario {
	HONEST,     /* 100 us of device time inside a ~300 us call */
	FORGED_T0,  /* claims to have started before the request */
	FORGED_DEV, /* claims more device time than the window */
	NAN_TIME,   /* a non-finite device time */
	NO_REPLY,   /* writes no reply at all */
	STICKY,     /* cudaErrorIllegalAddress in the timed region, sticky */
	LEFT,       /* a CUDA error left behind by custom_kernel */
	INFRA_CODE, /* an error only a broken device raises */
	EXIT_110,   /* _exit(110) from custom_kernel */
	SEGV,       /* SIGSEGV in custom_kernel */
	REPORT_FD,  /* writes a passing report to fd 3, then fails */
	ESCAPE,     /* fork, signal the parent, read its memory */
	INIT_DIES,  /* dies before any user code (INIT) */
	N_SCENARIOS
};

const char *const kNames[N_SCENARIOS] = {
	"honest",    "forged_t0", "forged_dev", "nan_time", "no_reply",
	"sticky",    "left",      "infra_code", "exit_110", "segv",
	"report_fd", "escape",    "init_dies",
};

/* What the scenario's parent saw, shared with the test process. */
struct outcome {
	int stage; /* 1 kbg__init_child, 2 kbg__calibrate, 3 run_call
		      * (after kbg__load_submission) */
	int rc;    /* of that stage */
	int confined;
	int hold;
	int sticky, crashed;
	int child_pid;
	struct sample smp;
	char msg[1024];
};

struct fake {
	enum scenario sc;
	struct kbg_reply *reply;
};

static struct fake g_fake;

/* The scenarios run in benchmark mode (the others in test mode). None
 * of them fails: a failure's report keys are the test's. */
static int timed(enum scenario sc)
{
	return sc == HONEST || sc == FORGED_T0 || sc == FORGED_DEV ||
	       sc == ESCAPE;
}

static void spin_ns(uint64_t ns)
{
	uint64_t t = kbh_now_ns();
	while (kbh_now_ns() - t < ns)
		;
}

/* What a confined child must not be able to do; 1 if any of it worked. */
static int escaped(void)
{
	char path[64];
	int any = 0;
	pid_t p = fork();
	if (p == 0)
		_exit(0);
	if (p > 0) {
		waitpid(p, NULL, 0);
		any = 1;
	}
	if (kill(getppid(), 0) == 0)
		any = 1;
	snprintf(path, sizeof path, "/proc/%d/mem", (int)getppid());
	int fd = open(path, O_RDONLY);
	if (fd >= 0) {
		close(fd);
		any = 1;
	}
	return any;
}

/* The fake child (kbh_guard_fn). */
static int fake_op(void *ctx, uint32_t op, const void *arg, size_t size,
		   uint64_t *t0, uint64_t *t1)
{
	struct fake *f = (struct fake *)ctx;
	struct kbg_reply r;
	uint64_t seq;

	if (size < sizeof seq)
		return -EINVAL;
	memcpy(&seq, arg, sizeof seq);
	memset(&r, 0, sizeof r);
	r.seq = seq;
	if (op == OP_INIT) {
		struct op_init a;
		if (size != sizeof a)
			return -EINVAL;
		memcpy(&a, arg, sizeof a);
		if (f->sc == INIT_DIES)
			_exit(3);
		f->reply = (struct kbg_reply *)(uintptr_t)a.reply;
		r.hold = 1;
		memcpy(f->reply, &r, sizeof r);
		return 0;
	}
	if (op != OP_CALL || size != sizeof(struct op_call))
		return -EINVAL;
	struct op_call a;
	memcpy(&a, arg, sizeof a);
	*t0 = kbh_now_ns();
	if (a.empty) {
		r.hold = a.hold;
		*t1 = kbh_now_ns();
		memcpy(f->reply, &r, sizeof r);
		return 0;
	}
	spin_ns(300000);
	*t1 = kbh_now_ns();
	r.dev_ns = 100000;
	r.gap_ns = 1000;
	r.hold = a.hold;
	switch (f->sc) {
	case FORGED_T0:
		*t0 = 1;
		break;
	case FORGED_DEV:
		r.dev_ns = 1e9;
		break;
	case NAN_TIME:
		r.dev_ns = NAN;
		break;
	case NO_REPLY:
		return 0;
	case STICKY:
		r.err = cudaErrorIllegalAddress;
		r.where = W_RUN;
		r.sticky = 1;
		break;
	case LEFT:
		r.err = cudaErrorInvalidConfiguration;
		r.where = W_LEFT;
		break;
	case INFRA_CODE:
		r.err = cudaErrorECCUncorrectable;
		r.where = W_RUN;
		break;
	case EXIT_110:
		_exit(110);
	case SEGV:
		signal(SIGSEGV, SIG_DFL);
		raise(SIGSEGV);
		_exit(98);
	case REPORT_FD: {
		static const char fake[] = "test.0.status: pass\ncheck: pass\n";
		ssize_t w = write(3, fake, sizeof fake - 1);
		(void)w;
		r.err = cudaErrorInvalidValue;
		r.where = W_RUN;
		break;
	}
	case ESCAPE:
		if (escaped())
			r.dev_ns = NAN;
		break;
	default:
		break;
	}
	memcpy(f->reply, &r, sizeof r);
	return 0;
}

/* One scenario, in the forked process: main()'s start, then the
 * driver's parent code up to the first timed call and its verdict. */
static void scenario_main(enum scenario sc, struct outcome *o)
{
	static struct ctx x;
	static struct prepared prep;
	char err[256];
	int rc, code;

	setenv("POPCORN_FD", "3", 1);
	if (kbh_trusted_init(err, sizeof err) ||
	    kbh_report_open_env(&x.rep, err, sizeof err))
		_exit(90);
	g_fake.sc = sc;
	setenv("POPCORN_FD", "3", 1);
	if (kbh_guard_start(&x.g, kArenaMax, fake_op, &g_fake, err, sizeof err))
		_exit(91);
	unsetenv("POPCORN_FD");
	o->confined = kbh_guard_confined(x.g);
	o->child_pid = kbh_guard_pid(x.g);
	/* timing claims are checked in the timed modes only */
	x.mode = timed(sc) ? KBH_MODE_BENCHMARK : KBH_MODE_TEST;
	x.p = &kbg_problem_def;
	x.cur = &prep;
	kbh_report_kv(x.rep, "system.device", "test");
	o->stage = 1;
	rc = kbg__init_child(&x);
	if (rc == KBG_OK) {
		o->stage = 2;
		o->hold = x.hold;
		rc = kbg__calibrate(&x);
	}
	if (rc == KBG_OK) {
		/* KBH_SUBMISSION names a tiny shared object (cuda_tests.sh):
		 * the guard's own LOAD, in the fake child. */
		rc = kbg__load_submission(&x);
		if (rc != KBG_OK)
			fprintf(stderr, "kbg__load_submission: %s\n", x.msg);
	}
	if (rc == KBG_OK) {
		o->stage = 3;
		if (timed(sc)) {
			kbh_report_bench_count(x.rep, 1);
			kbh_report_bench(x.rep, 0, "spec", "size: 1; seed: 1");
		} else {
			kbh_report_test_count(x.rep, 1);
			kbh_report_test(x.rep, 0, "spec", "size: 1; seed: 1");
		}
		rc = run_call(&x, 0, &o->smp);
	}
	o->rc = rc;
	o->sticky = x.child_sticky;
	o->crashed = x.crashed;
	snprintf(o->msg, sizeof o->msg, "%s", x.msg);
	if (rc == KBG_INFRA)
		kbg_exit(x, infra_exit(&x));
	if (rc == KBG_CRASH) {
		code = crash_exit(&x, 0);
	} else if (rc == KBG_FAIL) {
		kbh_report_test(x.rep, 0, "status", "fail");
		kbh_report_test(x.rep, 0, "error", "%s", x.msg);
		code = KBH_EXIT_FAILED;
	} else {
		if (timed(sc))
			kbh_report_bench(x.rep, 0, "status", "%s",
					 o->smp.forged ? "suspect" : "pass");
		else
			kbh_report_test(x.rep, 0, "status", "pass");
		code = KBH_EXIT_OK;
	}
	kbg_exit(x, finish(&x, code));
}

/* Runs a scenario; returns the wait status, the report in rep. */
static int run(enum scenario sc, struct outcome *o, char *rep, size_t rep_size)
{
	char path[] = "/tmp/kbg-guard-XXXXXX";
	int fd = mkstemp(path), st = 0;

	if (fd < 0) {
		perror("mkstemp");
		exit(2);
	}
	unlink(path);
	memset(o, 0, sizeof *o);
	fflush(NULL);
	pid_t pid = fork();
	if (pid == 0) {
		if (dup2(fd, 3) != 3)
			_exit(96);
		scenario_main(sc, o);
		_exit(97);
	}
	waitpid(pid, &st, 0);
	ssize_t n = pread(fd, rep, rep_size - 1, 0);
	rep[n > 0 ? n : 0] = '\0';
	close(fd);
	return st;
}

static int exited(int st, int code)
{
	return WIFEXITED(st) && WEXITSTATUS(st) == code;
}

static void pure_checks(void)
{
	struct kbg_reply r;
	memset(&r, 0, sizeof r);
	r.seq = 7;
	r.dev_ns = 5;
	EXPECT(reply_ok(&r, 7), "a plain reply");
	EXPECT(!reply_ok(&r, 8), "another request's reply");
	r.where = W_RUN;
	EXPECT(!reply_ok(&r, 7), "a step without an error");
	r.err = cudaErrorIllegalAddress;
	EXPECT(reply_ok(&r, 7), "an error and its step");
	r.where = W_COUNT;
	EXPECT(!reply_ok(&r, 7), "an unknown step");
	r.where = W_RUN;
	r.err = -1;
	EXPECT(!reply_ok(&r, 7), "a negative error code");
	r.err = 0;
	r.where = W_NONE;
	r.sticky = 2;
	EXPECT(!reply_ok(&r, 7), "a flag that is not 0 or 1");
	r.sticky = 0;
	r.gap_ns = -1;
	EXPECT(!reply_ok(&r, 7), "a negative gap");
	r.gap_ns = INFINITY;
	EXPECT(!reply_ok(&r, 7), "an infinite gap");
	kbh_fill(&r, 0xff, sizeof r);
	EXPECT(!reply_ok(&r, 7), "the parent's 0xFF fill");

	/* window 1000 .. 1001000 (1 ms); tolerance 0.1% + 1 us = 2 us */
	struct kbh_guard_window w = {1000, 1001000, 2000, 900000, 0, 0};
	EXPECT(!kbg__claim_forged(&w, 800000), "an honest claim");
	EXPECT(!kbg__claim_forged(&w, 1001999),
	       "device time within the clocks' tolerance");
	EXPECT(kbg__claim_forged(&w, 1002001), "device time beyond the window");
	w.t0 = 999;
	EXPECT(kbg__claim_forged(&w, 10), "started before the request");
	w.t0 = 2000;
	w.t1 = 1001001;
	EXPECT(kbg__claim_forged(&w, 10), "ended after the parent saw it done");
	w.t1 = 1500;
	EXPECT(kbg__claim_forged(&w, 10), "ended before it started");
}

int main(void)
{
	char rep[8192];
	struct outcome *o =
		(struct outcome *)mmap(NULL, sizeof *o, PROT_READ | PROT_WRITE,
				       MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	int st;

	if (o == MAP_FAILED) {
		perror("mmap");
		return 2;
	}
	if (kbh_trusted_init(rep, sizeof rep)) {
		fprintf(stderr, "%s\n", rep);
		return 2;
	}
	pure_checks();

	for (int i = 0; i < N_SCENARIOS; i++) {
		enum scenario sc = (enum scenario)i;
		const char *name = kNames[i];
		st = run(sc, o, rep, sizeof rep);
		/* kbg_exit kills and reaps the child before the parent's
		 * status can be seen */
		EXPECT(o->child_pid > 0 && kill(o->child_pid, 0) != 0 &&
			       errno == ESRCH,
		       "%s: the child (%d) outlived the parent", name,
		       o->child_pid);
		/* Everything but the child's early death gets through the
		 * start: the child confined, the hold claimed, the guard's
		 * overhead reported before user code. */
		if (sc != INIT_DIES) {
			EXPECT(o->stage == 3,
			       "%s: stopped at stage %d (rc %d: %s)", name,
			       o->stage, o->rc, o->msg);
			EXPECT(o->confined, "%s: the child is not confined",
			       name);
			EXPECT(o->hold == 1,
			       "%s: the INIT reply's hold was not taken", name);
			EXPECT(strstr(rep, "system.guard: child ") &&
				       strstr(rep, " confined; empty call"),
			       "%s: no system.guard line:\n%s", name, rep);
			EXPECT(strstr(rep, "user-code: started\n") &&
				       strstr(rep, "system.guard") <
					       strstr(rep,
						      "user-code: started"),
			       "%s: user-code: started missing or before calibration:\n%s",
			       name, rep);
		}
		switch (sc) {
		case HONEST:
		case ESCAPE:
			EXPECT(exited(st, 0), "%s: status %#x", name, st);
			EXPECT(o->rc == KBG_OK, "%s: rc %d (%s)", name, o->rc,
			       o->msg);
			EXPECT(o->smp.ns == 100000 && !o->smp.forged &&
				       o->smp.gap_ns == 1000,
			       "%s: sample %.0f ns (forged %d, gap %.0f)", name,
			       o->smp.ns, o->smp.forged, o->smp.gap_ns);
			EXPECT(o->smp.win_ns >= 300000,
			       "%s: window %.0f ns < the child's 300 us", name,
			       o->smp.win_ns);
			EXPECT(strstr(rep, "check: pass\n") &&
				       !strstr(rep, "crash:"),
			       "%s:\n%s", name, rep);
			break;
		case FORGED_T0:
		case FORGED_DEV:
			EXPECT(exited(st, 0), "%s: status %#x", name, st);
			EXPECT(o->rc == KBG_OK && o->smp.forged &&
				       o->smp.ns == o->smp.win_ns,
			       "%s: rc %d forged %d sample %.0f window %.0f",
			       name, o->rc, o->smp.forged, o->smp.ns,
			       o->smp.win_ns);
			EXPECT(strstr(rep, "benchmark.0.status: suspect\n"),
			       "%s:\n%s", name, rep);
			break;
		case NAN_TIME:
		case NO_REPLY:
			EXPECT(exited(st, KBH_EXIT_FAILED), "%s: status %#x",
			       name, st);
			EXPECT(o->rc == KBG_FAIL &&
				       strstr(o->msg, "malformed reply"),
			       "%s: rc %d (%s)", name, o->rc, o->msg);
			EXPECT(strstr(rep, "test.0.status: fail\n") &&
				       strstr(rep, "check: fail\n"),
			       "%s:\n%s", name, rep);
			break;
		case STICKY:
			EXPECT(exited(st, KBH_EXIT_FAILED), "%s: status %#x",
			       name, st);
			EXPECT(o->rc == KBG_FAIL && o->sticky &&
				       strcmp(o->msg,
					      "CUDA error running custom_kernel: an illegal "
					      "memory access was encountered "
					      "(cudaErrorIllegalAddress)") == 0,
			       "%s: rc %d sticky %d (%s)", name, o->rc,
			       o->sticky, o->msg);
			break;
		case LEFT:
			EXPECT(o->rc == KBG_FAIL && !o->sticky &&
				       strncmp(o->msg,
					       "custom_kernel left a CUDA error: ",
					       33) == 0 &&
				       strstr(o->msg,
					      "(cudaErrorInvalidConfiguration)"),
			       "%s: rc %d sticky %d (%s)", name, o->rc,
			       o->sticky, o->msg);
			break;
		case INFRA_CODE:
			EXPECT(exited(st, KBH_EXIT_DEVICE), "%s: status %#x",
			       name, st);
			EXPECT(o->rc == KBG_INFRA &&
				       strstr(o->msg,
					      "cudaErrorECCUncorrectable"),
			       "%s: rc %d (%s)", name, o->rc, o->msg);
			break;
		case EXIT_110:
		case SEGV: {
			const char *how = sc == SEGV ? "killed by signal 11"
						     : "exited with status 110";
			EXPECT(exited(st, KBH_EXIT_CRASHED), "%s: status %#x",
			       name, st);
			EXPECT(o->rc == KBG_CRASH && o->crashed &&
				       strstr(o->msg, how),
			       "%s: rc %d (%s)", name, o->rc, o->msg);
			EXPECT(strstr(rep,
				      "test.0.status: fail\ntest.0.error: custom_kernel crashed: "
				      "the submission's process ") &&
				       strstr(rep, how) &&
				       strstr(rep,
					      "\ncrash: custom_kernel crashed") &&
				       strstr(rep, "check: fail\n") &&
				       !strstr(rep, "status: pass"),
			       "%s:\n%s", name, rep);
			break;
		}
		case REPORT_FD:
			EXPECT(exited(st, KBH_EXIT_FAILED), "%s: status %#x",
			       name, st);
			EXPECT(!strstr(rep, "status: pass") &&
				       !strstr(rep, "check: pass") &&
				       strstr(rep, "check: fail\n"),
			       "%s: the child wrote to the report:\n%s", name,
			       rep);
			break;
		case INIT_DIES:
			EXPECT(exited(st, KBH_EXIT_DEVICE), "%s: status %#x",
			       name, st);
			EXPECT(o->stage == 1 && o->rc == KBG_INFRA &&
				       strstr(o->msg,
					      "exited with status 3 before any submission code"),
			       "%s: stage %d rc %d (%s)", name, o->stage, o->rc,
			       o->msg);
			EXPECT(!strstr(rep, "user-code") &&
				       !strstr(rep, "check:"),
			       "%s:\n%s", name, rep);
			break;
		default:
			break;
		}
	}

	if (failures) {
		fprintf(stderr, "%d failure(s)\n", failures);
		return 1;
	}
	printf("ok: guard (pure checks, %d scenarios)\n", N_SCENARIOS);
	return 0;
}
