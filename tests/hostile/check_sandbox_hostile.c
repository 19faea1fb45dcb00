/* Hostile programs (tests/hostile/programs/) run through kb_sandbox_run()
 * with isolation; each test asserts containment, that nothing of the run is
 * left behind, and that an honest run in the same process still works.
 *
 * Isolation must be available: if the probe says it is not, every test
 * fails with the probe's reason (set KB_SANDBOX_TESTS_ALLOW_NO_ISOLATION=1
 * to skip them instead, e.g. on a laptop without user namespaces).
 */
#include "held_run.h"
#include "kb_sandbox.h"

#include <arpa/inet.h>
#include <check.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include "kb_budget.h"
#include "kb_check_main.h"

#ifndef HOSTILE_DIR
#error "HOSTILE_DIR must name the directory of the hostile programs"
#endif

static char workdir[64];
static char *env_std[] = {"PATH=/usr/bin:/bin", "HOME=/tmp", "LANG=C", NULL};
static struct kb_sandbox_caps caps;

static int isolation_missing(void)
{
	kb_sandbox_probe(&caps, NULL, 0);
	if (caps.isolate_ok)
		return 0;
	const char *allow = getenv("KB_SANDBOX_TESTS_ALLOW_NO_ISOLATION");
	if (allow && strcmp(allow, "1") == 0) {
		fprintf(stderr, "skipped: isolation unavailable: %s\n",
			caps.why);
		return 1;
	}
	ck_abort_msg("isolation unavailable on this host: %s", caps.why);
	return 1;
}

