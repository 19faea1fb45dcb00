/* kb_dc: configuration, start/stop and the job threads of the Discord
 * front end (see internal.h); the answers are reply.c's. */
#include "internal.h"

#include <errno.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "discord.h"
#include "kb_config.h"
#include "kb_log.h"
#include "kb_util.h"
#include "store/store.h"

#define JOBS_MAX 1000
#define REST_QUEUE_MAX 20000

static _Atomic(struct kb_dc *) current;
/* Request threads between kb__dc_acquire() and kb__dc_release(). */
static atomic_long users;

/* Configuration: read once by kb_gw_discord_start(), strictly, like the
 * gateway's own table (kb_config). Everything is off without a public key. */
static struct kb_dc_cfg C;

static const struct kb_cfg_entry config[] = {
	{"DISCORD_PUBLIC_KEY", KB_CFG_STRING, "", 0, 0, 0, &C.public_key,
	 "application public key (hex); empty turns /discord/interactions off"},
	{"DISCORD_APPLICATION_ID", KB_CFG_STRING, "", 0, 0, 0, &C.app_id,
	 "application id (snowflake)"},
	{"DISCORD_BOT_TOKEN", KB_CFG_STRING, "", 0, 0, 1, &C.bot_token,
	 "bot token (announcements, late results, registration)"},
	{"DISCORD_API_BASE", KB_CFG_STRING, "https://discord.com/api/v10", 0, 0,
	 0, &C.api_base, "Discord REST API base URL"},
	{"DISCORD_GUILD_ID", KB_CFG_STRING, "", 0, 0, 0, &C.guild_id,
	 "guild for command registration; empty: global commands"},
	{"DISCORD_ANNOUNCE_CHANNEL_ID", KB_CFG_STRING, "", 0, 0, 0,
	 &C.announce_channel, "channel for top-3 announcements; empty: none"},
	{"DISCORD_SUBMIT_CHANNEL_ID", KB_CFG_STRING, "", 0, 0, 0,
	 &C.submit_channel,
	 "only accept submissions in this channel; empty: any"},
	{"DISCORD_ADMIN_IDS", KB_CFG_STRING, "", 0, 0, 0, &C.admin_ids,
	 "user and role ids allowed to run /admin (comma-separated)"},
	{"DISCORD_CDN_PREFIXES", KB_CFG_STRING,
	 "https://cdn.discordapp.com/,https://media.discordapp.net/", 0, 0, 0,
	 &C.cdn_prefixes, "URL prefixes attachments may be fetched from"},
	{"DISCORD_EDIT_INTERVAL_MS", KB_CFG_INT, "1000", 100, 60000, 0,
	 &C.edit_interval_ms,
	 "least time between two progress edits of a message"},
	{"DISCORD_MAX_AGE_S", KB_CFG_INT, "300", 5, 3600, 0, &C.max_age_s,
	 "oldest signed timestamp accepted"},
	{"DISCORD_MAX_FUTURE_S", KB_CFG_INT, "60", 0, 3600, 0, &C.max_future_s,
	 "how far in the future a signed timestamp may be"},
	{"DISCORD_JOB_THREADS", KB_CFG_INT, "2", 1, 64, 0, &C.job_threads,
	 "threads for downloads, submissions and uploads"},
	{"DISCORD_REST_TIMEOUT_MS", KB_CFG_INT, "10000", 500, 120000, 0,
	 &C.rest_timeout_ms, "timeout of one REST call"},
	{"DISCORD_FETCH_TIMEOUT_MS", KB_CFG_INT, "15000", 500, 120000, 0,
	 &C.fetch_timeout_ms, "timeout of one attachment download"},
	{"DISCORD_FOLD_WAIT_MS", KB_CFG_INT, "15000", 0, 300000, 0,
	 &C.fold_wait_ms,
	 "how long a ranked result waits for the ranking before it is shown"},
	{"DISCORD_DRAIN_MS", KB_CFG_INT, "5000", 0, 60000, 0, &C.drain_ms,
	 "on shutdown, how long queued REST calls may still go out"},
	{"DISCORD_MAX_BODY", KB_CFG_INT, "262144", 4096, 16777216, 0,
	 &C.max_body, "largest interaction body accepted"},
};

struct kb_dc_job {
	kb_dc_job_fn fn;
	char *body;
	size_t len;
	int64_t received_ms;
	struct kb_dc_job *next;
};

