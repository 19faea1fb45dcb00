/* kb_kafka: producer and consumer on librdkafka (see kb_kafka.h).
 *
 * Producer. Each kb_producer owns a small thread that serves librdkafka's
 * callbacks (rd_kafka_poll) for as long as the handle lives, so delivery
 * reports of fire-and-forget sends never pile up and a blocking send does
 * not depend on its caller polling. A blocking send passes a heap-allocated
 * "send" record as the message opaque; the delivery-report callback fills
 * it and wakes the sender through a condition variable. The record is
 * reference counted (sender + callback) because a sender that gives up
 * after its timeout returns before librdkafka has finished with the message.
 *
 * Consumer. A high-level group member: rd_kafka_subscribe() plus a
 * rebalance callback that logs every assignment change and applies it with
 * the eager or the incremental API, whichever protocol the group settled on.
 * The main queue is redirected to the consumer queue so that errors and
 * rebalances are served by kb_consumer_poll() itself.
 *
 * librdkafka's own log lines go through kb_log with a "kafka:" prefix.
 */
#include "kb_kafka.h"

#include <errno.h>
#include <inttypes.h>
#include <librdkafka/rdkafka.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "kb.pb-c.h"
#include "kb_log.h"
#include "kb_metrics.h"
#include "kb_util.h"

/* Topic names Kafka accepts: [A-Za-z0-9._-], at most 249 characters. */
#define KB_TOPIC_MAX 249

