/* The web pages' handlers and their cache (see web.h). */
#include <errno.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/cache.h"
#include "data.h"
#include "http/rules.h"
#include "internal.h"
#include "kb_log.h"
#include "kb_util.h"
#include "render.h"
#include "store/store.h"

#define PAGE_SLOTS 256
#define TEMPLATE_MAX (1u << 20)

/* The stylesheet and the script, compiled in (gateway/CMakeLists.txt). */
extern const char kb_web_css[];
extern const char kb_web_js[];

static struct MHD_Response *html_response(char *data, size_t len)
{
	struct MHD_Response *resp = MHD_create_response_from_buffer(
		len, data, MHD_RESPMEM_MUST_FREE);

	if (!resp)
		return NULL;
	kb__web_headers(resp, "text/html; charset=utf-8");
	/* Revalidate every time: a page is cheap and live data changes. */
	MHD_add_response_header(resp, MHD_HTTP_HEADER_CACHE_CONTROL,
				"no-cache");
	return resp;
}

static struct MHD_Response *static_response(const char *data, const char *type)
{
	struct MHD_Response *resp = MHD_create_response_from_buffer(
		strlen(data), (void *)data, MHD_RESPMEM_PERSISTENT);

	if (!resp)
		return NULL;
	kb__web_headers(resp, type);
	MHD_add_response_header(resp, MHD_HTTP_HEADER_CACHE_CONTROL,
				"public, max-age=300");
	return resp;
}

int kb_gw_web_start(struct kb_gw *g, char *errstr, size_t errstr_size)
{
	struct kb_gw_web *w;
	struct kb_buf me = {0};

	if (!g->cfg.web)
		return 0;
	w = calloc(1, sizeof(*w));
	if (!w) {
		snprintf(errstr, errstr_size, "out of memory");
		return -1;
	}
	w->g = g;
	pthread_mutex_init(&w->mu, NULL);
	pthread_cond_init(&w->cv, NULL);
	w->pages = kb_gw_cache_new(PAGE_SLOTS, g->cfg.web_cache_ms,
				   kb_gw_response_destroy);
	w->css = static_response(kb_web_css, "text/css; charset=utf-8");
	w->js = static_response(kb_web_js, "text/javascript; charset=utf-8");
	if (kb_web_render_me(&me) == 0)
		w->me = html_response(me.data, me.len);
	if (!w->me)
		kb_buf_free(&me);
	g->web = w;
	if (!w->pages || !w->css || !w->js || !w->me) {
		snprintf(errstr, errstr_size, "out of memory");
		kb_gw_web_stop(g);
		return -1;
	}
	if (kb__web_feed_start(w, errstr, errstr_size) < 0) {
		kb_gw_web_stop(g);
		return -1;
	}
	return 0;
}

void kb_gw_web_stop(struct kb_gw *g)
{
	struct kb_gw_web *w = g->web;

	if (!w)
		return;
	kb__web_feed_stop(w);
	kb_gw_cache_destroy(w->pages);
	if (w->css)
		MHD_destroy_response(w->css);
	if (w->js)
		MHD_destroy_response(w->js);
	if (w->me)
		MHD_destroy_response(w->me);
	pthread_cond_destroy(&w->cv);
	pthread_mutex_destroy(&w->mu);
	free(w);
	g->web = NULL;
}

/* ---- cached pages ---- */

/* Renders a page into b for r; returns the HTTP status (the page is then
 * the answer: an error page for a status other than 200). */
typedef int (*render_fn)(struct kb_gw_req *r, struct kb_buf *b, unsigned gen,
			 const void *arg);

static int use_cached(void *value, void *ctx)
{
	kb_gw_reply_response(ctx, 200, value);
	return 0;
}

static int error_page(struct kb_buf *b, int status, const char *msg)
{
	kb_buf_free(b);
	kb_web_render_error(b, status, msg);
	return status;
}

static int store_error(struct kb_buf *b, int rc)
{
	return rc == -ENOENT ? error_page(b, 404, "Not found.")
	       : rc == -EIO
		       ? error_page(b, 503,
				    "The store is unavailable; retry later.")
		       : error_page(b, 500, "Internal error.");
}

static void serve_page(struct kb_gw_req *r, const char *key, render_fn render,
		       const void *arg)
{
	struct kb_gw_web *w = r->g->web;
	struct kb_buf b = {0};
	unsigned gen;
	int status;

	if (!w) {
		kb_gw_reply_error(r, 404, "the web pages are off (KB_WEB=0)");
		return;
	}
	/* key NULL: a page not kept (a chosen plot view, a code page). */
	if (key && kb_gw_cache_use(w->pages, key, use_cached, r) == 0)
		return;
	gen = atomic_load(&w->gen);
	status = render(r, &b, gen, arg);
	if (!b.data) {
		kb_gw_reply_error(r, 500, "out of memory");
		return;
	}
	struct MHD_Response *resp = html_response(b.data, b.len);
	if (!resp) {
		kb_buf_free(&b);
		kb_gw_reply_error(r, 500, "out of memory");
		return;
	}
	kb_gw_reply_response(r, status, resp);
	/* A change released while rendering may be missing from this page:
	 * serve it, but do not keep it. */
	if (key && status == 200 && gen == atomic_load(&w->gen))
		kb_gw_cache_put(w->pages, key, resp);
	else
		MHD_destroy_response(resp);
}

