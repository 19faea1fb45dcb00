/* kb-gateway: the HTTP front door of KernelBot (upstream KernelBot /
 * popcorn-cli compatible API).
 *
 * Theory of operation
 *
 * At startup the gateway loads the hosted problem set (KB_PROBLEMS) once:
 * every task file is read, the Task protobuf that each Submission carries
 * is built, and the bodies of the read-only endpoints (/health,
 * /leaderboards, /gpus/<lb>) are rendered. It then makes sure every
 * leaderboard has a secret seed in Redis (kb:lb:<name>, created with
 * HSETNX so all replicas agree on the first one written) and keeps the
 * seeds in memory; they are copied into ranked Submissions and nowhere
 * else. Finally it opens one Kafka producer, shared by all threads, and
 * starts libmicrohttpd.
 *
 * libmicrohttpd runs a fixed pool of KB_HTTP_THREADS threads, each with
 * its own epoll set, and every thread holds its own Redis connection
 * (store.c), so the request path takes no lock. Reads cost a Redis round
 * trip or two, or none for the cached bodies. A submission costs four
 * Redis round trips and one synchronous Kafka delivery: the thread blocks
 * until the broker has the message, so a 202 means "queued" and a broker
 * outage is a 503 with the record marked failed (handlers.c says why the
 * order leaves nothing dangling). Each request is logged once, when it
 * completes (method, path, status, ms); bodies, CLI ids and seeds never.
 *
 * SIGTERM/SIGINT only set a flag and wake the main thread (kb_signal),
 * which then stops accepting connections, waits up to KB_DRAIN_S for the
 * requests in flight to complete, stops the daemon, flushes the producer
 * and exits 0. A second signal exits at once.
 */
#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "gateway.h"
#include "http.h"
#include "kb_config.h"
#include "kb_kafka.h"
#include "kb_log.h"
#include "kb_signal.h"
#include "kb_util.h"
#include "store.h"

#ifndef KB_DEFAULT_PROBLEMS
#define KB_DEFAULT_PROBLEMS "problems"
#endif

static struct kb_gw G;

static const struct kb_cfg_entry config[] = {
	{"KB_HTTP_ADDR", KB_CFG_STRING, "127.0.0.1", 0, 0, 0, &G.cfg.http_addr,
	 "address to listen on (IPv4 or IPv6 literal)"},
	{"KB_HTTP_PORT", KB_CFG_INT, "8000", 1, 65535, 0, &G.cfg.http_port,
	 "TCP port to listen on"},
	{"KB_HTTP_THREADS", KB_CFG_INT, "16", 1, 1024, 0, &G.cfg.http_threads,
	 "HTTP worker threads (each holds one Redis connection)"},
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
	 &G.cfg.problems, "problem set: ':'-separated dirs and <set>.yaml files"},
	{"KB_MAX_FILE_BYTES", KB_CFG_INT, "1048576", 1, 64L << 20, 0,
	 &G.cfg.max_file_bytes, "largest submission file accepted"},
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
	 * text small on the wire. */
	char timeout[32], maxmsg[32];
	size_t max = G.task_bytes_max + 2 * (size_t)G.cfg.max_file_bytes + (64u << 10);
	if (max < 1000000)
		max = 1000000;
	if (max > 1000000000)
		max = 1000000000;
	snprintf(timeout, sizeof(timeout), "%ld", G.cfg.kafka_timeout_ms);
	snprintf(maxmsg, sizeof(maxmsg), "%zu", max);
	const char *extra[] = {"message.timeout.ms", timeout, "linger.ms", "2",
			       "message.max.bytes", maxmsg,
			       "compression.type", "lz4", NULL};
	return kb_producer_new(G.cfg.kafka_brokers, "kb-gateway", extra, err,
			       errsize);
}

/* Stops accepting, lets requests in flight finish (bounded), stops. */
static void drain(struct kb_gw_http *http)
{
	double deadline = kb_mono_s() + (double)G.cfg.drain_s;
	long left;

	kb_gw_http_quiesce(http);
	while ((left = atomic_load(&G.inflight)) > 0 && kb_mono_s() < deadline)
		sleep_ms(10);
	if (left > 0)
		kb_warn("drain: %ld requests still in flight after %ld s", left,
			G.cfg.drain_s);
	kb_gw_http_stop(http);
}

int main(int argc, char **argv)
{
	char err[512];
	struct kb_gw_http *http = NULL;
	int level, rc = 1;

	if (argc > 1) {
		fprintf(stderr, "usage: %s (configured by environment)\n", argv[0]);
		for (size_t i = 0; i < KB_ARRAY_LEN(config); i++)
			fprintf(stderr, "  %-20s %s\n", config[i].env, config[i].help);
		return 2;
	}
	if (kb_config_load(config, KB_ARRAY_LEN(config), err, sizeof(err)) < 0) {
		fprintf(stderr, "kb-gateway: %s\n", err);
		return 2;
	}
	level = kb_log_level_parse(G.cfg.log_level);
	if (level < 0) {
		fprintf(stderr, "kb-gateway: KB_LOG_LEVEL '%s' is not debug, info, "
				"warn or error\n", G.cfg.log_level);
		kb_config_free(config, KB_ARRAY_LEN(config));
		return 2;
	}
	kb_log_init("gateway", level, G.cfg.log_json);
	kb_config_log(config, KB_ARRAY_LEN(config));
	atomic_init(&G.inflight, 0);

	if (kb_util_init() < 0 || kb_signal_install() < 0) {
		kb_error("cannot initialise libsodium or signal handling");
		goto out;
	}
	if (kb_gw_lbs_load(&G, err, sizeof(err)) < 0) {
		kb_error("problems: %s", err);
		goto out;
	}
	kb_info("loaded %zu leaderboards", G.nlbs);
	if (kb_gw_store_init_boards(&G, err, sizeof(err)) < 0) {
		kb_error("redis: %s", err);
		goto out;
	}
	/* The main thread needs no Redis connection while serving. */
	kb_gw_redis_drop();
	G.producer = open_producer(err, sizeof(err));
	if (!G.producer) {
		kb_error("kafka: %s", err);
		goto out;
	}
	http = kb_gw_http_start(&G, err, sizeof(err));
	if (!http) {
		kb_error("http: %s", err);
		goto out;
	}
	kb_info("listening on %s:%ld threads=%ld", G.cfg.http_addr,
		G.cfg.http_port, G.cfg.http_threads);

	while (!kb_signal_stopping()) {
		struct pollfd pfd = {.fd = kb_signal_fd(), .events = POLLIN};
		if (poll(&pfd, 1, 1000) < 0 && errno != EINTR)
			break;
	}
	kb_info("stopping: draining %ld requests in flight",
		(long)atomic_load(&G.inflight));
	drain(http);
	http = NULL;
	if (kb_producer_flush(G.producer, 5000) < 0)
		kb_warn("producer flush timed out");
	rc = 0;
out:
	kb_gw_http_stop(http);
	kb_producer_destroy(G.producer);
	kb_gw_redis_drop();
	kb_gw_lbs_free(&G);
	kb_config_free(config, KB_ARRAY_LEN(config));
	kb_info("exit %d", rc);
	return rc;
}
