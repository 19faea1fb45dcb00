/* kb end to end: the real binary against a fake HTTP server on a loopback
 * port, with a throwaway HOME holding ~/.popcorn.yaml. Checks exit
 * statuses, stdout/stderr and what kb put on the wire: the streaming
 * submit (events split across network writes, CRLF and LF, comments,
 * multi-line data), the 404-then-poll fallback, a broken stream resumed by
 * polling, errors, the read commands, join and register.
 */
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <check.h>
#include <jansson.h>

#include "fake_http.h"
#include "kb_check_main.h"

#define CLI_ID "test-cli-123"
#define RUN_TIMEOUT_MS 30000

struct env {
	char home[64];
	char api[64];
	struct fake_server *srv;
};

struct run {
	int status; /* exit status, or -1 if killed */
	char *out, *err;
};

static char *slurp(const char *path)
{
	FILE *f = fopen(path, "rb");
	char *buf;
	long n;

	ck_assert_ptr_nonnull(f);
	fseek(f, 0, SEEK_END);
	n = ftell(f);
	fseek(f, 0, SEEK_SET);
	buf = calloc(1, (size_t)n + 1);
	ck_assert_ptr_nonnull(buf);
	ck_assert_uint_eq(fread(buf, 1, (size_t)n, f), (size_t)n);
	fclose(f);
	return buf;
}

static void put_file(const char *path, const char *content)
{
	FILE *f = fopen(path, "wb");
	ck_assert_ptr_nonnull(f);
	fputs(content, f);
	fclose(f);
}

static int rm_one(const char *p, const struct stat *st, int flag,
		  struct FTW *ftw)
{
	(void)st, (void)flag, (void)ftw;
	return remove(p);
}

/* Starts the fake server and makes a HOME with a config file. */
static void env_up(struct env *e, const struct fake_route *routes, size_t n,
		   const char *yaml)
{
	char path[128];

	snprintf(e->home, sizeof(e->home), "/tmp/kb-e2e.XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(e->home));
	if (yaml) {
		snprintf(path, sizeof(path), "%s/.popcorn.yaml", e->home);
		put_file(path, yaml);
	}
	e->srv = routes ? fake_start(routes, n) : NULL;
	snprintf(e->api, sizeof(e->api), "http://127.0.0.1:%d",
		 e->srv ? fake_port(e->srv) : 1);
}

static void env_down(struct env *e)
{
	fake_stop(e->srv);
	nftw(e->home, rm_one, 8, FTW_DEPTH | FTW_PHYS);
}

static void run_free(struct run *r)
{
	free(r->out);
	free(r->err);
}

/* Runs kb with args (NULL-terminated) and extra environment entries. The
 * environment is built from scratch: no proxies, no KB_CLI_ID unless a
 * test sets it. */
static void run_kb(struct env *e, struct run *r, const char *const *extra_env,
		   const char *const *args)
{
	char home[128], api[128], out[128], err[128];
	const char *envp[16], *argv[24];
	int n = 0, a = 0, st;
	pid_t pid;

	snprintf(home, sizeof(home), "HOME=%s", e->home);
	snprintf(api, sizeof(api), "POPCORN_API_URL=%s", e->api);
	snprintf(out, sizeof(out), "%s/stdout.txt", e->home);
	snprintf(err, sizeof(err), "%s/stderr.txt", e->home);
	envp[n++] = home;
	envp[n++] = api;
	envp[n++] = "PATH=/usr/bin:/bin";
	envp[n++] = "LC_ALL=C";
	for (int i = 0; extra_env && extra_env[i] && n < 15; i++)
		envp[n++] = extra_env[i];
	envp[n] = NULL;
	argv[a++] = KB_CLI_BIN;
	for (int i = 0; args[i] && a < 23; i++)
		argv[a++] = args[i];
	argv[a] = NULL;

	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		int in = open("/dev/null", O_RDONLY);
		int o = open(out, O_WRONLY | O_CREAT | O_TRUNC, 0600);
		int er = open(err, O_WRONLY | O_CREAT | O_TRUNC, 0600);
		if (in < 0 || o < 0 || er < 0)
			_exit(126);
		dup2(in, 0);
		dup2(o, 1);
		dup2(er, 2);
		execve(KB_CLI_BIN, (char *const *)argv, (char *const *)envp);
		_exit(127);
	}
	for (int waited = 0;; waited += 10) {
		pid_t w = waitpid(pid, &st, WNOHANG);
		if (w == pid)
			break;
		if (waited >= RUN_TIMEOUT_MS) {
			kill(pid, SIGKILL);
			waitpid(pid, &st, 0);
			break;
		}
		fake_pause_ms(10);
	}
	r->status = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
	r->out = slurp(out);
	r->err = slurp(err);
}

#define ASSERT_HAS(hay, needle)                                                \
	ck_assert_msg(strstr((hay), (needle)) != NULL,                         \
		      "expected \"%s\" in:\n%s", (needle), (hay))