int kb_topic_submissions(char *buf, size_t size, const char *gpu)
{
	size_t plen = strlen(KB_TOPIC_SUBMISSIONS_PREFIX);
	size_t glen;

	if (!gpu || !*gpu)
		return -EINVAL;
	for (const char *s = gpu; *s; s++) {
		char ch = *s;
		if (!((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
		      (ch >= '0' && ch <= '9') || ch == '.' || ch == '_' ||
		      ch == '-'))
			return -EINVAL;
	}
	glen = strlen(gpu);
	if (plen + glen > KB_TOPIC_MAX || plen + glen + 1 > size)
		return -ENAMETOOLONG;
	memcpy(buf, KB_TOPIC_SUBMISSIONS_PREFIX, plen);
	memcpy(buf + plen, gpu, glen + 1);
	return 0;
}

/* librdkafka logs with syslog levels (0 emerg .. 7 debug). It reports a
 * refused or dropped broker connection at LOG_ERR, which for a service is
 * a warning: the client reconnects by itself. */
static void log_cb(const rd_kafka_t *rk, int level, const char *fac,
		   const char *buf)
{
	int kl = level <= 2   ? KB_LOG_ERROR
		 : level <= 4 ? KB_LOG_WARN
		 : level == 5 ? KB_LOG_INFO
			      : KB_LOG_DEBUG;

	KB_LOG(kl, "kafka: client=%s fac=%s %s", rd_kafka_name(rk), fac, buf);
}

/* Settings whose values must not reach a log line or an errstr. */
static int is_secret(const char *key)
{
	return strstr(key, "password") || strstr(key, "secret") ||
	       strstr(key, "ssl.key") || strstr(key, "oauthbearer");
}

/* Sets the settings every handle shares, then the caller's, then extra. */
static rd_kafka_conf_t *conf_build(const char *brokers, const char *const *base,
				   const char *const *extra, char *errstr,
				   size_t errstr_size)
{
	rd_kafka_conf_t *conf = rd_kafka_conf_new();
	char rderr[512];
	const char *const *lists[] = {base, extra};

	if (!conf) {
		kb_seterr(errstr, errstr_size, "kafka: out of memory");
		return NULL;
	}
	if (!brokers || !*brokers) {
		kb_seterr(errstr, errstr_size,
			  "kafka: no bootstrap brokers given");
		rd_kafka_conf_destroy(conf);
		return NULL;
	}
	if (rd_kafka_conf_set(conf, "bootstrap.servers", brokers, rderr,
			      sizeof(rderr)) != RD_KAFKA_CONF_OK)
		goto bad;
	for (size_t l = 0; l < 2; l++) {
		for (const char *const *kv = lists[l]; kv && kv[0]; kv += 2) {
			if (!kv[1]) {
				kb_seterr(errstr, errstr_size,
					  "kafka: setting %s has no value",
					  kv[0]);
				rd_kafka_conf_destroy(conf);
				return NULL;
			}
			if (rd_kafka_conf_set(conf, kv[0], kv[1], rderr,
					      sizeof(rderr)) !=
			    RD_KAFKA_CONF_OK) {
				kb_seterr(errstr, errstr_size,
					  "kafka: setting %s=%s: %s", kv[0],
					  is_secret(kv[0]) ? "***" : kv[1],
					  rderr);
				rd_kafka_conf_destroy(conf);
				return NULL;
			}
		}
	}
	rd_kafka_conf_set_log_cb(conf, log_cb);
	return conf;
bad:
	kb_seterr(errstr, errstr_size, "kafka: %s", rderr);
	rd_kafka_conf_destroy(conf);
	return NULL;
}

static void deadline_after(struct timespec *ts, int ms)
{
	clock_gettime(CLOCK_MONOTONIC, ts);
	ts->tv_sec += ms / 1000;
	ts->tv_nsec += (long)(ms % 1000) * 1000000L;
	if (ts->tv_nsec >= 1000000000L) {
		ts->tv_sec++;
		ts->tv_nsec -= 1000000000L;
	}
}

/* Kafka errors, counted in the process's registry (kb_metrics.h) by role
 * and kind, so every service exports them on /metrics. The families are
 * registered when the first client is made, so they render (empty) before
 * the first error. */
static kb_metric_family *producer_errors, *consumer_errors;
static pthread_once_t metrics_once = PTHREAD_ONCE_INIT;

static void metrics_init(void)
{
	kb_metrics *m = kb_metrics_default();

	producer_errors = kb_metrics_counter(
		m, "kb_kafka_producer_errors_total",
		"Kafka producer errors: produce (not queued), delivery (failed "
		"report), timeout (no report in time), client, fatal.",
		"kind");
	consumer_errors = kb_metrics_counter(
		m, "kb_kafka_consumer_errors_total",
		"Kafka consumer errors: poll (error event), commit, client, "
		"fatal, rebalance.",
		"kind");
}

static void count_error(int producer, const char *kind)
{
	pthread_once(&metrics_once, metrics_init);
	kb_counter_inc(kb_metric_get1(
		producer ? producer_errors : consumer_errors, kind));
}

/* A non-fatal client error. Connection trouble is already in librdkafka's
 * own log (log_cb), so it is repeated only at debug level. */
static void log_client_error(rd_kafka_t *rk, int err, const char *reason)
{
	int level = err == RD_KAFKA_RESP_ERR__TRANSPORT ||
				    err == RD_KAFKA_RESP_ERR__ALL_BROKERS_DOWN
			    ? KB_LOG_DEBUG
			    : KB_LOG_WARN;

	KB_LOG(level, "kafka: client=%s %s: %s", rd_kafka_name(rk),
	       rd_kafka_err2name((rd_kafka_resp_err_t)err), reason);
}

/* ---- producer ---------------------------------------------------------- */

struct kb_producer {
	rd_kafka_t *rk;
	pthread_t poller;
	int poller_started;
	atomic_int stop;
	atomic_int fatal;
	pthread_mutex_t mu;
	pthread_cond_t cv;
};

/* One blocking send, shared by the sender and the delivery report. */
struct send_rec {
	int refs; /* under producer mu */
	int done;
	rd_kafka_resp_err_t err;
	int32_t partition;
	int64_t offset;
};

static void send_rec_unref(struct kb_producer *p, struct send_rec *r)
{
	/* Called with p->mu held. */
	if (--r->refs == 0)
		free(r);
}

static void dr_msg_cb(rd_kafka_t *rk, const rd_kafka_message_t *m, void *opaque)
{
	struct kb_producer *p = opaque;
	struct send_rec *r = m->_private;

	(void)rk;
	if (!r) {
		/* A fire-and-forget send: its loss is harmless, but visible. */
		if (m->err)
			count_error(1, "delivery");
		if (m->err)
			kb_warn("kafka: async delivery to %s failed: %s",
				m->rkt ? rd_kafka_topic_name(m->rkt) : "?",
				rd_kafka_err2str(m->err));
		return;
	}
	pthread_mutex_lock(&p->mu);
	r->done = 1;
	r->err = m->err;
	r->partition = m->partition;
	r->offset = m->offset;
	send_rec_unref(p, r);
	pthread_cond_broadcast(&p->cv);
	pthread_mutex_unlock(&p->mu);
}

static void producer_error_cb(rd_kafka_t *rk, int err, const char *reason,
			      void *opaque)
{
	struct kb_producer *p = opaque;

	if (err == RD_KAFKA_RESP_ERR__FATAL) {
		char buf[512];
		rd_kafka_fatal_error(rk, buf, sizeof(buf));
		kb_error("kafka: producer %s: fatal error: %s",
			 rd_kafka_name(rk), buf);
		count_error(1, "fatal");
		atomic_store(&p->fatal, 1);
		pthread_mutex_lock(&p->mu);
		pthread_cond_broadcast(&p->cv);
		pthread_mutex_unlock(&p->mu);
		return;
	}
	count_error(1, "client");
	log_client_error(rk, err, reason);
}

static void *poller_main(void *arg)
{
	struct kb_producer *p = arg;

	/* rd_kafka_poll() returns as soon as it served an event, so a
	 * delivery report reaches its sender without waiting for the slice. */
	while (!atomic_load(&p->stop))
		rd_kafka_poll(p->rk, 50);
	return NULL;
}

kb_producer *kb_producer_new(const char *brokers, const char *client_id,
			     const char *const *extra, char *errstr,
			     size_t errstr_size)
{
	pthread_once(&metrics_once, metrics_init);
	const char *const base[] = {
		"client.id",
		client_id && *client_id ? client_id : "kb-producer",
		"enable.idempotence", "true", "acks", "all",
		/* Latency over batching: a submission is one message. */
		"linger.ms", "1", "socket.nagle.disable", "true",
		"log.connection.close", "false", NULL};
	char rderr[512];
	struct kb_producer *p = calloc(1, sizeof(*p));
	rd_kafka_conf_t *conf;
	pthread_condattr_t ca;

	if (!p) {
		kb_seterr(errstr, errstr_size, "kafka: out of memory");
		return NULL;
	}
	pthread_mutex_init(&p->mu, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&p->cv, &ca);
	pthread_condattr_destroy(&ca);

	conf = conf_build(brokers, base, extra, errstr, errstr_size);
	if (!conf)
		goto fail;
	rd_kafka_conf_set_dr_msg_cb(conf, dr_msg_cb);
	rd_kafka_conf_set_error_cb(conf, producer_error_cb);
	rd_kafka_conf_set_opaque(conf, p);

	p->rk = rd_kafka_new(RD_KAFKA_PRODUCER, conf, rderr, sizeof(rderr));
	if (!p->rk) {
		kb_seterr(errstr, errstr_size, "kafka: producer: %s", rderr);
		rd_kafka_conf_destroy(conf); /* not taken over on failure */
		goto fail;
	}
	if (pthread_create(&p->poller, NULL, poller_main, p) != 0) {
		kb_seterr(errstr, errstr_size,
			  "kafka: cannot start poll thread");
		rd_kafka_destroy(p->rk);
		goto fail;
	}
	p->poller_started = 1;
	kb_info("kafka: producer %s started brokers=%s", rd_kafka_name(p->rk),
		brokers);
	return p;
fail:
	pthread_cond_destroy(&p->cv);
	pthread_mutex_destroy(&p->mu);
	free(p);
	return NULL;
}

int kb_producer_send(kb_producer *p, const char *topic, const void *key,
		     size_t key_len, const void *value, size_t value_len,
		     int timeout_ms, char *errstr, size_t errstr_size)
{
	return kb_producer_send_at(p, topic, key, key_len, value, value_len,
				   timeout_ms, NULL, NULL, errstr, errstr_size);
}

int kb_producer_send_at(kb_producer *p, const char *topic, const void *key,
			size_t key_len, const void *value, size_t value_len,
			int timeout_ms, int32_t *partition, int64_t *offset,
			char *errstr, size_t errstr_size)
{
	struct send_rec *r;
	struct timespec deadline;
	rd_kafka_resp_err_t err;
	int done, fatal, rc;

	if (atomic_load(&p->fatal)) {
		kb_seterr(errstr, errstr_size,
			  "kafka: producer has a fatal error; recreate it");
		return -EIO;
	}
	r = calloc(1, sizeof(*r));
	if (!r) {
		kb_seterr(errstr, errstr_size, "kafka: out of memory");
		return -ENOMEM;
	}
	r->refs = 2; /* the sender and the delivery report */
	err = rd_kafka_producev(p->rk, RD_KAFKA_V_TOPIC(topic),
				RD_KAFKA_V_KEY((void *)key, key_len),
				RD_KAFKA_V_VALUE((void *)value, value_len),
				RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY),
				RD_KAFKA_V_OPAQUE(r), RD_KAFKA_V_END);
	if (err) {
		/* No delivery report will come. */
		free(r);
		count_error(1, "produce");
		kb_seterr(errstr, errstr_size, "kafka: produce to %s: %s",
			  topic, rd_kafka_err2str(err));
		return -EIO;
	}

	deadline_after(&deadline, timeout_ms < 0 ? 0 : timeout_ms);
	pthread_mutex_lock(&p->mu);
	while (!r->done && !atomic_load(&p->fatal)) {
		if (pthread_cond_timedwait(&p->cv, &p->mu, &deadline) ==
		    ETIMEDOUT)
			break;
	}
	done = r->done;
	err = r->err;
	if (partition)
		*partition = r->partition;
	if (offset)
		*offset = r->offset;
	fatal = atomic_load(&p->fatal);
	send_rec_unref(p, r);
	pthread_mutex_unlock(&p->mu);

	if (done && !err)
		return 0;
	count_error(1, done ? "delivery" : fatal ? "fatal" : "timeout");
	if (done) {
		kb_seterr(errstr, errstr_size,
			  "kafka: delivery to %s failed: %s", topic,
			  rd_kafka_err2str(err));
		rc = -EIO;
	} else if (fatal) {
		kb_seterr(errstr, errstr_size,
			  "kafka: producer has a fatal error; recreate it");
		rc = -EIO;
	} else {
		kb_seterr(errstr, errstr_size,
			  "kafka: no delivery report from %s within %d ms",
			  topic, timeout_ms);
		rc = -ETIMEDOUT;
	}
	return rc;
}