static void setup(void)
{
	snprintf(workdir, sizeof(workdir), "/tmp/kb-sbx-hostile-XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(workdir));
}

static void teardown(void)
{
	char cmd[128];

	snprintf(cmd, sizeof(cmd), "rm -rf %s", workdir);
	if (system(cmd) != 0)
		fprintf(stderr, "cleanup of %s failed\n", workdir);
}

static struct kb_sandbox_opts iso_opts(void)
{
	struct kb_sandbox_opts o;

	memset(&o, 0, sizeof(o));
	o.workdir = workdir;
	o.env = env_std;
	o.wall_timeout_s = 5;
	o.memory_limit_mb = 256;
	o.max_processes = 64;
	o.isolate = 1;
	return o;
}

static void copy_program(const char *name)
{
	char src[512], dst[512], buf[65536];
	const char *dir =
		getenv("KB_HOSTILE_DIR"); /* for running the suite elsewhere */
	snprintf(src, sizeof(src), "%s/%s", dir && *dir ? dir : HOSTILE_DIR,
		 name);
	snprintf(dst, sizeof(dst), "%s/%s", workdir, name);
	int in = open(src, O_RDONLY),
	    out = open(dst, O_WRONLY | O_CREAT | O_TRUNC, 0755);
	ck_assert_msg(in >= 0 && out >= 0, "copy %s: %s", src, strerror(errno));
	ssize_t n;
	while ((n = read(in, buf, sizeof(buf))) > 0)
		ck_assert_int_eq(write(out, buf, (size_t)n), n);
	close(in);
	close(out);
}

/* Runs tests/hostile/programs/<name> with args inside the sandbox. */
static void run_hostile(const char *name, const char *const *args,
			struct kb_sandbox_opts *o, struct kb_sandbox_result *r)
{
	char *argv[16], prog[64], err[256] = "";
	int n = 0;

	copy_program(name);
	snprintf(prog, sizeof(prog), "./%s", name);
	argv[n++] = prog;
	for (; args && *args && n < 15; args++)
		argv[n++] = (char *)*args;
	argv[n] = NULL;
	o->argv = argv;
	int rc = kb_sandbox_run(o, r, err, sizeof(err));
	ck_assert_msg(rc == 0 && !r->infra_error,
		      "%s: sandbox failed: %s (%s)\nstdout:\n%s", name, err,
		      r->infra_msg, r->out ? r->out : "");
	fprintf(stderr,
		"--- %s: exited=%d code=%d signaled=%d sig=%d timed_out=%d wall=%.2fs "
		"oom=%d active=0x%x\n%.2000s",
		name, r->exited, r->exit_code, r->signaled, r->signal,
		r->timed_out, r->wall_s, r->oom_killed, r->active, r->out);
}

static void assert_contained(const char *name,
			     const struct kb_sandbox_result *r)
{
	ck_assert_msg(!strstr(r->out, "ACHIEVED") && !strstr(r->out, "BROKEN"),
		      "%s got out of the sandbox or broke:\n%s", name, r->out);
}

static unsigned run_uid(const struct kb_sandbox_result *r)
{
	const char *s = strstr(r->out, "uid=");
	ck_assert_msg(s, "no uid line in output:\n%s", r->out);
	return (unsigned)strtoul(s + 4, NULL, 10);
}

/* No process of the host runs as the run's uid any more. */
static void assert_no_leftovers(unsigned uid)
{
	DIR *d = opendir("/proc");
	struct dirent *e;
	char path[300], line[256];

	ck_assert_ptr_nonnull(d);
	while ((e = readdir(d))) {
		if (e->d_name[0] < '0' || e->d_name[0] > '9')
			continue;
		snprintf(path, sizeof(path), "/proc/%s/status", e->d_name);
		FILE *f = fopen(path, "r");
		if (!f)
			continue;
		unsigned ruid = 0;
		char state = '?';
		while (fgets(line, sizeof(line), f)) {
			sscanf(line, "State: %c", &state);
			if (sscanf(line, "Uid: %u", &ruid) == 1)
				break;
		}
		fclose(f);
		ck_assert_msg(
			ruid != uid || state == 'Z' || state == 'X',
			"process %s (state %c) of the run's uid %u survived the run",
			e->d_name, state, uid);
	}
	closedir(d);
}

static void assert_honest_run(void)
{
	struct kb_sandbox_result r;
	struct kb_sandbox_opts o = iso_opts();
	char *argv[] = {"sh", "-c", "echo ok; echo 'check: pass' >&3", NULL};
	char err[256] = "";

	o.argv = argv;
	o.want_report = 1;
	ck_assert_int_eq(kb_sandbox_run(&o, &r, err, sizeof(err)), 0);
	ck_assert_msg(r.exited && r.exit_code == 0,
		      "honest run: exit %d signal %d %s", r.exit_code, r.signal,
		      r.err);
	ck_assert_str_eq(r.out, "ok\n");
	ck_assert_str_eq(r.report, "check: pass\n");
	kb_sandbox_result_clear(&r);
}

START_TEST(test_fork_bomb)
{
	struct kb_sandbox_result r;
	struct kb_sandbox_opts o = iso_opts();
	if (isolation_missing())
		return;
	o.wall_timeout_s = 3;
	run_hostile("fork_bomb", NULL, &o, &r);
	/* Ends at the deadline, or earlier by the OOM killer: failed forks
	 * free their kernel memory only after an RCU grace period, and the
	 * memory cgroup counts it. Either way the whole run is gone. */
	ck_assert_msg(r.timed_out || (r.signaled && r.signal == SIGKILL),
		      "fork bomb ended otherwise: exited=%d code=%d signal=%d",
		      r.exited, r.exit_code, r.signal);
	ck_assert_msg(strstr(r.out, "fork failed"),
		      "the process limit never hit:\n%s", r.out);
	assert_no_leftovers(run_uid(&r));
	kb_sandbox_result_clear(&r);
	assert_honest_run();
}
END_TEST

START_TEST(test_spin_wall_timeout)
{
	struct kb_sandbox_result r;
	struct kb_sandbox_opts o = iso_opts();
	if (isolation_missing())
		return;
	o.wall_timeout_s = 1;
	o.cpu_timeout_s = 30;
	run_hostile("spin", NULL, &o, &r);
	ck_assert_int_eq(r.timed_out, 1);
	ck_assert_int_eq(r.signaled, 0);
	/* Killed by the wall clock, long before its 30 s of CPU. */
	ck_assert_msg(r.wall_s >= 1.0 && r.wall_s < 30.0, "wall %.2f",
		      r.wall_s);
	kb_budget("sandbox: spin, 1 s wall timeout", r.wall_s, 2.5, "s");
	assert_no_leftovers(run_uid(&r));
	kb_sandbox_result_clear(&r);
	assert_honest_run();
}
END_TEST

START_TEST(test_spin_cpu_limit)
{
	struct kb_sandbox_result r;
	struct kb_sandbox_opts o = iso_opts();
	if (isolation_missing())
		return;
	o.wall_timeout_s = 10;
	o.cpu_timeout_s = 1;
	run_hostile("spin", NULL, &o, &r);
	ck_assert_int_eq(r.timed_out, 0);
	ck_assert_int_eq(r.signaled, 1);
	ck_assert_msg(r.signal == SIGXCPU || r.signal == SIGKILL, "signal %d",
		      r.signal);
	ck_assert_msg(r.cpu_s >= 0.5, "cpu %.2f",
		      r.cpu_s); /* rusage is tick-scaled */
	kb_sandbox_result_clear(&r);
	assert_honest_run();
}
END_TEST

START_TEST(test_sleeper_ignoring_sigterm)
{
	struct kb_sandbox_result r;
	struct kb_sandbox_opts o = iso_opts();
	if (isolation_missing())
		return;
	o.wall_timeout_s = 1;
	run_hostile("sleeper", NULL, &o, &r);
	ck_assert_int_eq(r.timed_out, 1);
	/* Ignoring SIGTERM does not keep it alive: it would sleep forever. */
	ck_assert_msg(r.wall_s < 60.0, "wall %.2f", r.wall_s);
	kb_budget("sandbox: SIGTERM-ignoring sleeper, 1 s timeout", r.wall_s,
		  2.5, "s");
	ck_assert_ptr_nonnull(strstr(r.out, "sleeping"));
	assert_no_leftovers(run_uid(&r));
	kb_sandbox_result_clear(&r);
	assert_honest_run();
}
END_TEST

START_TEST(test_memory_hog)
{
	struct kb_sandbox_result r;
	struct kb_sandbox_opts o = iso_opts();
	if (isolation_missing())
		return;
	if (!(caps.features & KB_SANDBOX_CG_MEMORY)) {
		fprintf(stderr, "skipped: no memory cgroup on this host (%s)\n",
			caps.cgroup);
		return;
	}
	o.memory_limit_mb = 96;
	o.wall_timeout_s = 20;
	run_hostile("memhog", NULL, &o, &r);
	ck_assert_msg(r.signaled && r.signal == SIGKILL && r.oom_killed,
		      "expected an OOM kill: signaled=%d signal=%d oom=%d",
		      r.signaled, r.signal, r.oom_killed);
	ck_assert_msg(!strstr(r.out, "128 MiB"), "got past the limit:\n%s",
		      r.out);
	ck_assert(r.active & KB_SANDBOX_CG_MEMORY);
	assert_no_leftovers(run_uid(&r));
	kb_sandbox_result_clear(&r);

	/* tmpfs (/dev/shm) is memory too. */
	run_hostile("memhog", (const char *[]){"tmpfs", NULL}, &o, &r);
	ck_assert_msg(!strstr(r.out, "128 MiB"),
		      "tmpfs got past the limit:\n%s", r.out);
	ck_assert_msg(strstr(r.out, "stopped") || r.oom_killed,
		      "not stopped:\n%s", r.out);
	kb_sandbox_result_clear(&r);
	assert_honest_run();
}
END_TEST

START_TEST(test_output_flood)
{
	struct kb_sandbox_result r;
	struct kb_sandbox_opts o = iso_opts();
	struct rusage before, after;
	if (isolation_missing())
		return;
	o.wall_timeout_s = 30;
	o.want_report = 1;
	o.output_limit = 64 * 1024;
	o.report_limit = 128 * 1024;
	getrusage(RUSAGE_SELF, &before);
	run_hostile("flood", (const char *[]){"128", NULL}, &o, &r);
	getrusage(RUSAGE_SELF, &after);
	ck_assert_int_eq(r.timed_out, 0);
	ck_assert_int_eq(r.exit_code, 0);
	ck_assert_uint_eq(r.out_len, 64 * 1024);
	ck_assert_uint_eq(r.err_len, 64 * 1024);
	ck_assert_uint_eq(r.report_len, 128 * 1024);
	ck_assert_uint_eq(r.out_len + r.out_dropped,
			  (128u << 20) + strlen("uid=") +
				  strcspn(r.out + 4, "\n") + 1);
	ck_assert_uint_eq(r.err_len + r.err_dropped, 128u << 20);
	ck_assert_uint_eq(r.report_len + r.report_dropped, 128u << 20);
	ck_assert_msg(after.ru_maxrss - before.ru_maxrss < 16 * 1024,
		      "worker RSS grew by %ld KiB",
		      after.ru_maxrss - before.ru_maxrss);
	kb_sandbox_result_clear(&r);
	assert_honest_run();
}
END_TEST

START_TEST(test_network)
{
	struct kb_sandbox_result r;
	struct kb_sandbox_opts o = iso_opts();
	if (isolation_missing())
		return;
	/* A service on the host's loopback that the run must not reach. */
	int l = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
	struct sockaddr_in a = {.sin_family = AF_INET,
				.sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	socklen_t al = sizeof(a);
	ck_assert_int_ge(l, 0);
	ck_assert_int_eq(bind(l, (struct sockaddr *)&a, sizeof(a)), 0);
	ck_assert_int_eq(listen(l, 8), 0);
	ck_assert_int_eq(getsockname(l, (struct sockaddr *)&a, &al), 0);
	char port[16];
	snprintf(port, sizeof(port), "%d", ntohs(a.sin_port));
	o.wall_timeout_s = 15;
	run_hostile("net", (const char *[]){port, NULL}, &o, &r);
	assert_contained("net", &r);
	ck_assert_int_eq(r.exit_code, 0);
	ck_assert_ptr_nonnull(strstr(r.out, "own loopback usable"));
	ck_assert_msg(accept(l, NULL, NULL) < 0 && errno == EAGAIN,
		      "the host's loopback service got a connection");
	close(l);
	kb_sandbox_result_clear(&r);
	assert_honest_run();
}
END_TEST

START_TEST(test_secrets)
{
	struct kb_sandbox_result r;
	struct kb_sandbox_opts o = iso_opts();
	char token[64], path[128];
	if (isolation_missing())
		return;
	snprintf(token, sizeof(token), "kb-token-%ld-%ld", (long)getpid(),
		 (long)time(NULL));
	snprintf(path, sizeof(path), "/tmp/kb-secret-%ld", (long)getpid());
	FILE *f = fopen(path, "w");
	ck_assert_ptr_nonnull(f);
	fprintf(f, "%s\n", token);
	fclose(f);
	chmod(path,
	      0644); /* readable by anyone on the host: only isolation protects it */
	setenv("KB_WORKER_SECRET", token, 1); /* the worker's environment */
	/* The sandbox's init is a copy of us: our command line must not show
	 * through its /proc/1/cmdline. */
	run_hostile("secrets",
		    (const char *[]){path, token, program_invocation_short_name,
				     NULL},
		    &o, &r);
	unlink(path);
	assert_contained("secrets", &r);
	kb_sandbox_result_clear(&r);
	assert_honest_run();
}
END_TEST

static int owned_by_root_no_setid(const char *p, const struct stat *st,
				  int flag, struct FTW *ftw)
{
	if (st->st_uid != getuid() ||
	    (!S_ISLNK(st->st_mode) && (st->st_mode & (S_ISUID | S_ISGID)))) {
		fprintf(stderr, "%s: uid %u mode %o\n", p, (unsigned)st->st_uid,
			(unsigned)st->st_mode);
		return 1;
	}
	return 0;
}

START_TEST(test_write_outside)
{
	struct kb_sandbox_result r;
	struct kb_sandbox_opts o = iso_opts();
	char token[64], path[256];
	struct stat st, etc_before;
	if (isolation_missing())
		return;
	snprintf(token, sizeof(token), "%ld", (long)getpid());
	ck_assert_int_eq(stat("/etc/hostname", &etc_before), 0);
	o.wall_timeout_s = 20;
	run_hostile("write_outside", (const char *[]){token, NULL}, &o, &r);
	assert_contained("write_outside", &r);
	const char *places[] = {"/tmp", "/", "/etc", "/usr"};
	for (size_t i = 0; i < 4; i++) {
		snprintf(path, sizeof(path), "%s/kb-escape-%s", places[i],
			 token);
		ck_assert_msg(access(path, F_OK) < 0, "%s exists on the host",
			      path);
	}
	/* The chown back did not follow the planted links. */
	ck_assert_int_eq(stat("/etc/hostname", &st), 0);
	ck_assert_int_eq(st.st_uid, etc_before.st_uid);
	ck_assert_int_eq(stat("/etc", &st), 0);
	ck_assert_int_eq(st.st_uid, 0);
	ck_assert_int_eq(stat("/", &st), 0);
	ck_assert_int_eq(st.st_uid, 0);
	/* The workdir is ours again, with no set-id bits left. */
	ck_assert_msg(nftw(workdir, owned_by_root_no_setid, 16, FTW_PHYS) == 0,
		      "workdir not handed back cleanly");
	kb_sandbox_result_clear(&r);
	assert_honest_run();
}
END_TEST

START_TEST(test_daemon)
{
	struct kb_sandbox_result r;
	struct kb_sandbox_opts o = iso_opts();
	char hb[128];
	struct stat s1, s2;
	if (isolation_missing())
		return;
	/* The daemon beats forever: had the run waited for it, it would
	 * have ended by this timeout. */
	o.wall_timeout_s = 60;
	run_hostile("daemon", NULL, &o, &r);
	ck_assert_int_eq(r.exit_code, 0);
	ck_assert_msg(!r.timed_out && r.wall_s < 60.0,
		      "the run waited for the daemon (%.2fs)", r.wall_s);
	kb_budget("sandbox: run whose daemon outlives it", r.wall_s, 2.0, "s");
	snprintf(hb, sizeof(hb), "%s/heartbeat", workdir);
	ck_assert_int_eq(stat(hb, &s1), 0); /* it did start */
	usleep(300000);
	ck_assert_int_eq(stat(hb, &s2), 0);
	ck_assert_msg(s1.st_size == s2.st_size,
		      "the daemon is still beating (%ld -> %ld)",
		      (long)s1.st_size, (long)s2.st_size);
	assert_no_leftovers(run_uid(&r));
	kb_sandbox_result_clear(&r);
	assert_honest_run();
}
END_TEST

START_TEST(test_snoop)
{
	struct kb_sandbox_result r;
	struct kb_sandbox_opts o = iso_opts();
	if (isolation_missing())
		return;
	run_hostile("snoop", NULL, &o, &r);
	assert_contained("snoop", &r);
	ck_assert_msg(r.exited && r.exit_code == 0 &&
			      strstr(r.out, "init survived"),
		      "snoop did not finish normally (init killed?)");
	assert_no_leftovers(run_uid(&r));
	kb_sandbox_result_clear(&r);
	assert_honest_run(); /* and we, the "worker", are alive */
}
END_TEST

START_TEST(test_privileged_calls)
{
	struct kb_sandbox_result r;
	struct kb_sandbox_opts o = iso_opts();
	if (isolation_missing())
		return;
	run_hostile("privileged", NULL, &o, &r);
	assert_contained("privileged", &r);
	ck_assert_int_eq(r.exit_code, 0);
	ck_assert(r.active & KB_SANDBOX_SECCOMP);
	kb_sandbox_result_clear(&r);
	assert_honest_run();
}
END_TEST

/* ---- The contract with isolation on (not hostile, but the same setup). */

static int run_iso_sh(const char *script, struct kb_sandbox_opts *o,
		      struct kb_sandbox_result *r, char *err, size_t errn)
{
	char *argv[] = {"sh", "-c", (char *)script, NULL};
	o->argv = argv;
	int rc = kb_sandbox_run(o, r, err, errn);
	fprintf(stderr,
		"--- sh -c '%.60s': rc=%d exited=%d code=%d sig=%d err=%s\n%.2000s%.2000s",
		script, rc, r->exited, r->exit_code, r->signal, err,
		r->out ? r->out : "", r->err ? r->err : "");
	return rc;
}

START_TEST(test_iso_contract)
{
	struct kb_sandbox_result r;
	struct kb_sandbox_opts o = iso_opts();
	char err[256] = "", expect[256];
	if (isolation_missing())
		return;
	setenv("KB_WORKER_SECRET", "leak", 1);
	o.want_report = 1;
	ck_assert_int_eq(
		run_iso_sh(
			"env; pwd; id -u; cat; echo 'k: v' >&3; hostname; "
			"ls /proc | grep -c '^[0-9]'; "
			"for n in $(seq 0 64); do [ -e /proc/$$/fd/$n ] && echo fd$n; done; "
			"exit 7",
			&o, &r, err, sizeof(err)),
		0);
	ck_assert_int_eq(r.exited, 1);
	ck_assert_int_eq(r.exit_code, 7);
	ck_assert_ptr_null(strstr(r.out, "KB_WORKER_SECRET"));
	ck_assert_ptr_nonnull(strstr(r.out, "LANG=C\n"));
	snprintf(expect, sizeof(expect), "\n%s\n", workdir);
	ck_assert_msg(strstr(r.out, expect), "cwd is not the workdir");
	ck_assert_ptr_nonnull(strstr(r.out, "\nkb-sandbox\n"));
	ck_assert_ptr_nonnull(strstr(r.out, "fd0\nfd1\nfd2\nfd3\n"));
	ck_assert_ptr_null(strstr(r.out, "fd4"));
	ck_assert_str_eq(r.report, "k: v\n");
	if (geteuid() == 0)
		ck_assert_ptr_null(
			strstr(r.out, "\n0\n")); /* not root inside */
	kb_sandbox_result_clear(&r);

	ck_assert_int_eq(run_iso_sh("kill -SEGV $$", &o, &r, err, sizeof(err)),
			 0);
	ck_assert_int_eq(r.signaled, 1);
	ck_assert_int_eq(r.signal, SIGSEGV);
	kb_sandbox_result_clear(&r);
}
END_TEST

/* A held run is isolated as any run: its own uid, fds 0-3 and the go
 * socket on 4 and nothing more; while it waits, other runs start and end
 * beside it (their set-up shares the sandbox's state under a lock). */
START_TEST(test_iso_held)
{
	struct kb_sandbox_opts o = iso_opts();
	struct kb_sandbox_result r;
	struct held_run h;
	char err[256] = "";

	if (isolation_missing())
		return;
	o.wall_timeout_s = 30;
	held_run_start(
		&h, o,
		"read line <&4; echo \"got $line\"; id -u; "
		"for n in $(seq 0 64); do [ -e /proc/$$/fd/$n ] && echo fd$n; done; "
		"echo 'k: v' >&3",
		60);
	char beside[] = "/tmp/kb-sbx-beside-XXXXXX";
	ck_assert_ptr_nonnull(mkdtemp(beside));
	for (int i = 0; i < 3; i++) {
		o.workdir = beside; /* a job's runs never share a scratch */
		o.want_report = 0;
		o.wall_timeout_s = 20;
		ck_assert_int_eq(
			run_iso_sh("echo beside", &o, &r, err, sizeof(err)), 0);
		ck_assert_str_eq(r.out, "beside\n");
		kb_sandbox_result_clear(&r);
	}
	rmdir(beside);
	held_run_release(&h, 20000, "job\n");
	held_run_join(&h);
	ck_assert_int_eq(h.rc, 0);
	ck_assert_int_eq(h.r.released, 1);
	ck_assert_int_eq(h.r.exit_code, 0);
	ck_assert_msg(strncmp(h.r.out, "got job\n", 8) == 0, "%s", h.r.out);
	ck_assert_msg(strstr(h.r.out, "fd0\nfd1\nfd2\nfd3\nfd4\n") != NULL,
		      "%s", h.r.out);
	ck_assert_msg(strstr(h.r.out, "fd5") == NULL, "%s", h.r.out);
	if (geteuid() == 0)
		ck_assert_ptr_null(
			strstr(h.r.out, "\n0\n")); /* not root inside */
	ck_assert_str_eq(h.r.report, "k: v\n");
	kb_sandbox_result_clear(&h.r);
}
END_TEST

/* The directories the sandbox makes only to hold a bind mount (here the
 * parents of a nested workdir) can be passed through but not listed by the
 * run's uid: listing them showed other jobs' or the worker's directory
 * names (fs_escape listed /root on the GPU host). */
START_TEST(test_iso_mount_parents_unlistable)
{
	struct kb_sandbox_result r;
	struct kb_sandbox_opts o = iso_opts();
	char err[256] = "", deep[128], script[512];
	if (isolation_missing())
		return;
	snprintf(deep, sizeof(deep), "%s/job-a/run-b", workdir);
	char mid[128];
	snprintf(mid, sizeof(mid), "%s/job-a", workdir);
	ck_assert_int_eq(mkdir(mid, 0755), 0);
	ck_assert_int_eq(mkdir(deep, 0755), 0);
	ck_assert_int_eq(chmod(deep, 0777), 0);
	o.workdir = deep;
	snprintf(script, sizeof(script),
		 "pwd; ls -a %s >/dev/null 2>&1 && echo LISTED_TOP; "
		 "ls -a %s >/dev/null 2>&1 && echo LISTED_MID; "
		 "ls -ld %s %s; touch x && echo WROTE",
		 workdir, mid, workdir, mid);
	ck_assert_int_eq(run_iso_sh(script, &o, &r, err, sizeof(err)), 0);
	ck_assert_int_eq(r.exited, 1);
	ck_assert_msg(strstr(r.out, deep), "cwd is not the nested workdir");
	ck_assert_msg(strstr(r.out, "WROTE"), "the workdir is not writable");
	if (geteuid() == 0) { /* per-run uid: not the directories' owner */
		ck_assert_msg(!strstr(r.out, "LISTED_TOP"), "listed %s",
			      workdir);
		ck_assert_msg(!strstr(r.out, "LISTED_MID"), "listed %s", mid);
	}
	kb_sandbox_result_clear(&r);
}
END_TEST

START_TEST(test_iso_setup_failure_is_infra)
{
	struct kb_sandbox_result r;
	struct kb_sandbox_opts o = iso_opts();
	char *argv[] = {"no-such-program-kb", NULL};
	char err[256] = "";
	if (isolation_missing())
		return;
	o.argv = argv;
	ck_assert_int_lt(kb_sandbox_run(&o, &r, err, sizeof(err)), 0);
	ck_assert_int_eq(r.infra_error, 1);
	ck_assert_msg(strstr(err, "no-such-program-kb"), "errstr: %s", err);
	kb_sandbox_result_clear(&r);
	assert_honest_run();
}
END_TEST

static int owned_by_us(const char *p, const struct stat *st, int flag,
		       struct FTW *ftw)
{
	return st->st_uid != getuid();
}

/* The build step: a compiler inside the sandbox, then the program. */
START_TEST(test_iso_compile_and_run)
{
	struct kb_sandbox_result r;
	struct kb_sandbox_opts o = iso_opts();
	char err[256] = "", path[256];
	if (isolation_missing())
		return;
	if (access("/usr/bin/cc", X_OK) < 0) {
		fprintf(stderr, "skipped: no /usr/bin/cc\n");
		return;
	}
	snprintf(path, sizeof(path), "%s/sum.c", workdir);
	FILE *f = fopen(path, "w");
	ck_assert_ptr_nonnull(f);
	fputs("#include <stdio.h>\nint main(void){double s=0;\n#pragma omp parallel for "
	      "reduction(+:s)\nfor(int i=1;i<=1000;i++)s+=i;printf(\"sum=%.0f\\n\",s);return 0;}\n",
	      f);
	fclose(f);
	o.wall_timeout_s = 60;
	o.memory_limit_mb = 1024;
	ck_assert_int_eq(
		run_iso_sh(
			"cc -O3 -march=native -fopenmp -o sum.out sum.c && ./sum.out",
			&o, &r, err, sizeof(err)),
		0);
	ck_assert_msg(r.exited && r.exit_code == 0, "build/run failed:\n%s",
		      r.err);
	ck_assert_str_eq(r.out, "sum=500500\n");
	kb_sandbox_result_clear(&r);
	/* What the run made is ours again. */
	ck_assert_int_eq(nftw(workdir, owned_by_us, 16, FTW_PHYS), 0);
}
END_TEST

START_TEST(test_iso_python)
{
	struct kb_sandbox_result r;
	struct kb_sandbox_opts o = iso_opts();
	char err[256] = "";
	if (isolation_missing())
		return;
	if (access("/usr/bin/python3", X_OK) < 0) {
		fprintf(stderr, "skipped: no /usr/bin/python3\n");
		return;
	}
	o.wall_timeout_s = 30;
	o.memory_limit_mb = 1024;
	ck_assert_int_eq(
		run_iso_sh(
			"python3 -c 'import os, getpass, multiprocessing as m; "
			"print(os.getcwd() == os.environ.get(\"PWD\", os.getcwd()), "
			"getpass.getuser(), m.Pool(2).map(abs, [-1, -2]))'",
			&o, &r, err, sizeof(err)),
		0);
	ck_assert_msg(r.exited && r.exit_code == 0, "python failed:\n%s",
		      r.err);
	ck_assert_str_eq(r.out, "True kb [1, 2]\n");
	kb_sandbox_result_clear(&r);
}
END_TEST

START_TEST(test_iso_gpu_flag)
{
	struct kb_sandbox_result r;
	struct kb_sandbox_opts o = iso_opts();
	char err[256] = "";
	if (isolation_missing())
		return;
	o.gpu = 1;
	ck_assert_int_eq(run_iso_sh("ls /dev; test -d /sys/bus && echo sys-ok",
				    &o, &r, err, sizeof(err)),
			 0);
	ck_assert_int_eq(r.exit_code, 0);
	ck_assert_ptr_nonnull(strstr(r.out, "sys-ok"));
	int host_has = access("/dev/nvidiactl", F_OK) == 0;
	ck_assert_int_eq(strstr(r.out, "nvidiactl") != NULL, host_has);
	kb_sandbox_result_clear(&r);
	o.gpu = 0;
	ck_assert_int_eq(run_iso_sh("ls /dev", &o, &r, err, sizeof(err)), 0);
	ck_assert_ptr_null(strstr(r.out, "nvidia"));
	kb_sandbox_result_clear(&r);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("sandbox_hostile");
	TCase *tc = tcase_create("hostile");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 90);
	tcase_add_test(tc, test_fork_bomb);
	tcase_add_test(tc, test_spin_wall_timeout);
	tcase_add_test(tc, test_spin_cpu_limit);
	tcase_add_test(tc, test_sleeper_ignoring_sigterm);
	tcase_add_test(tc, test_memory_hog);
	tcase_add_test(tc, test_output_flood);
	tcase_add_test(tc, test_network);
	tcase_add_test(tc, test_secrets);
	tcase_add_test(tc, test_write_outside);
	tcase_add_test(tc, test_daemon);
	tcase_add_test(tc, test_snoop);
	tcase_add_test(tc, test_iso_mount_parents_unlistable);
	tcase_add_test(tc, test_privileged_calls);
	suite_add_tcase(s, tc);
	TCase *tc2 = tcase_create("isolated_contract");
	tcase_add_checked_fixture(tc2, setup, teardown);
	tcase_set_timeout(tc2, 90);
	tcase_add_test(tc2, test_iso_contract);
	tcase_add_test(tc2, test_iso_held);
	tcase_add_test(tc2, test_iso_setup_failure_is_infra);
	tcase_add_test(tc2, test_iso_compile_and_run);
	tcase_add_test(tc2, test_iso_python);
	tcase_add_test(tc2, test_iso_gpu_flag);
	suite_add_tcase(s, tc2);
	return s;
}

int main(void)
{
	return kb_check_run(suite());
}
