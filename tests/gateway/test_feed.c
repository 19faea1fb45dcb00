/* The anonymous live feed (GET /web/events) against a real kb-gateway
 * (issue 30, attacks 5 and 6): its streams are capped per client address
 * and in all, below the connection cap, so /health and signed-in API
 * calls still answer with every cap reached; a stream ends after its
 * lifetime; a closed board never appears on it (nor in an anonymous
 * /leaderboards). And /metrics (attack 7) is not on the API port. The
 * pages say whether a gpu has a worker, and follow workers' heartbeats
 * (issue 35 item 3).
 *
 * Real sockets on loopback only: each "client address" is one of
 * 127.0.0.0/8, all of which is loopback on Linux. Counts are bounded
 * (at most 80 sockets) and every wait has a deadline; how long /health
 * took is printed as a measure, not judged. */
#include <arpa/inet.h>
#include <check.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "gw_env.h"
#include "kb_budget.h"
#include "kb_check_main.h"
#include "kb_util.h"

static struct gw_env E;

/* A GET from source address 127.0.0.<host>; returns the socket with the
 * status in *status (0: the connection closed without an answer). The
 * socket stays open for a stream. */
static int raw_get_port(int host, int port, const char *path, int *status);

static int raw_get(int host, const char *path, int *status)
{
	return raw_get_port(host, E.port, path, status);
}

static int raw_get_port(int host, int port, const char *path, int *status)
{
	struct sockaddr_in src = {.sin_family = AF_INET}, dst = src;
	char req[256], buf[2048] = "";
	size_t n = 0;
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

	ck_assert_int_ge(fd, 0);
	src.sin_addr.s_addr = htonl(0x7f000000u | (unsigned)host);
	dst.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	dst.sin_port = htons((uint16_t)port);
	ck_assert_int_eq(bind(fd, (struct sockaddr *)&src, sizeof(src)), 0);
	*status = 0;
	if (connect(fd, (struct sockaddr *)&dst, sizeof(dst)) < 0)
		return fd;
	/* Connection: close, so the end of a response is the end of the
	 * socket (a kept-alive one would idle until the server's timeout). */
	snprintf(req, sizeof(req),
		 "GET %s HTTP/1.1\r\nHost: 127.0.0.1\r\n"
		 "Connection: close\r\n\r\n",
		 path);
	if (write(fd, req, strlen(req)) != (ssize_t)strlen(req))
		return fd;
	/* The status line; a deadline long enough for a loaded machine. */
	for (double end = kb_mono_s() + 30; n < sizeof(buf) - 1 &&
					    !strstr(buf, "\r\n") &&
					    kb_mono_s() < end;) {
		struct pollfd p = {fd, POLLIN, 0};
		if (poll(&p, 1, 200) <= 0)
			continue;
		ssize_t k = read(fd, buf + n, sizeof(buf) - 1 - n);
		if (k <= 0)
			break;
		n += (size_t)k;
		buf[n] = '\0';
	}
	buf[n] = '\0';
	if (strncmp(buf, "HTTP/1.1 ", 9) == 0)
		*status = atoi(buf + 9);
	return fd;
}

/* Reads fd until EOF or the deadline; returns what came (caller frees)
 * and whether it ended in *eof. */
static char *read_until_eof(int fd, double secs, int *eof)
{
	struct kb_buf b = {0};
	char buf[4096];

	*eof = 0;
	kb_buf_append(&b, "", 0);
	for (double end = kb_mono_s() + secs; kb_mono_s() < end;) {
		struct pollfd p = {fd, POLLIN, 0};
		if (poll(&p, 1, 200) <= 0)
			continue;
		ssize_t k = read(fd, buf, sizeof(buf));
		if (k <= 0) {
			*eof = 1;
			break;
		}
		kb_buf_append(&b, buf, (size_t)k);
	}
	return b.data;
}

/* Attack 5: 1,000 idle streams used to take every connection. Here 76
 * are tried from 19 addresses against a cap of 64 connections: the feed
 * takes at most half, four per address, and /health and a signed-in call
 * answer with both caps reached. */
START_TEST(feed_caps_keep_health)
{
	static const char *const env[] = {"KB_HTTP_MAX_CONNECTIONS=64",
					  "KB_WEB_STREAMS_MAX=1000",
					  "KB_WEB_STREAMS_PER_IP=4", NULL};
	int fds[80], nfds = 0, ok = 0, full = 0, per_ip = 0, st;
	char cli[80], uid[40];

	E.extra_env = env;
	gw_env_up(&E, 0, GW_ADMIN_TOKEN);
	gw_create_user(&E, "alice", cli, uid);
	for (int host = 2; host < 21; host++)
		for (int k = 0; k < 4; k++) {
			int fd = raw_get(host, "/web/events", &st);
			ok += st == 200;
			full += st == 503;
			/* A refused request's connection is the connection
			 * cap's business, not the feed's: close it. */
			if (st == 200)
				fds[nfds++] = fd;
			else
				close(fd);
		}
	/* A fifth from an address that holds four. */
	fds[nfds++] = raw_get(2, "/web/events", &st);
	per_ip += st == 429;
	ck_assert_msg(ok == 32, "%d streams open (cap 32 = 64 / 2)", ok);
	ck_assert_int_eq(full, 76 - 32);
	ck_assert_int_eq(per_ip, 1);

	double t0 = kb_mono_s();
	struct gw_resp r = gw_req(&E, "GET", "/health", NULL, NULL, 0);
	kb_budget("feed_caps: /health with every stream cap reached",
		  kb_mono_s() - t0, 1.0, "s");
	ck_assert_int_eq(r.code, 200);
	gw_resp_free(&r);
	json_decref(gw_expect_json(gw_req_cli(&E, "GET", "/user/submissions",
					      cli, NULL),
				   200, "signed-in call"));
	for (int i = 0; i < nfds; i++)
		close(fds[i]);
	gw_stop_clean(&E);
}
END_TEST