#define ASSERT_EXIT(r, code)                                                   \
	ck_assert_msg((r).status == (code),                                    \
		      "exit %d, expected %d\nstdout:\n%s\nstderr:\n%s",        \
		      (r).status, (code), (r).out, (r).err)

static const char yaml_ok[] = "# shared with popcorn-cli\ncli_id: " CLI_ID
			      "\nother: keep-me\n";

static const char sub_c[] =
	"//!POPCORN leaderboard VectorSum_CPU\n"
	"//!POPCORN gpu CPU\n"
	"#include <stddef.h>\n"
	"float custom_kernel(const float *d, size_t n)\n"
	"{ float s = 0; for (size_t i = 0; i < n; i++) s += d[i]; return s; }\n";

static void write_sub(struct env *e, const char *name, const char *code,
		      char *path, size_t n)
{
	snprintf(path, n, "%s/%s", e->home, name);
	put_file(path, code);
}

/* ---- handlers ---- */

static void h_json(int fd, const struct fake_req *rq, int calls, void *arg)
{
	(void)rq, (void)calls;
	fake_reply(fd, 200, "application/json", arg);
}

static void h_status(int fd, const struct fake_req *rq, int calls, void *arg)
{
	(void)rq, (void)calls;
	fake_reply(fd, (int)(long)arg, "application/json",
		   "{\"detail\":\"Invalid or unauthorized X-Popcorn-Cli-Id\"}");
}

/* A stream as upstream KernelBot sends it, with our stage fields, written
 * in pieces that cut events, lines and a CRLF apart. */
static void h_sse_pass(int fd, const struct fake_req *rq, int calls, void *arg)
{
	(void)rq, (void)calls, (void)arg;
	fake_sse_begin(fd);
	fake_write(fd, ": keep-alive\n\n");
	fake_write(
		fd,
		"event: status\r\ndata: {\"status\":\"processing\",\"stage\":\"comp");
	fake_pause_ms(60);
	fake_write(fd, "iling\",\"message\":\"cc -O3\",\"submission_id\":42,"
		       "\"elapsed_time\":0.1}\r");
	fake_pause_ms(60);
	fake_write(fd,
		   "\n\r\nevent: status\ndata: {\"stage\":\"testing\"}\n\n");
	fake_write(fd, "event: progress-v2\ndata: {\"ignored\":true}\n\n");
	fake_write(fd, "event: result\ndata: {\"status\":\"success\",\n");
	fake_pause_ms(60);
	fake_write(
		fd,
		"data: \"results\":[{\"success\":true,\"error\":\"\",\"runs\":{\"test\":"
		"{\"compilation\":{\"success\":true,\"exit_code\":0},\"run\":{\"success\":"
		"true,\"passed\":true,\"exit_code\":0,\"duration\":0.5}}}}],\n"
		"data: \"reports\":[\"REPORT-TEXT: all 3 tests passed\"]}\n\n");
}

static void h_sse_fail(int fd, const struct fake_req *rq, int calls, void *arg)
{
	(void)rq, (void)calls, (void)arg;
	fake_sse_begin(fd);
	fake_write(
		fd,
		"event: status\ndata: {\"stage\":\"testing\"}\n\n"
		"event: result\ndata: {\"status\":\"success\",\"results\":[{\"success\":"
		"true,\"runs\":{\"test\":{\"run\":{\"success\":true,\"passed\":false,"
		"\"stderr\":\"mismatch at 3\"}}}}],\"reports\":[\"REPORT-TEXT: test 2 "
		"failed\"]}\n\n");
}

static void h_sse_error(int fd, const struct fake_req *rq, int calls, void *arg)
{
	(void)rq, (void)calls, (void)arg;
	fake_sse_begin(fd);
	fake_write(
		fd,
		"event: error\ndata: {\"status\":\"error\",\"detail\":\"runner "
		"pool exploded\",\"status_code\":500}\n\n");
}

/* Names the submission, then the connection drops. */
static void h_sse_broken(int fd, const struct fake_req *rq, int calls,
			 void *arg)
{
	(void)rq, (void)calls, (void)arg;
	fake_sse_begin(fd);
	fake_write(
		fd,
		"event: status\ndata: {\"stage\":\"queued\",\"submission_id\":9}\n\n");
}

static void h_accept7(int fd, const struct fake_req *rq, int calls, void *arg)
{
	(void)rq, (void)calls, (void)arg;
	fake_reply(
		fd, 202, "application/json",
		"{\"details\":{\"id\":7,\"job_status_id\":7},\"status\":\"accepted\"}");
}

