/* kb_gw: the gateway's shared state and the seams between its modules.
 *
 * struct kb_gw is built by main() before the HTTP daemon starts. Its
 * configuration is read-only afterwards. The board table only grows
 * (admin-created boards are appended, deleted ones are flagged, never
 * freed before exit), so a request may keep a board pointer for its whole
 * life without a lock. The Kafka producer is thread-safe; Redis
 * connections are per thread (store.c); the hub, the caches and the
 * events module lock internally.
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
	long http_threads; /* 0 at load: one per online CPU */
	long http_conn_memory;
	long pool_threads;
	char *redis_url;
	char *kafka_brokers;
	long kafka_timeout_ms;
	char *admin_token; /* "" disables the admin API; never logged */
	char *problems;
	char *problems_dev; /* admin-created boards come from here; "" none */
	int seal_upstream;  /* checked here, read by the loader (kb_seal.h) */
	char *harness_dir;
	long max_dynamic_boards;
	long sync_max_bytes, sync_max_entries; /* one problem sync's budget */
	long max_file_bytes;
	long headers_max;
	long drain_s;
	char *log_level;
	int log_json;
	long rate_test, rate_leaderboard; /* default hourly limits, 0 none */
	long max_queued_per_gpu; /* unfinished jobs per user and gpu, 0 none */
	long queued_forget_s;
	long code_ttl_s;              /* unranked code kept, 0 for ever */
	long sse_max_per_user;        /* open streams per user here, 0 none */
	long http_per_ip_connections; /* 0 none */
	long http_max_connections;
	long sse_keepalive_s, sse_poll_s, sse_max_s;
	long worker_stale_s;
	long ranking_cache_ms;
	long queue_cache_ms;
	long auth_state_ttl_s;
	long auth_rate_per_min; /* /auth requests per client address */
	long auth_pool_threads;
	char *http_client_ip_header; /* "" the TCP peer is the client */
	char *oauth_redirect_base;
	char *oauth_discord_base, *oauth_discord_id, *oauth_discord_secret;
	char *oauth_github_base, *oauth_github_api_base;
	char *oauth_github_id, *oauth_github_secret;
	long oauth_timeout_ms;
	int metrics;       /* GET /metrics and the counting behind it */
	int web;           /* the web pages (gateway/web/) */
	long web_cache_ms; /* how long a rendered page is reused */
	long reconcile_s;  /* reconciler pass interval, 0 off (reconcile.h) */
	long reconcile_grace_s; /* an unplaced record waits this long */
	long reconcile_max;     /* re-publishes before a record is ended */
	/* Anonymous live-feed streams (GET /web/events): in all (at most
	 * half of http_max_connections, whatever is asked), per client
	 * address, and how long one may live and stay without progress. */
	long web_streams_max, web_streams_per_ip;
	char *metrics_addr; /* GET /metrics listens here, apart from the API */
	long metrics_port;  /* 0: no listener */
	long web_stream_max_s, web_stream_idle_s;
};

/* One leaderboard. */
struct kb_gw_lb {
	const struct kb_task *task;
	long index;          /* position in the board table (id - 1) */
	int dynamic;         /* created through the admin API */
	char *directory;     /* dynamic: its directory under problems_dev */
	int64_t deadline_ms; /* -1: none */
	atomic_int closed;   /* visibility "closed" (refreshed from Redis) */
	atomic_int deleted;
	/* The board secret. Never logged, never served, never published:
	 * ranked Submissions carry seeds derived from it (seed.h). */
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
	char **file_contents;   /* read from disk at load, per task file */
	size_t *file_lens;
	size_t task_bytes; /* sum of file_lens */
	/* pb packed, as the task store keeps it; Submissions carry task_ref
	 * (kb_taskstore.h). task_stored: written to Redis by this process. */
	uint8_t *task_packed;
	size_t task_len;
	char task_ref[65];
	atomic_int task_stored;
	char *gpus_json;          /* the body of GET /gpus/<name> */
	struct kb_task *own_task; /* dynamic boards own their task */
};

struct kb_gw_hub;
struct kb_gw_events;
struct kb_gw_cache;
struct kb_gw_queue;
struct kb_gw_http;
struct kb_gw_pool;
struct kb_gw_web;
struct kb_gw_limiter;

struct kb_gw {
	struct kb_gw_config cfg;
	struct kb_problemset ps;
	/* The board table: boards[0..nboards) are valid; appended under
	 * a lock (core/problems.h), read without one (the calls below). */
	struct kb_gw_lb **boards;
	atomic_size_t nboards;
	size_t cap_boards;
	atomic_uint boards_gen; /* bumped on every create/delete */
	size_t task_bytes_max;  /* the largest board's task files, in all */
	kb_producer *producer;
	atomic_long inflight; /* requests between first call and completion */
	struct kb_gw_hub *hub;
	struct kb_gw_events *events;
	struct kb_gw_cache *cache;
	struct kb_gw_queue *queue;
	struct kb_gw_http *http;
	struct kb_gw_pool *pool;      /* blocking steps (pool.h) */
	struct kb_gw_pool *auth_pool; /* OAuth exchanges, apart from the rest */
	struct kb_gw_limiter *auth_limits;  /* /auth requests per address */
	struct kb_gw_limiter *stream_slots; /* open streams per user */
	void *discord;                      /* owned by discord/, if built in */
	struct kb_gw_web *web; /* the web pages (web/web.h); NULL when off */
};

/* ---- reading the board table (boards.c); what changes it is
 * core/problems.h ---- */

/* The live (not deleted) board named name, or NULL. Names match
 * case-insensitively (an exact match first); lb->task->name is the
 * canonical spelling. Thread-safe. */
const struct kb_gw_lb *kb_gw_lb_find(const struct kb_gw *g, const char *name);
/* The board's spelling of gpu (matched as board names are), or NULL when
 * the board does not offer it. */
const char *kb_gw_lb_gpu(const struct kb_gw_lb *lb, const char *gpu);
/* Some live board's spelling of gpu, or NULL when none offers it. */
const char *kb_gw_gpu_canon(const struct kb_gw *g, const char *gpu);
/* The board at index i (deleted or not), or NULL. */
struct kb_gw_lb *kb_gw_lb_at(const struct kb_gw *g, size_t i);
size_t kb_gw_lb_count(const struct kb_gw *g);
int kb_gw_lb_has_gpu(const struct kb_gw_lb *lb, const char *gpu);
/* The distinct gpus of the live boards (the boards' spelling, valid
 * while the board table lives), up to max; returns how many. */
size_t kb_gw_live_gpus(const struct kb_gw *g, const char **out, size_t max);
/* 1 if some live board offers gpu. */
int kb_gw_gpu_known(const struct kb_gw *g, const char *gpu);

#endif
