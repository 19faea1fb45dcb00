/* kb-gateway: the HTTP front door of KernelBot (upstream KernelBot /
 * popcorn-cli compatible API).
 *
 * Theory of operation
 *
 * At startup the gateway loads the hosted problem set (KB_PROBLEMS) once:
 * every task file is read, the Task protobuf that each Submission carries
 * is built, and the per-board bodies (/gpus/<lb>, the /leaderboards
 * entries) are rendered. It loads its Lua scripts into Redis and makes
 * sure every leaderboard has a secret there (kb:lb:<name>, created with
 * HSETNX so all replicas agree on the first one written) and keeps the
 * secrets in memory; a ranked Submission carries a seed derived from its
 * board's secret for that submission alone (seed.h), never the secret.
 * Then it opens one Kafka producer, shared by all threads, starts the
 * events threads (events.c: the kb.results consumer feeding the
 * in-process hub of streams, and the ticker) and finally libmicrohttpd,
 * on a socket bound before the OAuth redirect base is derived from its
 * port. Once it serves it logs "listening on ADDR:PORT" with the port
 * bound; KB_HTTP_PORT=0 takes any free one, which is how tests and
 * scripts start gateways side by side without racing for ports.
 *
 * libmicrohttpd runs a fixed pool of KB_HTTP_THREADS threads (one per
 * CPU), each with its own epoll set, and every thread holds its own Redis
 * connection (store.c), so the request path takes no lock. Reads cost a
 * Redis round trip or two, or none for cached bodies (rankings are cached
 * briefly and dropped when a Result for their board arrives). A
 * submission costs two Redis round trips (authentication, then one script
 * that applies the policy and records it) and one synchronous Kafka
 * delivery, which runs on a pool of KB_POOL_THREADS blocking threads while
 * the connection is suspended (pool.c, kb_gw_defer), so no HTTP thread
 * waits on the broker; a 202 means "queued", and a broker outage is a 503
 * with the record marked failed (core/submit.c says why the order
 * leaves nothing dangling). OAuth code exchanges run on a small pool of
 * their own (KB_AUTH_POOL_THREADS, bounded), so that logins cannot hold
 * up submissions. A streaming submission holds no thread either: its
 * connection is suspended between events (routes/stream.c).
 * Each request is logged once, when it completes (method, path, status,
 * ms, submission id); bodies, CLI ids, tokens and seeds never; and
 * counted for GET /metrics (http/metrics.h, gauges.h). The same process
 * serves the web leaderboard (web/web.h): cached server-rendered pages,
 * dropped when the ranker has folded a Result that changes them. Each
 * endpoint is its folder's (routes/, web/, discord/); main() gathers
 * their handlers into the route table it hands the HTTP server.
 *
 * SIGTERM/SIGINT only set a flag and wake the main thread (kb_signal),
 * which then stops accepting connections, ends every open stream with an
 * error event ("shutting down; poll /user/submissions/{id}"), waits up to
 * KB_DRAIN_S for the requests in flight to complete, finishes the pool's
 * steps (no connection may stay suspended), stops the daemon and the
 * events threads, flushes the producer and exits 0. A second signal exits
 * at once.
 */
#include <curl/curl.h>
#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "base/cache.h"
#include "base/gateway.h"
#include "base/hub.h"
#include "base/limiter.h"
#include "base/pool.h"
#include "base/queue.h"
#include "core/api.h"
#include "core/events.h"
#include "core/problems.h"
#include "core/reconcile.h"
#include "discord/discord.h"
#include "gauges.h"
#include "http/http.h"
#include "http/metrics.h"
#include "kb_config.h"
#include "kb_kafka.h"
#include "kb_log.h"
#include "kb_metrics_http.h"
#include "kb_signal.h"
#include "kb_util.h"
#include "routes/routes.h"
#include "store/store.h"
#include "web/web.h"

/* Client addresses whose /auth rate is tracked at once (about 200 bytes
 * each); beyond it, new addresses wait for old windows to end. */
#define AUTH_ADDRESSES_MAX 65536
/* Users with open streams on one gateway. */
#define STREAM_USERS_MAX 65536

#ifndef KB_DEFAULT_PROBLEMS
#define KB_DEFAULT_PROBLEMS "problems"
#endif

static struct kb_gw G;