static void h_poll7(int fd, const struct fake_req *rq, int calls, void *arg)
{
	(void)rq, (void)arg;
	if (calls == 0)
		fake_reply(
			fd, 200, "application/json",
			"{\"id\":7,\"status\":\"queued\",\"stage\":\"queued\",\"done\":false}");
	else if (calls == 1)
		fake_reply(
			fd, 200, "application/json",
			"{\"id\":7,\"status\":\"running\",\"stage\":\"testing\",\"done\":false}");
	else
		fake_reply(
			fd, 200, "application/json",
			"{\"id\":7,\"status\":\"done\",\"done\":true,\"verdict\":\"passed\","
			"\"score\":1.5e-5,\"report\":\"POLLED-REPORT\\n\",\"runs\":[]}");
}

/* kb-gateway's answers for a gpu no worker serves: the stream's queued
 * status, and the 202 of POST /submission/... (docs/api.md). */
#define NO_WORKER                                                              \
	"no worker online for CPU: the submission waits in the queue until one serves it"

static void h_sse_no_worker(int fd, const struct fake_req *rq, int calls,
			    void *arg)
{
	(void)rq, (void)calls, (void)arg;
	fake_sse_begin(fd);
	fake_write(
		fd,
		"event: status\ndata: {\"status\":\"queued\",\"stage\":\"queued\","
		"\"message\":\"Submission 7 queued (position 1); " NO_WORKER
		"\","
		"\"submission_id\":7,\"elapsed_time\":0.01,\"worker_elapsed_ms\":null,"
		"\"position\":1,\"worker\":null,\"workers_online\":0,"
		"\"estimated_wait_s\":null,\"estimated_start\":null,"
		"\"warning\":\"" NO_WORKER "\"}\n\n");
	/* The same again, as a stream repeats its status: said once. */
	fake_write(
		fd,
		"event: status\ndata: {\"status\":\"queued\",\"stage\":\"queued\","
		"\"submission_id\":7,\"warning\":\"" NO_WORKER "\"}\n\n");
	fake_write(
		fd,
		"event: result\ndata: {\"status\":\"success\",\"results\":[{\"success\":"
		"true,\"runs\":{\"test\":{\"run\":{\"success\":true,\"passed\":true}}}}],"
		"\"reports\":[\"REPORT-TEXT\"]}\n\n");
}

static void h_accept7_no_worker(int fd, const struct fake_req *rq, int calls,
				void *arg)
{
	(void)rq, (void)calls, (void)arg;
	fake_reply(
		fd, 202, "application/json",
		"{\"details\":{\"id\":7,\"job_status_id\":7},\"status\":\"accepted\","
		"\"runner_queue\":{\"runner\":\"kb-worker\",\"gpu\":\"CPU\",\"queued_jobs\":1,"
		"\"workers_online\":0,\"estimated_wait_s\":null},"
		"\"warning\":\"" NO_WORKER "\"}");
}

static void h_poll9(int fd, const struct fake_req *rq, int calls, void *arg)
{
	(void)rq, (void)calls, (void)arg;
	fake_reply(
		fd, 200, "application/json",
		"{\"id\":9,\"status\":\"done\",\"done\":true,\"verdict\":\"compile_error\","
		"\"report\":\"nvcc: error: expected ';'\"}");
}

/* Registration: 401 until the second check. */
static void h_check(int fd, const struct fake_req *rq, int calls, void *arg)
{
	(void)rq, (void)arg;
	if (calls == 0)
		fake_reply(
			fd, 401, "application/json",
			"{\"detail\":\"Invalid or unauthorized X-Popcorn-Cli-Id\"}");
	else
		fake_reply(fd, 200, "application/json", "[]");
}

/* ---- submit ---- */

START_TEST(submit_stream_pass)
{
	static const struct fake_route routes[] = {
		{"POST", "/vectorsum_cpu/CPU/test", h_sse_pass, NULL},
	};
	struct env e;
	struct run r;
	char file[128];

	env_up(&e, routes, 1, yaml_ok);
	write_sub(&e, "sum.c", sub_c, file, sizeof(file));
	run_kb(&e, &r, NULL, (const char *[]){"submit", file, NULL});
	ASSERT_EXIT(r, 0);
	ASSERT_HAS(r.out, "REPORT-TEXT: all 3 tests passed");
	ASSERT_HAS(r.out,
		   "sum.c on VectorSum_CPU/CPU (submission 42, test): PASSED");
	/* Not a terminal: one progress line per update, with the time. */
	ASSERT_HAS(r.err, "s] compiling: cc -O3\n");
	ASSERT_HAS(r.err, "s] testing\n");

	ck_assert_uint_eq(fake_nreq(e.srv), 1);
	const struct fake_req *q = fake_req_at(e.srv, 0);
	ck_assert_str_eq(q->path, "/vectorsum_cpu/CPU/test");
	ck_assert_str_eq(q->cli_id, CLI_ID);
	ASSERT_HAS(q->content_type, "multipart/form-data");
	ASSERT_HAS(q->body, "name=\"file\"");
	ASSERT_HAS(q->body, "filename=\"sum.c\"");
	ASSERT_HAS(q->body, "float custom_kernel(const float *d, size_t n)");
	run_free(&r);
	env_down(&e);
}
END_TEST