static int render_index(struct kb_gw_req *r, struct kb_buf *b, unsigned gen,
			const void *arg)
{
	struct kb_web_index_model m;
	int rc = kb_web_load_index(r->g, &m);

	(void)arg;
	if (rc == 0)
		rc = kb_web_render_index(b, m.rows, m.n, kb_now_ms(), gen);
	kb_web_index_free(&m);
	return rc < 0 ? store_error(b, rc) : 200;
}

/* A board and the plot choices its query made (render.h). */
struct board_view {
	const struct kb_gw_lb *lb;
	const char *gpu;
	struct kb_web_plot_opts plot;
};

static int render_board(struct kb_gw_req *r, struct kb_buf *b, unsigned gen,
			const void *arg)
{
	const struct board_view *v = arg;
	struct kb_web_board_model m;
	int rc = kb_web_load_board(r->g, v->lb, &m);

	m.bd.plot_gpu = v->gpu;
	m.bd.plot = v->plot;
	if (rc == 0)
		rc = kb_web_render_board(b, &m.bd, kb_now_ms(), gen);
	kb_web_board_free(&m);
	return rc < 0 ? store_error(b, rc) : 200;
}

static int render_user(struct kb_gw_req *r, struct kb_buf *b, unsigned gen,
		       const void *arg)
{
	struct kb_web_user_model m;
	const char *id = arg;
	int rc = kb_web_load_user(r->g, id, &m);

	if (rc == 0)
		rc = kb_web_render_user(b, id, m.name->str, m.best, m.nbest,
					m.pts, m.npts, kb_now_ms(), gen);
	kb_web_user_free(&m);
	return rc < 0 ? store_error(b, rc) : 200;
}

static int render_missing(struct kb_gw_req *r, struct kb_buf *b, unsigned gen,
			  const void *arg)
{
	(void)r;
	(void)gen;
	return error_page(b, 404, arg);
}

static void index_begin(struct kb_gw_req *r)
{
	serve_page(r, "i|", render_index, NULL);
}

/* The public board named by the first path parameter, or NULL. */
static const struct kb_gw_lb *public_board(struct kb_gw_req *r)
{
	const struct kb_gw_lb *lb = kb_gw_lb_find(r->g, r->route.params[0]);

	return lb && !atomic_load(&lb->closed) ? lb : NULL;
}

static void board_begin(struct kb_gw_req *r)
{
	const struct kb_gw_lb *lb = public_board(r);
	struct board_view v = {lb, kb_gw_query(r, "gpu"), {0}};
	char key[200];

	if (!lb) {
		serve_page(r, "none", render_missing,
			   "There is no public leaderboard "
			   "of that name.");
		return;
	}
	/* A chosen view is drawn for it alone and not kept: the page cache
	 * holds each board once. A value out of range draws its default. */
	kb_web_plot_opts_parse(kb_gw_query(r, "user"), kb_gw_query(r, "view"),
			       kb_gw_query(r, "scale"), kb_gw_query(r, "range"),
			       kb_now_ms(), &v.plot);
	if (v.plot.user && !kb_rules_user_id_ok(v.plot.user))
		v.plot.user = NULL;
	if (v.gpu && *v.gpu) {
		serve_page(r, NULL, render_board, &v);
		return;
	}
	v.gpu = NULL;
	/* Keyed by the board object too: one that an update-problems put in
	 * its place (a new task, perhaps sealed otherwise) is never served
	 * the old one's page. */
	snprintf(key, sizeof(key), "b|%s|%ld", lb->task->name, lb->index);
	serve_page(r, key, render_board, &v);
}

/* The code page's checks, in order: a public board, past its deadline,
 * a submission of that board that is a ranked pass (kb_gw_ranked_pass,
 * the rule the export follows), with its code still kept. */
