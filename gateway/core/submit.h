/* kb_gw_submit internals shared with the streaming endpoint and the
 * events thread (the public half is api.h). */
#ifndef KB_GW_SUBMIT_H
#define KB_GW_SUBMIT_H

#include <stdint.h>

#include "api.h"
#include "base/gateway.h"
#include "kb_mode.h"
#include "store/store.h"

/* A submission between its two halves: recorded, not yet published.
 * Points into the caller's request (user id, gpu, code), which must stay
 * alive until kb_gw_submit_publish() returned; must not move in between
 * (s points into it). */
struct kb_gw_pending {
	const struct kb_gw_lb *lb;
	enum kb_mode mode;
	uint64_t id;
	struct kb_gw_sub s;
	char file_name[256];
	char user_name[128];
	/* The profile options (kb_gw_submit_req.profile), copied. */
	int has_profile;
	Kb__ProfileRequest profile;
	char ncu_kernel_name[1025];
	char ncu_kernel_name_base[16];
};

/* Checks profile options against a board's task, as upstream does: a
 * single-GPU task with benchmarks, benchmark_index within them,
 * ncu_kernel_name 1..1024 bytes, ncu_kernel_name_base "function",
 * "demangled" or "mangled". Returns 0, or 400 with why set. */
int kb_gw_profile_check(const struct kb_gw_lb *lb, const Kb__ProfileRequest *pr,
			char *why, size_t why_size);

/* kb_gw_submit() is these two calls. The first does every check and the
 * policy, records the submission (and opens the watch asked for); it
 * takes a few Redis round trips. The second publishes it and waits for the
 * broker (up to KB_KAFKA_TIMEOUT_MS): the HTTP endpoints run it on the
 * pool (kb_gw_defer) so that no libmicrohttpd thread waits. Both return
 * as kb_gw_submit() does, with res filled. */
int kb_gw_submit_record(struct kb_gw *g, const struct kb_gw_submit_req *req,
			struct kb_gw_submit_res *res, struct kb_gw_pending *p);
int kb_gw_submit_publish(struct kb_gw *g, struct kb_gw_pending *p,
			 struct kb_gw_submit_res *res);

/* Publishes the Submission of a recorded submission (its task by
 * reference, stored first if this process has not stored it yet) and
 * waits for the broker; then records where the message is
 * (kb_gw_sub_published). The reconciler re-publishes with it. Returns 0
 * or negative (the message is then not delivered: librdkafka's
 * message.timeout.ms is below our wait, see main.c). */
int kb_gw_publish(struct kb_gw *g, const struct kb_gw_lb *lb, enum kb_mode mode,
		  uint64_t id, const struct kb_gw_sub *s, const char *user_name,
		  Kb__ProfileRequest *profile);

/* kb_gw_watch_open() with a wake-up every tick_ms (keep-alives). */
struct kb_gw_watch *kb_gw_watch_open_tick(struct kb_gw *g, uint64_t id,
					  int tick_ms, kb_gw_wake_fn wake,
					  void *ctx);

/* Reads submission id's state from Redis and queues it as an event: to w,
 * or (w NULL) to every watcher of id through the hub. Marked synthetic,
 * so a stage a watcher already has is not repeated. Returns 0 or a
 * negative store code (then nothing was queued). */
int kb_gw_push_state(struct kb_gw *g, struct kb_gw_watch *w, uint64_t id);

#endif
