/* The API's endpoints (routes.c: public and user reads, submitting;
 * admin.c, auth.c, export.c, stream.c, sync.c: update-problems): each a
 * handler table indexed by route id (router.h),
 * from which main() makes the route table it hands kb_gw_http_bind();
 * and the helpers those files share. Each endpoint is a begin() on the
 * headers and, for those with a body, a finish() on it (http.h).
 */
#ifndef KB_GW_ROUTES_H
#define KB_GW_ROUTES_H

#include <stdint.h>

#include "core/api.h"
#include "http/http.h"

/* The handler tables, indexed by route id (entries for other routes are
 * zero). kb_gw_api_handlers also answers the routes served elsewhere or
 * not at all here: GET /metrics (its own listener) and POST
 * /discord/interactions when Discord is not built in. */
extern const struct kb_gw_handler kb_gw_api_handlers[KB_ROUTE_COUNT];
extern const struct kb_gw_handler kb_gw_admin_handlers[KB_ROUTE_COUNT];
extern const struct kb_gw_handler kb_gw_export_handlers[KB_ROUTE_COUNT];
extern const struct kb_gw_handler kb_gw_auth_handlers[KB_ROUTE_COUNT];
extern const struct kb_gw_handler kb_gw_stream_handlers[KB_ROUTE_COUNT];
extern const struct kb_gw_handler kb_gw_problems_handlers[KB_ROUTE_COUNT];

/* Ends a submission deletion, given kb_gw_sub_delete's rc and outputs:
 * 404 (not_found) for -ENOENT, 403 for -EPERM, kb_gw_store_failed for
 * other errors; else drops the board's cached pages when its ranking
 * changed, logs "deleted by <by>" and replies {"status": "ok",
 * "submission_id": id}. */
void kb_gw_sub_deleted(struct kb_gw_req *r, uint64_t id, int rc,
		       const char *not_found, const char *lb, const char *gpu,
		       int changed, const char *by);
/* The header checks of every way of submitting (the caller authenticated
 * already): board and gpu (404), mode (400), then declares the file body.
 * Sets r->lb and r->mode. Returns 0 or replies and returns -1. */
int kb_gw_submission_headers(struct kb_gw_req *r, const char *lb,
			     const char *gpu, const char *mode);
/* Replies to a kb_gw_submit() failure (Retry-After on 429). */
void kb_gw_reply_submit_error(struct kb_gw_req *r,
			      const struct kb_gw_submit_res *res);

#endif
