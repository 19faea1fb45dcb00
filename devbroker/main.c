/* kb-devbroker: a development Kafka broker on librdkafka's mock cluster.
 *
 * Theory of operation. librdkafka ships an in-memory Kafka cluster for its
 * own tests (rdkafka_mock.h): real TCP listeners on 127.0.0.1 that speak
 * enough of the protocol for idempotent producers, consumer groups
 * (JoinGroup/SyncGroup/Heartbeat/OffsetCommit/OffsetFetch) and ListOffsets.
 * This program hosts one such cluster on an otherwise idle producer handle,
 * creates our topics, prints "bootstrap=HOST:PORT[,HOST:PORT...]" on stdout
 * once they exist (tests/support/kb_testenv.c waits for that line), and
 * then sleeps until SIGTERM or SIGINT. Nothing is persisted: a restart is
 * an empty cluster.
 *
 * Limits worth knowing (librdkafka 2.0.2):
 * - Each partition keeps at most 5 MiB (and 100,000 messages): beyond
 *   that the oldest messages are deleted, consumed or not. The default
 *   of eight partitions per topic gives a submissions topic 40 MiB; a
 *   submission whose message is deleted before a worker got it is
 *   re-published by the gateway's reconciler (gateway/core/reconcile.h).
 * - A consumer group's first JoinGroup waits a fixed 3 s (the mock's
 *   group.initial.rebalance.delay.ms); later rebalances wait
 *   session.timeout.ms - 1000 ms, and dead members are noticed by a 1 s
 *   session sweep. Clients pick the session timeout, so fast takeover is a
 *   client setting: session.timeout.ms=4000 and heartbeat.interval.ms=250
 *   move a SIGKILLed member's partitions in about 7 s. Below about 2500 ms
 *   a group never forms: the mock expires the first member during the 3 s
 *   initial delay.
 * - The mock answers an empty Fetch only after the client's
 *   fetch.wait.max.ms, even when a message arrives meanwhile; our consumers
 *   use 10 ms.
 * - There is no API to choose the listen ports; KB_DEVBROKER_PORT works by
 *   pinning the mock's bind() calls (portpin.h).
 * - The mock thread can miss the wake-up for a control call (topic create,
 *   cluster destroy) and serve it only at its next event, up to a second
 *   later; see struct waker.
 *
 * Environment: KB_DEVBROKER_BROKERS (1), KB_DEVBROKER_PORT (0: any free
 * port; otherwise broker i listens on PORT+i-1), KB_DEVBROKER_PARTITIONS
 * (8), KB_DEVBROKER_GPUS (extra GPU names, comma-separated),
 * KB_DEVBROKER_DEBUG (librdkafka debug contexts, e.g. "mock,cgrp"),
 * KB_LOG_LEVEL, KB_LOG_JSON.
 */
#include <errno.h>
#include <librdkafka/rdkafka.h>
#include <librdkafka/rdkafka_mock.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "kb_config.h"
#include "kb_kafka.h"
#include "kb_log.h"
#include "kb_signal.h"
#include "portpin.h"

#define MAX_TOPICS 64

static const char *const default_gpus[] = {"CPU", "H100", "A100", "L4",
					   "T4",  "B200", "MI300"};

struct settings {
	long brokers;
	long port;
	long partitions;
	char *gpus;
	char *debug;
	char *log_level;
	int log_json;
};

static struct settings cfg;

static const struct kb_cfg_entry table[] = {
	{"KB_DEVBROKER_BROKERS", KB_CFG_INT, "1", 1, 16, 0, &cfg.brokers,
	 "number of mock brokers"},
	{"KB_DEVBROKER_PORT", KB_CFG_INT, "0", 0, 65535, 0, &cfg.port,
	 "port of the first broker (0: any free port)"},
	/* The mock keeps at most 5 MiB per partition (below): eight hold
	 * 10,000 queued Submissions of 4 KB each (the code, compressed, and
	 * a task reference). */
	{"KB_DEVBROKER_PARTITIONS", KB_CFG_INT, "8", 1, 256, 0, &cfg.partitions,
	 "partitions per topic"},
	{"KB_DEVBROKER_GPUS", KB_CFG_STRING, "", 0, 0, 0, &cfg.gpus,
	 "extra GPU names (comma-separated) for kb.submissions.<gpu>"},
	{"KB_DEVBROKER_DEBUG", KB_CFG_STRING, "", 0, 0, 0, &cfg.debug,
	 "librdkafka debug contexts, e.g. mock,cgrp"},
	{"KB_LOG_LEVEL", KB_CFG_STRING, "info", 0, 0, 0, &cfg.log_level,
	 "debug, info, warn or error"},
	{"KB_LOG_JSON", KB_CFG_BOOL, "0", 0, 0, 0, &cfg.log_json,
	 "one JSON object per log line"},
};

struct topics {
	char name[MAX_TOPICS][256];
	int n;
};

