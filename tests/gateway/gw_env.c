#include "gw_env.h"

#include <check.h>
#include <curl/curl.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "kb_curl_body.h"
#include "kb_kafka.h"
#include "kb_redis.h"
#include "kb_util.h"

static void sleep_ms(int ms)
{
	struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
	nanosleep(&ts, NULL);
}

static void start_gateway(struct gw_env *e, const char *admin_token)
{
	static char port[32], redis[160], brokers[200], token[128],
		problems[512];
	char *argv[] = {KB_BINARY_DIR "/gateway/kb-gateway", NULL};
	/* With the broker down, a publish gives up after 1.5 s, so the
	 * "Kafka down" tests stay short; with it up, a publish on a loaded
	 * machine gets the time it may need. */
	char *env[40] = {port,
			 redis,
			 brokers,
			 token,
			 problems,
			 "KB_HTTP_ADDR=127.0.0.1",
			 "KB_HTTP_THREADS=4",
			 e->have_broker ? "KB_KAFKA_TIMEOUT_MS=10000"
					: "KB_KAFKA_TIMEOUT_MS=1500",
			 "KB_LOG_LEVEL=debug",
			 "KB_LOG_JSON=0",
			 "KB_DRAIN_S=10",
			 NULL};
	int n = 11;

	/* putenv() in the child: later entries override earlier ones. */
	for (int i = 0; e->extra_env && e->extra_env[i] && n < 39; i++)
		env[n++] = (char *)e->extra_env[i];
	env[n] = NULL;

	static int nstarts;
	snprintf(port, sizeof(port), "KB_HTTP_PORT=0");
	snprintf(redis, sizeof(redis), "KB_REDIS_URL=%s", e->redis.url);
	snprintf(brokers, sizeof(brokers), "KB_KAFKA_BROKERS=%s", e->brokers);
	snprintf(token, sizeof(token), "KB_ADMIN_TOKEN=%s",
		 admin_token ? admin_token : "");
	snprintf(problems, sizeof(problems), "KB_PROBLEMS=%s",
		 KB_GW_TEST_PROBLEMS);
	snprintf(e->log, sizeof(e->log), "/tmp/kb-test-gateway-%d-%d.log",
		 getpid(), ++nstarts);
	unlink(e->log);
	e->gw = kb_test_spawn(argv, env, e->log);
	ck_assert_int_gt(e->gw, 0);
	/* The gateway binds port 0 itself and logs the port it got. */
	e->port = kb_test_wait_listening(e->gw, e->log, 60000);
	ck_assert_msg(e->port > 0, "kb-gateway did not start; log in %s",
		      e->log);
	snprintf(e->api, sizeof(e->api), "http://127.0.0.1:%d", e->port);

	for (int waited = 0;; waited += 50) {
		struct gw_resp r = gw_req(e, "GET", "/health", NULL, NULL, 0);
		long code = r.code;
		gw_resp_free(&r);
		if (code == 200)
			break;
		int status;
		ck_assert_msg(waitpid(e->gw, &status, WNOHANG) == 0,
			      "kb-gateway exited at startup; log in %s",
			      e->log);
		ck_assert_msg(waited < 60000,
			      "kb-gateway not healthy; log in %s", e->log);
		sleep_ms(50);
	}
}