static const struct kb_cfg_entry config[] = {
	{"KB_HTTP_ADDR", KB_CFG_STRING, "127.0.0.1", 0, 0, 0, &G.cfg.http_addr,
	 "address to listen on (IPv4 or IPv6 literal)"},
	{"KB_HTTP_PORT", KB_CFG_INT, "8000", 0, 65535, 0, &G.cfg.http_port,
	 "TCP port to listen on (0: any free one, logged as \"listening on "
	 "ADDR:PORT\")"},
	{"KB_HTTP_THREADS", KB_CFG_INT, "0", 0, 1024, 0, &G.cfg.http_threads,
	 "HTTP threads, each with one Redis connection (0: one per CPU)"},
	/* Connections are counted per TCP peer: behind a proxy, limit them
	 * there (docs/deploy.md). */
	{"KB_HTTP_PER_IP_CONNECTIONS", KB_CFG_INT, "64", 0, 100000, 0,
	 &G.cfg.http_per_ip_connections,
	 "connections one client address may hold open (0: no limit)"},
	{"KB_HTTP_MAX_CONNECTIONS", KB_CFG_INT, "1000", 16, 1000000, 0,
	 &G.cfg.http_max_connections,
	 "connections in all (needs as many file descriptors, ulimit -n)"},
	{"KB_POOL_THREADS", KB_CFG_INT, "64", 1, 4096, 0, &G.cfg.pool_threads,
	 "threads for blocking steps: Kafka deliveries"},
	/* libmicrohttpd's buffer per connection: a header block beyond it
	 * gets libmicrohttpd's own (non-JSON) 431; below it but above
	 * KB_HEADERS_MAX, ours. MHD clears it between requests, so bigger
	 * costs throughput. */
	{"KB_HTTP_CONN_MEMORY", KB_CFG_INT, "32768", 8192, 1 << 20, 0,
	 &G.cfg.http_conn_memory,
	 "bytes of buffer per connection (headers fit in it)"},
	{"KB_REDIS_URL", KB_CFG_STRING, "redis://127.0.0.1:6379", 0, 0, 1,
	 &G.cfg.redis_url, "Redis URL (may hold a password: masked)"},
	{"KB_KAFKA_BROKERS", KB_CFG_STRING, "127.0.0.1:9092", 0, 0, 0,
	 &G.cfg.kafka_brokers, "Kafka bootstrap servers"},
	{"KB_KAFKA_TIMEOUT_MS", KB_CFG_INT, "5000", 100, 120000, 0,
	 &G.cfg.kafka_timeout_ms,
	 "how long a submission waits for the broker before a 503"},
	{"KB_ADMIN_TOKEN", KB_CFG_STRING, "", 0, 0, 1, &G.cfg.admin_token,
	 "bearer token of the admin API; empty disables it"},
	{"KB_PROBLEMS", KB_CFG_STRING, KB_DEFAULT_PROBLEMS, 0, 0, 0,
	 &G.cfg.problems,
	 "problem set: ':'-separated dirs and <set>.yaml files"},
	{"KB_PROBLEMS_DEV", KB_CFG_STRING, "", 0, 0, 0, &G.cfg.problems_dev,
	 "directory of problems admins may add as <dir>-dev boards; empty: none"},
	{"KB_SEAL_UPSTREAM", KB_CFG_BOOL, "1", 0, 0, 0, &G.cfg.seal_upstream,
	 "upstream Python problems with a standard eval.py run under our "
	 "harness (0: as upstream runs them)"},
	{"KB_HARNESS_DIR", KB_CFG_STRING, KB_DEFAULT_HARNESS_DIR, 0, 0, 0,
	 &G.cfg.harness_dir,
	 "our harnesses (python.yml, python/), for sealed "
	 "upstream problems"},
	{"KB_MAX_DYNAMIC_BOARDS", KB_CFG_INT, "64", 0, 4096, 0,
	 &G.cfg.max_dynamic_boards,
	 "admin-created boards this gateway can hold"},
	/* A problem source is untrusted input: what one update-problems may
	 * write, extracting its archive and keeping the boards' files. */
	{"KB_SYNC_MAX_BYTES", KB_CFG_INT, "268435456", 1024, 1L << 34, 0,
	 &G.cfg.sync_max_bytes,
	 "bytes one problem sync may extract, and keep for its boards"},
	{"KB_SYNC_MAX_ENTRIES", KB_CFG_INT, "20000", 16, 10000000, 0,
	 &G.cfg.sync_max_entries, "members a problem sync's archive may hold"},
	{"KB_MAX_FILE_BYTES", KB_CFG_INT, "1048576", 1, 64L << 20, 0,
	 &G.cfg.max_file_bytes, "largest submission file accepted"},
	{"KB_HEADERS_MAX", KB_CFG_INT, "16384", 1024, 100000, 0,
	 &G.cfg.headers_max, "largest request header block (431 beyond)"},
	{"KB_RATE_LIMIT_TEST", KB_CFG_INT, "0", 0, 1000000, 0, &G.cfg.rate_test,
	 "default hourly limit of test/benchmark/profile submissions per user "
	 "and board (0: none; admins may set one per board)"},
	{"KB_RATE_LIMIT_LEADERBOARD", KB_CFG_INT, "0", 0, 1000000, 0,
	 &G.cfg.rate_leaderboard, "default hourly limit of ranked submissions"},
	/* What one user may hold of a device type's queue, so that a public
	 * instance stays usable while someone floods it. */
	{"KB_MAX_QUEUED_PER_GPU", KB_CFG_INT, "4", 0, 10000, 0,
	 &G.cfg.max_queued_per_gpu,
	 "unfinished submissions one user may have per GPU type (429 beyond; 0: none)"},
	{"KB_QUEUED_FORGET_S", KB_CFG_INT, "86400", 60, 2592000, 0,
	 &G.cfg.queued_forget_s,
	 "an unfinished submission counts against its user's cap this long at most"},
	{"KB_CODE_TTL_S", KB_CFG_INT, "604800", 0, 31536000, 0,
	 &G.cfg.code_ttl_s,
	 "seconds the code of test/benchmark/profile submissions is kept after its "
	 "last use (ranked code stays; 0: all code stays)"},
	{"KB_SSE_MAX_PER_USER", KB_CFG_INT, "8", 0, 10000, 0,
	 &G.cfg.sse_max_per_user,
	 "streams one user may hold open on this gateway (429 beyond; 0: none)"},
	{"KB_SSE_KEEPALIVE_S", KB_CFG_INT, "15", 1, 300, 0,
	 &G.cfg.sse_keepalive_s,
	 "seconds between keep-alive comments on a quiet stream"},
	{"KB_SSE_POLL_S", KB_CFG_INT, "5", 1, 300, 0, &G.cfg.sse_poll_s,
	 "a stream that heard nothing this long re-reads its state from Redis"},
	{"KB_SSE_MAX_S", KB_CFG_INT, "7200", 10, 86400, 0, &G.cfg.sse_max_s,
	 "longest a stream waits for its result"},
	{"KB_WORKER_STALE_S", KB_CFG_INT, "20", 1, 86400, 0,
	 &G.cfg.worker_stale_s,
	 "a worker unheard of this long (workers send a heartbeat every "
	 "KB_HEARTBEAT_S, 5 s) is not counted as available"},
	{"KB_RANKING_CACHE_MS", KB_CFG_INT, "1000", 0, 600000, 0,
	 &G.cfg.ranking_cache_ms,
	 "how long a rendered ranking is reused (0: off)"},
	{"KB_QUEUE_CACHE_MS", KB_CFG_INT, "2000", 0, 600000, 0,
	 &G.cfg.queue_cache_ms, "how long a measured queue backlog is reused"},
	/* A login is one browser round trip: an id left pending for days
	 * is only a chance for someone else to finish it. */
	{"KB_AUTH_STATE_TTL_S", KB_CFG_INT, "600", 60, 3600, 0,
	 &G.cfg.auth_state_ttl_s,
	 "how long a CLI id from /auth/init waits for login"},
	{"KB_AUTH_RATE_PER_MIN", KB_CFG_INT, "20", 0, 100000, 0,
	 &G.cfg.auth_rate_per_min,
	 "/auth requests a client address may make per minute (0: no limit)"},
	{"KB_AUTH_POOL_THREADS", KB_CFG_INT, "4", 1, 256, 0,
	 &G.cfg.auth_pool_threads,
	 "threads for OAuth exchanges (apart from submissions'); 16 logins wait "
	 "per thread, more get 503"},
	{"KB_HTTP_CLIENT_IP_HEADER", KB_CFG_STRING, "", 0, 0, 0,
	 &G.cfg.http_client_ip_header,
	 "header holding the client's address, set by a proxy in front (e.g. "
	 "X-Real-IP); empty: the TCP peer. Only behind a proxy that overwrites it"},
	{"KB_OAUTH_REDIRECT_BASE", KB_CFG_STRING, "", 0, 0, 0,
	 &G.cfg.oauth_redirect_base,
	 "public base URL of this API for OAuth redirects (default http://addr:port)"},
	{"KB_OAUTH_DISCORD_BASE", KB_CFG_STRING, "https://discord.com", 0, 0, 0,
	 &G.cfg.oauth_discord_base,
	 "Discord's base URL (tests: a fake provider)"},
	{"KB_OAUTH_DISCORD_CLIENT_ID", KB_CFG_STRING, "", 0, 0, 0,
	 &G.cfg.oauth_discord_id,
	 "Discord OAuth client id; empty: no Discord login"},
	{"KB_OAUTH_DISCORD_CLIENT_SECRET", KB_CFG_STRING, "", 0, 0, 1,
	 &G.cfg.oauth_discord_secret, "Discord OAuth client secret"},
	{"KB_OAUTH_GITHUB_BASE", KB_CFG_STRING, "https://github.com", 0, 0, 0,
	 &G.cfg.oauth_github_base, "GitHub's base URL (token endpoint)"},
	{"KB_OAUTH_GITHUB_API_BASE", KB_CFG_STRING, "https://api.github.com", 0,
	 0, 0, &G.cfg.oauth_github_api_base,
	 "GitHub's API base URL (user endpoint)"},
	{"KB_OAUTH_GITHUB_CLIENT_ID", KB_CFG_STRING, "", 0, 0, 0,
	 &G.cfg.oauth_github_id,
	 "GitHub OAuth client id; empty: no GitHub login"},
	{"KB_OAUTH_GITHUB_CLIENT_SECRET", KB_CFG_STRING, "", 0, 0, 1,
	 &G.cfg.oauth_github_secret, "GitHub OAuth client secret"},
	{"KB_OAUTH_TIMEOUT_MS", KB_CFG_INT, "10000", 100, 120000, 0,
	 &G.cfg.oauth_timeout_ms,
	 "timeout of each request to an OAuth provider"},
	{"KB_METRICS", KB_CFG_BOOL, "1", 0, 0, 0, &G.cfg.metrics,
	 "count requests and serve Prometheus metrics on GET /metrics"},
	/* Metrics show admin activity, queues and workers: never on the
	 * public API port, on a listener of their own, loopback unless the
	 * operator says otherwise (as the workers' and the ranker's). */
	{"KB_METRICS_PORT", KB_CFG_INT, "0", 0, 65535, 0, &G.cfg.metrics_port,
	 "port of the GET /metrics listener (0: none)"},
	{"KB_METRICS_ADDR", KB_CFG_STRING, "127.0.0.1", 0, 0, 0,
	 &G.cfg.metrics_addr, "address of the GET /metrics listener"},
	{"KB_WEB", KB_CFG_BOOL, "1", 0, 0, 0, &G.cfg.web,
	 "serve the web leaderboard (/, /web/...)"},
	{"KB_WEB_CACHE_MS", KB_CFG_INT, "10000", 0, 600000, 0,
	 &G.cfg.web_cache_ms,
	 "longest a rendered page is reused; a ranked Result drops it at once "
	 "(0: no cache)"},
	{"KB_RECONCILE_S", KB_CFG_INT, "30", 0, 86400, 0, &G.cfg.reconcile_s,
	 "seconds between the reconciler's passes over queued submissions "
	 "whose message the broker no longer has (0: off)"},
	{"KB_RECONCILE_GRACE_S", KB_CFG_INT, "120", 1, 86400, 0,
	 &G.cfg.reconcile_grace_s,
	 "a queued submission with no recorded place in the log is published "
	 "again after this long"},
	{"KB_RECONCILE_MAX", KB_CFG_INT, "3", 0, 100, 0, &G.cfg.reconcile_max,
	 "re-publishes of one lost submission before it is ended as the "
	 "platform's fault"},
	/* The live feed is anonymous and long-lived: bounded so that it can
	 * never hold the connections /health and the API need. */
	{"KB_WEB_STREAMS_MAX", KB_CFG_INT, "256", 1, 100000, 0,
	 &G.cfg.web_streams_max,
	 "live-feed streams (/web/events) in all; at most half of "
	 "KB_HTTP_MAX_CONNECTIONS (503 beyond)"},
	{"KB_WEB_STREAMS_PER_IP", KB_CFG_INT, "4", 1, 10000, 0,
	 &G.cfg.web_streams_per_ip,
	 "live-feed streams one client address may hold (429 beyond)"},
	{"KB_WEB_STREAM_MAX_S", KB_CFG_INT, "900", 5, 86400, 0,
	 &G.cfg.web_stream_max_s,
	 "a live-feed stream ends after this long (browsers reconnect)"},
	{"KB_WEB_STREAM_IDLE_S", KB_CFG_INT, "45", 5, 3600, 0,
	 &G.cfg.web_stream_idle_s,
	 "a live-feed stream whose client reads nothing this long is closed"},
	{"KB_DRAIN_S", KB_CFG_INT, "20", 0, 600, 0, &G.cfg.drain_s,
	 "on SIGTERM, how long in-flight requests may take to finish"},
	{"KB_LOG_LEVEL", KB_CFG_STRING, "info", 0, 0, 0, &G.cfg.log_level,
	 "debug, info, warn or error"},
	{"KB_LOG_JSON", KB_CFG_BOOL, "0", 0, 0, 0, &G.cfg.log_json,
	 "log one JSON object per line"},
};

