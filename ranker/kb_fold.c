#include "kb_fold.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kb_redis.h"

struct kb_fold {
	char *url;
	int timeout_ms;
	redisContext *c; /* NULL while disconnected */
	struct kb_redis_script fold, progress;
};

const char *kb_fold_outcome_name(int outcome)
{
	switch (outcome) {
	case KB_FOLD_DUPLICATE:
		return "duplicate";
	case KB_FOLD_NEW:
		return "new";
	case KB_FOLD_BEST:
		return "personal-best";
	default:
		return "unknown";
	}
}

int kb_fold_error_class(const char *msg)
{
	/* Conditions of the server, not of the input: they pass (failover,
	 * loading finished, memory freed, ACLs fixed), so the caller waits
	 * rather than dead-letter a good Result. */
	static const char *const transient[] = {
		"LOADING",    "BUSY",     "OOM",         "READONLY",
		"MASTERDOWN", "TRYAGAIN", "CLUSTERDOWN", "NOREPLICAS",
		"NOSCRIPT",   "NOAUTH",   "NOPERM",      "UNBLOCKED",
	};

	if (!msg)
		return -EAGAIN;
	for (size_t i = 0; i < sizeof(transient) / sizeof(transient[0]); i++)
		if (strncmp(msg, transient[i], strlen(transient[i])) == 0)
			return -EAGAIN;
	/* A key of the wrong type or an error raised while the script ran
	 * repeats for every retry of this input. */
	if (strncmp(msg, "WRONGTYPE", 9) == 0 || strstr(msg, "script"))
		return -EPROTO;
	return -EAGAIN;
}

kb_fold *kb_fold_new(const char *url, int timeout_ms)
{
	kb_fold *f = calloc(1, sizeof(*f));

	if (!f)
		return NULL;
	f->url = strdup(url);
	if (!f->url) {
		free(f);
		return NULL;
	}
	f->timeout_ms = timeout_ms;
	f->fold.src = kb_fold_lua;
	f->progress.src = kb_progress_lua;
	return f;
}

static void disconnect(kb_fold *f)
{
	if (f->c) {
		redisFree(f->c);
		f->c = NULL;
	}
}

int kb_fold_connect(kb_fold *f, char *errstr, size_t errstr_size)
{
	if (f->c)
		return 0;
	f->c = kb_redis_connect(f->url, f->timeout_ms, errstr, errstr_size);
	if (!f->c)
		return -EAGAIN;
	if (kb_redis_script_load(f->c, &f->fold, errstr, errstr_size) != 0 ||
	    kb_redis_script_load(f->c, &f->progress, errstr, errstr_size) !=
		    0) {
		disconnect(f);
		return -EAGAIN;
	}
	return 0;
}

/* Runs one script and returns its integer reply in *value. */
static int eval_int(kb_fold *f, struct kb_redis_script *s, int nkeys, int argc,
		    const char *const *argv, const size_t *argvlen,
		    long long *value, char *errstr, size_t errstr_size)
{
	redisReply *reply;
	int rc;

	rc = kb_fold_connect(f, errstr, errstr_size);
	if (rc != 0)
		return rc;
	/* kb_redis_eval() does not write through argv; its prototype merely
	 * follows redisCommandArgv(). */
	reply = kb_redis_eval(f->c, s, nkeys, argc, (const char **)argv,
			      argvlen, errstr, errstr_size);
	if (!reply) {
		/* The script may or may not have run; the connection is in an
		 * unknown state, so start over on the next call. */
		disconnect(f);
		return -EAGAIN;
	}
	if (reply->type == REDIS_REPLY_INTEGER) {
		*value = reply->integer;
		rc = 0;
	} else if (reply->type == REDIS_REPLY_ERROR) {
		snprintf(errstr, errstr_size, "redis: %s", reply->str);
		rc = kb_fold_error_class(reply->str);
	} else {
		snprintf(errstr, errstr_size, "redis: unexpected reply type %d",
			 reply->type);
		rc = -EPROTO;
	}
	freeReplyObject(reply);
	return rc;
}

int kb_fold_result(kb_fold *f, const struct kb_fold_call *call, int *outcome,
		   char *errstr, size_t errstr_size)
{
	long long v = -1;
	int rc = eval_int(f, &f->fold, call->nkeys, call->argc, call->argv,
			  call->argvlen, &v, errstr, errstr_size);

	if (rc != 0)
		return rc;
	if (v < KB_FOLD_DUPLICATE || v > KB_FOLD_BEST) {
		snprintf(errstr, errstr_size, "fold.lua returned %lld", v);
		return -EPROTO;
	}
	*outcome = (int)v;
	return 0;
}

int kb_fold_progress(kb_fold *f, const struct kb_progress_call *call,
		     int *applied, char *errstr, size_t errstr_size)
{
	long long v = -1;
	int rc = eval_int(f, &f->progress, call->nkeys, call->argc, call->argv,
			  call->argvlen, &v, errstr, errstr_size);

	if (rc != 0)
		return rc;
	*applied = v == 1;
	return 0;
}

void kb_fold_destroy(kb_fold *f)
{
	if (!f)
		return;
	disconnect(f);
	free(f->url);
	free(f);
}
