/* kb submit: send a file, follow its evaluation, report the result.
 *
 * The preferred path is the streaming endpoint POST /{lb}/{gpu}/{mode}
 * (server-sent events "status", "result", "error"). A server without it
 * answers 404 (or 405); kb then uses POST /submission/{lb}/{gpu}/{mode}
 * and polls GET /user/submissions/{id}. If a stream breaks after the
 * server named the submission's id, kb polls that id instead of giving up.
 */
#include <ctype.h>
#include <errno.h>
#include <getopt.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "commands.h"
#include "directives.h"
#include "result.h"
#include "sse.h"

#define FILE_MAX (16u << 20)    /* the server enforces its own, smaller limit */
#define DEFAULT_TIMEOUT_S 3600L /* as popcorn-cli */
#define STALL_S 300L            /* servers send a status at least every 15 s */
#define ASYNC_TIMEOUT_S 120L
#define POLL_CALL_TIMEOUT_S 60L
#define POLL_MIN_S 0.5
#define POLL_MAX_S 5.0
#define POLL_RETRIES 5 /* consecutive failed polls before giving up */

enum { STOP_EVENT = 1 }; /* on_event: the final event arrived */
enum { GO_FALLBACK = -1, GO_POLL = -2 };

struct progress {
	int on, tty, drawn;
	double t0;
	char stage[64];
	char msg[256];
};

struct submit {
	struct kb_cli *c;
	struct kb_api *api;
	struct kb_target t;
	char lb_path[KB_DIR_NAME_MAX]; /* lowercased, as popcorn-cli sends it */
	char mode[16];
	const char *file, *base;
	char *code;
	size_t len;
	long timeout_s;
	struct progress prog;
	unsigned long long sub_id; /* once the server has named it */
	struct kb_sse *sse;
	int streamed;           /* event-stream bytes arrived */
	json_t *result, *error; /* the final event, owned */
	char warned[256];       /* the server's last warning, said */
	char bad[256];          /* a malformed event */
};

/* ---- progress on stderr ---- */

/* Copies s, replacing control bytes so that a server cannot move the
 * cursor or change the terminal. */
static void clean_copy(char *dst, size_t n, const char *s)
{
	size_t i = 0;

	for (; s && *s && i + 1 < n; s++)
		dst[i++] = ((unsigned char)*s < 0x20 || *s == 0x7f) ? ' ' : *s;
	dst[i] = '\0';
}

static void prog_line(struct progress *p)
{
	if (p->tty)
		fputs("\r\033[K", stderr);
	fprintf(stderr, "[%7.1fs] %s", kb_mono_s() - p->t0, p->stage);
	if (p->msg[0])
		fprintf(stderr, ": %s", p->msg);
	if (!p->tty)
		fputc('\n', stderr);
	fflush(stderr);
}

/* Shows a stage. On a terminal the current line is redrawn while the
 * stage stays the same (its clock keeps running, see prog_tick) and a new
 * stage starts a new line; elsewhere each call is one line, or, unless
 * always, only a change is. */
static void prog_show(struct progress *p, const char *stage, const char *msg,
		      int always)
{
	char st[sizeof(p->stage)], m[sizeof(p->msg)];

	if (!p->on)
		return;
	clean_copy(st, sizeof(st), stage && *stage ? stage : "running");
	clean_copy(m, sizeof(m), msg);
	int same = p->drawn && strcmp(st, p->stage) == 0;
	if (same && !always && strcmp(m, p->msg) == 0 && !p->tty)
		return;
	if (p->tty && p->drawn && !same)
		fputc('\n', stderr);
	memcpy(p->stage, st, sizeof(st));
	memcpy(p->msg, m, sizeof(m));
	prog_line(p);
	p->drawn = 1;
}

static void prog_tick(struct progress *p)
{
	if (p->on && p->tty && p->drawn)
		prog_line(p);
}

/* Ends the live line before anything else goes to stderr or stdout. */
static void prog_end(struct progress *p)
{
	if (p->on && p->tty && p->drawn)
		fputc('\n', stderr);
	p->drawn = 0;
}

/* ---- reading events ---- */

static const char *jstr(const json_t *j, const char *key)
{
	return json_string_value(json_object_get(j, key));
}

/* Says the server's warning in j (a gpu that no worker serves: the
 * submission waits until one starts) on a line of its own, once, before
 * the wait; --quiet keeps it, as it is no progress. */