struct kb_dc *kb__dc_acquire(void)
{
	struct kb_dc *dc;

	atomic_fetch_add(&users, 1);
	dc = atomic_load(&current);
	if (!dc)
		atomic_fetch_sub(&users, 1);
	return dc;
}

void kb__dc_release(struct kb_dc *dc)
{
	if (dc)
		atomic_fetch_sub(&users, 1);
}

/* ---- jobs ---- */

int kb__dc_job_submit(struct kb_dc *dc, kb_dc_job_fn fn, const char *body,
		      size_t len, int64_t received_ms)
{
	struct kb_dc_job *j = calloc(1, sizeof(*j));

	if (!j || !(j->body = malloc(len + 1))) {
		free(j);
		return -ENOMEM;
	}
	memcpy(j->body, body, len);
	j->body[len] = '\0';
	j->len = len;
	j->fn = fn;
	j->received_ms = received_ms;
	pthread_mutex_lock(&dc->mu);
	if (dc->stopping || dc->njobs >= JOBS_MAX) {
		int rc = dc->stopping ? -ESHUTDOWN : -ENOSPC;
		pthread_mutex_unlock(&dc->mu);
		free(j->body);
		free(j);
		return rc;
	}
	if (dc->jobs_tail)
		dc->jobs_tail->next = j;
	else
		dc->jobs = j;
	dc->jobs_tail = j;
	dc->njobs++;
	pthread_cond_signal(&dc->cv);
	pthread_mutex_unlock(&dc->mu);
	return 0;
}

static void job_run(struct kb_dc *dc, struct kb_dc_job *j)
{
	struct kb_dc_interaction it;
	char err[128];

	if (kb_dc_interaction_parse(j->body, j->len, &it, err, sizeof(err)) ==
	    0)
		j->fn(dc, &it, j->received_ms);
	else
		kb_error("discord: queued interaction does not parse: %s", err);
	kb_dc_interaction_clear(&it);
}

static void *job_thread(void *arg)
{
	struct kb_dc *dc = arg;

	for (;;) {
		pthread_mutex_lock(&dc->mu);
		while (!dc->jobs && !dc->stopping)
			pthread_cond_wait(&dc->cv, &dc->mu);
		struct kb_dc_job *j = dc->jobs;
		if (!j) { /* stopping and nothing left */
			pthread_mutex_unlock(&dc->mu);
			break;
		}
		dc->jobs = j->next;
		if (!dc->jobs)
			dc->jobs_tail = NULL;
		dc->njobs--;
		pthread_mutex_unlock(&dc->mu);
		job_run(dc, j);
		free(j->body);
		free(j);
	}
	/* This thread's Redis connection (store.c) goes with it. */
	kb_gw_redis_drop();
	return NULL;
}

/* ---- start and stop ---- */

static int check_config(char *errstr, size_t errstr_size)
{
	if (!C.app_id[0] ||
	    strspn(C.app_id, "0123456789") != strlen(C.app_id)) {
		snprintf(errstr, errstr_size,
			 "DISCORD_APPLICATION_ID must be the "
			 "application's id (digits) when "
			 "DISCORD_PUBLIC_KEY is set");
		return -EINVAL;
	}
	if (strncmp(C.api_base, "http://", 7) != 0 &&
	    strncmp(C.api_base, "https://", 8) != 0) {
		snprintf(errstr, errstr_size,
			 "DISCORD_API_BASE must be an http(s) URL");
		return -EINVAL;
	}
	const char *ids[] = {C.guild_id, C.announce_channel, C.submit_channel};
	const char *names[] = {"DISCORD_GUILD_ID",
			       "DISCORD_ANNOUNCE_CHANNEL_ID",
			       "DISCORD_SUBMIT_CHANNEL_ID"};
	for (size_t i = 0; i < 3; i++)
		if (strspn(ids[i], "0123456789") != strlen(ids[i])) {
			snprintf(errstr, errstr_size,
				 "%s must be a snowflake (digits)", names[i]);
			return -EINVAL;
		}
	if (strspn(C.admin_ids, "0123456789, \t") != strlen(C.admin_ids)) {
		snprintf(errstr, errstr_size,
			 "DISCORD_ADMIN_IDS must list user or "
			 "role ids (digits, comma-separated)");
		return -EINVAL;
	}
	if (C.announce_channel[0] && !C.bot_token[0]) {
		snprintf(errstr, errstr_size,
			 "DISCORD_ANNOUNCE_CHANNEL_ID needs "
			 "DISCORD_BOT_TOKEN");
		return -EINVAL;
	}
	return 0;
}