static void sleep_ms(int ms)
{
	struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
	nanosleep(&ts, NULL);
}

static kb_producer *open_producer(char *err, size_t errsize)
{
	/* librdkafka gives up on a message itself before our handler stops
	 * waiting for it, so a 503 never hides a late delivery. A short
	 * linger batches the concurrent submissions of all threads. A
	 * Submission carries the code twice (its own field and the task's
	 * @SUBMISSION@ file) plus every task file, so the 1 MB default
	 * message size is raised to fit the largest one; brokers must allow
	 * as much (max.message.bytes of kb.submissions.*). lz4 keeps source
	 * text small on the wire and in the log. (Events from this gateway
	 * name their task by reference and carry the code once; the limit
	 * still fits an older gateway's events during an upgrade.) */
	char timeout[32], maxmsg[32];
	size_t max = G.task_bytes_max + 2 * (size_t)G.cfg.max_file_bytes +
		     (64u << 10);
	if (max < 1000000)
		max = 1000000;
	if (max > 1000000000)
		max = 1000000000;
	snprintf(timeout, sizeof(timeout), "%ld", G.cfg.kafka_timeout_ms);
	snprintf(maxmsg, sizeof(maxmsg), "%zu", max);
	const char *extra[] = {"message.timeout.ms",
			       timeout,
			       "linger.ms",
			       "2",
			       "message.max.bytes",
			       maxmsg,
			       "compression.type",
			       "lz4",
			       NULL};
	return kb_producer_new(G.cfg.kafka_brokers, "kb-gateway", extra, err,
			       errsize);
}

