#include "platform.h"

#include <curl/curl.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "kb.pb-c.h"
#include "kb_kafka.h"
#include "kb_redis.h"
#include "kb_util.h"

#define ADMIN_TOKEN PLATFORM_ADMIN_TOKEN

static void sleep_ms(int ms)
{
	struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
	nanosleep(&ts, NULL);
}

/* "NAME=value", malloc'd. */
static char *envdup(const char *name, const char *v)
{
	size_t n = strlen(name) + strlen(v) + 2;
	char *s = malloc(n);
	snprintf(s, n, "%s=%s", name, v);
	return s;
}

/* Environment every service of the test platform gets. Consumers use short
 * session timeouts so that a killed worker's partitions move quickly. */
static char **service_env(const struct platform *p)
{
	char **env = calloc(40, sizeof(char *));
	int n = 0;

	env[n++] = envdup("KB_KAFKA_BROKERS", p->broker.url);
	env[n++] = envdup("KB_REDIS_URL", p->redis.url);
	/* The gateway binds a free port itself and logs it. */
	env[n++] = envdup("KB_HTTP_PORT", "0");
	env[n++] = envdup("KB_ADMIN_TOKEN", ADMIN_TOKEN);
	env[n++] = envdup("KB_PROBLEMS",
			  KB_SOURCE_DIR "/problems/cpu.yaml:" KB_SOURCE_DIR
					"/problems/pmpp_py.yaml");
	env[n++] = envdup("KB_PYTHON", KB_TEST_PYTHON);
	env[n++] = envdup("KB_WORKDIR", p->dir);
	env[n++] = envdup("KB_GPU", "CPU");
	env[n++] = envdup("KB_LOG_LEVEL", "debug");
	env[n++] = envdup(
		"KB_CONSUMER_EXTRA",
		"session.timeout.ms=4000,heartbeat.interval.ms=250,fetch.wait.max.ms=2");
	for (int i = 0; p->env && p->env[i] && i < 16; i++)
		env[n++] = strdup(p->env[i]);
	env[n] = NULL;
	return env;
}

static void free_env(char **env)
{
	for (int i = 0; env[i]; i++)
		free(env[i]);
	free(env);
}

static pid_t spawn_service(struct platform *p, const char *bin, const char *log)
{
	char logpath[256], mport[16];
	char *argv[] = {(char *)bin, NULL};
	char **env = service_env(p);
	int port = strcmp(log, "ranker") == 0    ? p->ranker_metrics_port
		   : strcmp(log, "worker") == 0  ? p->worker_metrics_port
		   : strcmp(log, "gateway") == 0 ? p->gateway_metrics_port
						 : 0;

	if (port > 0) {
		size_t n = 0;
		while (env[n])
			n++;
		snprintf(mport, sizeof(mport), "%d", port);
		env[n] = envdup("KB_METRICS_PORT", mport);
		env[n + 1] = NULL;
	}

	snprintf(logpath, sizeof(logpath), "%s/%s.log", p->dir, log);
	pid_t pid = kb_test_spawn(argv, env, logpath);
	/* putenv() in the child keeps pointers; the parent's copies can go. */
	free_env(env);
	return pid;
}

pid_t platform_start_worker(struct platform *p, const char *log_name)
{
	pid_t pid =
		spawn_service(p, KB_BINARY_DIR "/worker/kb-worker", log_name);

	if (pid > 0 && p->nworkers < 32)
		p->workers[p->nworkers++] = pid;
	return pid;
}

pid_t platform_start_ranker(struct platform *p, const char *log_name)
{
	return spawn_service(p, KB_BINARY_DIR "/ranker/kb-ranker", log_name);
}

/* Waits for the gateway started as log_name to serve, and notes where. */
static int gateway_ready(struct platform *p, const char *log_name)
{
	char url[128], log[300];

	snprintf(log, sizeof(log), "%s/%s.log", p->dir, log_name);
	p->http_port = kb_test_wait_listening(p->gateway, log, 60000);
	if (p->http_port <= 0) {
		fprintf(stderr, "gateway did not start; logs in %s\n", p->dir);
		return -1;
	}
	snprintf(p->api, sizeof(p->api), "http://127.0.0.1:%d", p->http_port);
	snprintf(url, sizeof(url), "%s/health", p->api);
	for (int waited = 0;; waited += 50) {
		if (http_get(url, NULL, NULL) == 200)
			return 0;
		if (waited > 60000) {
			fprintf(stderr, "gateway not healthy; logs in %s\n",
				p->dir);
			return -1;
		}
		sleep_ms(50);
	}
}

int platform_restart_gateway(struct platform *p, const char *log_name)
{
	p->gateway =
		spawn_service(p, KB_BINARY_DIR "/gateway/kb-gateway", log_name);
	return p->gateway > 0 ? gateway_ready(p, log_name) : -1;
}

struct membuf {
	char *data;
	size_t len;
};

