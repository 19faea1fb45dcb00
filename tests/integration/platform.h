/* platform: starts the whole platform as real processes for a test, and
 * talks to it over HTTP, Kafka and Redis. */
#ifndef KB_TEST_PLATFORM_H
#define KB_TEST_PLATFORM_H

#include <hiredis/hiredis.h>
#include <jansson.h>
#include <stddef.h>
#include <sys/types.h>

#include "kb_testenv.h"

struct platform {
	struct kb_test_server redis, broker;
	pid_t gateway, ranker, worker;
	int http_port;
	char api[64];
	char dir[128]; /* logs and worker workdir */
	char cli_id[128];
	redisContext *rc;
	/* Set by platform_start_opts with metrics: the /metrics ports of the
	 * ranker and the first worker (the gateway serves it on http_port). */
	int ranker_metrics_port, worker_metrics_port, gateway_metrics_port;
	const char *const *env; /* platform_opts.env */
	/* Every worker platform_start_worker() started, stopped at
	 * platform_stop() (a SIGKILLed one's entry is harmless). */
	pid_t workers[32];
	int nworkers;
};

/* The admin bearer token the platform's gateway takes. */
#define PLATFORM_ADMIN_TOKEN "integration-admin-token"

struct platform_opts {
	int metrics;   /* give the ranker and the worker a /metrics listener */
	int no_worker; /* start no worker (platform_start_worker() does) */
	int durable_redis; /* kb_test_redis_start_durable() */
	/* "K=V" settings every service gets after the usual ones (so they
	 * override them), NULL-terminated; at most 16. */
	const char *const *env;
};

/* Starts everything and registers a user. Returns 0 or -1. */
int platform_start(struct platform *p);
int platform_start_opts(struct platform *p, const struct platform_opts *o);
void platform_stop(struct platform *p);

pid_t platform_start_worker(struct platform *p, const char *log_name);
/* Starts the gateway or the ranker again (after a kill); the gateway's
 * new port is in p->http_port and p->api once it serves. 0 or -1. */
int platform_restart_gateway(struct platform *p, const char *log_name);
pid_t platform_start_ranker(struct platform *p, const char *log_name);

/* HTTP: returns the status code (or -1), body in *body (malloc'd). */
long http_get(const char *url, const char *cli_id, char **body);
long http_submit(const struct platform *p, const char *lb, const char *gpu,
		 const char *mode, const char *path, char **body);

/* The same as another user, by CLI id. */
long http_submit_as(const struct platform *p, const char *cli_id,
		    const char *lb, const char *gpu, const char *mode,
		    const char *path, char **body);

/* Submits a file and returns the submission id, or -1. */
long submit(const struct platform *p, const char *lb, const char *mode,
	    const char *path);
long submit_as(const struct platform *p, const char *cli_id, const char *lb,
	       const char *mode, const char *path);

/* Registers one more user (POST /admin/users): its user id (unless
 * user_id is NULL) and CLI id into the buffers. Returns 0 or -1. */
int platform_add_user(const struct platform *p, const char *name, char *user_id,
		      size_t user_id_size, char *cli_id, size_t cli_id_size);

/* Polls GET /user/submissions/{id} until status is "done" or timeout;
 * returns the parsed JSON (caller decrefs) or NULL. */
json_t *wait_done(const struct platform *p, long id, int timeout_ms);

/* GET /submissions/{lb}/CPU parsed. */
json_t *ranking(const struct platform *p, const char *lb);

/* Number of Result events for a submission on kb.results (read from the
 * beginning with a fresh consumer group). */
int count_results(const struct platform *p, long id, int timeout_ms);

#endif
