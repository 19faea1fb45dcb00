/* kb_gw_queue: see queue.h. */
#include "queue.h"

#include <errno.h>
#include <librdkafka/rdkafka.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kb_kafka.h"
#include "kb_log.h"
#include "kb_util.h"

#define MAX_GPUS 64
#define QUERY_TIMEOUT_MS 1500

struct entry {
	pthread_mutex_t mu;
	char gpu[96];
	rd_kafka_t *rk;
	long lag;
	double at; /* kb_mono_s() of the measurement; 0 never */
};

struct kb_gw_queue {
	char *brokers;
	long cache_ms;
	pthread_mutex_t mu; /* n and the gpu names */
	struct entry e[MAX_GPUS];
	size_t n;
};

struct kb_gw_queue *kb_gw_queue_new(const char *brokers, long cache_ms)
{
	struct kb_gw_queue *q = calloc(1, sizeof(*q));

	if (!q)
		return NULL;
	q->brokers = strdup(brokers);
	if (!q->brokers) {
		free(q);
		return NULL;
	}
	q->cache_ms = cache_ms;
	pthread_mutex_init(&q->mu, NULL);
	for (int i = 0; i < MAX_GPUS; i++)
		pthread_mutex_init(&q->e[i].mu, NULL);
	return q;
}

void kb_gw_queue_destroy(struct kb_gw_queue *q)
{
	if (!q)
		return;
	for (size_t i = 0; i < q->n; i++)
		if (q->e[i].rk)
			rd_kafka_destroy(q->e[i].rk);
	for (int i = 0; i < MAX_GPUS; i++)
		pthread_mutex_destroy(&q->e[i].mu);
	pthread_mutex_destroy(&q->mu);
	free(q->brokers);
	free(q);
}

static struct entry *entry_for(struct kb_gw_queue *q, const char *gpu)
{
	struct entry *e = NULL;

	pthread_mutex_lock(&q->mu);
	for (size_t i = 0; i < q->n; i++)
		if (strcmp(q->e[i].gpu, gpu) == 0)
			e = &q->e[i];
	if (!e && q->n < MAX_GPUS && strlen(gpu) < sizeof(e->gpu)) {
		e = &q->e[q->n++];
		snprintf(e->gpu, sizeof(e->gpu), "%s", gpu);
	}
	pthread_mutex_unlock(&q->mu);
	return e;
}

static void log_cb(const rd_kafka_t *rk, int level, const char *fac,
		   const char *buf)
{
	(void)rk;
	kb_debug("kafka(queue): %d %s %s", level, fac, buf);
}

static rd_kafka_t *open_handle(const struct kb_gw_queue *q, const char *gpu,
			       char *errstr, size_t errstr_size)
{
	char group[160];
	rd_kafka_conf_t *conf = rd_kafka_conf_new();
	const char *kv[][2] = {
		{"bootstrap.servers", q->brokers},
		{"group.id", group},
		{"enable.auto.commit", "false"},
		{"enable.auto.offset.store", "false"},
		{"client.id", "kb-gateway-queue"},
	};

	snprintf(group, sizeof(group), "kb-worker.%s", gpu);
	for (size_t i = 0; i < sizeof(kv) / sizeof(kv[0]); i++)
		if (rd_kafka_conf_set(conf, kv[i][0], kv[i][1], errstr,
				      errstr_size) != RD_KAFKA_CONF_OK) {
			rd_kafka_conf_destroy(conf);
			return NULL;
		}
	rd_kafka_conf_set_log_cb(conf, log_cb);
	rd_kafka_t *rk =
		rd_kafka_new(RD_KAFKA_CONSUMER, conf, errstr, errstr_size);
	if (!rk)
		rd_kafka_conf_destroy(conf);
	return rk;
}

