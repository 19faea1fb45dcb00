/* kb-ranker: folds the workers' Results into Redis.
 *
 * Theory of operation
 *
 * The ranker is the only writer of results and rankings. It is a member of
 * the consumer group "kb-ranker" on kb.results and handles one message at a
 * time, in partition order (the key is the submission id, so all events of
 * one submission arrive in the order the worker sent them):
 *
 *   - A Result is turned into the arguments of fold.lua (kb_foldargs, pure)
 *     and folded by one EVALSHA (kb_fold): the script stores the Result,
 *     marks the submission done and, for a scored Result, updates the
 *     user's best on kb:rank:<lb>:<gpu>. The script does nothing when
 *     kb:res:<id>:<gpu> already exists, so folding is idempotent.
 *   - A Progress updates the submission's stage (progress.lua), never after
 *     the submission is done. A Progress without a submission is a
 *     worker's heartbeat, for the gateways: skipped.
 *   - A message that does not decode, or a Result that cannot be folded, is
 *     copied to kb.dlq with the reason, and skipped.
 *
 * The offset is committed only after Redis acknowledged the script (or
 * kb.dlq acknowledged the dead letter): delivery is at-least-once, and
 * idempotence makes the re-delivery after a crash harmless. While Redis is
 * unreachable the ranker retries the same message with exponential backoff
 * and commits nothing; kb_fold reconnects by itself.
 *
 * Metrics (KB_METRICS_PORT, off by default): a small listener serves
 * /metrics (kb_metrics_http): folds by outcome (duplicates are the
 * re-deliveries skipped), progress records, dead letters, Redis retries,
 * the time one fold takes, the group's lag on kb.results (read every
 * LAG_EVERY_S between messages; every LAG_UNKNOWN_S until it is first
 * known, since the group has no partitions until it has joined), and the
 * Kafka client errors kb_kafka counts.
 *
 * SIGTERM drains: the current message is finished, or abandoned with its
 * offset uncommitted if it is waiting for Redis; then the producer is
 * flushed and the consumer leaves the group. A second signal exits at once.
 */
#include <errno.h>
#include <inttypes.h>
#include <librdkafka/rdkafka.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kb.pb-c.h"
#include "kb_config.h"
#include "kb_fold.h"
#include "kb_foldargs.h"
#include "kb_kafka.h"
#include "kb_log.h"
#include "kb_metrics.h"
#include "kb_metrics_process.h"
#include "kb_metrics_http.h"
#include "kb_redis.h"
#include "kb_signal.h"
#include "kb_util.h"

#define GROUP "kb-ranker"
#define POLL_MS 250
#define DLQ_SEND_TIMEOUT_MS 10000
#define BACKOFF_MIN_MS 100
#define LAG_EVERY_S 15.0
#define LAG_UNKNOWN_S 1.0

static char *cfg_brokers, *cfg_redis_url, *cfg_log_level, *cfg_extra;
static char *cfg_metrics_addr;
static long cfg_redis_timeout_ms, cfg_backoff_max_ms, cfg_metrics_port;
static int cfg_log_json;

static const struct kb_cfg_entry config[] = {
	{"KB_KAFKA_BROKERS", KB_CFG_STRING, "127.0.0.1:9092", 0, 0, 0,
	 &cfg_brokers, "Kafka bootstrap servers, host:port[,host:port]"},
	/* May carry a password, hence masked; the host is logged on connect. */
	{"KB_REDIS_URL", KB_CFG_STRING, "redis://127.0.0.1:6379", 0, 0, 1,
	 &cfg_redis_url,
	 "Redis, redis://[[user]:password@]host[:port][/db] or unix:/path"},
	{"KB_REDIS_TIMEOUT_MS", KB_CFG_INT, "5000", 100, 600000, 0,
	 &cfg_redis_timeout_ms,
	 "timeout for connecting to Redis and for each script"},
	{"KB_RANKER_BACKOFF_MAX_MS", KB_CFG_INT, "5000", 100, 600000, 0,
	 &cfg_backoff_max_ms,
	 "longest wait between retries while Redis or kb.dlq is down"},
	{"KB_LOG_LEVEL", KB_CFG_STRING, "info", 0, 0, 0, &cfg_log_level,
	 "debug, info, warn or error"},
	{"KB_LOG_JSON", KB_CFG_BOOL, "0", 0, 0, 0, &cfg_log_json,
	 "log one JSON object per line"},
	/* May carry SASL credentials, hence masked. */
	{"KB_CONSUMER_EXTRA", KB_CFG_STRING, "", 0, 0, 1, &cfg_extra,
	 "extra librdkafka consumer settings, key=value[,key=value]"},
	{"KB_METRICS_PORT", KB_CFG_INT, "0", 0, 65535, 0, &cfg_metrics_port,
	 "port of the Prometheus /metrics listener; 0: none"},
	{"KB_METRICS_ADDR", KB_CFG_STRING, "127.0.0.1", 0, 0, 0,
	 &cfg_metrics_addr,
	 "address of the /metrics listener (0.0.0.0 in a pod)"},
};

