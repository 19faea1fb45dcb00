/* kb_gw_problems: the board table's contents. The hosted problem set is
 * loaded once at startup (every task file read from disk, the Task
 * protobuf each Submission carries built, the per-board bodies rendered);
 * admins add, replace and delete boards later. Reading the table is
 * base/gateway.h's (base/boards.c).
 */
#ifndef KB_GW_PROBLEMS_H
#define KB_GW_PROBLEMS_H

#include <stddef.h>

#include "base/gateway.h"

/* Loads cfg.problems into the board table, reads every task file and
 * renders the per-board JSON. Secret seeds are left 0 (store.c sets
 * them). Returns 0 or negative with errstr set. Call from main()
 * before the daemon starts; kb_gw_lbs_free() after it stopped. */
int kb_gw_lbs_load(struct kb_gw *g, char *errstr, size_t errstr_size);
void kb_gw_lbs_free(struct kb_gw *g);

/* Loads <problems_dev>/<directory> as board name and appends it (not yet
 * initialised in Redis). Returns the board, or NULL with errstr set and
 * *status the HTTP status to answer (400 bad directory or task, 507 the
 * table is full). hidden: appended as deleted, for a board that is to
 * replace another once it is ready (kb_gw_lb_swap). Thread-safe. */
struct kb_gw_lb *kb_gw_lb_add_dynamic(struct kb_gw *g, const char *directory,
				      const char *name, int hidden, int *status,
				      char *errstr, size_t errstr_size);

/* Appends a board for a task already loaded (a problem set's entry, its
 * gpus and deadline as the set gives them); directory is recorded as
 * where it came from, under problems_dev. On success the board owns t;
 * on failure (NULL, *status 400 or 507, errstr set) the caller keeps it.
 * Thread-safe. */
struct kb_gw_lb *kb_gw_lb_add_task(struct kb_gw *g, struct kb_task *t,
				   const char *directory, int hidden,
				   int *status, char *errstr,
				   size_t errstr_size);

/* A hidden board takes old's place: it is shown, then old is hidden (a
 * listing in between may show both for an instant; a lookup by name
 * finds the newer first). */
void kb_gw_lb_swap(struct kb_gw *g, struct kb_gw_lb *old,
		   struct kb_gw_lb *fresh);

/* Deletes a live board here and, through Redis (kb:lbdeleted, one
 * script: store.h kb_gw_board_mark_deleted), for every gateway; purge
 * also drops its rankings and submission index. Then drops its cached
 * rankings. Returns 0 or a store code (nothing changed then). */
int kb_gw_lb_delete(struct kb_gw *g, struct kb_gw_lb *lb, int purge);
/* Held around a change of the board object that serves a name together
 * with its kb:lbdyn record (update-problems' update, the sync's swap), so
 * that two of them never act on one name at once. */
void kb_gw_boards_change_lock(void);
void kb_gw_boards_change_unlock(void);

/* Builds the leaderboard list body (live boards); exposed for tests. Never
 * includes a secret seed. Returns a malloc'd string or NULL. */
char *kb_gw_render_leaderboards(const struct kb_gw *g, int with_closed);

#endif