START_TEST(submit_stream_json)
{
	static const struct fake_route routes[] = {
		{"POST", "/vectorsum_cpu/CPU/benchmark", h_sse_pass, NULL},
	};
	struct env e;
	struct run r;
	char file[128];

	env_up(&e, routes, 1, yaml_ok);
	write_sub(&e, "sum.c", sub_c, file, sizeof(file));
	run_kb(&e, &r, NULL,
	       (const char *[]){"--json", "submit", "-q", "--mode", "BENCHMARK",
				file, NULL});
	ASSERT_EXIT(r, 0);
	json_t *j = json_loads(r.out, 0, NULL);
	ck_assert_msg(j != NULL, "stdout is not JSON:\n%s", r.out);
	ck_assert_str_eq(json_string_value(json_object_get(j, "status")),
			 "success");
	ck_assert_uint_eq(json_array_size(json_object_get(j, "results")), 1);
	json_decref(j);
	ck_assert_msg(strstr(r.err, "compiling") == NULL,
		      "--quiet printed:\n%s", r.err);
	run_free(&r);
	env_down(&e);
}
END_TEST

START_TEST(submit_stream_fail)
{
	static const struct fake_route routes[] = {
		{"POST", "/grayscale/H100/leaderboard", h_sse_fail, NULL},
	};
	struct env e;
	struct run r;
	char file[128];

	env_up(&e, routes, 1, yaml_ok);
	/* Flags override the directives (with a note). */
	write_sub(&e, "k.py",
		  "#!POPCORN leaderboard other\n#!POPCORN gpu A100\nx = 1\n",
		  file, sizeof(file));
	run_kb(&e, &r, NULL,
	       (const char *[]){"submit", "--leaderboard", "grayscale", "--gpu",
				"H100", "-m", "leaderboard", file, NULL});
	ASSERT_EXIT(r, 1);
	ASSERT_HAS(r.out, "REPORT-TEXT: test 2 failed");
	ASSERT_HAS(r.out, "FAILED (run 'test' did not pass)");
	ASSERT_HAS(
		r.err,
		"--leaderboard grayscale overrides the file's directive 'other'");
	ASSERT_HAS(r.err, "--gpu H100 overrides the file's directive 'A100'");
	run_free(&r);
	env_down(&e);
}
END_TEST

START_TEST(submit_stream_error_event)
{
	static const struct fake_route routes[] = {
		{"POST", "/vectorsum_cpu/CPU/test", h_sse_error, NULL},
	};
	struct env e;
	struct run r;
	char file[128];

	env_up(&e, routes, 1, yaml_ok);
	write_sub(&e, "sum.c", sub_c, file, sizeof(file));
	run_kb(&e, &r, NULL, (const char *[]){"submit", file, NULL});
	ASSERT_EXIT(r, 3);
	ASSERT_HAS(r.err, "runner pool exploded (HTTP 500)");
	run_free(&r);
	env_down(&e);
}
END_TEST

START_TEST(submit_fallback_poll)
{
	/* No streaming route: the server answers it 404, like an old one. */
	static const struct fake_route routes[] = {
		{"POST", "/submission/vectorsum_cpu/CPU/test", h_accept7, NULL},
		{"GET", "/user/submissions/7", h_poll7, NULL},
	};
	struct env e;
	struct run r;
	char file[128];

	env_up(&e, routes, 2, yaml_ok);
	write_sub(&e, "sum.c", sub_c, file, sizeof(file));
	run_kb(&e, &r, NULL, (const char *[]){"submit", file, NULL});
	ASSERT_EXIT(r, 0);
	ASSERT_HAS(r.out, "POLLED-REPORT");
	ASSERT_HAS(r.out, "(submission 7, test): PASSED, score 15 \xC2\xB5s");
	ASSERT_HAS(r.err, "] queued");
	ASSERT_HAS(r.err, "] testing");

	ck_assert_uint_eq(fake_nreq(e.srv), 5);
	ck_assert_str_eq(fake_req_at(e.srv, 0)->path,
			 "/vectorsum_cpu/CPU/test");
	ck_assert_str_eq(fake_req_at(e.srv, 1)->path,
			 "/submission/vectorsum_cpu/CPU/test");
	ASSERT_HAS(fake_req_at(e.srv, 1)->body, "filename=\"sum.c\"");
	for (size_t i = 2; i < 5; i++) {
		ck_assert_str_eq(fake_req_at(e.srv, i)->method, "GET");
		ck_assert_str_eq(fake_req_at(e.srv, i)->path,
				 "/user/submissions/7");
		ck_assert_str_eq(fake_req_at(e.srv, i)->cli_id, CLI_ID);
	}
	run_free(&r);
	env_down(&e);
}
END_TEST

/* The server's warning is said on its own line before the wait, once,
 * streamed or polled, and with --quiet. */
