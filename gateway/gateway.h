/* kb_gw: the gateway's shared state and the seams between its modules.
 *
 * struct kb_gw is built by main() before the HTTP daemon starts and is
 * read-only afterwards, except for the atomic counters; every handler
 * thread reads it without locks. The Kafka producer inside is thread-safe;
 * Redis connections are per thread (store.c).
 */
#ifndef KB_GATEWAY_H
#define KB_GATEWAY_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "kb.pb-c.h"
#include "kb_kafka.h"
#include "kb_task.h"

/* Configuration (one table in main.c). */
struct kb_gw_config {
	char *http_addr;
	long http_port;
	long http_threads;
	char *redis_url;
	char *kafka_brokers;
	long kafka_timeout_ms;
	char *admin_token; /* "" disables the admin API; never logged */
	char *problems;
	long max_file_bytes;
	long drain_s;
	char *log_level;
	int log_json;
};

/* One leaderboard of the loaded problem set. */
struct kb_gw_lb {
	const struct kb_task *task; /* owned by kb_gw.ps */
	/* Never logged, never served: only copied into ranked Submissions. */
	uint64_t secret_seed;
	/* The Task every Submission of this board carries, built once. The
	 * @SUBMISSION@ entry (index submission_file) has empty content; a
	 * request substitutes the code in a shallow copy. */
	Kb__Task pb;
	Kb__TaskFile *pb_files;
	Kb__TaskFile **pb_file_ptrs;
	Kb__Task__ConfigEntry *pb_config;
	Kb__Task__ConfigEntry **pb_config_ptrs;
	size_t submission_file; /* SIZE_MAX when the task has none */
	char **file_contents;   /* read from disk at startup, per task file */
	size_t *file_lens;
	size_t task_bytes;      /* sum of file_lens */
	char *gpus_json;        /* the body of GET /gpus/<name> */
};

struct kb_gw {
	struct kb_gw_config cfg;
	struct kb_problemset ps;
	struct kb_gw_lb *lbs;
	size_t nlbs;
	char *leaderboards_json; /* the body of GET /leaderboards */
	size_t task_bytes_max;   /* the largest board's task files, in all */
	kb_producer *producer;
	atomic_long inflight;    /* requests between first call and completion */
};

/* problems.c: loads cfg.problems into ps/lbs, reads every task file and
 * renders the cached JSON. Secret seeds are left 0 (store.c sets them).
 * Returns 0 or negative with errstr set. Call from main() before the
 * daemon starts; kb_gw_lbs_free() after it stopped. The lookups below are
 * thread-safe (the data is read-only by then). */
int kb_gw_lbs_load(struct kb_gw *g, char *errstr, size_t errstr_size);
void kb_gw_lbs_free(struct kb_gw *g);
const struct kb_gw_lb *kb_gw_lb_find(const struct kb_gw *g, const char *name);
int kb_gw_lb_has_gpu(const struct kb_gw_lb *lb, const char *gpu);

/* Builds the leaderboard list body; exposed for tests. Never includes a
 * secret seed. Returns a malloc'd string or NULL. */
char *kb_gw_render_leaderboards(const struct kb_gw *g);

#endif