/* The ranker's metrics (NULL, and so no-ops, when KB_METRICS_PORT is 0). */
static struct {
	kb_metric_family *folds, *fold_seconds;
	kb_series *progress, *dlq, *retries, *lag;
} M;

static void metrics_init(kb_metrics *m)
{
	kb_metric_family *f;

	M.folds = kb_metrics_counter(
		m, "kb_ranker_folds_total",
		"Results folded, by outcome: new, personal_best, "
		"duplicate (a re-delivery, skipped).",
		"outcome");
	M.fold_seconds = kb_metrics_histogram(
		m, "kb_ranker_fold_seconds",
		"Time of one fold script, retries "
		"included.",
		NULL, kb_metrics_latency_bounds, KB_METRICS_LATENCY_NBOUNDS);
	f = kb_metrics_counter(m, "kb_ranker_progress_total",
			       "Progress events recorded.", NULL);
	M.progress = kb_metric_get0(f);
	f = kb_metrics_counter(m, "kb_ranker_dead_letters_total",
			       "Events sent to kb.dlq.", NULL);
	M.dlq = kb_metric_get0(f);
	f = kb_metrics_counter(m, "kb_ranker_redis_retries_total",
			       "Scripts retried because Redis was unavailable.",
			       NULL);
	M.retries = kb_metric_get0(f);
	f = kb_metrics_gauge(m, "kb_ranker_consumer_lag",
			     "Messages of kb.results not yet folded (group "
			     "kb-ranker; -1 unknown).",
			     NULL);
	M.lag = kb_metric_get0(f);
	/* Every outcome renders from the start, so rate() has a series. */
	kb_metric_get1(M.folds, "new");
	kb_metric_get1(M.folds, "personal_best");
	kb_metric_get1(M.folds, "duplicate");
}

static const char *outcome_label(int outcome)
{
	return outcome == KB_FOLD_DUPLICATE ? "duplicate"
	       : outcome == KB_FOLD_BEST    ? "personal_best"
					    : "new";
}

struct ranker {
	kb_consumer *cons;
	kb_producer *prod;
	kb_fold *fold;
	unsigned long long n_folded, n_duplicates, n_progress, n_dlq;
};

/* Splits "k=v,k=v" in place into a NULL-terminated list of "k", "v" pairs,
 * as kb_consumer_new() takes them. Returns the malloc'd list (free it; the
 * strings live in s), or NULL with errstr set. An empty s gives an empty
 * list. */
static const char **parse_extra(char *s, char *errstr, size_t errstr_size)
{
	static char none[1];
	size_t n = 1, i = 0;
	const char **list;
	char *save = NULL, *item;

	if (!s)
		s = none;
	for (const char *p = s; *p; p++)
		n += *p == ',';
	list = calloc(2 * n + 1, sizeof(*list));
	if (!list) {
		snprintf(errstr, errstr_size, "out of memory");
		return NULL;
	}
	for (item = strtok_r(s, ",", &save); item;
	     item = strtok_r(NULL, ",", &save)) {
		char *eq = strchr(item, '=');
		if (!eq || eq == item || !eq[1]) {
			snprintf(errstr, errstr_size,
				 "KB_CONSUMER_EXTRA: \"%s\" is not key=value",
				 item);
			free(list);
			return NULL;
		}
		*eq = '\0';
		list[i++] = item;
		list[i++] = eq + 1;
	}
	list[i] = NULL;
	return list;
}

/* Waits *delay_ms unless a stop is requested, then doubles *delay_ms up to
 * the configured maximum. Returns 0, or -ECANCELED when stopping. */
