/* What a handler asks of its request (see http.h): who sent it (the CLI
 * id's user, an admin), which board it names, and the body it accepts. */
#include <errno.h>
#include <stdio.h>

#include "http.h"
#include "kb_util.h"

/* Multipart framing around the file: boundaries, part headers, small
 * extra fields. Generous, since it only bounds what we read. */
#define MULTIPART_OVERHEAD (64u << 10)

void kb_gw_store_failed(struct kb_gw_req *r, int rc)
{
	if (rc == -EIO)
		kb_gw_reply_error(r, 503, "store unavailable, retry later");
	else
		kb_gw_reply_error(r, 500, "internal error");
}

int kb_gw_authenticate(struct kb_gw_req *r)
{
	const char *cli = kb_gw_header(r, "X-Popcorn-Cli-Id");
	int rc;

	if (!cli || !*cli) {
		kb_gw_reply_error(r, 401, "missing X-Popcorn-Cli-Id header");
		return -1;
	}
	if (!kb_rules_cli_id_ok(cli)) {
		kb_gw_reply_error(r, 401,
				  "invalid or unauthorized X-Popcorn-Cli-Id");
		return -1;
	}
	rc = kb_gw_user_by_cli(r->g, cli, &r->user);
	if (rc == -ENOENT) {
		kb_gw_reply_error(r, 401,
				  "invalid or unauthorized X-Popcorn-Cli-Id");
		return -1;
	}
	if (rc < 0) {
		kb_gw_store_failed(r, rc);
		return -1;
	}
	if (r->user.banned) {
		kb_gw_reply_error(r, 403, "user is banned");
		return -1;
	}
	r->has_user = 1;
	return 0;
}

int kb_gw_authenticate_optional(struct kb_gw_req *r)
{
	const char *cli = kb_gw_header(r, "X-Popcorn-Cli-Id");

	if (!cli || !*cli)
		return 0;
	return kb_gw_authenticate(r);
}

int kb_gw_is_admin(struct kb_gw_req *r)
{
	const char *why = "";

	return kb_rules_admin(kb_gw_header(r, "Authorization"),
			      r->g->cfg.admin_token, &why) == 0;
}

int kb_gw_require_admin(struct kb_gw_req *r)
{
	const char *why = "";
	int st = kb_rules_admin(kb_gw_header(r, "Authorization"),
				r->g->cfg.admin_token, &why);

	if (st) {
		kb_gw_reply_error(r, st, "%s", why);
		return -1;
	}
	return 0;
}

int kb_gw_board_and_gpu(struct kb_gw_req *r, const char *lb, const char *gpu)
{
	r->lb = kb_gw_lb_find(r->g, lb);
	if (!r->lb) {
		kb_gw_reply_error(r, 404, "unknown leaderboard '%s'", lb);
		return -1;
	}
	if (gpu && !kb_gw_lb_has_gpu(r->lb, gpu)) {
		kb_gw_reply_error(
			r, 404, "gpu '%s' is not offered for leaderboard '%s'",
			gpu, lb);
		return -1;
	}
	return 0;
}

int kb_gw_board_access(struct kb_gw_req *r)
{
	int allowed = 0, rc;

	if (!atomic_load(&r->lb->closed) || kb_gw_is_admin(r))
		return 0;
	if (kb_gw_authenticate_optional(r) < 0)
		return -1;
	if (!r->has_user) {
		kb_gw_reply_error(r, 401,
				  "authentication required for closed "
				  "leaderboard");
		return -1;
	}
	rc = kb_gw_has_access(r->g, r->lb->task->name, r->user.id, &allowed);
	if (rc < 0) {
		kb_gw_store_failed(r, rc);
		return -1;
	}
	if (!allowed) {
		kb_gw_reply_error(r, 403,
				  "you do not have access to this leaderboard");
		return -1;
	}
	return 0;
}

int kb_gw_expect_json(struct kb_gw_req *r, uint64_t cap)
{
	const char *why = "";
	int st;

	r->body_cap = cap;
	st = kb_rules_content_length(kb_gw_header(r, "Content-Length"), cap,
				     &why);
	if (st) {
		kb_gw_reply_error(r, st, "%s", why);
		return -1;
	}
	r->body = KB_GW_BODY_JSON;
	return 0;
}

int kb_gw_expect_file(struct kb_gw_req *r)
{
	const struct kb_gw_config *cfg = &r->g->cfg;
	char boundary[KB_MULTIPART_BOUNDARY_MAX + 1];
	const char *why = "";
	int st;

	r->body_cap = (uint64_t)cfg->max_file_bytes + MULTIPART_OVERHEAD;
	st = kb_rules_content_length(kb_gw_header(r, "Content-Length"),
				     r->body_cap, &why);
	if (st) {
		if (st == 413)
			kb_gw_reply_error(r, 413,
					  "file too large (limit %ld bytes)",
					  cfg->max_file_bytes);
		else
			kb_gw_reply_error(r, st, "%s", why);
		return -1;
	}
	if (kb_multipart_boundary(kb_gw_header(r, "Content-Type"), boundary,
				  sizeof(boundary)) != 0) {
		kb_gw_reply_error(r, 400,
				  "expected a multipart/form-data body "
				  "with a boundary");
		return -1;
	}
	r->mp = kb_multipart_new(boundary, "file", (size_t)cfg->max_file_bytes);
	if (!r->mp) {
		kb_gw_reply_error(r, 500, "internal error");
		return -1;
	}
	r->body = KB_GW_BODY_MULTIPART;
	return 0;
}

const char *kb_gw_take_file(struct kb_gw_req *r, size_t *len,
			    const char **file_name)
{
	int rc = kb_multipart_finish(r->mp);

	if (rc == -EFBIG) {
		kb_gw_reply_error(r, 413, "file too large (limit %ld bytes)",
				  r->g->cfg.max_file_bytes);
		return NULL;
	}
	if (rc < 0) {
		kb_gw_reply_error(r, 400, "malformed multipart body: %s",
				  kb_multipart_error(r->mp));
		return NULL;
	}
	if (!kb_multipart_found(r->mp)) {
		kb_gw_reply_error(r, 400, "missing form field 'file'");
		return NULL;
	}
	*file_name = kb_multipart_filename(r->mp);
	return kb_multipart_data(r->mp, len);
}