void gw_env_up(struct gw_env *e, int real_broker, const char *admin_token)
{
	char err[256];
	const char *const *extra = e->extra_env;

	memset(e, 0, sizeof(*e));
	e->extra_env = extra;
	curl_global_init(CURL_GLOBAL_DEFAULT);
	ck_assert_int_eq(kb_test_redis_start(&e->redis), 0);
	if (real_broker) {
		ck_assert_int_eq(kb_test_devbroker_start(&e->broker), 0);
		e->have_broker = 1;
		snprintf(e->brokers, sizeof(e->brokers), "%s", e->broker.url);
	} else {
		/* A loopback port that refuses connections: the broker is
		 * down (held bound for the test's life, so no other test's
		 * broker can appear there). */
		int port = kb_test_refused_port(&e->dead_fd);
		ck_assert_int_gt(port, 0);
		snprintf(e->brokers, sizeof(e->brokers), "127.0.0.1:%d", port);
	}
	start_gateway(e, admin_token);
	e->rc = kb_redis_connect(e->redis.url, 2000, err, sizeof(err));
	ck_assert_msg(e->rc != NULL, "redis: %s", err);

	const char *boards[] = {"gw_sum_cpu", "gw_gpu_only"};
	for (int i = 0; i < 2; i++) {
		redisReply *r = redisCommand(e->rc, "HGET kb:lb:%s secret_seed",
					     boards[i]);
		ck_assert_ptr_nonnull(r);
		ck_assert_msg(r->type == REDIS_REPLY_STRING,
			      "no secret seed for %s", boards[i]);
		ck_assert_uint_ge(r->len, 1);
		snprintf(e->seeds[e->nseeds++], sizeof(e->seeds[0]), "%s",
			 r->str);
		freeReplyObject(r);
	}
	/* Any further board (a competition file in extra_env) too. */
	redisReply *keys = redisCommand(e->rc, "KEYS kb:lb:*");
	for (size_t i = 0; keys && i < keys->elements && e->nseeds < 8; i++) {
		redisReply *r = redisCommand(e->rc, "HGET %s secret_seed",
					     keys->element[i]->str);
		int dup = 0;
		for (int k = 0;
		     r && r->type == REDIS_REPLY_STRING && k < e->nseeds; k++)
			dup |= strcmp(e->seeds[k], r->str) == 0;
		if (r && r->type == REDIS_REPLY_STRING && !dup)
			snprintf(e->seeds[e->nseeds++], sizeof(e->seeds[0]),
				 "%s", r->str);
		if (r)
			freeReplyObject(r);
	}
	if (keys)
		freeReplyObject(keys);
}

void gw_env_restart_gateway(struct gw_env *e, const char *admin_token)
{
	start_gateway(e, admin_token);
}

int gw_env_stop_gateway(struct gw_env *e)
{
	int status = kb_test_stop(e->gw, 15000);
	e->gw = 0;
	return status;
}

struct source {
	const char *data;
	size_t len, pos;
};

static size_t source_read(char *buf, size_t size, size_t nmemb, void *ud)
{
	struct source *s = ud;
	size_t n = size * nmemb;

	if (n > s->len - s->pos)
		n = s->len - s->pos;
	if (n > 65536)
		n = 65536;
	memcpy(buf, s->data + s->pos, n);
	s->pos += n;
	return n;
}

static void check_no_seed(const struct gw_env *e, const char *what,
			  const char *data, size_t len)
{
	for (int i = 0; data && i < e->nseeds; i++)
		ck_assert_msg(!memmem(data, len, e->seeds[i],
				      strlen(e->seeds[i])),
			      "%s contains a secret seed", what);
}

static struct gw_resp perform(struct gw_env *e, CURL *c, const char *path,
			      struct curl_slist *h)
{
	char url[8192];
	struct kb_curl_body body = {0}, hdr = {0};
	struct gw_resp r = {0};

	snprintf(url, sizeof(url), "%s%s", e->api, path);
	curl_easy_setopt(c, CURLOPT_URL, url);
	curl_easy_setopt(c, CURLOPT_HTTPHEADER, h);
	curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, kb_curl_body_write);
	curl_easy_setopt(c, CURLOPT_WRITEDATA, &body);
	curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, kb_curl_body_write);
	curl_easy_setopt(c, CURLOPT_HEADERDATA, &hdr);
	curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, 30000L);
	curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
	if (curl_easy_perform(c) == CURLE_OK)
		curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &r.code);
	r.body = body.data ? body.data : calloc(1, 1);
	r.len = body.len;
	r.headers = hdr.data ? hdr.data : calloc(1, 1);
	check_no_seed(e, "a response body", r.body, r.len);
	check_no_seed(e, "a response header", r.headers, strlen(r.headers));
	curl_slist_free_all(h);
	curl_easy_cleanup(c);
	return r;
}

static struct curl_slist *header_list(const char *const *headers)
{
	struct curl_slist *h = NULL;