static void say_warning(struct submit *s, const json_t *j)
{
	char w[sizeof(s->warned)];

	if (!json_is_string(json_object_get(j, "warning")))
		return;
	clean_copy(w, sizeof(w), jstr(j, "warning"));
	if (!w[0] || strcmp(w, s->warned) == 0)
		return;
	memcpy(s->warned, w, sizeof(w));
	prog_end(&s->prog);
	kb_cli_err("warning: %s", w);
}

static void note_id(struct submit *s, const json_t *j)
{
	const json_t *v = json_object_get(j, "submission_id");

	if (!v)
		v = json_object_get(j, "id");
	if (json_is_integer(v) && json_integer_value(v) > 0)
		s->sub_id = (unsigned long long)json_integer_value(v);
	else if (json_is_string(v) && kb_cli_parse_id(json_string_value(v)))
		s->sub_id = kb_cli_parse_id(json_string_value(v));
}

static int on_event(const struct kb_sse_event *ev, void *opaque)
{
	struct submit *s = opaque;
	json_t *j = json_loadb(ev->data, ev->data_len, 0, NULL);

	if (strcmp(ev->type, "status") == 0) {
		char raw[200];
		const char *stage = jstr(j, "stage");
		if (!stage)
			stage = jstr(j, "status");
		note_id(s, j);
		say_warning(s, j);
		if (!j)
			clean_copy(raw, sizeof(raw), ev->data);
		prog_show(&s->prog, stage, j ? jstr(j, "message") : raw, 1);
		json_decref(j);
		return 0;
	}
	if (strcmp(ev->type, "result") == 0) {
		if (!json_is_object(j)) {
			snprintf(
				s->bad, sizeof(s->bad),
				"the server's result event is not a JSON object");
			json_decref(j);
		} else {
			note_id(s, j);
			s->result = j;
		}
		return STOP_EVENT;
	}
	if (strcmp(ev->type, "error") == 0) {
		if (!json_is_object(j)) {
			json_decref(j);
			j = json_object();
			json_object_set_new(j, "status", json_string("error"));
			json_t *d = json_stringn(ev->data, ev->data_len);
			json_object_set_new(j, "detail",
					    d ? d : json_string("(not UTF-8)"));
		}
		s->error = j;
		return STOP_EVENT;
	}
	json_decref(j); /* an event type we do not know: newer server */
	return 0;
}

static int on_data(const char *buf, size_t len, void *opaque)
{
	struct submit *s = opaque;
	int rc;

	s->streamed = 1;
	rc = kb_sse_feed(s->sse, buf, len);
	if (rc < 0)
		snprintf(s->bad, sizeof(s->bad), "unreadable event stream: %s",
			 strerror(-rc));
	return rc;
}

static int on_tick(void *opaque)
{
	struct submit *s = opaque;

	prog_tick(&s->prog);
	return 0;
}

/* ---- outcomes ---- */

static int interrupted(struct submit *s)
{
	prog_end(&s->prog);
	if (s->sub_id)
		kb_cli_err(
			"interrupted; submission %llu keeps running on the server "
			"('kb submissions show %llu' shows it later)",
			s->sub_id, s->sub_id);
	else
		kb_cli_err("interrupted");
	return KB_EXIT_INTERRUPTED;
}

