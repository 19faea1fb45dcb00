/* kb_dc: configuration, start/stop, job threads and the answer helpers of
 * the Discord front end (see discord_bot.h). */
#include "discord_bot.h"

#include <errno.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "kb_config.h"
#include "kb_log.h"
#include "kb_util.h"
#include "store.h"

#define JOBS_MAX 1000
#define REST_QUEUE_MAX 20000
/* Attachments per message, as Discord allows. */
#define FILES_PER_MESSAGE 10

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
	{"DISCORD_API_BASE", KB_CFG_STRING, "https://discord.com/api/v10", 0, 0, 0,
	 &C.api_base, "Discord REST API base URL"},
	{"DISCORD_GUILD_ID", KB_CFG_STRING, "", 0, 0, 0, &C.guild_id,
	 "guild for command registration; empty: global commands"},
	{"DISCORD_ANNOUNCE_CHANNEL_ID", KB_CFG_STRING, "", 0, 0, 0,
	 &C.announce_channel, "channel for top-3 announcements; empty: none"},
	{"DISCORD_SUBMIT_CHANNEL_ID", KB_CFG_STRING, "", 0, 0, 0, &C.submit_channel,
	 "only accept submissions in this channel; empty: any"},
	{"DISCORD_ADMIN_IDS", KB_CFG_STRING, "", 0, 0, 0, &C.admin_ids,
	 "user and role ids allowed to run /admin (comma-separated)"},
	{"DISCORD_CDN_PREFIXES", KB_CFG_STRING,
	 "https://cdn.discordapp.com/,https://media.discordapp.net/", 0, 0, 0,
	 &C.cdn_prefixes, "URL prefixes attachments may be fetched from"},
	{"DISCORD_EDIT_INTERVAL_MS", KB_CFG_INT, "1000", 100, 60000, 0,
	 &C.edit_interval_ms, "least time between two progress edits of a message"},
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
	{"DISCORD_FOLD_WAIT_MS", KB_CFG_INT, "15000", 0, 300000, 0, &C.fold_wait_ms,
	 "how long a ranked result waits for the ranking before it is shown"},
	{"DISCORD_DRAIN_MS", KB_CFG_INT, "5000", 0, 60000, 0, &C.drain_ms,
	 "on shutdown, how long queued REST calls may still go out"},
	{"DISCORD_MAX_BODY", KB_CFG_INT, "262144", 4096, 16777216, 0, &C.max_body,
	 "largest interaction body accepted"},
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

	if (kb_dc_interaction_parse(j->body, j->len, &it, err, sizeof(err)) == 0)
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

int kb__dc_stopping(struct kb_dc *dc)
{
	pthread_mutex_lock(&dc->mu);
	int stopping = dc->stopping;
	pthread_mutex_unlock(&dc->mu);
	return stopping;
}

/* ---- answering ---- */

static struct kb_dc_call *message_call(const char *method, const char *text,
				       int ephemeral, const struct kb_dc_file *files,
				       size_t nfiles, const char *mention,
				       const char *what)
{
	const char *names[FILES_PER_MESSAGE];
	/* The path is set by submit_call(). */
	struct kb_dc_call *c = kb_dc_call_new(method, "%s", "/");
	json_t *body;
	char *s;

	if (!c)
		return NULL;
	if (nfiles > FILES_PER_MESSAGE)
		nfiles = FILES_PER_MESSAGE;
	for (size_t i = 0; i < nfiles; i++)
		names[i] = files[i].name;
	body = kb_dc_message_body(text, ephemeral, names, nfiles, mention);
	s = body ? json_dumps(body, JSON_COMPACT) : NULL;
	json_decref(body);
	if (!s) {
		kb_dc_call_free(c);
		return NULL;
	}
	c->json = s;
	for (size_t i = 0; i < nfiles; i++)
		if (kb_dc_call_add_file(c, files[i].name, files[i].data, files[i].len) < 0) {
			kb_dc_call_free(c);
			return NULL;
		}
	snprintf(c->what, sizeof(c->what), "%s", what ? what : "message");
	return c;
}

static void submit_call(struct kb_dc *dc, struct kb_dc_call *c,
			const char *path_fmt, ...) __attribute__((format(printf, 3, 4)));