int kb_producer_send_async(kb_producer *p, const char *topic, const void *key,
			   size_t key_len, const void *value, size_t value_len)
{
	rd_kafka_resp_err_t err;

	err = rd_kafka_producev(p->rk, RD_KAFKA_V_TOPIC(topic),
				RD_KAFKA_V_KEY((void *)key, key_len),
				RD_KAFKA_V_VALUE((void *)value, value_len),
				RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY),
				RD_KAFKA_V_END);
	if (err) {
		count_error(1, "produce");
		kb_warn("kafka: async produce to %s: %s", topic,
			rd_kafka_err2str(err));
		return -EIO;
	}
	return 0;
}

int kb_producer_cluster_id(kb_producer *p, char *buf, size_t size,
			   int timeout_ms, char *errstr, size_t errstr_size)
{
	char *id = rd_kafka_clusterid(p->rk, timeout_ms);

	if (!id) {
		kb_seterr(errstr, errstr_size, "kafka: cluster id unknown");
		return -EIO;
	}
	snprintf(buf, size, "%s", id);
	rd_kafka_mem_free(p->rk, id);
	return 0;
}

int kb_producer_partitions(kb_producer *p, const char *topic, int32_t *parts,
			   int max, int *n, int timeout_ms, char *errstr,
			   size_t errstr_size)
{
	rd_kafka_topic_t *rkt = rd_kafka_topic_new(p->rk, topic, NULL);
	const struct rd_kafka_metadata *md = NULL;
	rd_kafka_resp_err_t err;

	*n = 0;
	if (!rkt) {
		kb_seterr(errstr, errstr_size, "kafka: topic %s: %s", topic,
			  rd_kafka_err2str(rd_kafka_last_error()));
		return -EIO;
	}
	err = rd_kafka_metadata(p->rk, 0, rkt, &md, timeout_ms);
	if (!err && (md->topic_cnt != 1 || md->topics[0].err))
		err = md->topic_cnt == 1 ? md->topics[0].err
					 : RD_KAFKA_RESP_ERR__UNKNOWN_TOPIC;
	if (!err)
		for (int i = 0; i < md->topics[0].partition_cnt && *n < max;
		     i++)
			parts[(*n)++] = md->topics[0].partitions[i].id;
	if (md)
		rd_kafka_metadata_destroy(md);
	rd_kafka_topic_destroy(rkt);
	if (err) {
		kb_seterr(errstr, errstr_size, "kafka: metadata of %s: %s",
			  topic, rd_kafka_err2str(err));
		return -EIO;
	}
	return 0;
}