/* The route table the HTTP server dispatches on, one handler per route
 * id: the API's endpoints (routes.h), the web pages and, when built in,
 * Discord's interactions endpoint; a route nobody serves answers 500. */
static struct kb_gw_handler routes[KB_ROUTE_COUNT];

static void routes_fill(void)
{
	const struct kb_gw_handler *tables[] = {
		kb_gw_api_handlers,    kb_gw_admin_handlers,
		kb_gw_export_handlers, kb_gw_auth_handlers,
		kb_gw_stream_handlers, kb_gw_problems_handlers,
		kb_gw_web_handlers,
	};

	for (size_t id = 0; id < KB_ROUTE_COUNT; id++)
		for (size_t t = 0; t < KB_ARRAY_LEN(tables); t++)
			if (tables[t][id].begin) {
				routes[id] = tables[t][id];
				break;
			}
#ifdef KB_GW_DISCORD
	routes[KB_ROUTE_DISCORD_INTERACTIONS] =
		kb_gw_discord_interactions_handler;
#endif
}

/* Stops accepting, lets requests in flight finish (bounded), stops. */
static void drain(struct kb_gw_http *http)
{
	double deadline = kb_mono_s() + (double)G.cfg.drain_s;
	long left;

	kb_gw_http_quiesce(http);
	/* Streams would otherwise wait for results for hours. */
	kb_gw_hub_close_all(G.hub, 503,
			    "the gateway is shutting down; the "
			    "submission goes on: poll GET "
			    "/user/submissions/{id}");
	kb_gw_web_close_streams(&G);
	while ((left = atomic_load(&G.inflight)) > 0 && kb_mono_s() < deadline)
		sleep_ms(10);
	if (left > 0)
		kb_warn("drain: %ld requests still in flight after %ld s", left,
			G.cfg.drain_s);
	/* Finishes the deferred steps, so no connection stays suspended
	 * when the daemon stops. */
	kb_gw_pool_stop(G.pool);
	kb_gw_pool_stop(G.auth_pool);
	kb_gw_http_stop(http);
}

