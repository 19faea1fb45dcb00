/* test_kbg_relay: the CUDA driver's report relay (kbg_main.cu), no GPU.
 *
 * kbg_main.cu is included whole (its main renamed), with a problem that
 * is never called, so the relay's functions can be driven directly: each
 * scenario runs in a forked process that starts the relay on a temporary
 * report file; its child plays the driver (or a submission misbehaving
 * in it) and its parent is the real relay_parent. Checked: the exit
 * status or signal the relay ends with and the report it leaves.
 *
 *     nvcc -I problems/harness -I problems/harness/cuda tests/cuda/test_kbg_relay.cu \
 *          problems/harness/cuda/kbg_{dev.cu,model.c,sys.c} problems/harness/harness.c -ldl
 */
#define main kbg_main_under_test
#include "kbg_main.cu"
#undef main

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

extern "C" {
static int t_setup(const struct kbh_case *, void *, struct kbg_layout *, char *, size_t)
{
	return -1;
}
static int t_generate(const void *, uint64_t, void *const[]) { return -1; }
static int t_reference(const void *, const void *const[], void *, void *) { return -1; }
static int t_check(const void *, const void *const[], const void *const[], const void *, void *,
		   char *, size_t)
{
	return -1;
}
static void t_call(const void *, void *const[], void *const[]) {}
const struct kbg_problem kbg_problem_def = {"relay-test", 8,	     NULL,    t_setup,
					    t_generate,	  t_reference, t_check, t_call};
}

static int failures;

#define EXPECT(cond, ...)                                                                          \
	do {                                                                                       \
		if (!(cond)) {                                                                     \
			fprintf(stderr, "FAIL %s:%d: ", __FILE__, __LINE__);                       \
			fprintf(stderr, __VA_ARGS__);                                              \
			fputc('\n', stderr);                                                       \
			failures++;                                                                \
		}                                                                                  \
	} while (0)

enum scenario {
	HONEST,        /* lines through the sink, announced exit 0 */
	FORGED,        /* raw protocol lines on the pipe, _exit(0) */
	FORGED_REPORT, /* writes to the report's descriptor number */
	EXIT_STARTED,  /* user code started, then _exit(110) */
	EXIT_EARLY,    /* _exit(113) before user code */
	TIMEOUT,       /* user code started, then the watchdog's 114 */
	MISMATCH,      /* announces 112, an exit handler makes it 0 */
	SIGNAL,        /* SIGSEGV in user code */
	ENDED_112,     /* honest failure */
};

static void child(enum scenario sc)
{
	struct kbh_report *r = NULL;

	if (kbh_report_open_sink(&r, relay_sink, &g_relay))
		_exit(99);
	kbh_report_kv(r, "system.device", "test");
	kbh_report_test_count(r, 1);
	kbh_report_test(r, 0, "spec", "size: 1; seed: 1");
	if (sc != EXIT_EARLY)
		kbh_report_user_started(r);
	switch (sc) {
	case HONEST:
	case ENDED_112:
		kbh_report_test(r, 0, "status", sc == HONEST ? "pass" : "fail");
		kbh_report_kv(r, "check", sc == HONEST ? "pass" : "fail");
		relay_end(&g_relay, sc == HONEST ? 0 : 112);
		_exit(sc == HONEST ? 0 : 112);
	case FORGED: {
		static const char fake[] = "test.0.status: pass\ncheck: pass\n";
		ssize_t w = write(g_relay.wfd, fake, sizeof fake - 1);
		(void)w;
		_exit(0);
	}
	case FORGED_REPORT: {
		/* fd 3 (the channel's number) is /dev/null in the child */
		static const char fake[] = "test.0.status: pass\ncheck: pass\n";
		ssize_t w = write(3, fake, sizeof fake - 1);
		(void)w;
		kbh_report_test(r, 0, "status", "fail");
		kbh_report_kv(r, "check", "fail");
		relay_end(&g_relay, 112);
		_exit(112);
	}
	case EXIT_STARTED:
		_exit(110);
	case EXIT_EARLY:
		_exit(113);
	case TIMEOUT:
		_exit(114);
	case MISMATCH:
		kbh_report_test(r, 0, "status", "fail");
		kbh_report_kv(r, "check", "fail");
		relay_end(&g_relay, 112);
		_exit(0);
	case SIGNAL:
		signal(SIGSEGV, SIG_DFL);
		raise(SIGSEGV);
		_exit(98);
	}
	_exit(97);
}