__attribute__((format(printf, 2, 3))) static int api_error(struct submit *s,
							   const char *fmt, ...)
{
	va_list ap;

	prog_end(&s->prog);
	fputs("kb: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	return KB_EXIT_API;
}

static int http_error(struct submit *s, const char *path,
		      const struct kb_api_resp *r)
{
	char err[1024];

	prog_end(&s->prog);
	kb_api_error_text(r, err, sizeof(err));
	kb_cli_err("POST %s: %s", path, err);
	if (r->status == 401)
		kb_cli_err(
			"the server does not know this CLI id; run 'kb register "
			"discord' (or github)");
	return KB_EXIT_API;
}

/* Reports the final result j (owned) and returns the exit status. */
static int final(struct submit *s, json_t *j)
{
	char why[256], score[48] = "", id[48] = "";
	enum kb_outcome o = kb_result_outcome(j, why, sizeof(why));
	static const char *const word[] = {
		[KB_OUTCOME_UNKNOWN] = "UNKNOWN",
		[KB_OUTCOME_PASSED] = "PASSED",
		[KB_OUTCOME_FAILED] = "FAILED",
		[KB_OUTCOME_INFRA] = "NOT EVALUATED",
	};
	double sc;

	prog_end(&s->prog);
	note_id(s, j);
	if (kb_result_score(j, &sc)) {
		char t[32];
		kb_fmt_seconds(sc, t, sizeof(t));
		snprintf(score, sizeof(score), ", score %s", t);
	}
	if (s->sub_id)
		snprintf(id, sizeof(id), "submission %llu, ", s->sub_id);
	if (s->c->json) {
		kb_cli_print_json(j);
		if (o != KB_OUTCOME_PASSED)
			kb_cli_err("%s: %s (%s)", s->base, word[o], why);
	} else {
		char *text = kb_result_render(j);
		if (text && *text)
			printf("%s\n", text);
		free(text);
		printf("%s on %s/%s (%s%s): %s", s->base, s->t.leaderboard,
		       s->t.gpu, id, s->mode, word[o]);
		if (o != KB_OUTCOME_PASSED && *why)
			printf(" (%s)", why);
		printf("%s\n", score);
	}
	json_decref(j);
	switch (o) {
	case KB_OUTCOME_PASSED:
		return KB_EXIT_OK;
	case KB_OUTCOME_FAILED:
		return KB_EXIT_FAILED;
	default:
		return KB_EXIT_API;
	}
}

static int error_event(struct submit *s)
{
	const char *detail = jstr(s->error, "detail");
	const char *raw = jstr(s->error, "raw_error");
	const json_t *code = json_object_get(s->error, "status_code");
	char extra[64] = "";

	prog_end(&s->prog);
	if (s->c->json)
		kb_cli_print_json(s->error);
	if (json_is_integer(code))
		snprintf(extra, sizeof(extra), " (HTTP %lld)",
			 (long long)json_integer_value(code));
	kb_cli_err("the server could not run the submission: %s%s%s%s",
		   detail ? detail : "no detail given", extra, raw ? ": " : "",
		   raw ? raw : "");
	return KB_EXIT_API;
}

/* ---- the three paths ---- */

static void build_path(struct submit *s, struct kb_buf *b, int async)
{
	if (async)
		kb_api_path_add(b, "submission");
	kb_api_path_add(b, s->lb_path);
	kb_api_path_add(b, s->t.gpu);
	kb_api_path_add(b, s->mode);
}

/* A 2xx that is not an event stream: an old server's synchronous JSON
 * result, or an accepted asynchronous submission. */
static int plain_answer(struct submit *s, const char *path,
			const struct kb_api_resp *r)
{
	char err[512];
	json_t *j = kb_api_json(r, err, sizeof(err));
	const json_t *details;

	if (!j) {
		prog_end(&s->prog);
		kb_cli_err("POST %s: %s", path, err);
		return KB_EXIT_API;
	}
	if (json_object_get(j, "results") || json_object_get(j, "verdict"))
		return final(s, j);
	details = json_object_get(j, "details");
	note_id(s, details ? details : j);
	say_warning(s, j);
	json_decref(j);
	if (!s->sub_id)
		return api_error(
			s, "POST %s: the answer names no submission id", path);
	return GO_POLL;
}

static int submit_stream(struct submit *s)
{
	struct kb_buf path = {0};
	struct kb_api_resp r;
	struct kb_api_stream st = {on_data, on_tick, s};
	char err[1024];
	int rc, ec;

	build_path(s, &path, 0);
	s->sse = kb_sse_new(0, on_event, s);
	if (!s->sse || !path.data) {
		kb_buf_free(&path);
		return api_error(s, "%s", "out of memory");
	}
	rc = kb_api_post_file(s->api, path.data, "file", s->base, s->code,
			      s->len, &st, s->timeout_s, STALL_S, &r, err,
			      sizeof(err));
	kb_sse_finish(s->sse);
	if (rc == -EINTR) {
		ec = interrupted(s);
	} else if (s->bad[0]) {
		ec = api_error(s, "%s", s->bad);
	} else if (s->result) {
		json_t *j = s->result;
		s->result = NULL;
		ec = final(s, j);
	} else if (s->error) {
		ec = error_event(s);
	} else if (s->streamed || (rc == 0 && kb_api_ok(&r) &&
				   kb_api_is_type(&r, "text/event-stream"))) {
		/* The stream ended, or broke, before its final event. */
		prog_end(&s->prog);
		kb_cli_err("the event stream ended without a result%s%s",
			   rc < 0 ? ": " : "", rc < 0 ? err : "");
		if (s->sub_id) {
			kb_cli_err(
				"following submission %llu by polling instead",
				s->sub_id);
			ec = GO_POLL;
		} else {
			ec = KB_EXIT_API;
		}
	} else if (rc < 0) {
		ec = api_error(s, "%s", err);
	} else if (r.status == 404 || r.status == 405) {
		ec = GO_FALLBACK;
	} else if (!kb_api_ok(&r)) {
		ec = http_error(s, path.data, &r);
	} else {
		ec = plain_answer(s, path.data, &r);
	}
	kb_api_resp_free(&r);
	kb_buf_free(&path);
	return ec;
}

static int submit_async(struct submit *s)
{
	struct kb_buf path = {0};
	struct kb_api_resp r;
	char err[1024];
	int rc, ec;

	build_path(s, &path, 1);
	if (!path.data)
		return api_error(s, "%s", "out of memory");
	rc = kb_api_post_file(s->api, path.data, "file", s->base, s->code,
			      s->len, NULL, ASYNC_TIMEOUT_S, 0, &r, err,
			      sizeof(err));
	if (rc == -EINTR)
		ec = interrupted(s);
	else if (rc < 0)
		ec = api_error(s, "%s", err);
	else if (!kb_api_ok(&r))
		ec = http_error(s, path.data, &r);
	else
		ec = plain_answer(s, path.data, &r);
	kb_api_resp_free(&r);
	kb_buf_free(&path);
	return ec;
}

/* Sleeps sec seconds in short steps. Returns -1 if interrupted. */
static int nap(struct submit *s, double sec)
{
	double end = kb_mono_s() + sec, last = kb_mono_s();

	while (!kb_api_interrupted) {
		double now = kb_mono_s();
		if (now >= end)
			return 0;
		if (now - last >= 1.0) {
			prog_tick(&s->prog);
			last = now;
		}
		double left = end - now;
		struct timespec ts = {0,
				      (long)((left < 0.1 ? left : 0.1) * 1e9)};
		nanosleep(&ts, NULL);
	}
	return -1;
}

static int submit_poll(struct submit *s)
{
	struct kb_buf path = {0};
	char err[1024], msg[64];
	double delay = POLL_MIN_S, deadline = s->prog.t0 + (double)s->timeout_s;
	int failures = 0, ec = KB_EXIT_API;

	snprintf(msg, sizeof(msg), "submission %llu", s->sub_id);
	kb_api_path_add(&path, "user");
	kb_api_path_add(&path, "submissions");
	kb_buf_printf(&path, "/%llu", s->sub_id);
	if (!path.data)
		return api_error(s, "%s", "out of memory");
	prog_show(&s->prog, "queued", msg, 0);
	for (;;) {
		struct kb_api_resp r;
		json_t *j;
		int rc;

		if (nap(s, delay) < 0) {
			ec = interrupted(s);
			break;
		}
		delay = delay * 1.5 > POLL_MAX_S ? POLL_MAX_S : delay * 1.5;
		rc = kb_api_call(s->api, "GET", path.data, NULL,
				 POLL_CALL_TIMEOUT_S, &r, err, sizeof(err));
		if (rc == -EINTR) {
			kb_api_resp_free(&r);
			ec = interrupted(s);
			break;
		}
		if (rc < 0 || r.status >= 500 || r.status == 429) {
			/* Transient: the server restarts, a proxy hiccups. */
			if (rc == 0)
				kb_api_error_text(&r, err, sizeof(err));
			kb_api_resp_free(&r);
			if (++failures > POLL_RETRIES) {
				ec = api_error(s, "giving up polling: %s", err);
				break;
			}
			continue;
		}
		if (!kb_api_ok(&r)) {
			kb_api_error_text(&r, err, sizeof(err));
			kb_api_resp_free(&r);
			ec = api_error(s, "polling the submission: %s", err);
			break;
		}
		j = kb_api_json(&r, err, sizeof(err));
		kb_api_resp_free(&r);
		if (!j) {
			ec = api_error(s, "polling the submission: %s", err);
			break;
		}
		failures = 0;
		if (kb_result_done(j)) {
			ec = final(s, j);
			break;
		}
		const char *stage = jstr(j, "stage");
		prog_show(&s->prog, stage ? stage : jstr(j, "status"), msg, 0);
		json_decref(j);
		if (kb_mono_s() > deadline) {
			prog_end(&s->prog);
			kb_cli_err(
				"no result after %ld s; submission %llu is still "
				"running ('kb submissions show %llu' later)",
				s->timeout_s, s->sub_id, s->sub_id);
			ec = KB_EXIT_API;
			break;
		}
	}
	kb_buf_free(&path);
	return ec;
}

/* ---- the command ---- */

static int mode_ok(const char *in, char *out, size_t n)
{
	static const char *const modes[] = {"test", "benchmark", "profile",
					    "leaderboard"};
	size_t i;

	for (i = 0; in[i] && i + 1 < n; i++)
		out[i] = (char)tolower((unsigned char)in[i]);
	out[i] = '\0';
	for (i = 0; i < sizeof(modes) / sizeof(modes[0]); i++)
		if (strcmp(out, modes[i]) == 0)
			return 1;
	return 0;
}

static int run_submit(struct kb_cli *c, int argc, char **argv)
{
	static const struct option longopts[] = {
		KB_COMMON_LONGOPTS,        {"leaderboard", 1, NULL, 'l'},
		{"gpu", 1, NULL, 'g'},     {"mode", 1, NULL, 'm'},
		{"timeout", 1, NULL, 't'}, {"no-stream", 0, NULL, 'n'},
		{NULL, 0, NULL, 0},
	};
	const char *flag_lb = NULL, *flag_gpu = NULL, *mode = "test";
	struct submit s = {.c = c, .timeout_s = DEFAULT_TIMEOUT_S};
	struct kb_directives d;
	char err[512], warn[512];
	int opt, no_stream = 0, ec, rc;

	kb_cli_getopt_reset(argv, "kb submit");
	while ((opt = getopt_long(argc, argv, "hql:g:m:", longopts, NULL)) !=
	       -1) {
		int done = -1;
		if (kb_cli_common_opt(c, &kb_cmd_submit, opt, &done)) {
			if (done >= 0)
				return done;
			continue;
		}
		switch (opt) {
		case 'l':
			flag_lb = optarg;
			break;
		case 'g':
			flag_gpu = optarg;
			break;
		case 'm':
			mode = optarg;
			break;
		case 't': {
			char *end;
			long v = strtol(optarg, &end, 10);
			if (*end || v <= 0)
				return kb_cli_usage(
					"submit", "--timeout needs a "
						  "positive number of seconds");
			s.timeout_s = v;
			break;
		}
		case 'n':
			no_stream = 1;
			break;
		}
	}
	if (optind != argc - 1)
		return kb_cli_usage("submit",
				    optind >= argc
					    ? "which file? (kb submit FILE)"
					    : "one file at a time");
	if (!mode_ok(mode, s.mode, sizeof(s.mode)))
		return kb_cli_usage("submit",
				    "unknown mode '%s' (test, benchmark, "
				    "profile or leaderboard)",
				    mode);
	s.file = argv[optind];
	s.base = strrchr(s.file, '/') ? strrchr(s.file, '/') + 1 : s.file;
	if (!*s.base)
		return kb_cli_usage("submit", "'%s' is not a file", s.file);
	rc = kb_read_file(s.file, FILE_MAX, &s.code, &s.len);
	if (rc < 0) {
		kb_cli_err("submit: cannot read %s: %s", s.file,
			   rc == -EFBIG ? "larger than 16 MiB" : strerror(-rc));
		return KB_EXIT_USAGE;
	}
	if (s.len == 0) {
		free(s.code);
		return kb_cli_usage("submit", "%s is empty", s.file);
	}
	if (kb_directives_parse(s.code, s.len, &d, err, sizeof(err)) < 0 ||
	    kb_directives_resolve(&d, flag_lb, flag_gpu, &s.t, warn,
				  sizeof(warn), err, sizeof(err)) < 0) {
		free(s.code);
		return kb_cli_usage("submit", "%s: %s", s.file, err);
	}
	if (*warn)
		fputs(warn, stderr);
	for (size_t i = 0; s.t.leaderboard[i]; i++)
		s.lb_path[i] = (char)tolower((unsigned char)s.t.leaderboard[i]);

	s.api = kb_cli_api(c, 1, &ec);
	if (!s.api) {
		free(s.code);
		return ec;
	}
	s.prog.on = !c->quiet;
	s.prog.tty = isatty(STDERR_FILENO);
	s.prog.t0 = kb_mono_s();
	snprintf(err, sizeof(err), "%s to %s on %s (%s)", s.base,
		 s.t.leaderboard, s.t.gpu, s.mode);
	prog_show(&s.prog, "submitting", err, 1);

	ec = no_stream ? GO_FALLBACK : submit_stream(&s);
	if (ec == GO_FALLBACK)
		ec = submit_async(&s);
	if (ec == GO_POLL)
		ec = submit_poll(&s);
	json_decref(s.result);
	json_decref(s.error);
	kb_sse_destroy(s.sse);
	free(s.code);
	return ec;
}

const struct kb_cmd kb_cmd_submit = {
	.name = "submit",
	.summary = "submit a file and wait for its result",
	.run = run_submit,
	.help = "NAME\n"
		"    kb submit - submit a kernel and wait for its evaluation\n"
		"\n"
		"SYNOPSIS\n"
		"    kb submit [--leaderboard LB] [--gpu GPU] [--mode MODE]\n"
		"              [--timeout SECONDS] [--no-stream] [--json] [--quiet] FILE\n"
		"\n"
		"DESCRIPTION\n"
		"    Sends FILE to leaderboard LB for GPU type GPU and follows its\n"
		"    evaluation: each stage (queued, compiling, testing, benchmarking,\n"
		"    ...) is shown on stderr with the time elapsed since submitting, on\n"
		"    one live line per stage on a terminal, one line per update\n"
		"    otherwise. When the result arrives, the report goes to stdout,\n"
		"    followed by a summary line:\n"
		"\n"
		"        kernel.cu on matmul/H100 (submission 42, test): PASSED\n"
		"\n"
		"    The leaderboard and GPU may be given in the file's first lines,\n"
		"    as for popcorn-cli, in either comment style:\n"
		"\n"
		"        #!POPCORN leaderboard vectorsum_cpu\n"
		"        //!POPCORN gpu CPU\n"
		"\n"
		"    --leaderboard and --gpu override these lines (with a note on stderr\n"
		"    when they differ). If a gpu line lists several GPUs, the first is\n"
		"    used. Two different leaderboard (or gpu) lines are an error.\n"
		"\n"
		"    A warning from the server (no worker online for the GPU: the\n"
		"    submission waits in the queue until one starts) is printed on\n"
		"    stderr as 'kb: warning: ...' before the wait, also with --quiet.\n"
		"\n"
		"    kb uses the streaming endpoint POST /{lb}/{gpu}/{mode}. A server\n"
		"    without it (HTTP 404 or 405) is sent POST /submission/{lb}/{gpu}/{mode}\n"
		"    instead, and kb polls GET /user/submissions/{id}, every 0.5 s at\n"
		"    first and backing off to every 5 s, until it is done. If the stream\n"
		"    breaks after the server named the submission, kb polls it too.\n"
		"\n"
		"OPTIONS\n"
		"    -l, --leaderboard LB\n"
		"        The leaderboard (problem). Sent in lower case, as popcorn-cli\n"
		"        does. Default: the file's 'leaderboard' directive.\n"
		"    -g, --gpu GPU\n"
		"        The GPU type, e.g. H100, MI300 or CPU. Default: the file's 'gpu'\n"
		"        directive.\n"
		"    -m, --mode MODE\n"
		"        test (correctness only; the default), benchmark (timings),\n"
		"        profile, or leaderboard (tests, then ranked timed runs with a\n"
		"        public and a secret seed; the score counts only if both pass).\n"
		"    --timeout SECONDS\n"
		"        Give up waiting after this long (default 3600). The submission\n"
		"        keeps running on the server; exit status 3.\n"
		"    --no-stream\n"
		"        Skip the streaming endpoint: submit, then poll.\n"
		"    --json\n"
		"        Print the final result as JSON on stdout instead of the report:\n"
		"        the data of the 'result' event (upstream: {\"status\",\n"
		"        \"results\", \"reports\"}), or, after polling, the submission\n"
		"        record. If the server reports an error, its 'error' event data.\n"
		"    -q, --quiet\n"
		"        No progress on stderr (warnings and errors still go there).\n"
		"    Global options (--api-url, --config) may be given here too.\n"
		"\n"
		"EXIT STATUS\n"
		"    0 the submission passed; 1 it was evaluated and did not pass\n"
		"    (wrong, compile error, crash, timeout, suspect timing); 2 usage\n"
		"    error (no file, unknown mode, no leaderboard or GPU, no CLI id);\n"
		"    3 API or network error, or the platform could not evaluate it;\n"
		"    130 interrupted (the submission keeps running on the server).\n"
		"\n"
		"EXAMPLES\n"
		"    kb submit kernel.cu\n"
		"    kb submit --gpu A100 --mode benchmark kernel.cu\n"
		"    kb submit -l vectorsum_cpu -g CPU -m leaderboard sum.c && echo ranked\n"
		"    kb --quiet --json submit sum.c > result.json\n",
};