/* Measures the lag of e (e->mu held). */
static int measure(struct kb_gw_queue *q, struct entry *e, char *errstr,
		   size_t errstr_size)
{
	char topic[256];
	const struct rd_kafka_metadata *md = NULL;
	rd_kafka_topic_partition_list_t *parts = NULL;
	rd_kafka_topic_t *th = NULL;
	rd_kafka_resp_err_t err;
	long lag = 0;
	int rc = -EIO;

	if (kb_topic_submissions(topic, sizeof(topic), e->gpu) != 0) {
		snprintf(errstr, errstr_size, "invalid gpu name");
		return -EINVAL;
	}
	if (!e->rk && !(e->rk = open_handle(q, e->gpu, errstr, errstr_size)))
		return -EIO;
	th = rd_kafka_topic_new(e->rk, topic, NULL);
	if (!th) {
		snprintf(errstr, errstr_size, "cannot open topic handle");
		return -ENOMEM;
	}
	err = rd_kafka_metadata(e->rk, 0, th, &md, QUERY_TIMEOUT_MS);
	if (err) {
		snprintf(errstr, errstr_size, "metadata: %s",
			 rd_kafka_err2str(err));
		goto out;
	}
	if (md->topic_cnt != 1 || md->topics[0].err) {
		/* No such topic yet: nothing was ever queued. */
		if (md->topic_cnt == 1 &&
		    md->topics[0].err ==
			    RD_KAFKA_RESP_ERR_UNKNOWN_TOPIC_OR_PART) {
			rc = 0;
			goto done;
		}
		snprintf(errstr, errstr_size, "metadata: %s",
			 md->topic_cnt ? rd_kafka_err2str(md->topics[0].err)
				       : "no topic");
		goto out;
	}
	int np = md->topics[0].partition_cnt;
	parts = rd_kafka_topic_partition_list_new(np > 0 ? np : 1);
	for (int i = 0; i < np; i++)
		rd_kafka_topic_partition_list_add(
			parts, topic, md->topics[0].partitions[i].id);
	err = rd_kafka_committed(e->rk, parts, QUERY_TIMEOUT_MS);
	if (err) {
		snprintf(errstr, errstr_size, "committed offsets: %s",
			 rd_kafka_err2str(err));
		goto out;
	}
	for (int i = 0; i < parts->cnt; i++) {
		int64_t lo = 0, hi = 0;
		err = rd_kafka_query_watermark_offsets(
			e->rk, topic, parts->elems[i].partition, &lo, &hi,
			QUERY_TIMEOUT_MS);
		if (err) {
			snprintf(errstr, errstr_size, "watermarks: %s",
				 rd_kafka_err2str(err));
			goto out;
		}
		int64_t at = parts->elems[i].offset >= 0
				     ? parts->elems[i].offset
				     : lo;
		if (hi > at)
			lag += (long)(hi - at);
	}
	rc = 0;
done:
	e->lag = lag;
	e->at = kb_mono_s();
out:
	if (parts)
		rd_kafka_topic_partition_list_destroy(parts);
	if (md)
		rd_kafka_metadata_destroy(md);
	rd_kafka_topic_destroy(th);
	return rc;
}

int kb_gw_queue_lag(struct kb_gw_queue *q, const char *gpu, long *lag,
		    char *errstr, size_t errstr_size)
{
	struct entry *e = entry_for(q, gpu);
	int rc = 0;

	if (!e) {
		snprintf(errstr, errstr_size, "too many gpus");
		return -ENOSPC;
	}
	pthread_mutex_lock(&e->mu);
	if (e->at == 0 || (kb_mono_s() - e->at) * 1000.0 > (double)q->cache_ms)
		rc = measure(q, e, errstr, errstr_size);
	*lag = e->lag;
	pthread_mutex_unlock(&e->mu);
	return rc;
}

long kb_gw_queue_lag_cached(struct kb_gw_queue *q, const char *gpu,
			    long max_age_ms)
{
	struct entry *e = entry_for(q, gpu);
	long lag = -1;

	if (!e)
		return -1;
	/* Never wait behind a measurement in progress. */
	if (pthread_mutex_trylock(&e->mu) != 0)
		return -1;
	if (e->at > 0 && (kb_mono_s() - e->at) * 1000.0 <= (double)max_age_ms)
		lag = e->lag;
	pthread_mutex_unlock(&e->mu);
	return lag;
}