static int topics_add(struct topics *t, const char *name)
{
	for (int i = 0; i < t->n; i++)
		if (strcmp(t->name[i], name) == 0)
			return 0; /* the mock aborts on a duplicate create */
	if (t->n == MAX_TOPICS)
		return -ENOSPC;
	snprintf(t->name[t->n++], sizeof(t->name[0]), "%s", name);
	return 0;
}

static int topics_add_gpu(struct topics *t, const char *gpu)
{
	char topic[256];
	int rc = kb_topic_submissions(topic, sizeof(topic), gpu);

	if (rc != 0) {
		kb_error("KB_DEVBROKER_GPUS: \"%s\" is not a valid GPU name",
			 gpu);
		return rc;
	}
	if ((rc = topics_add(t, topic)) != 0)
		kb_error("too many topics (at most %d)", MAX_TOPICS);
	return rc;
}

/* Collects every topic to create: results, dead letters, and one
 * submissions topic per default or configured GPU. */
static int topics_collect(struct topics *t, const char *extra_gpus)
{
	char *list, *save = NULL;
	int rc = 0;

	t->n = 0;
	topics_add(t, KB_TOPIC_RESULTS);
	topics_add(t, KB_TOPIC_DLQ);
	for (size_t i = 0; i < KB_ARRAY_LEN(default_gpus); i++)
		if ((rc = topics_add_gpu(t, default_gpus[i])) != 0)
			return rc;
	if (!extra_gpus || !*extra_gpus)
		return 0;
	list = strdup(extra_gpus);
	if (!list)
		return -ENOMEM;
	for (char *tok = strtok_r(list, ",", &save); tok;
	     tok = strtok_r(NULL, ",", &save)) {
		char *end = tok + strlen(tok);
		while (*tok == ' ' || *tok == '\t')
			tok++;
		while (end > tok && (end[-1] == ' ' || end[-1] == '\t'))
			*--end = '\0';
		if (*tok && (rc = topics_add_gpu(t, tok)) != 0)
			break;
	}
	free(list);
	return rc;
}

/* Checks that ports [first, first+n) are free on loopback now, so that a
 * taken port is a clear startup error rather than a failed mock listener
 * (which librdkafka treats as an assertion). */
static int ports_free(int first, int n)
{
	for (int i = 0; i < n; i++) {
		struct sockaddr_in a = {.sin_family = AF_INET,
					.sin_port =
						htons((uint16_t)(first + i))};
		int one = 1,
		    fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0), rc;

		if (fd < 0)
			return -errno;
		a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
		setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
		rc = bind(fd, (struct sockaddr *)&a, sizeof(a)) == 0 ? 0
								     : -errno;
		close(fd);
		if (rc != 0) {
			kb_error(
				"KB_DEVBROKER_PORT: 127.0.0.1:%d is not free: %s",
				first + i, strerror(-rc));
			return rc;
		}
	}
	return 0;
}

/* librdkafka 2.0.2's mock cluster takes control calls (topic create,
 * destroy) through an op queue whose wake-up of the mock thread can be
 * lost, leaving the call blocked until the thread's next I/O or timer event
 * (up to 1 s; startup took 1-3 s for our nine topics). A connection to a
 * mock listener is such an event, so while control calls run, a helper
 * thread opens and closes one every 2 ms. */
struct waker {
	pthread_t thread;
	atomic_int on;
	struct sockaddr_in addr;
	int started;
};

static void *waker_main(void *arg)
{
	struct waker *w = arg;
	struct timespec pause = {0, 2 * 1000 * 1000};

	while (atomic_load(&w->on)) {
		int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
		if (fd >= 0) {
			/* Refused once the cluster is gone: harmless. */
			(void)connect(fd, (struct sockaddr *)&w->addr,
				      sizeof(w->addr));
			close(fd);
		}
		nanosleep(&pause, NULL);
	}
	return NULL;
}

/* Starts poking the first broker of "127.0.0.1:PORT[,...]". */
static void waker_start(struct waker *w, const char *bootstraps)
{
	const char *colon = strchr(bootstraps, ':');
	long port = colon ? strtol(colon + 1, NULL, 10) : 0;

	memset(&w->addr, 0, sizeof(w->addr));
	w->started = 0;
	if (port <= 0 || port > 65535)
		return; /* only slower, not wrong */
	w->addr.sin_family = AF_INET;
	w->addr.sin_port = htons((uint16_t)port);
	w->addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	atomic_store(&w->on, 1);
	w->started = pthread_create(&w->thread, NULL, waker_main, w) == 0;
}

static void waker_stop(struct waker *w)
{
	atomic_store(&w->on, 0);
	if (w->started)
		pthread_join(w->thread, NULL);
	w->started = 0;
}

static void log_cb(const rd_kafka_t *rk, int level, const char *fac,
		   const char *buf)
{
	int kl = level <= 3   ? KB_LOG_ERROR
		 : level == 4 ? KB_LOG_WARN
		 : level == 5 ? KB_LOG_INFO
			      : KB_LOG_DEBUG;

	(void)rk;
	/* The host handle never connects anywhere; its warning that no
	 * bootstrap.servers are set is expected. */
	if (strcmp(fac, "CONFWARN") == 0)
		kl = KB_LOG_DEBUG;
	KB_LOG(kl, "kafka: fac=%s %s", fac, buf);
}

