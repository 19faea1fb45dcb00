/* kb_web_data: Redis into the page models of render.h (data.c
 * says what each reads). Each model owns its memory: free it with the
 * matching _free call, also after an error. Return codes: 0, -ENOENT (no
 * such user; a board that is closed or deleted), -EIO, -EPROTO, -ENOMEM.
 * Thread-safe (each call uses the calling thread's Redis connection). */
#ifndef KB_WEB_DATA_H
#define KB_WEB_DATA_H

#include <hiredis/hiredis.h>

#include "base/gateway.h"
#include "render.h"
#include "store/store.h"

/* Workers serving gpu now, from the events thread's bookkeeping (what
 * /runner_queue counts: heard of within KB_WORKER_STALE_S): > 0, 0, or
 * KB_WEB_WORKERS_UNKNOWN while this gateway cannot tell yet (it has not
 * listened for a whole stale time, or has no consumer). In memory, no
 * Redis. Thread-safe. */
int kb_web_workers(struct kb_gw *g, const char *gpu);

struct kb_web_board_model {
	struct kb_web_board bd;
	size_t ngpus;
	struct kb_web_gpu *gpus;
	struct kb_gw_rank_entry **entries;
	struct kb_web_rank **ranks;
	redisReply **hist_replies;
	struct kb_web_point **points;
	const char **templates;
	char *reference; /* the reference file's text, or NULL */
};
/* Also reads the task's reference file (kb_web_reference_file), at most
 * 256 KiB; a board whose reference cannot be read shows none. */
int kb_web_load_board(struct kb_gw *g, const struct kb_gw_lb *lb,
		      struct kb_web_board_model *m);
void kb_web_board_free(struct kb_web_board_model *m);

struct kb_web_index_own {
	size_t ngpus;
	struct kb_web_rank **top;
	size_t *ntop;
	struct kb_gw_rank_entry **entries;
	redisReply **members;
	int *workers;
	char *summary;
};
struct kb_web_index_model {
	struct kb_web_index_row *rows;
	struct kb_web_index_own *own;
	size_t n;
};
int kb_web_load_index(struct kb_gw *g, struct kb_web_index_model *m);
void kb_web_index_free(struct kb_web_index_model *m);

struct kb_web_user_model {
	redisReply *name, *hist;
	struct kb_web_user_best *best;
	size_t nbest;
	struct kb_web_user_point *pts;
	char **lbgpu;
	size_t npts;
};
int kb_web_load_user(struct kb_gw *g, const char *user_id,
		     struct kb_web_user_model *m);
void kb_web_user_free(struct kb_web_user_model *m);

#endif