int kb_producer_watermarks(kb_producer *p, const char *topic, int32_t partition,
			   int64_t *low, int64_t *high, int timeout_ms,
			   char *errstr, size_t errstr_size)
{
	rd_kafka_resp_err_t err = rd_kafka_query_watermark_offsets(
		p->rk, topic, partition, low, high, timeout_ms);

	if (err) {
		kb_seterr(errstr, errstr_size,
			  "kafka: watermarks of %s[%" PRId32 "]: %s", topic,
			  partition, rd_kafka_err2str(err));
		return -EIO;
	}
	return 0;
}

void kb_producer_poll(kb_producer *p, int timeout_ms)
{
	/* The poll thread already serves reports; this only lets a caller
	 * wait on them. Concurrent rd_kafka_poll() calls are allowed. */
	rd_kafka_poll(p->rk, timeout_ms);
}

int kb_producer_flush(kb_producer *p, int timeout_ms)
{
	return rd_kafka_flush(p->rk, timeout_ms) == RD_KAFKA_RESP_ERR_NO_ERROR
		       ? 0
		       : -ETIMEDOUT;
}

void kb_producer_destroy(kb_producer *p)
{
	if (!p)
		return;
	if (rd_kafka_flush(p->rk, 5000) != RD_KAFKA_RESP_ERR_NO_ERROR) {
		kb_warn("kafka: producer %s: %d message(s) undelivered at close",
			rd_kafka_name(p->rk), rd_kafka_outq_len(p->rk));
		/* Fail what is left so every delivery report (and the send
		 * records waiting on them) is served before the handle goes. */
		rd_kafka_purge(p->rk, RD_KAFKA_PURGE_F_QUEUE |
					      RD_KAFKA_PURGE_F_INFLIGHT);
		rd_kafka_flush(p->rk, 1000);
	}
	atomic_store(&p->stop, 1);
	if (p->poller_started)
		pthread_join(p->poller, NULL);
	rd_kafka_destroy(p->rk);
	pthread_cond_destroy(&p->cv);
	pthread_mutex_destroy(&p->mu);
	free(p);
}