static int backoff(int *delay_ms)
{
	struct pollfd p = {.fd = kb_signal_fd(), .events = POLLIN};

	if (kb_signal_stopping())
		return -ECANCELED;
	poll(&p, p.fd >= 0 ? 1 : 0, *delay_ms);
	*delay_ms = *delay_ms * 2 > cfg_backoff_max_ms ? (int)cfg_backoff_max_ms
						       : *delay_ms * 2;
	return kb_signal_stopping() ? -ECANCELED : 0;
}

/* Copies m to kb.dlq with reason, waiting until the broker has it. Returns
 * 0 (commit m), -ECANCELED (stopping: leave m uncommitted) or -ENOMEM. */
static int dead_letter(struct ranker *rk, const kb_message *m,
		       const char *reason)
{
	char err[512];
	uint8_t *buf;
	size_t len;
	int delay = BACKOFF_MIN_MS, rc;

	if (kb_dead_letter_pack(m, reason, &buf, &len) < 0)
		return -ENOMEM;
	kb_warn("dead-letter topic=%s partition=%" PRId32 " offset=%" PRId64
		" reason=\"%s\"",
		m->topic ? m->topic : "", m->partition, m->offset, reason);
	while ((rc = kb_producer_send(rk->prod, KB_TOPIC_DLQ, m->key,
				      m->key ? m->key_len : 0, buf, len,
				      DLQ_SEND_TIMEOUT_MS, err, sizeof(err))) !=
	       0) {
		kb_warn("dead-letter send failed, retrying in %d ms: %s", delay,
			err);
		rc = backoff(&delay);
		if (rc != 0)
			break;
	}
	free(buf);
	if (rc == 0) {
		rk->n_dlq++;
		kb_counter_inc(M.dlq);
	}
	return rc;
}

static int fold_result(struct ranker *rk, const kb_message *m,
		       const Kb__ResultEvent *ev)
{
	struct kb_fold_call call;
	char err[512];
	int delay = BACKOFF_MIN_MS, outcome = -1, rc;
	double t0 = kb_mono_s();

	if (kb_foldargs_result(ev, &call, err, sizeof(err)) != 0)
		return dead_letter(rk, m, err);
	while ((rc = kb_fold_result(rk->fold, &call, &outcome, err,
				    sizeof(err))) != 0) {
		if (rc == -EPROTO) {
			kb_error("fold failed sub=%" PRIu64 " gpu=%s: %s",
				 call.sub_id, call.gpu, err);
			rc = dead_letter(rk, m, err);
			kb_fold_call_free(&call);
			return rc;
		}
		kb_warn("redis unavailable sub=%" PRIu64
			" gpu=%s, retrying in %d ms: %s",
			call.sub_id, call.gpu, delay, err);
		kb_counter_inc(M.retries);
		rc = backoff(&delay);
		if (rc != 0) {
			kb_fold_call_free(&call);
			return rc;
		}
	}
	kb_info("fold sub=%" PRIu64 " gpu=%s lb=%s user=%s mode=%s verdict=%s "
		"score=%s outcome=%s",
		call.sub_id, call.gpu, call.lb, call.user, call.mode,
		call.verdict, call.scored ? call.score : "none",
		kb_fold_outcome_name(outcome));
	if (outcome == KB_FOLD_DUPLICATE)
		rk->n_duplicates++;
	else
		rk->n_folded++;
	kb_counter_inc(kb_metric_get1(M.folds, outcome_label(outcome)));
	kb_histogram_observe(kb_metric_get0(M.fold_seconds), kb_mono_s() - t0);
	kb_fold_call_free(&call);
	return 0;
}

/* The time the worker produced m (the Kafka message timestamp): the same on
 * every delivery, so a re-delivered progress writes the same stage_ms. */
static int64_t message_time_ms(const kb_message *m)
{
	rd_kafka_timestamp_type_t type;
	int64_t ts = m->impl ? rd_kafka_message_timestamp(m->impl, &type) : -1;

	return ts > 0 ? ts : kb_now_ms();
}