static void submit_call(struct kb_dc *dc, struct kb_dc_call *c,
			const char *path_fmt, ...)
{
	va_list ap;
	int rc;

	if (!c) {
		kb_error("discord: out of memory building a message");
		return;
	}
	free(c->path);
	va_start(ap, path_fmt);
	rc = vasprintf(&c->path, path_fmt, ap);
	va_end(ap);
	if (rc < 0) {
		c->path = NULL;
		kb_dc_call_free(c);
		return;
	}
	rc = kb_dc_rest_submit(dc->rest, c);
	if (rc < 0)
		kb_warn("discord: message not queued (%s)", strerror(-rc));
}

void kb__dc_edit(struct kb_dc *dc, const char *app_id, const char *token,
		 const char *text, const struct kb_dc_file *files,
		 size_t nfiles, int coalesce, const char *what)
{
	struct kb_dc_call *c = message_call("PATCH", text, 0, files, nfiles, NULL, what);
	char key[800];

	if (!c)
		return;
	snprintf(key, sizeof(key), "edit:%s", token);
	if (kb_dc_call_set(&c->order_key, token) < 0 ||
	    (coalesce && kb_dc_call_set(&c->coalesce_key, key) < 0)) {
		kb_dc_call_free(c);
		return;
	}
	if (coalesce)
		c->min_gap_ms = dc->cfg.edit_interval_ms;
	/* Discord may not have our deferred answer on file yet. */
	c->retry_404_until_ms = (int64_t)(kb_mono_s() * 1e3) + 15000;
	submit_call(dc, c, "/webhooks/%s/%s/messages/@original", app_id, token);
}

void kb__dc_followup(struct kb_dc *dc, const char *app_id, const char *token,
		     const char *text, int ephemeral, const char *mention_user,
		     const char *what)
{
	struct kb_dc_call *c = message_call("POST", text, ephemeral, NULL, 0,
					    mention_user, what);

	if (!c)
		return;
	if (kb_dc_call_set(&c->order_key, token) < 0) {
		kb_dc_call_free(c);
		return;
	}
	submit_call(dc, c, "/webhooks/%s/%s", app_id, token);
}

void kb__dc_channel_message(struct kb_dc *dc, const char *channel_id,
			    const char *text, const struct kb_dc_file *files,
			    size_t nfiles, const char *mention_user,
			    const char *what)
{
	struct kb_dc_call *c;

	if (!dc->cfg.bot_token[0] || !channel_id || !*channel_id) {
		kb_warn("discord: %s not sent: no bot token or channel", what);
		return;
	}
	c = message_call("POST", text, 0, files, nfiles, mention_user, what);
	if (!c)
		return;
	c->bot_auth = 1;
	if (kb_dc_call_set(&c->order_key, channel_id) < 0) {
		kb_dc_call_free(c);
		return;
	}
	submit_call(dc, c, "/channels/%s/messages", channel_id);
}

void kb__dc_reply(struct kb_dc *dc, const struct kb_dc_interaction *it,
		  const char *text, const struct kb_dc_file *files,
		  size_t nfiles, int ephemeral)
{
	char **parts = NULL;
	size_t n = 0;

	if (kb_dc_text_split(text, KB_DC_CONTENT_MAX, &parts, &n) < 0 || n == 0) {
		kb_error("discord: out of memory splitting a reply");
		return;
	}
	/* Files ride with the last part, so they come after all the text. */
	kb__dc_edit(dc, it->application_id, it->token, parts[0],
		    n == 1 ? files : NULL, n == 1 ? nfiles : 0, 0, "reply");
	for (size_t i = 1; i < n; i++) {
		struct kb_dc_call *c = message_call("POST", parts[i], ephemeral,
						    i + 1 == n ? files : NULL,
						    i + 1 == n ? nfiles : 0, NULL, "reply part");
		if (!c || kb_dc_call_set(&c->order_key, it->token) < 0) {
			kb_dc_call_free(c);
			break;
		}
		submit_call(dc, c, "/webhooks/%s/%s", it->application_id, it->token);
	}
	kb_dc_text_free_parts(parts, n);
}

/* ---- helpers ---- */