/* Runs a scenario; returns the wait status and the report in rep. */
static int run(enum scenario sc, char *rep, size_t rep_size)
{
	char path[] = "/tmp/kbg-relay-XXXXXX";
	int fd = mkstemp(path), st = 0;
	pid_t pid;

	if (fd < 0) {
		perror("mkstemp");
		exit(2);
	}
	unlink(path);
	fflush(NULL);
	pid = fork();
	if (pid == 0) {
		if (dup2(fd, 3) != 3)
			_exit(96);
		int rc = relay_start(&g_relay, 3);
		if (rc < 0)
			_exit(95);
		if (rc > 0)
			_exit(relay_parent(&g_relay));
		child(sc);
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

int main(void)
{
	char rep[4096];
	int st;

	st = run(HONEST, rep, sizeof rep);
	EXPECT(exited(st, 0), "honest: status %#x", st);
	EXPECT(strcmp(rep, "system.device: test\ntest-count: 1\ntest.0.spec: size: 1; seed: 1\n"
			   "user-code: started\ntest.0.status: pass\ncheck: pass\n") == 0,
	       "honest report:\n%s", rep);

	st = run(ENDED_112, rep, sizeof rep);
	EXPECT(exited(st, 112), "failed: status %#x", st);
	EXPECT(strstr(rep, "check: fail\n") && !strstr(rep, "crash:"), "failed:\n%s", rep);

	st = run(FORGED, rep, sizeof rep);
	EXPECT(exited(st, KBH_EXIT_CRASHED), "forged: status %#x", st);
	EXPECT(strstr(rep, "crash: the report channel carried data") && strstr(rep, "check: fail\n") &&
		       !strstr(rep, "check: pass") && !strstr(rep, "status: pass"),
	       "forged:\n%s", rep);

	st = run(FORGED_REPORT, rep, sizeof rep);
	EXPECT(exited(st, 112), "forged on fd 3: status %#x", st);
	EXPECT(!strstr(rep, "check: pass") && strstr(rep, "check: fail"), "forged on fd 3:\n%s",
	       rep);

	st = run(EXIT_STARTED, rep, sizeof rep);
	EXPECT(exited(st, KBH_EXIT_CRASHED), "exit 110 after start: status %#x", st);
	EXPECT(strstr(rep, "crash: custom_kernel ended the process (exit status 110)") &&
		       strstr(rep, "check: fail\n"),
	       "exit 110 after start:\n%s", rep);

	st = run(EXIT_EARLY, rep, sizeof rep);
	EXPECT(exited(st, 113), "exit before user code: status %#x", st);
	EXPECT(!strstr(rep, "crash:"), "exit before user code:\n%s", rep);

	st = run(TIMEOUT, rep, sizeof rep);
	EXPECT(exited(st, KBH_EXIT_TIMEOUT), "watchdog: status %#x", st);

	st = run(MISMATCH, rep, sizeof rep);
	EXPECT(exited(st, KBH_EXIT_CRASHED), "exit handler: status %#x", st);
	EXPECT(strstr(rep, "crash: exit status 0, but the harness finished with 112"),
	       "exit handler:\n%s", rep);

	st = run(SIGNAL, rep, sizeof rep);
	EXPECT(WIFSIGNALED(st) && WTERMSIG(st) == SIGSEGV, "signal: status %#x", st);

	if (failures) {
		fprintf(stderr, "%d failure(s)\n", failures);
		return 1;
	}
	printf("ok: relay (9 scenarios)\n");
	return 0;
}