/* ---- consumer ---------------------------------------------------------- */

struct kb_consumer {
	rd_kafka_t *rk;
	char *group;
	int fatal;  /* set by consumer_error_cb, on the polling thread */
	int paused; /* kb_consumer_pause() until kb_consumer_resume() */
	unsigned long generation; /* assignment changes */
};

/* Served from kb_consumer_poll() (the main queue is forwarded to the
 * consumer queue), so it runs on the caller's thread. */
static void consumer_error_cb(rd_kafka_t *rk, int err, const char *reason,
			      void *opaque)
{
	struct kb_consumer *c = opaque;

	if (err == RD_KAFKA_RESP_ERR__FATAL) {
		char buf[512];
		rd_kafka_fatal_error(rk, buf, sizeof(buf));
		kb_error("kafka: group=%s fatal consumer error: %s", c->group,
			 buf);
		count_error(0, "fatal");
		c->fatal = 1;
		return;
	}
	count_error(0, "client");
	log_client_error(rk, err, reason);
}

/* "topic[0,1] other[3]" for log lines; truncated with "..." if long. */
static void parts_str(const rd_kafka_topic_partition_list_t *parts, char *buf,
		      size_t size)
{
	size_t n = 0;
	const char *prev = NULL;

	buf[0] = '\0';
	for (int i = 0; parts && i < parts->cnt && n + 16 < size; i++) {
		const rd_kafka_topic_partition_t *tp = &parts->elems[i];
		int w;
		if (prev && strcmp(prev, tp->topic) == 0)
			w = snprintf(buf + n, size - n, ",%" PRId32,
				     tp->partition);
		else
			w = snprintf(buf + n, size - n, "%s%s[%" PRId32,
				     prev ? "] " : "", tp->topic,
				     tp->partition);
		if (w < 0 || (size_t)w >= size - n) {
			n = size;
			break;
		}
		n += (size_t)w;
		prev = tp->topic;
	}
	if (n >= size) {
		snprintf(buf + size - 4, 4, "...");
		return;
	}
	if (prev)
		snprintf(buf + n, size - n, "]");
	else
		snprintf(buf, size, "(none)");
}

static void rebalance_cb(rd_kafka_t *rk, rd_kafka_resp_err_t err,
			 rd_kafka_topic_partition_list_t *parts, void *opaque)
{
	struct kb_consumer *c = opaque;
	int coop = strcmp(rd_kafka_rebalance_protocol(rk), "COOPERATIVE") == 0;
	rd_kafka_error_t *error = NULL;
	rd_kafka_resp_err_t aerr = RD_KAFKA_RESP_ERR_NO_ERROR;
	char list[512];

	parts_str(parts, list, sizeof(list));
	c->generation++;
	switch (err) {
	case RD_KAFKA_RESP_ERR__ASSIGN_PARTITIONS:
		kb_info("kafka: group=%s assigned %s%s", c->group, list,
			c->paused ? " (paused)" : "");
		if (coop)
			error = rd_kafka_incremental_assign(rk, parts);
		else
			aerr = rd_kafka_assign(rk, parts);
		/* A member that is busy takes partitions without fetching
		 * from them until it resumes. A partition keeps its pause
		 * across a revocation (librdkafka's flag is the partition
		 * object's), so one revoked while busy and assigned again
		 * after the resume is resumed here. */
		if (c->paused)
			rd_kafka_pause_partitions(rk, parts);
		else
			rd_kafka_resume_partitions(rk, parts);
		break;
	case RD_KAFKA_RESP_ERR__REVOKE_PARTITIONS:
		kb_info("kafka: group=%s revoked %s%s", c->group, list,
			rd_kafka_assignment_lost(rk) ? " (lost)" : "");
		if (coop)
			error = rd_kafka_incremental_unassign(rk, parts);
		else
			aerr = rd_kafka_assign(rk, NULL);
		break;
	default:
		count_error(0, "rebalance");
		kb_error("kafka: group=%s rebalance error: %s", c->group,
			 rd_kafka_err2str(err));
		aerr = rd_kafka_assign(rk, NULL);
		break;
	}
	if (error) {
		kb_error("kafka: group=%s applying assignment: %s", c->group,
			 rd_kafka_error_string(error));
		rd_kafka_error_destroy(error);
	} else if (aerr) {
		kb_error("kafka: group=%s applying assignment: %s", c->group,
			 rd_kafka_err2str(aerr));
	}
}