static size_t collect(void *ptr, size_t size, size_t nmemb, void *ud)
{
	struct membuf *m = ud;
	size_t n = size * nmemb;
	char *d = realloc(m->data, m->len + n + 1);
	if (!d)
		return 0;
	memcpy(d + m->len, ptr, n);
	m->data = d;
	m->len += n;
	m->data[m->len] = '\0';
	return n;
}

static long perform(CURL *c, char **body)
{
	struct membuf m = {calloc(1, 1), 0};
	long code = -1;

	curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, collect);
	curl_easy_setopt(c, CURLOPT_WRITEDATA, &m);
	curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, 10000L);
	if (curl_easy_perform(c) == CURLE_OK)
		curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &code);
	if (body)
		*body = m.data;
	else
		free(m.data);
	return code;
}

long http_get(const char *url, const char *cli_id, char **body)
{
	CURL *c = curl_easy_init();
	struct curl_slist *h = NULL;
	char hdr[200];

	if (cli_id) {
		snprintf(hdr, sizeof(hdr), "X-Popcorn-Cli-Id: %s", cli_id);
		h = curl_slist_append(h, hdr);
	}
	curl_easy_setopt(c, CURLOPT_URL, url);
	curl_easy_setopt(c, CURLOPT_HTTPHEADER, h);
	long code = perform(c, body);
	curl_slist_free_all(h);
	curl_easy_cleanup(c);
	return code;
}

long http_submit(const struct platform *p, const char *lb, const char *gpu,
		 const char *mode, const char *path, char **body)
{
	return http_submit_as(p, p->cli_id, lb, gpu, mode, path, body);
}

long http_submit_as(const struct platform *p, const char *cli_id,
		    const char *lb, const char *gpu, const char *mode,
		    const char *path, char **body)
{
	CURL *c = curl_easy_init();
	struct curl_slist *h = NULL;
	char url[256], hdr[200];
	curl_mime *mime = curl_mime_init(c);
	curl_mimepart *part = curl_mime_addpart(mime);

	snprintf(url, sizeof(url), "%s/submission/%s/%s/%s", p->api, lb, gpu,
		 mode);
	snprintf(hdr, sizeof(hdr), "X-Popcorn-Cli-Id: %s", cli_id);
	h = curl_slist_append(h, hdr);
	curl_mime_name(part, "file");
	curl_mime_filedata(part, path);
	curl_easy_setopt(c, CURLOPT_URL, url);
	curl_easy_setopt(c, CURLOPT_HTTPHEADER, h);
	curl_easy_setopt(c, CURLOPT_MIMEPOST, mime);
	long code = perform(c, body);
	curl_mime_free(mime);
	curl_slist_free_all(h);
	curl_easy_cleanup(c);
	return code;
}

long submit(const struct platform *p, const char *lb, const char *mode,
	    const char *path)
{
	return submit_as(p, p->cli_id, lb, mode, path);
}

long submit_as(const struct platform *p, const char *cli_id, const char *lb,
	       const char *mode, const char *path)
{
	char *body = NULL;
	long id = -1;
	long code = http_submit_as(p, cli_id, lb, "CPU", mode, path, &body);
	json_t *j = json_loads(body ? body : "", 0, NULL);

	if (code == 202 && j) {
		json_t *idj =
			json_object_get(json_object_get(j, "details"), "id");
		if (json_is_integer(idj))
			id = (long)json_integer_value(idj);
	}
	if (id < 0)
		fprintf(stderr, "submit %s: HTTP %ld: %s\n", path, code,
			body ? body : "");
	json_decref(j);
	free(body);
	return id;
}

json_t *wait_done(const struct platform *p, long id, int timeout_ms)
{
	char url[256];
	snprintf(url, sizeof(url), "%s/user/submissions/%ld", p->api, id);
	for (int waited = 0; waited < timeout_ms; waited += 100) {
		char *body = NULL;
		long code = http_get(url, p->cli_id, &body);
		json_t *j = code == 200 ? json_loads(body, 0, NULL) : NULL;
		free(body);
		const char *status =
			json_string_value(json_object_get(j, "status"));
		if (status && strcmp(status, "done") == 0)
			return j;
		json_decref(j);
		sleep_ms(100);
	}
	fprintf(stderr, "submission %ld not done after %d ms\n", id,
		timeout_ms);
	return NULL;
}

json_t *ranking(const struct platform *p, const char *lb)
{
	char url[256], *body = NULL;
	snprintf(url, sizeof(url), "%s/submissions/%s/CPU", p->api, lb);
	long code = http_get(url, NULL, &body);
	json_t *j = code == 200 ? json_loads(body, 0, NULL) : NULL;
	free(body);
	return j;
}