	for (int i = 0; headers && headers[i]; i++)
		h = curl_slist_append(h, headers[i]);
	return h;
}

struct gw_resp gw_req(struct gw_env *e, const char *method, const char *path,
		      const char *const *headers, const void *body, size_t len)
{
	CURL *c = curl_easy_init();

	if (strcmp(method, "HEAD") == 0)
		curl_easy_setopt(c, CURLOPT_NOBODY, 1L);
	else if (strcmp(method, "GET") != 0)
		curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, method);
	if (body || strcmp(method, "POST") == 0) {
		curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE,
				 (curl_off_t)len);
		curl_easy_setopt(c, CURLOPT_POSTFIELDS, body ? body : "");
	}
	return perform(e, c, path, header_list(headers));
}

struct gw_resp gw_req_chunked(struct gw_env *e, const char *path,
			      const char *const *headers, const void *body,
			      size_t len)
{
	CURL *c = curl_easy_init();
	struct source src = {body, len, 0};
	struct curl_slist *h = header_list(headers);

	h = curl_slist_append(h, "Transfer-Encoding: chunked");
	curl_easy_setopt(c, CURLOPT_POST, 1L);
	curl_easy_setopt(c, CURLOPT_READFUNCTION, source_read);
	curl_easy_setopt(c, CURLOPT_READDATA, &src);
	return perform(e, c, path, h);
}

struct gw_resp gw_req_form(struct gw_env *e, const char *path,
			   const char *cli_id, const char *field,
			   const char *filename, const void *data, size_t len)
{
	CURL *c = curl_easy_init();
	curl_mime *mime = curl_mime_init(c);
	curl_mimepart *part = curl_mime_addpart(mime);
	struct curl_slist *h = NULL;
	char hdr[256];

	curl_mime_name(part, field);
	curl_mime_filename(part, filename);
	curl_mime_data(part, data, len);
	if (cli_id) {
		snprintf(hdr, sizeof(hdr), "X-Popcorn-Cli-Id: %s", cli_id);
		h = curl_slist_append(h, hdr);
	}
	curl_easy_setopt(c, CURLOPT_MIMEPOST, mime);
	struct gw_resp r = perform(e, c, path, h);
	curl_mime_free(mime);
	return r;
}

void gw_resp_free(struct gw_resp *r)
{
	free(r->body);
	free(r->headers);
	memset(r, 0, sizeof(*r));
}

json_t *gw_json(const struct gw_resp *r)
{
	json_error_t err;
	json_t *j = json_loadb(r->body, r->len, 0, &err);

	ck_assert_msg(j != NULL, "HTTP %ld body is not JSON (%s): %s", r->code,
		      err.text, r->body);
	return j;
}

void gw_expect_error(struct gw_resp r, long code, const char *what)
{
	ck_assert_msg(r.code == code, "%s: HTTP %ld, expected %ld: %s", what,
		      r.code, code, r.body);
	json_t *j = gw_json(&r);
	const char *detail = json_string_value(json_object_get(j, "detail"));
	ck_assert_msg(detail && *detail, "%s: no detail in %s", what, r.body);
	ck_assert_msg(strstr(r.headers, "application/json") != NULL,
		      "%s: not JSON: %s", what, r.headers);
	json_decref(j);
	gw_resp_free(&r);
}

char *gw_multipart(const char *boundary, const char *field,
		   const char *filename, const void *data, size_t len,
		   size_t *out_len)
{
	char head[512], tail[128];
	int hn =
		snprintf(head, sizeof(head),
			 "--%s\r\nContent-Disposition: form-data; name=\"%s\"; "
			 "filename=\"%s\"\r\nContent-Type: text/plain\r\n\r\n",
			 boundary, field, filename);
	int tn = snprintf(tail, sizeof(tail), "\r\n--%s--\r\n", boundary);
	char *out = malloc((size_t)hn + len + (size_t)tn + 1);

	memcpy(out, head, (size_t)hn);
	memcpy(out + hn, data, len);
	memcpy(out + hn + len, tail, (size_t)tn + 1);
	*out_len = (size_t)hn + len + (size_t)tn;
	return out;
}