kb_consumer *kb_consumer_new(const char *brokers, const char *group,
			     const char *const *topics, size_t ntopics,
			     const char *const *extra, char *errstr,
			     size_t errstr_size)
{
	pthread_once(&metrics_once, metrics_init);
	/* fetch.wait.max.ms bounds how long a new message can sit on the
	 * broker before an idle consumer's long-poll returns with it. */
	const char *const base[] = {"group.id",
				    group,
				    "client.id",
				    group,
				    "enable.auto.commit",
				    "false",
				    "enable.auto.offset.store",
				    "false",
				    "auto.offset.reset",
				    "earliest",
				    "fetch.wait.max.ms",
				    "10",
				    "socket.nagle.disable",
				    "true",
				    "log.connection.close",
				    "false",
				    NULL};
	char rderr[512];
	struct kb_consumer *c;
	rd_kafka_conf_t *conf;
	rd_kafka_topic_partition_list_t *subs;
	rd_kafka_resp_err_t err;

	if (!group || !*group || !topics || ntopics == 0) {
		kb_seterr(
			errstr, errstr_size,
			"kafka: a consumer needs a group and at least one topic");
		return NULL;
	}
	c = calloc(1, sizeof(*c));
	if (!c || !(c->group = strdup(group))) {
		free(c);
		kb_seterr(errstr, errstr_size, "kafka: out of memory");
		return NULL;
	}
	conf = conf_build(brokers, base, extra, errstr, errstr_size);
	if (!conf)
		goto fail;
	rd_kafka_conf_set_rebalance_cb(conf, rebalance_cb);
	rd_kafka_conf_set_error_cb(conf, consumer_error_cb);
	rd_kafka_conf_set_opaque(conf, c);

	c->rk = rd_kafka_new(RD_KAFKA_CONSUMER, conf, rderr, sizeof(rderr));
	if (!c->rk) {
		kb_seterr(errstr, errstr_size, "kafka: consumer: %s", rderr);
		rd_kafka_conf_destroy(conf);
		goto fail;
	}
	rd_kafka_poll_set_consumer(c->rk);

	subs = rd_kafka_topic_partition_list_new((int)ntopics);
	for (size_t i = 0; i < ntopics; i++)
		rd_kafka_topic_partition_list_add(subs, topics[i],
						  RD_KAFKA_PARTITION_UA);
	err = rd_kafka_subscribe(c->rk, subs);
	rd_kafka_topic_partition_list_destroy(subs);
	if (err) {
		kb_seterr(errstr, errstr_size, "kafka: subscribe: %s",
			  rd_kafka_err2str(err));
		rd_kafka_destroy(c->rk);
		goto fail;
	}
	kb_info("kafka: consumer group=%s subscribed to %zu topic(s) first=%s "
		"brokers=%s",
		group, ntopics, topics[0], brokers);
	return c;
fail:
	free(c->group);
	free(c);
	return NULL;
}

static void rewind_to(kb_consumer *c, const rd_kafka_message_t *m);

int kb_consumer_poll(kb_consumer *c, int timeout_ms, kb_message *msg)
{
	rd_kafka_message_t *m;

	memset(msg, 0, sizeof(*msg));
	if (c->fatal)
		return -EIO;
	m = rd_kafka_consumer_poll(c->rk, timeout_ms);
	if (!m)
		return c->fatal ? -EIO : 0;
	if (m->err) {
		rd_kafka_resp_err_t err = m->err;
		if (err == RD_KAFKA_RESP_ERR__PARTITION_EOF) {
			kb_debug("kafka: group=%s end of %s[%" PRId32
				 "] at %" PRId64,
				 c->group,
				 m->rkt ? rd_kafka_topic_name(m->rkt) : "?",
				 m->partition, m->offset);
			rd_kafka_message_destroy(m);
			return 0;
		}
		if (err == RD_KAFKA_RESP_ERR__FATAL) {
			char buf[512];
			rd_kafka_fatal_error(c->rk, buf, sizeof(buf));
			kb_error("kafka: group=%s fatal consumer error: %s",
				 c->group, buf);
			count_error(0, "fatal");
			rd_kafka_message_destroy(m);
			return -EIO;
		}
		count_error(0, "poll");
		kb_warn("kafka: group=%s consumer error on %s: %s", c->group,
			m->rkt ? rd_kafka_topic_name(m->rkt) : "-",
			rd_kafka_message_errstr(m));
		rd_kafka_message_destroy(m);
		return 0;
	}
	if (c->paused) {
		kb_debug("kafka: group=%s %s[%" PRId32 "]@%" PRId64
			 " arrived while paused: rewound",
			 c->group, rd_kafka_topic_name(m->rkt), m->partition,
			 m->offset);
		rewind_to(c, m);
		rd_kafka_message_destroy(m);
		return 0;
	}
	msg->topic = rd_kafka_topic_name(m->rkt);
	msg->partition = m->partition;
	msg->offset = m->offset;
	msg->key = m->key;
	msg->key_len = m->key_len;
	msg->value = m->payload;
	msg->value_len = m->len;
	msg->impl = m;
	return 1;
}