static rd_kafka_t *host_handle(const char *debug)
{
	char err[512];
	rd_kafka_conf_t *conf = rd_kafka_conf_new();
	rd_kafka_t *rk;

	rd_kafka_conf_set_log_cb(conf, log_cb);
	if (rd_kafka_conf_set(conf, "client.id", "kb-devbroker", err,
			      sizeof(err)) != RD_KAFKA_CONF_OK ||
	    (debug && *debug &&
	     rd_kafka_conf_set(conf, "debug", debug, err, sizeof(err)) !=
		     RD_KAFKA_CONF_OK)) {
		kb_error("librdkafka configuration: %s", err);
		rd_kafka_conf_destroy(conf);
		return NULL;
	}
	rk = rd_kafka_new(RD_KAFKA_PRODUCER, conf, err, sizeof(err));
	if (!rk) {
		kb_error("librdkafka: %s", err);
		rd_kafka_conf_destroy(conf);
	}
	return rk;
}

int main(void)
{
	char err[512];
	struct topics topics;
	rd_kafka_t *rk = NULL;
	rd_kafka_mock_cluster_t *mc = NULL;
	const char *bootstraps;
	struct waker waker = {.started = 0};
	int level, status = EXIT_FAILURE;
	int replicas;

	kb_log_init("devbroker", KB_LOG_INFO, 0);
	if (kb_config_load(table, KB_ARRAY_LEN(table), err, sizeof(err)) != 0) {
		kb_error("config: %s", err);
		goto out;
	}
	level = kb_log_level_parse(cfg.log_level);
	if (level < 0) {
		kb_error(
			"config: KB_LOG_LEVEL=\"%s\" is not debug, info, warn or "
			"error",
			cfg.log_level);
		goto out;
	}
	kb_log_init("devbroker", level, cfg.log_json);
	kb_config_log(table, KB_ARRAY_LEN(table));
	if (cfg.port && cfg.port + cfg.brokers - 1 > 65535) {
		kb_error("config: KB_DEVBROKER_PORT=%ld leaves no room for %ld "
			 "brokers",
			 cfg.port, cfg.brokers);
		goto out;
	}
	if (topics_collect(&topics, cfg.gpus) != 0)
		goto out;
	if (kb_signal_install() != 0) {
		kb_error("cannot install signal handlers");
		goto out;
	}
	if (cfg.port && ports_free((int)cfg.port, (int)cfg.brokers) != 0)
		goto out;

	rk = host_handle(cfg.debug);
	if (!rk)
		goto out;
	if (cfg.port)
		kb__portpin_arm((int)cfg.port, (int)cfg.brokers);
	mc = rd_kafka_mock_cluster_new(rk, (int)cfg.brokers);
	if (cfg.port && kb__portpin_disarm() != 0)
		kb_warn("KB_DEVBROKER_PORT=%ld: could not pin every broker's port; "
			"see the bootstrap line for the real addresses",
			cfg.port);
	if (!mc) {
		kb_error(
			"cannot create the mock cluster (see librdkafka's log)");
		goto out;
	}

	bootstraps = rd_kafka_mock_cluster_bootstraps(mc);
	replicas = cfg.brokers < 3 ? (int)cfg.brokers : 3;
	waker_start(&waker, bootstraps);
	for (int i = 0; i < topics.n; i++) {
		rd_kafka_resp_err_t e = rd_kafka_mock_topic_create(
			mc, topics.name[i], (int)cfg.partitions, replicas);
		if (e) {
			kb_error("creating topic %s: %s", topics.name[i],
				 rd_kafka_err2str(e));
			goto out;
		}
		kb_debug("topic %s partitions=%ld replicas=%d", topics.name[i],
			 cfg.partitions, replicas);
	}
	waker_stop(&waker);

	/* Logged as "brokers_at" so that the stdout line below stays the only
	 * "bootstrap=" anywhere (a JSON log line would confuse a parser). */
	kb_info("ready brokers=%ld topics=%d partitions=%ld brokers_at=%s",
		cfg.brokers, topics.n, cfg.partitions, bootstraps);
	/* The one line on stdout; scripts and tests wait for it. */
	printf("bootstrap=%s\n", bootstraps);
	fflush(stdout);

	while (!kb_signal_stopping()) {
		struct pollfd pfd = {.fd = kb_signal_fd(), .events = POLLIN};
		poll(&pfd, 1, 1000);
	}
	kb_info("stopping");
	status = EXIT_SUCCESS;
out:
	waker_stop(&waker); /* still on if a topic could not be created */
	if (mc) {
		waker_start(&waker, rd_kafka_mock_cluster_bootstraps(mc));
		rd_kafka_mock_cluster_destroy(mc);
		waker_stop(&waker);
	}
	if (rk)
		rd_kafka_destroy(rk);
	kb_config_free(table, KB_ARRAY_LEN(table));
	return status;
}