int main(int argc, char **argv)
{
	char err[512];
	struct kb_gw_http *http = NULL, *bound = NULL;
	struct kb_gw_reconciler *reconciler = NULL;
	kb_metrics_server *metrics = NULL;
	int level, rc = 1;
#ifdef KB_GW_DISCORD
	int discord = 0;
#endif

	if (argc > 1) {
		fprintf(stderr, "usage: %s (configured by environment)\n",
			argv[0]);
		for (size_t i = 0; i < KB_ARRAY_LEN(config); i++)
			fprintf(stderr, "  %-20s %s\n", config[i].env,
				config[i].help);
		return 2;
	}
	if (kb_config_load(config, KB_ARRAY_LEN(config), err, sizeof(err)) <
	    0) {
		fprintf(stderr, "kb-gateway: %s\n", err);
		return 2;
	}
	level = kb_log_level_parse(G.cfg.log_level);
	if (level < 0) {
		fprintf(stderr,
			"kb-gateway: KB_LOG_LEVEL '%s' is not debug, info, "
			"warn or error\n",
			G.cfg.log_level);
		kb_config_free(config, KB_ARRAY_LEN(config));
		return 2;
	}
	kb_log_init("gateway", level, G.cfg.log_json);
	kb_config_log(config, KB_ARRAY_LEN(config));
	atomic_init(&G.inflight, 0);

	if (kb_util_init() < 0 || kb_signal_install() < 0 ||
	    curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) {
		kb_error("cannot initialise libsodium or signal handling");
		goto out;
	}
	if (kb_gw_lbs_load(&G, err, sizeof(err)) < 0) {
		kb_error("problems: %s", err);
		goto out;
	}
	kb_info("loaded %zu leaderboards", kb_gw_lb_count(&G));
	if (kb_gw_store_init(&G, err, sizeof(err)) < 0) {
		kb_error("redis: %s", err);
		goto out;
	}
	/* The boards update-problems or an admin made (kb:lbdyn), and what
	 * was deleted or closed, before the port serves: a restarted
	 * gateway must not answer for a moment without them. */
	kb_gw_boards_sync(&G);
	kb_info("%zu leaderboards with those made at run time",
		kb_gw_lb_count(&G));
	/* The main thread needs no Redis connection while serving. */
	kb_gw_redis_drop();
	/* Before anything uses the port: KB_HTTP_PORT=0 takes a free one. */
	routes_fill();
	bound = kb_gw_http_bind(&G, routes, err, sizeof(err));
	if (!bound) {
		kb_error("http: %s", err);
		goto out;
	}
	if (!*G.cfg.oauth_redirect_base) {
		char base[300];
		int v6 = strchr(G.cfg.http_addr, ':') != NULL;
		snprintf(base, sizeof(base),
			 v6 ? "http://[%s]:%ld" : "http://%s:%ld",
			 G.cfg.http_addr, G.cfg.http_port);
		free(G.cfg.oauth_redirect_base);
		G.cfg.oauth_redirect_base = strdup(base);
	}
	if (G.cfg.http_threads == 0) {
		long n = sysconf(_SC_NPROCESSORS_ONLN);
		G.cfg.http_threads = n > 0 ? n : 2;
	}
	G.hub = kb_gw_hub_new(32);
	G.pool =
		kb_gw_pool_new((size_t)G.cfg.pool_threads, 0, kb_gw_redis_drop);
	G.auth_pool = kb_gw_pool_new((size_t)G.cfg.auth_pool_threads,
				     16 * (size_t)G.cfg.auth_pool_threads,
				     kb_gw_redis_drop);
	G.auth_limits = kb_gw_limiter_new(AUTH_ADDRESSES_MAX);
	G.stream_slots = kb_gw_limiter_new(STREAM_USERS_MAX);
	G.cache = kb_gw_cache_new(1024, G.cfg.ranking_cache_ms,
				  kb_gw_response_destroy);
	G.queue = kb_gw_queue_new(G.cfg.kafka_brokers, G.cfg.queue_cache_ms);
	if (!G.hub || !G.cache || !G.queue || !G.pool || !G.auth_pool ||
	    !G.auth_limits || !G.stream_slots || !G.cfg.oauth_redirect_base) {
		kb_error("out of memory");
		goto out;
	}
	G.producer = open_producer(err, sizeof(err));
	if (!G.producer) {
		kb_error("kafka: %s", err);
		goto out;
	}
	if (kb_gw_metrics_init(&G) < 0 || kb_gw_gauges_init(&G) < 0) {
		kb_error("metrics: out of memory");
		goto out;
	}
	if (G.cfg.metrics && G.cfg.metrics_port) {
		metrics = kb_metrics_serve(kb_metrics_default(),
					   G.cfg.metrics_addr,
					   (int)G.cfg.metrics_port, err,
					   sizeof(err));
		if (!metrics) {
			kb_error("metrics: %s", err);
			goto out;
		}
		kb_info("metrics on http://%s:%ld/metrics", G.cfg.metrics_addr,
			G.cfg.metrics_port);
	}
	if (kb_gw_web_start(&G, err, sizeof(err)) < 0) {
		kb_error("web: %s", err);
		goto out;
	}
	G.events = kb_gw_events_start(&G, err, sizeof(err));
	if (!G.events) {
		kb_error("events: %s", err);
		goto out;
	}
	reconciler = kb_gw_reconcile_start(&G, err, sizeof(err));
	if (!reconciler) {
		kb_error("reconcile: %s", err);
		goto out;
	}
	if (kb_gw_http_start(bound, err, sizeof(err)) < 0) {
		kb_error("http: %s", err);
		goto out;
	}
	http = bound;
	bound = NULL;
	G.http = http;
#ifdef KB_GW_DISCORD
	if (kb_gw_discord_start(&G, err, sizeof(err)) < 0) {
		kb_error("discord: %s", err);
		goto out;
	}
	discord = 1;
#endif
	kb_info("listening on %s:%ld threads=%ld", G.cfg.http_addr,
		G.cfg.http_port, G.cfg.http_threads);

	while (!kb_signal_stopping()) {
		struct pollfd pfd = {.fd = kb_signal_fd(), .events = POLLIN};
		if (poll(&pfd, 1, 1000) < 0 && errno != EINTR)
			break;
	}
	kb_info("stopping: draining %ld requests in flight",
		(long)atomic_load(&G.inflight));
#ifdef KB_GW_DISCORD
	kb_gw_discord_stop(&G);
	discord = 0;
#endif
	drain(http);
	http = NULL;
	kb_gw_reconcile_stop(reconciler);
	reconciler = NULL;
	kb_gw_events_stop(G.events);
	G.events = NULL;
	kb_gw_web_stop(&G);
	if (kb_producer_flush(G.producer, 5000) < 0)
		kb_warn("producer flush timed out");
	rc = 0;
out:
#ifdef KB_GW_DISCORD
	if (discord)
		kb_gw_discord_stop(&G);
#endif
	if (http) { /* a failed start: no stream can be open yet */
		kb_gw_hub_close_all(G.hub, 503, "shutting down");
		kb_gw_web_close_streams(&G);
	}
	kb_gw_reconcile_stop(reconciler);
	kb_gw_pool_destroy(G.pool);
	kb_gw_pool_destroy(G.auth_pool);
	kb_gw_http_stop(http);
	kb_gw_http_stop(bound);
	kb_gw_events_stop(G.events);
	kb_gw_web_stop(&G);
	kb_metrics_server_stop(metrics);
	kb_producer_destroy(G.producer);
	kb_gw_queue_destroy(G.queue);
	kb_gw_cache_destroy(G.cache);
	kb_gw_hub_destroy(G.hub);
	kb_gw_limiter_destroy(G.auth_limits);
	kb_gw_limiter_destroy(G.stream_slots);
	kb_gw_redis_drop();
	kb_gw_lbs_free(&G);
	kb_config_free(config, KB_ARRAY_LEN(config));
	curl_global_cleanup();
	kb_info("exit %d", rc);
	return rc;
}