START_TEST(submit_says_no_worker)
{
	static const struct fake_route stream[] = {
		{"POST", "/vectorsum_cpu/CPU/test", h_sse_no_worker, NULL},
	};
	static const struct fake_route poll[] = {
		{"POST", "/submission/vectorsum_cpu/CPU/test",
		 h_accept7_no_worker, NULL},
		{"GET", "/user/submissions/7", h_poll7, NULL},
	};
	static const char said[] = "kb: warning: " NO_WORKER "\n";
	struct env e;
	struct run r;
	char file[128];

	env_up(&e, stream, 1, yaml_ok);
	write_sub(&e, "sum.c", sub_c, file, sizeof(file));
	run_kb(&e, &r, NULL, (const char *[]){"submit", file, NULL});
	ASSERT_EXIT(r, 0);
	ASSERT_HAS(r.err, said);
	ck_assert_msg(strstr(r.err, said) < strstr(r.err, "] queued"),
		      "the warning comes after the wait began:\n%s", r.err);
	ck_assert_msg(!strstr(strstr(r.err, said) + 1, said), "said twice:\n%s",
		      r.err);
	run_free(&r);
	env_down(&e);

	env_up(&e, poll, 2, yaml_ok);
	write_sub(&e, "sum.c", sub_c, file, sizeof(file));
	run_kb(&e, &r, NULL,
	       (const char *[]){"submit", "--no-stream", file, NULL});
	ASSERT_EXIT(r, 0);
	ASSERT_HAS(r.err, said);
	ck_assert_msg(strstr(r.err, said) < strstr(r.err, "] queued"),
		      "the warning comes after the wait began:\n%s", r.err);
	run_free(&r);
	run_kb(&e, &r, NULL,
	       (const char *[]){"submit", "--no-stream", "--quiet", file,
				NULL});
	ASSERT_EXIT(r, 0);
	ASSERT_HAS(r.err, said);
	run_free(&r);
	env_down(&e);
}
END_TEST

START_TEST(submit_broken_stream_polls)
{
	static const struct fake_route routes[] = {
		{"POST", "/vectorsum_cpu/CPU/test", h_sse_broken, NULL},
		{"GET", "/user/submissions/9", h_poll9, NULL},
	};
	struct env e;
	struct run r;
	char file[128];

	env_up(&e, routes, 2, yaml_ok);
	write_sub(&e, "sum.c", sub_c, file, sizeof(file));
	run_kb(&e, &r, NULL, (const char *[]){"submit", file, NULL});
	ASSERT_EXIT(r, 1);
	ASSERT_HAS(r.err, "following submission 9 by polling");
	ASSERT_HAS(r.out, "nvcc: error: expected ';'");
	ASSERT_HAS(r.out, "FAILED (verdict compile_error)");
	run_free(&r);
	env_down(&e);
}
END_TEST

START_TEST(submit_unauthorized)
{
	static const struct fake_route routes[] = {
		{"POST", "/vectorsum_cpu/CPU/test", h_status, (void *)401L},
	};
	struct env e;
	struct run r;
	char file[128];

	env_up(&e, routes, 1, yaml_ok);
	write_sub(&e, "sum.c", sub_c, file, sizeof(file));
	/* KB_CLI_ID wins over the file. */
	run_kb(&e, &r, (const char *[]){"KB_CLI_ID=from-env", NULL},
	       (const char *[]){"submit", file, NULL});
	ASSERT_EXIT(r, 3);
	ASSERT_HAS(r.err, "HTTP 401: Invalid or unauthorized X-Popcorn-Cli-Id");
	ASSERT_HAS(r.err, "kb register");
	ck_assert_str_eq(fake_req_at(e.srv, 0)->cli_id, "from-env");
	run_free(&r);
	env_down(&e);
}
END_TEST

START_TEST(submit_usage_errors)
{
	struct env e;
	struct run r;
	char file[128], plain[128];

	env_up(&e, NULL, 0, yaml_ok);
	write_sub(&e, "sum.c", sub_c, file, sizeof(file));
	write_sub(&e, "plain.c", "int x;\n", plain, sizeof(plain));

	run_kb(&e, &r, NULL, (const char *[]){"submit", NULL});
	ASSERT_EXIT(r, 2);
	run_free(&r);
	run_kb(&e, &r, NULL,
	       (const char *[]){"submit", "/nonexistent/x.c", NULL});
	ASSERT_EXIT(r, 2);
	ASSERT_HAS(r.err, "cannot read /nonexistent/x.c");
	run_free(&r);
	run_kb(&e, &r, NULL,
	       (const char *[]){"submit", "--mode", "fast", file, NULL});
	ASSERT_EXIT(r, 2);
	ASSERT_HAS(r.err, "unknown mode 'fast'");
	run_free(&r);
	run_kb(&e, &r, NULL, (const char *[]){"submit", plain, NULL});
	ASSERT_EXIT(r, 2);
	ASSERT_HAS(r.err, "no leaderboard given");
	run_free(&r);
	run_kb(&e, &r, NULL,
	       (const char *[]){"submit", "--leaderboard", "x", plain, NULL});
	ASSERT_EXIT(r, 2);
	ASSERT_HAS(r.err, "no GPU given: use --gpu");
	run_free(&r);
	run_kb(&e, &r, NULL, (const char *[]){"submit", "--bogus", file, NULL});
	ASSERT_EXIT(r, 2);
	run_free(&r);
	/* No config file and no KB_CLI_ID. */
	char cfg[128];
	snprintf(cfg, sizeof(cfg), "%s/.popcorn.yaml", e.home);
	unlink(cfg);
	run_kb(&e, &r, NULL, (const char *[]){"submit", file, NULL});
	ASSERT_EXIT(r, 2);
	ASSERT_HAS(r.err, "no CLI id");
	run_free(&r);
	env_down(&e);
}
END_TEST