static int fold_progress(struct ranker *rk, const kb_message *m,
			 const Kb__ResultEvent *ev)
{
	struct kb_progress_call call;
	char err[512];
	int delay = BACKOFF_MIN_MS, applied = 0, rc;

	if (kb_foldargs_progress(ev, message_time_ms(m), &call, err,
				 sizeof(err)) != 0)
		return dead_letter(rk, m, err);
	while ((rc = kb_fold_progress(rk->fold, &call, &applied, err,
				      sizeof(err))) != 0) {
		if (rc == -EPROTO) {
			kb_error("progress failed sub=%" PRIu64 " gpu=%s: %s",
				 call.sub_id, call.gpu, err);
			return dead_letter(rk, m, err);
		}
		kb_warn("redis unavailable sub=%" PRIu64
			" gpu=%s, retrying in %d ms: %s",
			call.sub_id, call.gpu, delay, err);
		kb_counter_inc(M.retries);
		rc = backoff(&delay);
		if (rc != 0)
			return rc;
	}
	kb_debug("progress sub=%" PRIu64 " gpu=%s stage=%s applied=%d",
		 call.sub_id, call.gpu, call.stage, applied);
	rk->n_progress++;
	kb_counter_inc(M.progress);
	return 0;
}

/* Returns 0 when m is done with (commit it), or a negative code to stop
 * with m uncommitted. */
static int handle(struct ranker *rk, const kb_message *m)
{
	static const uint8_t empty[1];
	Kb__ResultEvent *ev;
	int rc;

	ev = kb__result_event__unpack(NULL, m->value ? m->value_len : 0,
				      m->value ? m->value : empty);
	if (!ev)
		return dead_letter(rk, m, "undecodable ResultEvent");
	switch (ev->event_case) {
	case KB__RESULT_EVENT__EVENT_RESULT:
		rc = fold_result(rk, m, ev);
		break;
	case KB__RESULT_EVENT__EVENT_PROGRESS:
		/* A worker's heartbeat (no submission) is for the gateways. */
		rc = ev->submission_id == 0 && ev->progress
			     ? 0
			     : fold_progress(rk, m, ev);
		break;
	default:
		rc = dead_letter(
			rk, m,
			"ResultEvent carries neither progress nor result");
		break;
	}
	kb__result_event__free_unpacked(ev, NULL);
	return rc;
}

/* Consumes until a stop is requested. Returns 0, or -1 on a fatal error. */
static int run(struct ranker *rk)
{
	char err[512];
	double next_lag = 0;
	int lag_known = 0;

	while (!kb_signal_stopping()) {
		kb_message m;
		int rc;

		/* The lag costs a broker round trip or two: only now and then,
		 * and only when someone can scrape it. */
		if (M.lag && kb_mono_s() >= next_lag) {
			int64_t lag = kb_consumer_lag(rk->cons);
			kb_gauge_set(M.lag, (double)lag);
			lag_known |= lag >= 0;
			next_lag = kb_mono_s() +
				   (lag_known ? LAG_EVERY_S : LAG_UNKNOWN_S);
		}
		rc = kb_consumer_poll(rk->cons, POLL_MS, &m);

		if (rc < 0) {
			kb_error("consumer failed (%d): stopping", rc);
			return -1;
		}
		if (rc == 0)
			continue;
		rc = handle(rk, &m);
		if (rc == 0 &&
		    kb_consumer_commit(rk->cons, &m, err, sizeof(err)) != 0)
			/* Harmless beyond the wasted work: whoever gets the
			 * partition next folds m again, as a duplicate. */
			kb_warn("commit failed partition=%" PRId32
				" offset=%" PRId64 ": %s",
				m.partition, m.offset, err);
		kb_message_release(&m);
		if (rc == -ECANCELED)
			return 0;
		if (rc != 0) {
			kb_error("cannot handle message (%d): stopping", rc);
			return -1;
		}
	}
	return 0;
}

/* Waits until Redis answers and the scripts are loaded, so a ranker started
 * before Redis neither fails nor joins the group with nothing to write to.
 * Returns 0, or -ECANCELED when stopping. */
static int connect_redis(kb_fold *fold)
{
	char err[512];
	int delay = BACKOFF_MIN_MS;

	while (kb_fold_connect(fold, err, sizeof(err)) != 0) {
		kb_warn("redis unavailable, retrying in %d ms: %s", delay, err);
		if (backoff(&delay) != 0)
			return -ECANCELED;
	}
	return 0;
}