void gw_create_user(struct gw_env *e, const char *name, char cli_id[80],
		    char user_id[40])
{
	char body[128];
	const char *h[] = {"Authorization: Bearer " GW_ADMIN_TOKEN,
			   "Content-Type: application/json", NULL};

	snprintf(body, sizeof(body), "{\"name\": \"%s\"}", name);
	struct gw_resp r =
		gw_req(e, "POST", "/admin/users", h, body, strlen(body));
	ck_assert_msg(r.code == 200, "create user: HTTP %ld %s", r.code,
		      r.body);
	json_t *j = gw_json(&r);
	const char *cli = json_string_value(json_object_get(j, "cli_id"));
	const char *uid = json_string_value(json_object_get(j, "user_id"));
	ck_assert_ptr_nonnull(cli);
	ck_assert_ptr_nonnull(uid);
	ck_assert_str_eq(json_string_value(json_object_get(j, "name")), name);
	snprintf(cli_id, 80, "%s", cli);
	snprintf(user_id, 40, "%s", uid);
	json_decref(j);
	gw_resp_free(&r);
}

long gw_count_keys(struct gw_env *e, const char *pattern)
{
	redisReply *r = redisCommand(e->rc, "KEYS %s", pattern);
	long n;

	ck_assert_ptr_nonnull(r);
	n = r->type == REDIS_REPLY_ARRAY ? (long)r->elements : -1;
	freeReplyObject(r);
	return n;
}

struct gw_resp gw_req_cli(struct gw_env *e, const char *method,
			  const char *path, const char *cli, const char *json)
{
	char hcli[200];
	const char *h[3] = {NULL, NULL, NULL};
	int n = 0;

	if (cli) {
		snprintf(hcli, sizeof(hcli), "X-Popcorn-Cli-Id: %s", cli);
		h[n++] = hcli;
	}
	if (json)
		h[n++] = "Content-Type: application/json";
	return gw_req(e, method, path, h, json, json ? strlen(json) : 0);
}

struct gw_resp gw_req_admin(struct gw_env *e, const char *method,
			    const char *path, const char *json)
{
	const char *h[] = {"Authorization: Bearer " GW_ADMIN_TOKEN,
			   "Content-Type: application/json", NULL};

	return gw_req(e, method, path, h, json, json ? strlen(json) : 0);
}

struct gw_resp gw_submit(struct gw_env *e, const char *path, const char *cli,
			 const char *code)
{
	return gw_req_form(e, path, cli, "file", "submission.c", code,
			   strlen(code));
}

json_t *gw_expect_json(struct gw_resp r, long code, const char *what)
{
	ck_assert_msg(r.code == code, "%s: HTTP %ld, expected %ld: %s", what,
		      r.code, code, r.body);
	json_t *j = gw_json(&r);
	gw_resp_free(&r);
	return j;
}

void gw_wait_consumer(struct gw_env *e)
{
	ck_assert_msg(
		kb_test_wait_file(e->log, "kafka: group=kb-gateway.", 60000,
				  NULL, 0) == 0 &&
			kb_test_wait_file(e->log, " assigned ", 60000, NULL,
					  0) == 0,
		"the gateway's kb.results consumer got no partitions; log %s",
		e->log);
	/* Assigned is not yet reading: the consumer starts at the newest
	 * offset once it has fetched it, and an event produced before then
	 * passes it by. A worker's heartbeat on another device, said again
	 * until the gateway lists it, shows that it reads. */
	double end = kb_mono_s() + 60.0;
	for (;;) {
		gw_produce_progress(e, 0, "H100", KB__STAGE__STAGE_UNSPECIFIED,
				    "kb-test-live");
		for (int t = 0; t < 10; t++) {
			struct gw_resp r = gw_req(
				e, "GET", "/runner_queue/H100", NULL, NULL, 0);
			int live = r.code == 200 && r.body &&
				   strstr(r.body, "kb-test-live");
			gw_resp_free(&r);
			if (live)
				return;
			sleep_ms(100);
		}
		ck_assert_msg(
			kb_mono_s() < end,
			"the gateway's kb.results consumer read nothing; log %s",
			e->log);
	}
}