START_TEST(submit_network_error)
{
	struct env e;
	struct run r;
	char file[128];

	env_up(&e, NULL, 0, yaml_ok); /* api points at port 1: refused */
	write_sub(&e, "sum.c", sub_c, file, sizeof(file));
	run_kb(&e, &r, NULL, (const char *[]){"submit", file, NULL});
	ASSERT_EXIT(r, 3);
	ASSERT_HAS(r.err, "127.0.0.1");
	run_free(&r);
	env_down(&e);
}
END_TEST

/* ---- read commands ---- */

START_TEST(leaderboards_and_ranking)
{
	static const struct fake_route routes[] = {
		{"GET", "/leaderboards", h_json,
		 "[{\"id\":1,\"name\":\"vectorsum_cpu\",\"description\":\"Sum floats\\n"
		 "more\",\"deadline\":\"2030-01-01T00:00:00\",\"gpu_types\":[\"CPU\"],"
		 "\"task\":{}}]"},
		{"GET", "/submissions/vectorsum_cpu/CPU", h_json,
		 "[{\"rank\":1,\"user_name\":\"alice\",\"submission_score\":2.5e-6,"
		 "\"submission_id\":11,\"submission_name\":\"a.c\",\"submission_time\":"
		 "\"2025-01-01T00:00:00\"}]"},
	};
	struct env e;
	struct run r;

	env_up(&e, routes, 2, NULL); /* no account needed */
	run_kb(&e, &r, NULL, (const char *[]){"leaderboards", NULL});
	ASSERT_EXIT(r, 0);
	ASSERT_HAS(r.out, "vectorsum_cpu");
	ASSERT_HAS(r.out, "Sum floats");
	ck_assert_msg(strstr(r.out, "more") == NULL, "only the first line:\n%s",
		      r.out);
	run_free(&r);

	run_kb(&e, &r, NULL, (const char *[]){"leaderboards", "--json", NULL});
	ASSERT_EXIT(r, 0);
	json_t *j = json_loads(r.out, 0, NULL);
	ck_assert(json_is_array(j));
	json_decref(j);
	run_free(&r);

	run_kb(&e, &r, NULL,
	       (const char *[]){"ranking", "vectorsum_cpu", "CPU", "--limit",
				"5", NULL});
	ASSERT_EXIT(r, 0);
	ASSERT_HAS(r.out, "alice");
	ASSERT_HAS(r.out, "2.5 \xC2\xB5s");
	ck_assert_str_eq(fake_req_at(e.srv, 2)->query, "limit=5");
	run_free(&r);

	run_kb(&e, &r, NULL, (const char *[]){"ranking", "nope", "CPU", NULL});
	ASSERT_EXIT(r, 3);
	ASSERT_HAS(r.err, "HTTP 404: Not Found");
	run_free(&r);
	env_down(&e);
}
END_TEST

