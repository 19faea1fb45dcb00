/* The basic kb_sandbox_run() contract, without isolation: capture, limits,
 * report channel, environment, descriptors, timeouts, process-group kill. */
#include "kb_sandbox.h"

#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "held_run.h"
#include "kb_budget.h"
#include "kb_check_main.h"

static char workdir[64];
static char *env_std[] = {"PATH=/usr/bin:/bin", "LANG=C", NULL};

static void setup(void)
{
	snprintf(workdir, sizeof(workdir), "/tmp/kb-sbx-basic-XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(workdir));
}

static void teardown(void)
{
	char cmd[128];

	snprintf(cmd, sizeof(cmd), "rm -rf %s", workdir);
	if (system(cmd) != 0)
		fprintf(stderr, "cleanup of %s failed\n", workdir);
}

static struct kb_sandbox_opts opts(char *const *argv)
{
	struct kb_sandbox_opts o;

	memset(&o, 0, sizeof(o));
	o.workdir = workdir;
	o.argv = argv;
	o.env = env_std;
	o.wall_timeout_s = 10;
	return o;
}

static int run_sh(const char *script, struct kb_sandbox_opts *o,
		  struct kb_sandbox_result *r)
{
	char *argv[] = {"sh", "-c", (char *)script, NULL};
	char err[256] = "";
	struct kb_sandbox_opts oo = o ? *o : opts(argv);

	oo.argv = argv;
	int rc = kb_sandbox_run(&oo, r, err, sizeof(err));
	if (rc < 0)
		fprintf(stderr, "run failed: %s\n", err);
	return rc;
}

/* Alive = exists and is not a zombie. */
static int alive_now(pid_t pid)
{
	char path[64], buf[256];
	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	FILE *f = fopen(path, "r");
	if (!f)
		return 0;
	size_t n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = '\0';
	char *c = strrchr(buf, ')');
	return c && c[1] == ' ' && c[2] != 'Z' && c[2] != 'X';
}

/* Without isolation or cgroups the sandbox sends SIGKILL but cannot wait for
 * processes that are not its children, so allow the kernel a moment. */
static int alive(pid_t pid)
{
	for (int i = 0; i < 100 && alive_now(pid); i++)
		usleep(10000);
	return alive_now(pid);
}

START_TEST(test_stdout_exit_code)
{
	struct kb_sandbox_result r;
	ck_assert_int_eq(run_sh("echo hello; echo oops >&2; exit 3", NULL, &r),
			 0);
	ck_assert_int_eq(r.infra_error, 0);
	ck_assert_int_eq(r.exited, 1);
	ck_assert_int_eq(r.exit_code, 3);
	ck_assert_str_eq(r.out, "hello\n");
	ck_assert_str_eq(r.err, "oops\n");
	ck_assert_int_eq(r.timed_out, 0);
	ck_assert_ptr_nonnull(r.report);
	ck_assert_uint_eq(r.report_len, 0);
	kb_sandbox_result_clear(&r);
}
END_TEST

START_TEST(test_report_channel)
{
	struct kb_sandbox_result r;
	char *argv[] = {NULL};
	struct kb_sandbox_opts o = opts(argv);
	o.want_report = 1;
	ck_assert_int_eq(run_sh("echo 'check: pass' >&3; echo done", &o, &r),
			 0);
	ck_assert_int_eq(r.exit_code, 0);
	ck_assert_str_eq(r.report, "check: pass\n");
	ck_assert_str_eq(r.out, "done\n");
	kb_sandbox_result_clear(&r);

	/* Without want_report, fd 3 is closed. */
	o.want_report = 0;
	ck_assert_int_eq(run_sh("echo x >&3", &o, &r), 0);
	ck_assert_int_ne(r.exit_code, 0);
	ck_assert_uint_eq(r.report_len, 0);
	kb_sandbox_result_clear(&r);
}
END_TEST

START_TEST(test_env_exact_cwd_stdin)
{
	struct kb_sandbox_result r;
	setenv("KB_SECRET_TEST", "leak", 1);
	ck_assert_int_eq(run_sh("env | sort; pwd; cat; echo end", NULL, &r), 0);
	ck_assert_int_eq(r.exit_code, 0);
	char expect[256];
	/* sh adds PWD (and dash nothing else) */
	ck_assert_ptr_null(strstr(r.out, "KB_SECRET_TEST"));
	ck_assert_ptr_nonnull(strstr(r.out, "LANG=C\n"));
	ck_assert_ptr_nonnull(strstr(r.out, "PATH=/usr/bin:/bin\n"));
	snprintf(expect, sizeof(expect), "\n%s\nend\n", workdir);
	ck_assert_msg(strstr(r.out, expect), "output: %s", r.out);
	kb_sandbox_result_clear(&r);
}
END_TEST

START_TEST(test_fds_closed)
{
	struct kb_sandbox_result r;
	int leak = open("/dev/null", O_RDONLY); /* no O_CLOEXEC on purpose */
	ck_assert_int_ge(leak, 0);
	char *argv[] = {NULL};
	struct kb_sandbox_opts o = opts(argv);
	o.want_report = 1;
	/* A glob would list its own directory fd, so test numbers one by one. */
	ck_assert_int_eq(
		run_sh("for n in $(seq 0 64); do [ -e /proc/$$/fd/$n ] && echo $n; done; true",
		       &o, &r),
		0);
	ck_assert_str_eq(r.out, "0\n1\n2\n3\n");
	kb_sandbox_result_clear(&r);
	close(leak);
}
END_TEST

START_TEST(test_timeout_kills_group)
{
	struct kb_sandbox_result r;
	char *argv[] = {NULL};
	struct kb_sandbox_opts o = opts(argv);
	/* 5 s: the shell has started its background child and said its pid
	 * by then, also on a loaded machine. */
	o.wall_timeout_s = 5;
	/* A background child ignoring SIGTERM and the leader sleeping. */
	ck_assert_int_eq(run_sh("trap '' TERM; sleep 60 & echo $!; sleep 60",
				&o, &r),
			 0);
	ck_assert_int_eq(r.timed_out, 1);
	ck_assert_int_eq(r.signaled, 0);
	ck_assert_int_eq(r.exited, 0);
	/* Killed at the timeout, not after the 60 s sleeps; how soon after
	 * it is a budget. */
	ck_assert_msg(r.wall_s >= 5.0 && r.wall_s < 60.0, "wall %.2f",
		      r.wall_s);
	kb_budget("sandbox: kill after a 5 s wall timeout", r.wall_s - 5.0, 2.5,
		  "s");
	pid_t bg = atoi(r.out);
	ck_assert_int_gt(bg, 0);
	ck_assert_msg(!alive(bg), "background pid %d survived the timeout",
		      (int)bg);
	kb_sandbox_result_clear(&r);
}
END_TEST

START_TEST(test_leader_exit_kills_group)
{
	struct kb_sandbox_result r;
	ck_assert_int_eq(run_sh("sleep 30 >/dev/null 2>&1 & echo $!", NULL, &r),
			 0);
	ck_assert_int_eq(r.exited, 1);
	/* Did not wait for the 30 s sleep in the background. */
	ck_assert_msg(r.wall_s < 30.0, "wall %.2f", r.wall_s);
	kb_budget("sandbox: leader exits, background killed", r.wall_s, 2.0,
		  "s");
	pid_t bg = atoi(r.out);
	ck_assert_msg(!alive(bg), "background pid %d outlived the run",
		      (int)bg);
	kb_sandbox_result_clear(&r);
}
END_TEST

START_TEST(test_output_cap)
{
	struct kb_sandbox_result r;
	char *argv[] = {NULL};
	struct kb_sandbox_opts o = opts(argv);
	o.output_limit = 1000;
	ck_assert_int_eq(
		run_sh("head -c 3000000 /dev/zero | tr '\\0' a; echo err >&2",
		       &o, &r),
		0);
	ck_assert_int_eq(r.exit_code, 0);
	ck_assert_uint_eq(r.out_len, 1000);
	ck_assert_uint_eq(r.out_dropped, 3000000 - 1000);
	ck_assert_uint_eq(strlen(r.out), 1000);
	ck_assert_str_eq(r.err, "err\n");
	kb_sandbox_result_clear(&r);
}
END_TEST

START_TEST(test_not_found_is_infra)
{
	struct kb_sandbox_result r;
	char *argv[] = {"no-such-program-kb", NULL};
	struct kb_sandbox_opts o = opts(argv);
	char err[256] = "";
	ck_assert_int_lt(kb_sandbox_run(&o, &r, err, sizeof(err)), 0);
	ck_assert_int_eq(r.infra_error, 1);
	ck_assert_msg(strstr(err, "no-such-program-kb"), "errstr: %s", err);
	kb_sandbox_result_clear(&r);

	o.workdir = "/nonexistent/kb";
	argv[0] = "true";
	ck_assert_int_lt(kb_sandbox_run(&o, &r, err, sizeof(err)), 0);
	ck_assert_int_eq(r.infra_error, 1);
	kb_sandbox_result_clear(&r);
}
END_TEST

START_TEST(test_absolute_and_relative_argv0)
{
	struct kb_sandbox_result r;
	char path[128];
	snprintf(path, sizeof(path), "%s/prog.sh", workdir);
	FILE *f = fopen(path, "w");
	ck_assert_ptr_nonnull(f);
	fputs("#!/bin/sh\necho \"prog $1\"\n", f);
	fclose(f);
	chmod(path, 0755);
	char *argv[] = {"./prog.sh", "x", NULL};
	struct kb_sandbox_opts o = opts(argv);
	ck_assert_int_eq(kb_sandbox_run(&o, &r, NULL, 0), 0);
	ck_assert_str_eq(r.out, "prog x\n");
	kb_sandbox_result_clear(&r);
	char *argv2[] = {"/bin/echo", "abs", NULL};
	o.argv = argv2;
	ck_assert_int_eq(kb_sandbox_run(&o, &r, NULL, 0), 0);
	ck_assert_str_eq(r.out, "abs\n");
	kb_sandbox_result_clear(&r);
}
END_TEST

START_TEST(test_cpu_limit_and_signals)
{
	struct kb_sandbox_result r;
	char *argv[] = {NULL};
	struct kb_sandbox_opts o = opts(argv);
	o.cpu_timeout_s = 1;
	o.wall_timeout_s =
		50; /* 1 s of CPU can take long on a loaded machine */
	ck_assert_int_eq(run_sh("while :; do :; done", &o, &r), 0);
	ck_assert_int_eq(r.timed_out, 0);
	ck_assert_int_eq(r.signaled, 1);
	ck_assert_msg(r.signal == SIGXCPU || r.signal == SIGKILL, "signal %d",
		      r.signal);
	ck_assert_msg(r.cpu_s >= 0.5, "cpu %.2f",
		      r.cpu_s); /* rusage is tick-scaled */
	kb_sandbox_result_clear(&r);

	/* The worker ignores SIGPIPE; the child must get the default back. */
	signal(SIGPIPE, SIG_IGN);
	ck_assert_int_eq(run_sh("yes | head -n 1; kill -SEGV $$", NULL, &r), 0);
	ck_assert_str_eq(r.out, "y\n");
	ck_assert_int_eq(r.signaled, 1);
	ck_assert_int_eq(r.signal, SIGSEGV);
	kb_sandbox_result_clear(&r);
}
END_TEST

START_TEST(test_many_runs_no_fd_leak)
{
	struct kb_sandbox_result r;
	int before = open("/dev/null", O_RDONLY);
	close(before);
	for (int i = 0; i < 50; i++) {
		char *argv[] = {"true", NULL};
		struct kb_sandbox_opts o = opts(argv);
		o.want_report = i & 1;
		ck_assert_int_eq(kb_sandbox_run(&o, &r, NULL, 0), 0);
		ck_assert_int_eq(r.exit_code, 0);
		kb_sandbox_result_clear(&r);
	}
	int after = open("/dev/null", O_RDONLY);
	close(after);
	ck_assert_int_eq(before, after);
}
END_TEST

/* A held run (kb_sandbox_opts.held): it starts, waits on fd 4 while held
 * (the hold does not count as its time), and gets the line the worker
 * sends; its wall-clock limit counts from the release. */
START_TEST(test_held_release)
{
	char *argv[] = {NULL};
	struct held_run h;

	held_run_start(
		&h, opts(argv),
		"read line <&4; echo \"got $line\"; echo 'check: pass' >&3",
		20);
	sleep(3); /* held: 3 s that are not the run's */
	held_run_release(&h, 10000, "hello\n");
	held_run_join(&h);
	ck_assert_int_eq(h.rc, 0);
	ck_assert_int_eq(h.r.released, 1);
	ck_assert_int_eq(h.r.exited, 1);
	ck_assert_int_eq(h.r.exit_code, 0);
	ck_assert_str_eq(h.r.out, "got hello\n");
	ck_assert_str_eq(h.r.report, "check: pass\n");
	ck_assert_msg(h.r.wall_s < 3.0, "wall %.3f s counts the hold",
		      h.r.wall_s);
	kb_sandbox_result_clear(&h.r);
}
END_TEST

START_TEST(test_held_limit_from_release)
{
	char *argv[] = {NULL};
	struct held_run h;

	held_run_start(&h, opts(argv), "read line <&4; exec sleep 30", 20);
	sleep(1);
	held_run_release(&h, 500, "go\n");
	held_run_join(&h);
	ck_assert_int_eq(h.rc, 0);
	ck_assert_int_eq(h.r.released, 1);
	ck_assert_int_eq(h.r.timed_out, 1);
	ck_assert_msg(h.r.wall_s >= 0.5 && h.r.wall_s < 15, "wall %.3f",
		      h.r.wall_s);
	kb_sandbox_result_clear(&h.r);
}
END_TEST

/* Never released: the hold limit ends it, and it says so. Closing the
 * worker's end is how a run nobody wants is ended: the program reads EOF. */
START_TEST(test_held_never_released)
{
	char *argv[] = {NULL};
	struct held_run h;

	held_run_start(&h, opts(argv), "read line <&4; exec sleep 30", 0.5);
	held_run_join(&h);
	ck_assert_int_eq(h.rc, 0);
	ck_assert_int_eq(h.r.released, 0);
	ck_assert_int_eq(h.r.timed_out, 1);
	kb_sandbox_result_clear(&h.r);

	held_run_start(&h, opts(argv), "read line <&4 || echo eof; exit 5", 20);
	shutdown(h.sv[0], SHUT_RDWR);
	held_run_join(&h);
	ck_assert_int_eq(h.r.released, 0);
	ck_assert_int_eq(h.r.exit_code, 5);
	ck_assert_str_eq(h.r.out, "eof\n");
	kb_sandbox_result_clear(&h.r);
}
END_TEST

START_TEST(test_held_bad_opts)
{
	char *argv[] = {"true", NULL};
	struct kb_sandbox_opts o = opts(argv);
	struct kb_sandbox_result r;

	o.held = 1; /* no report channel, no descriptors */
	o.go_fd = o.release_fd = -1;
	o.hold_timeout_s = 1;
	ck_assert_int_eq(kb_sandbox_run(&o, &r, NULL, 0), -EINVAL);
	ck_assert_int_eq(r.infra_error, 1);
	kb_sandbox_result_clear(&r);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("sandbox_basic");
	TCase *tc = tcase_create("basic");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_stdout_exit_code);
	tcase_add_test(tc, test_report_channel);
	tcase_add_test(tc, test_env_exact_cwd_stdin);
	tcase_add_test(tc, test_fds_closed);
	tcase_add_test(tc, test_timeout_kills_group);
	tcase_add_test(tc, test_leader_exit_kills_group);
	tcase_add_test(tc, test_output_cap);
	tcase_add_test(tc, test_not_found_is_infra);
	tcase_add_test(tc, test_absolute_and_relative_argv0);
	tcase_add_test(tc, test_cpu_limit_and_signals);
	tcase_add_test(tc, test_many_runs_no_fd_leak);
	tcase_add_test(tc, test_held_release);
	tcase_add_test(tc, test_held_limit_from_release);
	tcase_add_test(tc, test_held_never_released);
	tcase_add_test(tc, test_held_bad_opts);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return kb_check_run(suite());
}