/* A stream ends after KB_WEB_STREAM_MAX_S (the browser reconnects). */
START_TEST(feed_stream_lifetime)
{
	static const char *const env[] = {"KB_WEB_STREAM_MAX_S=5", NULL};
	int st, eof;

	E.extra_env = env;
	gw_env_up(&E, 0, GW_ADMIN_TOKEN);
	int fd = raw_get(2, "/web/events", &st);
	ck_assert_int_eq(st, 200);
	free(read_until_eof(fd, 60, &eof));
	ck_assert_msg(eof, "the stream outlived its lifetime");
	close(fd);
	gw_stop_clean(&E);
}
END_TEST

/* Attack 6: a closed board's events never reach the anonymous feed,
 * asked for by name or not, and anonymous /leaderboards does not list
 * it. */
START_TEST(feed_hides_closed_boards)
{
	int st, eof;
	char *got;

	gw_env_up(&E, 1, GW_ADMIN_TOKEN);
	gw_wait_consumer(&E);
	json_decref(gw_expect_json(
		gw_req_admin(&E, "POST",
			     "/admin/leaderboards/gw_gpu_only/visibility",
			     "{\"visibility\":\"closed\"}"),
		200, "close"));
	int by_name = raw_get(2, "/web/events?lb=gw_gpu_only", &st);
	ck_assert_int_eq(st, 404);
	close(by_name);
	int all = raw_get(3, "/web/events", &st);
	ck_assert_int_eq(st, 200);

	/* A Result of the closed board, then one of a public board: the
	 * feed releases them in order, so once the second is heard the
	 * first would have been. */
	Kb__Result res = KB__RESULT__INIT;
	res.leaderboard = "gw_gpu_only";
	res.user_id = "u1";
	gw_produce_result(&E, 7001, "H100", &res);
	res.leaderboard = "gw_sum_cpu";
	gw_produce_result(&E, 7002, "CPU", &res);
	struct kb_buf b = {0};
	kb_buf_append(&b, "", 0);
	for (double end = kb_mono_s() + 90;
	     !strstr(b.data, "7002") && kb_mono_s() < end;) {
		got = read_until_eof(all, 1, &eof);
		kb_buf_append(&b, got, strlen(got));
		free(got);
		if (eof)
			break;
	}
	ck_assert_msg(strstr(b.data, "\"submission_id\":7002"), "%s", b.data);
	ck_assert_msg(!strstr(b.data, "gw_gpu_only"),
		      "the closed board is on the feed: %s", b.data);
	kb_buf_free(&b);
	close(all);

	struct gw_resp r = gw_req(&E, "GET", "/leaderboards", NULL, NULL, 0);
	ck_assert_int_eq(r.code, 200);
	ck_assert_msg(!strstr(r.body, "gw_gpu_only"), "%s", r.body);
	gw_resp_free(&r);
	r = gw_req_admin(&E, "GET", "/leaderboards", NULL);
	ck_assert_msg(strstr(r.body, "gw_gpu_only"), "admins see it");
	gw_resp_free(&r);
	gw_stop_clean(&E);
}
END_TEST

/* Attack 7: /metrics is not on the public API port; its own listener
 * (loopback) serves it, with admin routes counted as one. */
START_TEST(metrics_off_the_api_port)
{
	char env_port[64];
	int port = kb_test_fixed_port(), st, eof;

	snprintf(env_port, sizeof(env_port), "KB_METRICS_PORT=%d", port);
	const char *const env[] = {env_port, NULL};
	E.extra_env = env;
	gw_env_up(&E, 0, GW_ADMIN_TOKEN);
	gw_expect_error(gw_req(&E, "GET", "/metrics", NULL, NULL, 0), 404,
			"metrics on the API port");
	char cli[80], uid[40];
	gw_create_user(&E, "bob", cli, uid);
	int fd = raw_get_port(1, port, "/metrics", &st);
	ck_assert_int_eq(st, 200);
	char *text = read_until_eof(fd, 30, &eof);
	close(fd);
	const char *adm = strstr(text, "route=\"admin");
	ck_assert_msg(adm && strncmp(adm, "route=\"admin\"", 13) == 0,
		      "no admin series: %.300s", adm ? adm : text);
	ck_assert_msg(!strstr(text, "admin_users"), "per-admin-route series");
	free(text);
	gw_stop_clean(&E);
}
END_TEST