int count_results(const struct platform *p, long id, int timeout_ms)
{
	char group[64], key[32], err[256];
	const char *topics[] = {KB_TOPIC_RESULTS};
	int count = 0;

	snprintf(group, sizeof(group), "count-%d-%ld", getpid(),
		 (long)time(NULL));
	snprintf(key, sizeof(key), "%ld", id);
	kb_consumer *c = kb_consumer_new(p->broker.url, group, topics, 1, NULL,
					 err, sizeof(err));
	if (!c) {
		fprintf(stderr, "count_results: %s\n", err);
		return -1;
	}
	/* Real time, not polls: every message read, Progress events
	 * included, returns at once. */
	for (double end = kb_mono_s() + timeout_ms / 1000.0;
	     kb_mono_s() < end;) {
		kb_message m;
		int r = kb_consumer_poll(c, 200, &m);
		if (r < 0)
			break;
		if (r == 0)
			continue;
		Kb__ResultEvent *ev =
			kb__result_event__unpack(NULL, m.value_len, m.value);
		if (ev && ev->event_case == KB__RESULT_EVENT__EVENT_RESULT &&
		    ev->submission_id == (uint64_t)id)
			count++;
		if (ev)
			kb__result_event__free_unpacked(ev, NULL);
		kb_message_release(&m);
	}
	kb_consumer_destroy(c);
	return count;
}

int platform_add_user(const struct platform *p, const char *name, char *user_id,
		      size_t user_id_size, char *cli_id, size_t cli_id_size)
{
	char url[256], *fields = NULL;
	CURL *c = curl_easy_init();
	struct curl_slist *h = NULL;
	char *body = NULL;
	json_t *req = json_pack("{s:s}", "name", name);

	snprintf(url, sizeof(url), "%s/admin/users", p->api);
	h = curl_slist_append(h, "Authorization: Bearer " ADMIN_TOKEN);
	h = curl_slist_append(h, "Content-Type: application/json");
	fields = json_dumps(req, JSON_COMPACT);
	json_decref(req);
	curl_easy_setopt(c, CURLOPT_URL, url);
	curl_easy_setopt(c, CURLOPT_HTTPHEADER, h);
	curl_easy_setopt(c, CURLOPT_POSTFIELDS, fields);
	long code = perform(c, &body);
	curl_slist_free_all(h);
	curl_easy_cleanup(c);
	free(fields);
	json_t *j = json_loads(body ? body : "", 0, NULL);
	const char *id = json_string_value(json_object_get(j, "cli_id"));
	const char *uid = json_string_value(json_object_get(j, "user_id"));
	int rc = -1;
	if ((code == 200 || code == 201) && id && uid) {
		snprintf(cli_id, cli_id_size, "%s", id);
		if (user_id)
			snprintf(user_id, user_id_size, "%s", uid);
		rc = 0;
	} else {
		fprintf(stderr, "POST /admin/users: HTTP %ld %s\n", code,
			body ? body : "");
	}
	json_decref(j);
	free(body);
	return rc;
}

static int register_user(struct platform *p)
{
	return platform_add_user(p, "alice", NULL, 0, p->cli_id,
				 sizeof(p->cli_id));
}

int platform_start(struct platform *p)
{
	return platform_start_opts(p, NULL);
}

int platform_start_opts(struct platform *p, const struct platform_opts *o)
{
	char err[256];

	memset(p, 0, sizeof(*p));
	p->env = o ? o->env : NULL;
	if (o && o->metrics) {
		p->ranker_metrics_port = kb_test_fixed_port();
		p->worker_metrics_port = kb_test_fixed_port();
		p->gateway_metrics_port = kb_test_fixed_port();
	}
	snprintf(p->dir, sizeof(p->dir), "/tmp/kb-it-%d-XXXXXX", getpid());
	if (!mkdtemp(p->dir))
		return -1;
	curl_global_init(CURL_GLOBAL_DEFAULT);
	if ((o && o->durable_redis ? kb_test_redis_start_durable(&p->redis)
				   : kb_test_redis_start(&p->redis)) ||
	    kb_test_devbroker_start(&p->broker))
		return -1;
	p->ranker =
		spawn_service(p, KB_BINARY_DIR "/ranker/kb-ranker", "ranker");
	p->gateway = spawn_service(p, KB_BINARY_DIR "/gateway/kb-gateway",
				   "gateway");
	if (!(o && o->no_worker))
		p->worker = platform_start_worker(p, "worker");
	if (gateway_ready(p, "gateway") < 0)
		return -1;
	p->rc = kb_redis_connect(p->redis.url, 2000, err, sizeof(err));
	if (!p->rc) {
		fprintf(stderr, "redis: %s\n", err);
		return -1;
	}
	return register_user(p);
}

void platform_stop(struct platform *p)
{
	for (int i = 0; i < p->nworkers; i++)
		if (p->workers[i] != p->worker)
			kb_test_stop(p->workers[i], 5000);
	kb_test_stop(p->worker, 5000);
	kb_test_stop(p->gateway, 5000);
	kb_test_stop(p->ranker, 5000);
	kb_test_server_stop(&p->broker);
	kb_test_server_stop(&p->redis);
	if (p->rc)
		redisFree(p->rc);
}