START_TEST(submissions_commands)
{
	static const struct fake_route routes[] = {
		{"GET", "/user/submissions", h_json,
		 "[{\"id\":7,\"leaderboard_name\":\"vectorsum_cpu\",\"file_name\":\"sum.c\","
		 "\"submission_time\":\"2025-01-01T00:00:00\",\"done\":true,\"gpu_type\":"
		 "\"CPU\",\"score\":1e-3},"
		 "{\"id\":8,\"leaderboard_name\":\"vectorsum_cpu\",\"file_name\":\"bad.c\","
		 "\"submission_time\":\"2025-01-01T00:01:00\",\"done\":true,\"gpu_type\":"
		 "\"CPU\",\"status\":\"done\",\"verdict\":\"compile_error\",\"score\":null,"
		 "\"job\":{\"status\":\"failed\",\"error\":\"compilation failed\"}}]"},
		{"GET", "/user/submissions/7", h_json,
		 "{\"id\":7,\"leaderboard_name\":\"vectorsum_cpu\",\"file_name\":\"sum.c\","
		 "\"status\":\"done\",\"job\":{\"status\":\"succeeded\",\"error\":null},"
		 "\"done\":true,\"code\":\"int main;\",\"runs\":[{\"mode\":\"test\","
		 "\"passed\":true,\"runner\":\"CPU\",\"secret\":false,\"score\":null}]}"},
		{"DELETE", "/user/submissions/7", h_json,
		 "{\"status\":\"ok\",\"submission_id\":7}"},
	};
	struct env e;
	struct run r;

	env_up(&e, routes, 3, yaml_ok);
	run_kb(&e, &r, NULL,
	       (const char *[]){"submissions", "list", "--leaderboard",
				"vectorsum_cpu", NULL});
	ASSERT_EXIT(r, 0);
	ASSERT_HAS(r.out, "sum.c");
	ASSERT_HAS(r.out, "1 ms");
	/* A failed row says failed, not the stored "done". */
	{
		const char *row = strstr(r.out, "bad.c");

		ck_assert_msg(row && strstr(row, " failed ") &&
				      !strstr(row, " done "),
			      "%s", r.out);
	}
	ck_assert_str_eq(fake_req_at(e.srv, 0)->query,
			 "leaderboard=vectorsum_cpu");
	ck_assert_str_eq(fake_req_at(e.srv, 0)->cli_id, CLI_ID);
	run_free(&r);

	run_kb(&e, &r, NULL,
	       (const char *[]){"submissions", "show", "7", NULL});
	ASSERT_EXIT(r, 0);
	ASSERT_HAS(r.out, "Submission 7");
	ASSERT_HAS(r.out, "Status:       succeeded");
	ASSERT_HAS(r.out, "Result:       passed");
	ASSERT_HAS(r.out, "test on CPU: passed");
	ASSERT_HAS(r.out, "int main;");
	run_free(&r);

	/* stdin is not a terminal: --yes is required. */
	run_kb(&e, &r, NULL,
	       (const char *[]){"submissions", "delete", "7", NULL});
	ASSERT_EXIT(r, 2);
	ASSERT_HAS(r.err, "--yes");
	run_free(&r);
	ck_assert_uint_eq(fake_nreq(e.srv), 2);

	run_kb(&e, &r, NULL,
	       (const char *[]){"submissions", "delete", "--yes", "7", NULL});
	ASSERT_EXIT(r, 0);
	ASSERT_HAS(r.out, "Deleted submission 7.");
	ck_assert_str_eq(fake_req_at(e.srv, 2)->method, "DELETE");
	run_free(&r);

	run_kb(&e, &r, NULL,
	       (const char *[]){"submissions", "show", "x7", NULL});
	ASSERT_EXIT(r, 2);
	run_free(&r);
	run_kb(&e, &r, NULL,
	       (const char *[]){"submissions", "frobnicate", NULL});
	ASSERT_EXIT(r, 2);
	run_free(&r);
	env_down(&e);
}
END_TEST

START_TEST(join_sends_code)
{
	static const struct fake_route routes[] = {
		{"POST", "/user/join", h_json,
		 "{\"status\":\"ok\",\"message\":\"Welcome to the closed beta.\","
		 "\"leaderboards\":[\"secret_lb\"]}"},
	};
	struct env e;
	struct run r;

	env_up(&e, routes, 1, yaml_ok);
	run_kb(&e, &r, NULL, (const char *[]){"join", "ABC-123", NULL});
	ASSERT_EXIT(r, 0);
	ASSERT_HAS(r.out, "Welcome to the closed beta.");
	ASSERT_HAS(r.out, "secret_lb");
	const struct fake_req *q = fake_req_at(e.srv, 0);
	ck_assert_str_eq(q->cli_id, CLI_ID);
	ASSERT_HAS(q->content_type, "application/json");
	json_t *j = json_loads(q->body, 0, NULL);
	ck_assert_str_eq(json_string_value(json_object_get(j, "code")),
			 "ABC-123");
	json_decref(j);
	run_free(&r);
	env_down(&e);
}
END_TEST