static void destroy(struct kb_dc *dc)
{
	if (!dc)
		return;
	pthread_mutex_lock(&dc->mu);
	dc->stopping = 1;
	pthread_cond_broadcast(&dc->cv);
	pthread_mutex_unlock(&dc->mu);
	for (size_t i = 0; i < dc->nthreads; i++)
		pthread_join(dc->threads[i], NULL);
	free(dc->threads);
	kb__dc_tracker_destroy(dc->tracker);
	kb_dc_rest_destroy(dc->rest, dc->cfg.drain_ms);
	pthread_mutex_destroy(&dc->mu);
	pthread_cond_destroy(&dc->cv);
	free(dc);
}

static int start(struct kb_gw *g, char *errstr, size_t errstr_size)
{
	struct kb_dc *dc;
	int rc;

	if (kb_config_load(config, KB_ARRAY_LEN(config), errstr, errstr_size) <
	    0)
		return -EINVAL;
	kb_config_log(config, KB_ARRAY_LEN(config));
	if (!C.public_key[0]) {
		kb_info("discord: DISCORD_PUBLIC_KEY not set, /discord/interactions is off");
		return 0;
	}
	dc = calloc(1, sizeof(*dc));
	if (!dc) {
		snprintf(errstr, errstr_size, "out of memory");
		return -ENOMEM;
	}
	dc->g = g;
	dc->cfg = C;
	pthread_mutex_init(&dc->mu, NULL);
	pthread_cond_init(&dc->cv, NULL);
	if (kb_dc_hex_decode(C.public_key, dc->pk, sizeof(dc->pk)) < 0) {
		snprintf(errstr, errstr_size,
			 "DISCORD_PUBLIC_KEY must be 64 hex digits");
		destroy(dc);
		return -EINVAL;
	}
	if ((rc = check_config(errstr, errstr_size)) < 0) {
		destroy(dc);
		return rc;
	}
	struct kb_dc_rest_cfg rcfg = {
		.api_base = C.api_base,
		.bot_token = C.bot_token,
		.timeout_ms = C.rest_timeout_ms,
		.max_queue = REST_QUEUE_MAX,
	};
	dc->rest = kb_dc_rest_new(&rcfg, errstr, errstr_size);
	if (!dc->rest) {
		destroy(dc);
		return -ENOMEM;
	}
	dc->tracker = kb__dc_tracker_new(dc, errstr, errstr_size);
	if (!dc->tracker) {
		destroy(dc);
		return -ENOMEM;
	}
	dc->threads = calloc((size_t)C.job_threads, sizeof(*dc->threads));
	if (!dc->threads) {
		snprintf(errstr, errstr_size, "out of memory");
		destroy(dc);
		return -ENOMEM;
	}
	for (long i = 0; i < C.job_threads; i++) {
		rc = pthread_create(&dc->threads[i], NULL, job_thread, dc);
		if (rc != 0) {
			snprintf(errstr, errstr_size,
				 "cannot start a job thread: %s", strerror(rc));
			destroy(dc);
			return -rc;
		}
		dc->nthreads++;
	}
	g->discord = dc;
	atomic_store(&current, dc);
	kb_info("discord: interactions endpoint on, application %s, %ld job threads%s",
		C.app_id, C.job_threads,
		C.announce_channel[0] ? ", top-3 announcements on" : "");
	return 0;
}

int kb_gw_discord_start(struct kb_gw *g, char *errstr, size_t errstr_size)
{
	int rc = start(g, errstr, errstr_size);

	/* main() calls kb_gw_discord_stop() only after a successful start. */
	if (rc < 0)
		kb_config_free(config, KB_ARRAY_LEN(config));
	return rc;
}

void kb_gw_discord_stop(struct kb_gw *g)
{
	struct kb_dc *dc = g->discord;

	if (dc) {
		/* New interactions get 404 from now on; jobs in line still run
		 * (they only queue REST calls), then the tracker says goodbye
		 * and the REST queue drains. */
		atomic_store(&current, NULL);
		while (atomic_load(&users) > 0) {
			struct timespec ts = {0, 1000000L};
			nanosleep(&ts, NULL);
		}
		g->discord = NULL;
		destroy(dc);
	}
	kb_config_free(config, KB_ARRAY_LEN(config));
}