void kb_message_release(kb_message *msg)
{
	if (!msg || !msg->impl)
		return;
	rd_kafka_message_destroy(msg->impl);
	memset(msg, 0, sizeof(*msg));
}

/* Commits offset (with metadata, or none) for msg's partition,
 * synchronously. */
static int commit_at(kb_consumer *c, const kb_message *msg, int64_t offset,
		     const char *metadata, char *errstr, size_t errstr_size)
{
	rd_kafka_topic_partition_list_t *parts;
	rd_kafka_topic_partition_t *tp;
	rd_kafka_resp_err_t err;

	if (!msg || !msg->topic) {
		kb_seterr(errstr, errstr_size,
			  "kafka: commit of an empty message");
		return -EINVAL;
	}
	parts = rd_kafka_topic_partition_list_new(1);
	tp = rd_kafka_topic_partition_list_add(parts, msg->topic,
					       msg->partition);
	tp->offset = offset;
	if (metadata) {
		tp->metadata = strdup(metadata);
		tp->metadata_size = tp->metadata ? strlen(metadata) : 0;
	}
	err = rd_kafka_commit(c->rk, parts, 0 /* synchronous */);
	if (!err)
		err = parts->elems[0].err;
	rd_kafka_topic_partition_list_destroy(parts);
	if (err) {
		count_error(0, "commit");
		kb_seterr(errstr, errstr_size,
			  "kafka: commit %s[%" PRId32 "]@%" PRId64 ": %s",
			  msg->topic, msg->partition, offset,
			  rd_kafka_err2str(err));
		return -EIO;
	}
	return 0;
}

int kb_consumer_commit(kb_consumer *c, const kb_message *msg, char *errstr,
		       size_t errstr_size)
{
	/* The next message to read. */
	return commit_at(c, msg, msg ? msg->offset + 1 : 0, NULL, errstr,
			 errstr_size);
}

int kb_consumer_mark(kb_consumer *c, const kb_message *msg,
		     const char *metadata, char *errstr, size_t errstr_size)
{
	return commit_at(c, msg, msg ? msg->offset : 0, metadata, errstr,
			 errstr_size);
}

int kb_consumer_committed(kb_consumer *c, const kb_message *msg,
			  int64_t *offset, char *meta, size_t meta_size,
			  int timeout_ms, char *errstr, size_t errstr_size)
{
	rd_kafka_topic_partition_list_t *parts;
	rd_kafka_topic_partition_t *tp;
	rd_kafka_resp_err_t err;
	size_t n;

	*offset = -1;
	if (meta_size)
		meta[0] = '\0';
	parts = rd_kafka_topic_partition_list_new(1);
	rd_kafka_topic_partition_list_add(parts, msg->topic, msg->partition);
	err = rd_kafka_committed(c->rk, parts, timeout_ms);
	tp = &parts->elems[0];
	if (!err)
		err = tp->err;
	if (err) {
		kb_seterr(errstr, errstr_size,
			  "kafka: committed offset of %s[%" PRId32 "]: %s",
			  msg->topic, msg->partition, rd_kafka_err2str(err));
		rd_kafka_topic_partition_list_destroy(parts);
		return -EIO;
	}
	*offset = tp->offset;
	if (meta_size && tp->metadata) {
		n = tp->metadata_size < meta_size - 1 ? tp->metadata_size
						      : meta_size - 1;
		memcpy(meta, tp->metadata, n);
		meta[n] = '\0';
	}
	rd_kafka_topic_partition_list_destroy(parts);
	return 0;
}

/* Pauses or resumes every assigned partition. */
static int pause_all(kb_consumer *c, int pause)
{
	rd_kafka_topic_partition_list_t *parts = NULL;
	rd_kafka_resp_err_t err = rd_kafka_assignment(c->rk, &parts);

	c->paused = pause;
	if (!err && parts->cnt > 0)
		err = pause ? rd_kafka_pause_partitions(c->rk, parts)
			    : rd_kafka_resume_partitions(c->rk, parts);
	/* librdkafka 2.0.2 lets a resumed partition wait for its broker
	 * thread's next wake-up (up to a second) before it fetches again; a
	 * seek to where it stands wakes it. */
	if (!err && !pause && parts->cnt > 0 &&
	    rd_kafka_position(c->rk, parts) == RD_KAFKA_RESP_ERR_NO_ERROR) {
		rd_kafka_topic_partition_list_t *at =
			rd_kafka_topic_partition_list_new(parts->cnt);

		for (int i = 0; i < parts->cnt; i++)
			if (parts->elems[i].offset >= 0)
				rd_kafka_topic_partition_list_add(
					at, parts->elems[i].topic,
					parts->elems[i].partition)
					->offset = parts->elems[i].offset;
		if (at->cnt > 0) {
			rd_kafka_error_t *e =
				rd_kafka_seek_partitions(c->rk, at, 0);

			if (e)
				rd_kafka_error_destroy(e);
		}
		rd_kafka_topic_partition_list_destroy(at);
	}
	if (parts)
		rd_kafka_topic_partition_list_destroy(parts);
	if (err) {
		kb_warn("kafka: group=%s %s: %s", c->group,
			pause ? "pause" : "resume", rd_kafka_err2str(err));
		return -EIO;
	}
	return 0;
}