static int render_code(struct kb_gw_req *r, struct kb_buf *b, unsigned gen,
		       const void *arg)
{
	const struct kb_gw_lb *lb = arg;
	struct kb_gw_sub_rec rec;
	struct kb_web_code c = {.lb = lb->task->name};
	int rc;

	(void)gen;
	if (lb->deadline_ms < 0 || kb_now_ms() < lb->deadline_ms)
		return error_page(b, 403,
				  "Submissions' code is shown only after the "
				  "board's deadline has passed.");
	if (kb_parse_u64(r->route.params[1], &c.sub_id) < 0)
		return error_page(b, 404, "There is no such submission.");
	rc = kb_gw_sub_fetch(r->g, c.sub_id, 1, &rec);
	if (rc < 0)
		return store_error(b, rc);
	const char *sub_lb = kb_gw_sub_field(&rec, "lb");
	if (!sub_lb || strcmp(sub_lb, lb->task->name) != 0 ||
	    !kb_gw_ranked_pass(kb_gw_sub_field(&rec, "mode"),
			       kb_gw_sub_field(&rec, "status"),
			       kb_gw_sub_field(&rec, "verdict"),
			       kb_gw_sub_field(&rec, "score"), &c.score)) {
		kb_gw_sub_rec_free(&rec);
		return error_page(b, 404,
				  "Only ranked, passing submissions of this "
				  "board are shown.");
	}
	if (!rec.code || rec.code->type != REDIS_REPLY_STRING) {
		kb_gw_sub_rec_free(&rec);
		return error_page(b, 404,
				  "This submission's code is no longer kept.");
	}
	const char *ms = kb_gw_sub_field(&rec, "submitted_ms");
	c.gpu = kb_gw_sub_field(&rec, "gpu");
	c.user_id = kb_gw_sub_field(&rec, "user_id");
	c.user_name = kb_gw_sub_field(&rec, "user_name");
	c.file_name = kb_gw_sub_field(&rec, "file_name");
	c.submitted_ms = ms ? strtoll(ms, NULL, 10) : 0;
	c.code = rec.code->str;
	rc = kb_web_render_code(b, &c);
	kb_gw_sub_rec_free(&rec);
	return rc < 0 ? store_error(b, rc) : 200;
}

static void code_begin(struct kb_gw_req *r)
{
	const struct kb_gw_lb *lb = public_board(r);

	if (!lb)
		serve_page(r, "none", render_missing,
			   "There is no public leaderboard "
			   "of that name.");
	else
		serve_page(r, NULL, render_code, lb);
}

static void user_begin(struct kb_gw_req *r)
{
	const char *id = r->route.params[0];
	char key[200];

	if (!kb_rules_user_id_ok(id)) {
		serve_page(r, "none", render_missing, "There is no such user.");
		return;
	}
	snprintf(key, sizeof(key), "u|%s|", id);
	serve_page(r, key, render_user, id);
}

static void me_begin(struct kb_gw_req *r)
{
	struct kb_gw_web *w = r->g->web;

	if (!w)
		kb_gw_reply_error(r, 404, "the web pages are off (KB_WEB=0)");
	else
		kb_gw_reply_response(r, 200, w->me);
}

static void static_begin(struct kb_gw_req *r)
{
	struct kb_gw_web *w = r->g->web;
	const char *f = r->route.params[0];

	if (w && strcmp(f, "kb.css") == 0)
		kb_gw_reply_response(r, 200, w->css);
	else if (w && strcmp(f, "kb.js") == 0)
		kb_gw_reply_response(r, 200, w->js);
	else
		kb_gw_reply_error(r, 404, "Not Found");
}

static void template_begin(struct kb_gw_req *r)
{
	const struct kb_gw_lb *lb = public_board(r);
	const char *file = NULL;
	char path[4096], disp[512], *data = NULL, *copy;
	size_t len = 0;

	for (size_t i = 0; r->g->web && lb && i < lb->task->ntemplates; i++)
		if (strcmp(lb->task->templates[i].key, r->route.params[1]) == 0)
			file = lb->task->templates[i].value;
	if (!file || !lb->task->dir) {
		kb_gw_reply_error(r, 404, "no such template");
		return;
	}
	/* A synced board's files are untrusted input: kb_task_read keeps
	 * the read inside its source. */
	if (kb_task_read(lb->task, file, TEMPLATE_MAX, &data, &len, path,
			 sizeof(path)) < 0) {
		kb_warn("template %s", path);
		kb_gw_reply_error(r, 500, "the template cannot be read");
		return;
	}
	struct MHD_Response *resp = MHD_create_response_from_buffer(
		len, data, MHD_RESPMEM_MUST_FREE);
	if (!resp) {
		free(data);
		kb_gw_reply_error(r, 500, "out of memory");
		return;
	}
	/* The task's file name (its last component), which loading checked. */
	copy = strdup(file);
	snprintf(disp, sizeof(disp), "attachment; filename=\"%s\"",
		 copy ? basename(copy) : "template");
	free(copy);
	kb__web_headers(resp, "text/plain; charset=utf-8");
	MHD_add_response_header(resp, "Content-Disposition", disp);
	kb_gw_reply_response(r, 200, resp);
	MHD_destroy_response(resp);
}

static void no_body(struct kb_gw_req *r)
{
	kb_gw_reply_error(r, 500, "internal error");
}

const struct kb_gw_handler kb_gw_web_handlers[KB_ROUTE_COUNT] = {
	[KB_ROUTE_WEB_INDEX] = {index_begin, no_body},
	[KB_ROUTE_WEB_BOARD] = {board_begin, no_body},
	[KB_ROUTE_WEB_TEMPLATE] = {template_begin, no_body},
	[KB_ROUTE_WEB_CODE] = {code_begin, no_body},
	[KB_ROUTE_WEB_USER] = {user_begin, no_body},
	[KB_ROUTE_WEB_ME] = {me_begin, no_body},
	[KB_ROUTE_WEB_STATIC] = {static_begin, no_body},
	[KB_ROUTE_WEB_EVENTS] = {kb__web_events_begin, no_body},
};