/* Logs where Redis is, without the URL's password. */
static void log_redis_target(const char *url)
{
	struct kb_redis_url u;
	char err[256];

	if (kb_redis_url_parse(url, &u, err, sizeof(err)) != 0)
		kb_info("redis connected");
	else if (u.is_unix)
		kb_info("redis connected path=%s db=%d", u.path, u.db);
	else
		kb_info("redis connected host=%s port=%d db=%d", u.host, u.port,
			u.db);
}

static void usage(FILE *f)
{
	fprintf(f, "usage: kb-ranker\n\nConfigured by the environment:\n");
	for (size_t i = 0; i < KB_ARRAY_LEN(config); i++)
		fprintf(f, "  %-26s %s (default \"%s\")\n", config[i].env,
			config[i].help, config[i].def ? config[i].def : "");
}

int main(int argc, char **argv)
{
	static const char *const topics[] = {KB_TOPIC_RESULTS};
	struct ranker rk = {0};
	kb_metrics_server *metrics = NULL;
	const char **extra = NULL;
	char err[512];
	int level, status = 0;

	if (argc > 1) {
		int help = strcmp(argv[1], "--help") == 0 ||
			   strcmp(argv[1], "-h") == 0;
		usage(help ? stdout : stderr);
		return help ? 0 : 2;
	}
	if (kb_config_load(config, KB_ARRAY_LEN(config), err, sizeof(err)) !=
	    0) {
		fprintf(stderr, "kb-ranker: %s\n", err);
		kb_config_free(config, KB_ARRAY_LEN(config));
		return 2;
	}
	level = kb_log_level_parse(cfg_log_level);
	if (level < 0) {
		fprintf(stderr,
			"kb-ranker: KB_LOG_LEVEL: \"%s\" is not debug, info, warn or error\n",
			cfg_log_level);
		kb_config_free(config, KB_ARRAY_LEN(config));
		return 2;
	}
	kb_log_init("ranker", level, cfg_log_json);
	kb_config_log(config, KB_ARRAY_LEN(config));
	extra = parse_extra(cfg_extra, err, sizeof(err));
	if (!extra) {
		kb_error("%s", err);
		kb_config_free(config, KB_ARRAY_LEN(config));
		return 2;
	}
	if (kb_signal_install() != 0) {
		kb_error("cannot install signal handlers");
		status = 1;
		goto out;
	}

	if (cfg_metrics_port > 0) {
		metrics_init(kb_metrics_default());
		kb_metrics_process(kb_metrics_default(), "ranker");
		metrics = kb_metrics_serve(kb_metrics_default(),
					   cfg_metrics_addr,
					   (int)cfg_metrics_port, err,
					   sizeof(err));
		if (!metrics) {
			kb_error("%s", err);
			status = 1;
			goto out;
		}
		kb_info("metrics on http://%s:%ld/metrics", cfg_metrics_addr,
			cfg_metrics_port);
	}

	rk.fold = kb_fold_new(cfg_redis_url, (int)cfg_redis_timeout_ms);
	if (!rk.fold) {
		kb_error("out of memory");
		status = 1;
		goto out;
	}
	if (connect_redis(rk.fold) != 0)
		goto out;
	log_redis_target(cfg_redis_url);

	rk.prod = kb_producer_new(cfg_brokers, GROUP, NULL, err, sizeof(err));
	if (!rk.prod) {
		kb_error("producer: %s", err);
		status = 1;
		goto out;
	}
	rk.cons = kb_consumer_new(cfg_brokers, GROUP, topics, 1,
				  (const char *const *)extra, err, sizeof(err));
	if (!rk.cons) {
		kb_error("consumer: %s", err);
		status = 1;
		goto out;
	}
	kb_info("consuming topic=%s group=%s brokers=%s", KB_TOPIC_RESULTS,
		GROUP, cfg_brokers);

	if (run(&rk) != 0)
		status = 1;
	kb_info("draining");

out:
	if (rk.prod && kb_producer_flush(rk.prod, 5000) != 0)
		kb_warn("producer flush timed out");
	kb_consumer_destroy(rk.cons);
	kb_producer_destroy(rk.prod);
	kb_fold_destroy(rk.fold);
	kb_metrics_server_stop(metrics);
	kb_info("stopped folded=%llu duplicates=%llu progress=%llu dead_letters=%llu",
		rk.n_folded, rk.n_duplicates, rk.n_progress, rk.n_dlq);
	free(extra);
	kb_config_free(config, KB_ARRAY_LEN(config));
	return status;
}