void gw_produce_event(struct gw_env *e, const Kb__ResultEvent *ev)
{
	static kb_producer *p;
	char err[256], key[32];
	size_t len = kb__result_event__get_packed_size(ev);
	uint8_t *buf = malloc(len + 1);

	if (!p)
		p = kb_producer_new(e->brokers, "gw-test", NULL, err,
				    sizeof(err));
	ck_assert_msg(p != NULL, "producer: %s", err);
	kb__result_event__pack(ev, buf);
	snprintf(key, sizeof(key), "%llu",
		 (unsigned long long)ev->submission_id);
	ck_assert_msg(kb_producer_send(p, KB_TOPIC_RESULTS, key, strlen(key),
				       buf, len, 10000, err, sizeof(err)) == 0,
		      "produce: %s", err);
	free(buf);
}

void gw_produce_result(struct gw_env *e, uint64_t id, const char *gpu,
		       const Kb__Result *r)
{
	Kb__ResultEvent ev = KB__RESULT_EVENT__INIT;

	ev.submission_id = id;
	ev.gpu = (char *)gpu;
	ev.event_case = KB__RESULT_EVENT__EVENT_RESULT;
	ev.result = (Kb__Result *)r;
	gw_produce_event(e, &ev);
}

void gw_produce_progress(struct gw_env *e, uint64_t id, const char *gpu,
			 Kb__Stage stage, const char *worker)
{
	Kb__Progress pr = KB__PROGRESS__INIT;
	Kb__ResultEvent ev = KB__RESULT_EVENT__INIT;

	pr.stage = stage;
	pr.message = "working";
	pr.elapsed_ms = 1234;
	pr.worker = (char *)worker;
	ev.submission_id = id;
	ev.gpu = (char *)gpu;
	ev.event_case = KB__RESULT_EVENT__EVENT_PROGRESS;
	ev.progress = &pr;
	gw_produce_event(e, &ev);
}

struct gw_sse {
	struct gw_env *e;
	pthread_t th;
	pthread_mutex_t mu;
	struct kb_curl_body body, hdr;
	long code;
	int done;
	char path[256], cli[128];
	char *code_text;
	char *fields[16]; /* name, value pairs sent as text parts; NULL ends */
};

static size_t sse_write(void *ptr, size_t size, size_t nmemb, void *ud)
{
	struct gw_sse *s = ud;
	size_t n;

	pthread_mutex_lock(&s->mu);
	n = kb_curl_body_write(ptr, size, nmemb, &s->body);
	pthread_mutex_unlock(&s->mu);
	return n;
}

static void *sse_main(void *arg)
{
	struct gw_sse *s = arg;
	CURL *c = curl_easy_init();
	curl_mime *mime = curl_mime_init(c);
	curl_mimepart *part = curl_mime_addpart(mime);
	struct curl_slist *h = NULL;
	char url[512], hdr[200];

	curl_mime_name(part, "file");
	curl_mime_filename(part, "submission.c");
	curl_mime_data(part, s->code_text, strlen(s->code_text));
	for (int i = 0; s->fields[i] && s->fields[i + 1]; i += 2) {
		curl_mimepart *f = curl_mime_addpart(mime);
		curl_mime_name(f, s->fields[i]);
		curl_mime_data(f, s->fields[i + 1], CURL_ZERO_TERMINATED);
	}
	snprintf(hdr, sizeof(hdr), "X-Popcorn-Cli-Id: %s", s->cli);
	h = curl_slist_append(h, hdr);
	snprintf(url, sizeof(url), "%s%s", s->e->api, s->path);
	curl_easy_setopt(c, CURLOPT_URL, url);
	curl_easy_setopt(c, CURLOPT_HTTPHEADER, h);
	curl_easy_setopt(c, CURLOPT_MIMEPOST, mime);
	curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, sse_write);
	curl_easy_setopt(c, CURLOPT_WRITEDATA, s);
	curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, kb_curl_body_write);
	curl_easy_setopt(c, CURLOPT_HEADERDATA, &s->hdr);
	curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, 90000L);
	curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
	long code = 0;
	if (curl_easy_perform(c) == CURLE_OK)
		curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &code);
	curl_mime_free(mime);
	curl_slist_free_all(h);
	curl_easy_cleanup(c);
	pthread_mutex_lock(&s->mu);
	s->code = code;
	s->done = 1;
	pthread_mutex_unlock(&s->mu);
	return NULL;
}