/* A heartbeat of an idle worker on gpu, as kb-worker sends it. */
static void heartbeat(const char *gpu, const char *worker)
{
	Kb__Progress p = KB__PROGRESS__INIT;
	Kb__ResultEvent ev = KB__RESULT_EVENT__INIT;

	p.worker = (char *)worker;
	ev.gpu = (char *)gpu;
	ev.event_case = KB__RESULT_EVENT__EVENT_PROGRESS;
	ev.progress = &p;
	gw_produce_event(&E, &ev);
}

/* GETs path until its page holds needle (and not unwanted, if given), for
 * up to secs; a CPU heartbeat before each try when beat. Returns 1 if it
 * did, else 0 with the last page in last. */
static int page_until(const char *path, const char *needle,
		      const char *unwanted, double secs, int beat, char *last,
		      size_t last_size)
{
	for (double end = kb_mono_s() + secs; kb_mono_s() < end;) {
		if (beat)
			heartbeat("CPU", "w-cpu");
		struct gw_resp r = gw_req(&E, "GET", path, NULL, NULL, 0);
		int ok = r.code == 200 && strstr(r.body, needle) &&
			 !(unwanted && strstr(r.body, unwanted));
		snprintf(last, last_size, "%ld %s", r.code,
			 r.body ? r.body : "");
		gw_resp_free(&r);
		if (ok)
			return 1;
		usleep(200000);
	}
	return 0;
}

/* Issue 35 item 3: a gpu no worker serves says so on its board and on the
 * index; one with a live worker says how many instead. The page cache
 * (ten minutes here) does not hide either change, and a live page hears of
 * it on its event stream. */
START_TEST(pages_say_workers)
{
	static const char *const env[] = {"KB_WORKER_STALE_S=4",
					  "KB_WEB_CACHE_MS=600000", NULL};
	static char last[1 << 16];
	int st, eof;

	E.extra_env = env;
	gw_env_up(&E, 1, GW_ADMIN_TOKEN);
	gw_wait_consumer(&E);
	/* After a stale time without a heartbeat: no worker anywhere. */
	ck_assert_msg(page_until("/web/lb/gw_gpu_only",
				 "No worker online for H100: submissions "
				 "wait until one starts",
				 NULL, 30, 0, last, sizeof(last)),
		      "no notice on the H100 board: %.2000s", last);
	ck_assert_msg(page_until("/web/lb/gw_sum_cpu",
				 "No worker online for CPU", NULL, 10, 0, last,
				 sizeof(last)),
		      "no notice on the CPU board: %.2000s", last);
	ck_assert_msg(page_until("/", "No worker online for H100", NULL, 10, 0,
				 last, sizeof(last)),
		      "no notice on the index: %.2000s", last);

	/* A worker's heartbeats: the CPU board (cached above) drops its
	 * notice, the H100 board keeps its own, the board's stream hears. */
	int fd = raw_get(2, "/web/events?lb=gw_sum_cpu", &st);
	ck_assert_int_eq(st, 200);
	ck_assert_msg(page_until("/web/lb/gw_sum_cpu", "1 worker online",
				 "No worker online for CPU", 15, 1, last,
				 sizeof(last)),
		      "the CPU board ignores its worker: %.2000s", last);
	ck_assert_msg(page_until("/", "1 worker online",
				 "No worker online for CPU", 5, 1, last,
				 sizeof(last)),
		      "the index ignores the CPU worker: %.2000s", last);
	ck_assert_msg(strstr(last, "No worker online for H100"), "%.2000s",
		      last);
	struct gw_resp r =
		gw_req(&E, "GET", "/web/lb/gw_gpu_only", NULL, NULL, 0);
	ck_assert_msg(strstr(r.body, "No worker online for H100"), "%.2000s",
		      r.body);
	gw_resp_free(&r);
	char *got = read_until_eof(fd, 2, &eof);
	ck_assert_msg(strstr(got, "event: workers"), "no workers event: %s",
		      got);
	free(got);
	close(fd);

	/* Heartbeats stop: after the stale time the notice is back. */
	ck_assert_msg(page_until("/web/lb/gw_sum_cpu",
				 "No worker online for CPU", NULL, 20, 0, last,
				 sizeof(last)),
		      "the CPU board still shows a gone worker: %.2000s", last);
	gw_stop_clean(&E);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("gateway_feed");
	TCase *tc = tcase_create("feed");

	tcase_set_timeout(tc, 240);
	tcase_add_test(tc, feed_caps_keep_health);
	tcase_add_test(tc, feed_stream_lifetime);
	tcase_add_test(tc, feed_hides_closed_boards);
	tcase_add_test(tc, metrics_off_the_api_port);
	tcase_add_test(tc, pages_say_workers);
	suite_add_tcase(s, tc);
	return kb_check_run(s);
}