int kb_consumer_pause(kb_consumer *c)
{
	return pause_all(c, 1);
}

int kb_consumer_resume(kb_consumer *c)
{
	return pause_all(c, 0);
}

int kb_consumer_assigned(kb_consumer *c, const kb_message *msg)
{
	rd_kafka_topic_partition_list_t *parts = NULL;
	int found = 0;

	if (rd_kafka_assignment(c->rk, &parts) || !parts)
		return 0;
	found = rd_kafka_topic_partition_list_find(parts, msg->topic,
						   msg->partition) != NULL;
	rd_kafka_topic_partition_list_destroy(parts);
	return found;
}

unsigned long kb_consumer_generation(kb_consumer *c)
{
	return c->generation;
}

/* A message that arrived while paused (fetched before the pause): its
 * partition goes back to it, so that it is fetched again on resume. */
static void rewind_to(kb_consumer *c, const rd_kafka_message_t *m)
{
	rd_kafka_topic_partition_list_t *parts =
		rd_kafka_topic_partition_list_new(1);
	rd_kafka_error_t *error;

	rd_kafka_topic_partition_list_add(parts, rd_kafka_topic_name(m->rkt),
					  m->partition)
		->offset = m->offset;
	error = rd_kafka_seek_partitions(c->rk, parts, 5000);
	if (error) {
		kb_warn("kafka: group=%s rewinding %s[%" PRId32 "]: %s",
			c->group, rd_kafka_topic_name(m->rkt), m->partition,
			rd_kafka_error_string(error));
		rd_kafka_error_destroy(error);
	}
	rd_kafka_topic_partition_list_destroy(parts);
}

int64_t kb_consumer_lag(kb_consumer *c)
{
	rd_kafka_topic_partition_list_t *parts = NULL;
	int64_t lag = 0;

	if (rd_kafka_assignment(c->rk, &parts) || !parts)
		return -1;
	if (parts->cnt == 0 || rd_kafka_committed(c->rk, parts, 2000) !=
				       RD_KAFKA_RESP_ERR_NO_ERROR) {
		rd_kafka_topic_partition_list_destroy(parts);
		return -1;
	}
	for (int i = 0; i < parts->cnt; i++) {
		rd_kafka_topic_partition_t *tp = &parts->elems[i];
		int64_t lo, hi, from;
		if (tp->err ||
		    rd_kafka_query_watermark_offsets(
			    c->rk, tp->topic, tp->partition, &lo, &hi, 1000) !=
			    RD_KAFKA_RESP_ERR_NO_ERROR) {
			lag = -1;
			break;
		}
		/* Nothing committed yet: the group starts at the earliest. */
		from = tp->offset >= 0 ? tp->offset : lo;
		if (hi > from)
			lag += hi - from;
	}
	rd_kafka_topic_partition_list_destroy(parts);
	return lag;
}

void kb_consumer_destroy(kb_consumer *c)
{
	rd_kafka_resp_err_t err;

	if (!c)
		return;
	/* Leaves the group at once, so the partitions move now rather than
	 * after the session timeout. */
	err = rd_kafka_consumer_close(c->rk);
	if (err)
		kb_warn("kafka: group=%s close: %s", c->group,
			rd_kafka_err2str(err));
	rd_kafka_destroy(c->rk);
	free(c->group);
	free(c);
}

int kb_dead_letter_pack(const kb_message *msg, const char *reason,
			uint8_t **out, size_t *len)
{
	Kb__DeadLetter dl = KB__DEAD_LETTER__INIT;

	dl.topic = (char *)(msg->topic ? msg->topic : "");
	dl.partition = msg->partition;
	dl.offset = msg->offset;
	dl.key.data = (uint8_t *)msg->key;
	dl.key.len = msg->key ? msg->key_len : 0;
	dl.value.data = (uint8_t *)msg->value;
	dl.value.len = msg->value ? msg->value_len : 0;
	dl.reason = (char *)(reason ? reason : "");
	*len = kb__dead_letter__get_packed_size(&dl);
	/* One byte more: malloc(0) of an empty letter may be NULL. */
	*out = malloc(*len + 1);
	if (!*out)
		return -ENOMEM;
	kb__dead_letter__pack(&dl, *out);
	return 0;
}