START_TEST(register_saves_and_waits)
{
	static const struct fake_route routes[] = {
		{"GET", "/auth/init", h_json,
		 "{\"state\":\"new-id-456\",\"authorize_url\":"
		 "\"https://github.example/authorize?client_id=x&redirect_uri=y\"}"},
		{"GET", "/user/submissions", h_check, NULL},
	};
	struct env e;
	struct run r;
	char cfg[128], *yaml;
	struct stat st;

	env_up(&e, routes, 2, yaml_ok);
	run_kb(&e, &r, NULL, (const char *[]){"register", "github", NULL});
	ASSERT_EXIT(r, 0);
	/* base64url, unpadded, of {"cli_id":"new-id-456","is_reset":false} */
	ASSERT_HAS(
		r.out,
		"https://github.example/authorize?client_id=x&redirect_uri=y"
		"&state=eyJjbGlfaWQiOiJuZXctaWQtNDU2IiwiaXNfcmVzZXQiOmZhbHNlfQ\n");
	ASSERT_HAS(r.out, "Registered");
	ck_assert_str_eq(fake_req_at(e.srv, 0)->query, "provider=github");
	ck_assert_str_eq(fake_req_at(e.srv, 0)->cli_id, "");
	ck_assert_str_eq(fake_req_at(e.srv, 2)->cli_id, "new-id-456");

	snprintf(cfg, sizeof(cfg), "%s/.popcorn.yaml", e.home);
	ck_assert_int_eq(stat(cfg, &st), 0);
	ck_assert_int_eq(st.st_mode & 0777, 0600);
	yaml = slurp(cfg);
	ASSERT_HAS(yaml, "cli_id: \"new-id-456\"");
	ASSERT_HAS(yaml, "other: keep-me");
	ck_assert_msg(strstr(yaml, CLI_ID) == NULL, "old id kept:\n%s", yaml);
	free(yaml);
	run_free(&r);

	run_kb(&e, &r, NULL, (const char *[]){"register", "myspace", NULL});
	ASSERT_EXIT(r, 2);
	run_free(&r);

	/* A reset proves the account with the id it replaces. */
	run_kb(&e, &r, NULL,
	       (const char *[]){"register", "--reset", "--no-wait", "github",
				NULL});
	ASSERT_EXIT(r, 0);
	/* base64url of {"cli_id":"new-id-456","is_reset":true} */
	ASSERT_HAS(
		r.out,
		"&state=eyJjbGlfaWQiOiJuZXctaWQtNDU2IiwiaXNfcmVzZXQiOnRydWV9\n");
	ck_assert_str_eq(fake_req_at(e.srv, 3)->query, "provider=github");
	ck_assert_str_eq(fake_req_at(e.srv, 3)->cli_id, "new-id-456");
	run_free(&r);

	/* Unconfirmed (--no-wait) with an id on file: the id on file is kept,
	 * and kb says so and names the new one. */
	put_file(cfg, "cli_id: \"old-id-123\"\n");
	run_kb(&e, &r, NULL,
	       (const char *[]){"register", "--no-wait", "github", NULL});
	ASSERT_EXIT(r, 0);
	yaml = slurp(cfg);
	ASSERT_HAS(yaml, "old-id-123");
	ck_assert_msg(strstr(yaml, "new-id-456") == NULL, "replaced:\n%s",
		      yaml);
	free(yaml);
	ASSERT_HAS(r.err, "unchanged");
	ASSERT_HAS(r.err, "KB_CLI_ID=new-id-456");
	run_free(&r);
	env_down(&e);
}
END_TEST

START_TEST(help_everywhere)
{
	static const char *const cmds[][3] = {
		{"--help", NULL, NULL},
		{"submit", "--help", NULL},
		{"leaderboards", "--help", NULL},
		{"ranking", "--help", NULL},
		{"submissions", "--help", NULL},
		{"submissions", "list", "--help"},
		{"submissions", "show", "--help"},
		{"submissions", "delete", "--help"},
		{"register", "--help", NULL},
		{"join", "--help", NULL},
		{"help", "submit", NULL},
	};
	struct env e;
	struct run r;

	env_up(&e, NULL, 0, NULL);
	for (size_t i = 0; i < sizeof(cmds) / sizeof(cmds[0]); i++) {
		run_kb(&e, &r, NULL,
		       (const char *[]){cmds[i][0], cmds[i][1], cmds[i][2],
					NULL});
		ASSERT_EXIT(r, 0);
		ASSERT_HAS(r.out, "SYNOPSIS");
		ASSERT_HAS(r.out, "NAME");
		run_free(&r);
	}
	run_kb(&e, &r, NULL, (const char *[]){"--help", NULL});
	ASSERT_HAS(r.out, "EXIT STATUS");
	ASSERT_HAS(r.out, "POPCORN_API_URL");
	run_free(&r);
	run_kb(&e, &r, NULL, (const char *[]){"nonsense", NULL});
	ASSERT_EXIT(r, 2);
	run_free(&r);
	env_down(&e);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("kb_e2e");
	TCase *tc = tcase_create("e2e");

	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, submit_stream_pass);
	tcase_add_test(tc, submit_stream_json);
	tcase_add_test(tc, submit_stream_fail);
	tcase_add_test(tc, submit_stream_error_event);
	tcase_add_test(tc, submit_fallback_poll);
	tcase_add_test(tc, submit_says_no_worker);
	tcase_add_test(tc, submit_broken_stream_polls);
	tcase_add_test(tc, submit_unauthorized);
	tcase_add_test(tc, submit_usage_errors);
	tcase_add_test(tc, submit_network_error);
	tcase_add_test(tc, leaderboards_and_ranking);
	tcase_add_test(tc, submissions_commands);
	tcase_add_test(tc, join_sends_code);
	tcase_add_test(tc, register_saves_and_waits);
	tcase_add_test(tc, help_everywhere);
	suite_add_tcase(s, tc);
	return kb_check_run(s);
}