json_t *kb__dc_sayf(const char *fmt, ...)
{
	char msg[KB_DC_CONTENT_MAX * 4 + 1];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	char *fit = kb_dc_text_fit(msg, KB_DC_CONTENT_MAX, NULL);
	json_t *resp = kb_dc_resp_message(fit ? fit : msg, 1);
	free(fit);
	return resp;
}

json_t *kb__dc_store_failed(int rc)
{
	return kb__dc_sayf(rc == -EIO ? "⚠️ The store is unavailable; nothing changed."
				      : "⚠️ The store answered unexpectedly; nothing changed.");
}

const char *kb__dc_opt_board(const struct kb_dc_interaction *it)
{
	const char *s = kb_dc_opt_str(it, "leaderboard");

	return s ? s : kb_dc_opt_str(it, "leaderboard_name");
}

int kb__dc_is_admin(const struct kb_dc *dc, const struct kb_dc_interaction *it)
{
	return kb_dc_is_listed(it, dc->cfg.admin_ids);
}

void kb__dc_user_id(const char *snowflake, char *out, size_t size)
{
	snprintf(out, size, "discord-%s", snowflake ? snowflake : "");
}

const struct kb_gw_lb *kb__dc_board(struct kb_dc *dc,
				    const struct kb_dc_interaction *it,
				    const char *name, char *why, size_t why_size)
{
	const struct kb_gw_lb *lb = name ? kb_gw_lb_find(dc->g, name) : NULL;
	char *clean;

	if (lb && atomic_load(&lb->closed) && !kb__dc_is_admin(dc, it)) {
		char uid[96];
		int allowed = 0;
		kb__dc_user_id(it->user_id, uid, sizeof(uid));
		if (kb_gw_has_access(dc->g, lb->task->name, uid, &allowed) < 0 || !allowed)
			lb = NULL;
	}
	if (lb)
		return lb;
	clean = kb_dc_text_clean(name ? name : "", name ? strlen(name) : 0, 64, 1);
	snprintf(why, why_size, "There is no leaderboard `%s`. `/leaderboard list` "
				"shows the open ones.", clean ? clean : "?");
	free(clean);
	return NULL;
}

/* ---- start and stop ---- */

static int check_config(char *errstr, size_t errstr_size)
{
	if (!C.app_id[0] || strspn(C.app_id, "0123456789") != strlen(C.app_id)) {
		snprintf(errstr, errstr_size, "DISCORD_APPLICATION_ID must be the "
					      "application's id (digits) when "
					      "DISCORD_PUBLIC_KEY is set");
		return -EINVAL;
	}
	if (strncmp(C.api_base, "http://", 7) != 0 && strncmp(C.api_base, "https://", 8) != 0) {
		snprintf(errstr, errstr_size, "DISCORD_API_BASE must be an http(s) URL");
		return -EINVAL;
	}
	const char *ids[] = {C.guild_id, C.announce_channel, C.submit_channel};
	const char *names[] = {"DISCORD_GUILD_ID", "DISCORD_ANNOUNCE_CHANNEL_ID",
			       "DISCORD_SUBMIT_CHANNEL_ID"};
	for (size_t i = 0; i < 3; i++)
		if (strspn(ids[i], "0123456789") != strlen(ids[i])) {
			snprintf(errstr, errstr_size, "%s must be a snowflake (digits)",
				 names[i]);
			return -EINVAL;
		}
	if (strspn(C.admin_ids, "0123456789, \t") != strlen(C.admin_ids)) {
		snprintf(errstr, errstr_size, "DISCORD_ADMIN_IDS must list user or "
					      "role ids (digits, comma-separated)");
		return -EINVAL;
	}
	if (C.announce_channel[0] && !C.bot_token[0]) {
		snprintf(errstr, errstr_size, "DISCORD_ANNOUNCE_CHANNEL_ID needs "
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

	if (kb_config_load(config, KB_ARRAY_LEN(config), errstr, errstr_size) < 0)
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
		snprintf(errstr, errstr_size, "DISCORD_PUBLIC_KEY must be 64 hex digits");
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
			snprintf(errstr, errstr_size, "cannot start a job thread: %s",
				 strerror(rc));
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