struct gw_sse *gw_sse_start(struct gw_env *e, const char *path, const char *cli,
			    const char *code)
{
	return gw_sse_start_form(e, path, cli, code, NULL);
}

struct gw_sse *gw_sse_start_form(struct gw_env *e, const char *path,
				 const char *cli, const char *code,
				 const char *const *fields)
{
	struct gw_sse *s = calloc(1, sizeof(*s));

	for (int i = 0; fields && fields[i] && i < 14; i++)
		s->fields[i] = strdup(fields[i]);

	s->e = e;
	pthread_mutex_init(&s->mu, NULL);
	snprintf(s->path, sizeof(s->path), "%s", path);
	snprintf(s->cli, sizeof(s->cli), "%s", cli);
	s->code_text = strdup(code);
	ck_assert_int_eq(pthread_create(&s->th, NULL, sse_main, s), 0);
	return s;
}

int gw_sse_wait(struct gw_sse *s, const char *needle, int timeout_ms)
{
	for (int waited = 0; waited <= timeout_ms; waited += 20) {
		pthread_mutex_lock(&s->mu);
		int hit = s->body.data && strstr(s->body.data, needle);
		int done = s->done;
		pthread_mutex_unlock(&s->mu);
		if (hit)
			return 0;
		if (done)
			return -1;
		sleep_ms(20);
	}
	return -1;
}

uint64_t gw_sse_id(struct gw_sse *s)
{
	uint64_t id = 0;

	pthread_mutex_lock(&s->mu);
	const char *p = s->body.data
				? strstr(s->body.data, "\"submission_id\":")
				: NULL;
	if (p)
		id = strtoull(p + strlen("\"submission_id\":"), NULL, 10);
	pthread_mutex_unlock(&s->mu);
	return id;
}

long gw_sse_finish(struct gw_sse *s, char **body, char **headers)
{
	long code;

	pthread_join(s->th, NULL);
	code = s->code;
	check_no_seed(s->e, "a stream", s->body.data, s->body.len);
	if (body)
		*body = s->body.data;
	else
		free(s->body.data);
	if (headers)
		*headers = s->hdr.data;
	else
		free(s->hdr.data);
	pthread_mutex_destroy(&s->mu);
	free(s->code_text);
	for (int i = 0; s->fields[i]; i++)
		free(s->fields[i]);
	free(s);
	return code;
}

void gw_assert_log_clean(struct gw_env *e)
{
	char *log = NULL;
	size_t len = 0;

	ck_assert_int_eq(kb_read_file(e->log, 64 << 20, &log, &len), 0);
	for (int i = 0; i < e->nseeds; i++)
		ck_assert_msg(!strstr(log, e->seeds[i]),
			      "gateway log %s holds a seed", e->log);
	ck_assert_msg(!strstr(log, GW_ADMIN_TOKEN),
		      "gateway log holds the admin token");
	free(log);
}

void gw_stop_clean(struct gw_env *e)
{
	int status = gw_env_stop_gateway(e);

	ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0,
		      "kb-gateway did not exit 0 (status 0x%x); log %s", status,
		      e->log);
	gw_assert_log_clean(e);
}

uint64_t gw_accepted(struct gw_resp r)
{
	json_t *j = gw_expect_json(r, 202, "submission");
	uint64_t id = (uint64_t)json_integer_value(
		json_object_get(json_object_get(j, "details"), "id"));

	ck_assert_uint_gt(id, 0);
	json_decref(j);
	return id;
}

void gw_redis_do(struct gw_env *e, const char *fmt, ...)
{
	va_list ap;
	redisReply *r;

	va_start(ap, fmt);
	r = redisvCommand(e->rc, fmt, ap);
	va_end(ap);
	ck_assert_ptr_nonnull(r);
	ck_assert_msg(r->type != REDIS_REPLY_ERROR, "redis: %s", r->str);
	freeReplyObject(r);
}
