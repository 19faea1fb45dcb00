/* kb_web_render: see render.h. The common parts and the index; a board's
 * pages are board.c, a user's user.c, the plot plot.c. */
#include "render.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "render_int.h"

int kb_web_esc(struct kb_buf *b, const char *s)
{
	return s ? kb_web_escn(b, s, strlen(s)) : 0;
}

int kb_web_escn(struct kb_buf *b, const char *s, size_t n)
{
	const char *run = s, *end = s + n;
	int rc = 0;

	for (; s < end && rc == 0; s++) {
		const char *rep = NULL;
		switch (*s) {
		case '&':
			rep = "&amp;";
			break;
		case '<':
			rep = "&lt;";
			break;
		case '>':
			rep = "&gt;";
			break;
		case '"':
			rep = "&quot;";
			break;
		case '\'':
			rep = "&#39;";
			break;
		default:
			continue;
		}
		rc = kb_buf_append(b, run, (size_t)(s - run));
		if (rc == 0)
			rc = kb_buf_append(b, rep, strlen(rep));
		run = s + 1;
	}
	if (rc == 0)
		rc = kb_buf_append(b, run, (size_t)(end - run));
	return rc;
}

void kb_web_score(double v, char *out, size_t size)
{
	static const struct {
		double scale;
		const char *unit;
	} units[] = {{1, "s"}, {1e-3, "ms"}, {1e-6, "µs"}, {1e-9, "ns"}};
	size_t i = 0;

	if (!(v > 0) || !isfinite(v)) {
		snprintf(out, size, "–");
		return;
	}
	while (i + 1 < sizeof(units) / sizeof(units[0]) && v < units[i].scale)
		i++;
	double x = v / units[i].scale;
	int decimals = x >= 100 ? 1 : x >= 10 ? 2 : 3;
	snprintf(out, size, "%.*f %s", decimals, x, units[i].unit);
}

void kb_web_time_left(int64_t deadline_ms, int64_t now_ms, char *out,
		      size_t size)
{
	int64_t s = (deadline_ms - now_ms) / 1000;

	if (deadline_ms < 0)
		snprintf(out, size, "%s", "");
	else if (s <= 0)
		snprintf(out, size, "closed");
	else if (s >= 86400)
		snprintf(out, size, "%" PRId64 " d %" PRId64 " h left",
			 s / 86400, s % 86400 / 3600);
	else if (s >= 3600)
		snprintf(out, size, "%" PRId64 " h %" PRId64 " min left",
			 s / 3600, s % 3600 / 60);
	else
		snprintf(out, size, "%" PRId64 " min left", s / 60 + 1);
}

/* "2026-01-02 03:04 UTC" */
void kb__web_utc(int64_t ms, char *out, size_t size)
{
	time_t t = (time_t)(ms / 1000);
	struct tm tm;

	if (ms <= 0 || !gmtime_r(&t, &tm)) {
		snprintf(out, size, "–");
		return;
	}
	strftime(out, size, "%Y-%m-%d %H:%M UTC", &tm);
}

/* <time datetime="ISO">human</time> */
void kb__web_put_time(struct kb_buf *b, int64_t ms)
{
	char iso[40], human[40];
	time_t t = (time_t)(ms / 1000);
	struct tm tm;

	kb__web_utc(ms, human, sizeof(human));
	if (ms <= 0 || !gmtime_r(&t, &tm)) {
		kb_buf_printf(b, "%s", human);
		return;
	}
	strftime(iso, sizeof(iso), "%Y-%m-%dT%H:%M:%SZ", &tm);
	kb_buf_printf(b, "<time datetime=\"%s\">%s</time>", iso, human);
}

void kb__web_head(struct kb_buf *b, const char *title, const char *body_class)
{
	kb_buf_printf(
		b,
		"<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
		"<meta name=\"viewport\" content=\"width=device-width,initial-scale=1\">"
		"<meta name=\"referrer\" content=\"no-referrer\"><title>");
	kb_web_esc(b, title);
	kb_buf_printf(
		b,
		" · KernelBot</title><link rel=\"icon\" href=\"data:,\">"
		"<link rel=\"stylesheet\" href=\"/web/static/kb.css\">"
		"<script src=\"/web/static/kb.js\" defer></script></head>"
		"<body class=\"%s\"><a class=\"skip\" href=\"#main\">Skip to content</a>"
		"<header><nav aria-label=\"Site\"><a class=\"brand\" href=\"/\">KernelBot</a>"
		"<a href=\"/web/me\" id=\"me-link\">My submissions</a></nav></header>"
		"<main id=\"main\">",
		body_class);
}

int kb__web_tail(struct kb_buf *b)
{
	kb_buf_printf(
		b,
		"</main><footer><p>Scores are seconds of device time, lower "
		"is better. No cookies, no tracking.</p></footer></body></html>\n");
	return kb_buf_append(b, "", 0);
}

void kb__web_user_link(struct kb_buf *b, const char *id, const char *name)
{
	kb_buf_printf(b, "<a href=\"/web/user/");
	kb_web_esc(b, id);
	kb_buf_printf(b, "\">");
	kb_web_esc(b, name && *name ? name : id);
	kb_buf_printf(b, "</a>");
}

void kb__web_board_link(struct kb_buf *b, const char *lb)
{
	kb_buf_printf(b, "<a href=\"/web/lb/");
	kb_web_esc(b, lb);
	kb_buf_printf(b, "\">");
	kb_web_esc(b, lb);
	kb_buf_printf(b, "</a>");
}

void kb__web_score_cell(struct kb_buf *b, double v)
{
	char s[48];

	kb_web_score(v, s, sizeof(s));
	kb_buf_printf(b, "<td class=\"num\" data-seconds=\"%.17g\">%s</td>", v,
		      s);
}

/* Whether gpu has a worker (render.h): a sentence in a section, a
 * short cell in a table. Says nothing while that is not known. */
void kb__web_workers_note(struct kb_buf *b, const char *gpu, int workers,
			  int cell)
{
	if (workers == 0) {
		kb_buf_printf(b, cell ? "<td class=\"workers none\">"
				      : "<p class=\"workers none\">");
		kb_buf_printf(b, "No worker online for ");
		kb_web_esc(b, gpu);
		kb_buf_printf(
			b, cell ? "</td>"
				: ": submissions wait until one starts.</p>");
	} else if (workers > 0) {
		kb_buf_printf(b, cell ? "<td class=\"workers\">"
				      : "<p class=\"workers\">");
		kb_buf_printf(b, "%d worker%s online", workers,
			      workers == 1 ? "" : "s");
		kb_buf_printf(b, cell ? "</td>" : "</p>");
	} else if (cell) {
		kb_buf_printf(b, "<td class=\"workers\">–</td>");
	}
}

void kb__web_deadline_line(struct kb_buf *b, int64_t deadline_ms,
			   int64_t now_ms)
{
	char left[64];

	kb_web_time_left(deadline_ms, now_ms, left, sizeof(left));
	if (deadline_ms < 0) {
		kb_buf_printf(
			b,
			"<span class=\"status open\">open</span> · no deadline");
		return;
	}
	kb_buf_printf(b, "<span class=\"status %s\">%s</span> · deadline ",
		      deadline_ms > now_ms ? "open" : "closed",
		      deadline_ms > now_ms ? "open" : "closed");
	kb__web_put_time(b, deadline_ms);
	if (deadline_ms > now_ms)
		kb_buf_printf(b,
			      " (<span class=\"left\" data-deadline=\"%" PRId64
			      "\">%s</span>)",
			      deadline_ms, left);
}

void kb__web_medal(struct kb_buf *b, long rank)
{
	static const char *const medal[] = {"gold", "silver", "bronze"};

	if (rank >= 1 && rank <= 3)
		kb_buf_printf(b, "<span class=\"medal %s\">%s</span> ",
			      medal[rank - 1], medal[rank - 1]);
}

/* Index rows in the order they are shown (render.h): open boards
 * before closed ones, then boards with participants, then by name. */
struct index_order {
	const struct kb_web_index_row *rows;
	int64_t now_ms;
};

static int index_rank(const struct kb_web_index_row *r, int64_t now_ms)
{
	int closed = r->deadline_ms >= 0 && r->deadline_ms <= now_ms;

	return closed * 2 + (r->participants == 0);
}

static void index_sort(const struct kb_web_index_row *rows, size_t n,
		       int64_t now_ms, size_t *order)
{
	/* Insertion sort: an index holds tens of boards. */
	for (size_t i = 0; i < n; i++) {
		size_t j = i;
		int ri = index_rank(&rows[i], now_ms);
		while (j > 0) {
			const struct kb_web_index_row *p = &rows[order[j - 1]];
			int rp = index_rank(p, now_ms);
			if (rp < ri ||
			    (rp == ri && strcmp(p->name, rows[i].name) <= 0))
				break;
			order[j] = order[j - 1];
			j--;
		}
		order[j] = i;
	}
}

/* Whether a gpu named gpu without workers comes before rows[i].gpus[k]. */
static int said_before(const struct kb_web_index_row *rows, size_t i, size_t k,
		       const char *gpu)
{
	for (size_t j = 0; j <= i; j++)
		for (size_t q = 0;
		     rows[j].workers && q < (j == i ? k : rows[j].ngpus); q++)
			if (rows[j].workers[q] == 0 &&
			    strcmp(rows[j].gpus[q], gpu) == 0)
				return 1;
	return 0;
}

/* The notice above the boards: every gpu of a shown board that no worker
 * serves, once. */
static void index_workers(struct kb_buf *b, const struct kb_web_index_row *rows,
			  size_t n)
{
	size_t said = 0;

	for (size_t i = 0; i < n; i++)
		for (size_t k = 0; rows[i].workers && k < rows[i].ngpus; k++) {
			if (rows[i].workers[k] != 0 ||
			    said_before(rows, i, k, rows[i].gpus[k]))
				continue;
			kb_buf_printf(
				b,
				said++ ? ", "
				       : "<p class=\"workers none notice\" "
					 "role=\"status\">No worker online for ");
			kb_web_esc(b, rows[i].gpus[k]);
		}
	if (said)
		kb_buf_printf(b,
			      ": submissions to %s wait in the queue until one "
			      "starts.</p>",
			      said == 1 ? "it" : "them");
}

static void index_gpu_row(struct kb_buf *b, const struct kb_web_index_row *r,
			  size_t k)
{
	size_t nt = r->ntop ? r->ntop[k] : 0;

	kb_buf_printf(b, "<tr><th scope=\"row\">");
	kb_web_esc(b, r->gpus[k]);
	kb_buf_printf(b, "</th><td>");
	if (nt)
		kb_buf_printf(b, "<ol class=\"podium\">");
	for (size_t i = 0; i < nt; i++) {
		const struct kb_web_rank *e = &r->top[k][i];
		char sc[48];
		kb_web_score(e->score, sc, sizeof(sc));
		kb_buf_printf(b, "<li>");
		kb__web_medal(b, e->rank);
		kb__web_user_link(b, e->user_id, e->user_name);
		kb_buf_printf(
			b,
			" <span class=\"num\" data-seconds=\"%.17g\">%s</span></li>",
			e->score, sc);
	}
	kb_buf_printf(b, nt ? "</ol></td>" : "–</td>");
	kb__web_workers_note(
		b, r->gpus[k],
		r->workers ? r->workers[k] : KB_WEB_WORKERS_UNKNOWN, 1);
	kb_buf_printf(b, "</tr>");
}

static void index_board(struct kb_buf *b, const struct kb_web_index_row *r,
			int64_t now_ms)
{
	kb_buf_printf(b, "<li class=\"board\" data-lb=\"");
	kb_web_esc(b, r->name);
	kb_buf_printf(b, "\"><h2>");
	kb__web_board_link(b, r->name);
	kb_buf_printf(b, "</h2><p class=\"meta\">");
	kb_web_esc(b, r->lang);
	kb_buf_printf(b, " · ");
	kb__web_deadline_line(b, r->deadline_ms, now_ms);
	kb_buf_printf(b, " · %ld participant%s</p>", r->participants,
		      r->participants == 1 ? "" : "s");
	if (r->summary && *r->summary) {
		kb_buf_printf(b, "<p class=\"summary\">");
		kb_web_esc(b, r->summary);
		kb_buf_printf(b, "</p>");
	}
	kb_buf_printf(
		b, "<table class=\"best\"><caption class=\"vh\">Top three per "
		   "GPU</caption><thead><tr><th scope=\"col\">GPU</th>"
		   "<th scope=\"col\">top 3</th>"
		   "<th scope=\"col\">workers</th></tr></thead><tbody>");
	/* Gpus where someone is ranked first. */
	for (int pass = 0; pass < 2; pass++)
		for (size_t k = 0; k < r->ngpus; k++)
			if ((!r->ntop || r->ntop[k] == 0) == pass)
				index_gpu_row(b, r, k);
	kb_buf_printf(b, "</tbody></table></li>");
}

int kb_web_render_index(struct kb_buf *b, const struct kb_web_index_row *rows,
			size_t n, int64_t now_ms, unsigned gen)
{
	size_t *order = malloc((n ? n : 1) * sizeof(*order));

	if (!order)
		return -ENOMEM;
	index_sort(rows, n, now_ms, order);
	kb__web_head(b, "Leaderboards", "index");
	kb_buf_printf(b,
		      "<h1>Leaderboards</h1><div id=\"live\" data-gen=\"%u\" "
		      "data-feed=\"\" aria-live=\"polite\">",
		      gen);
	index_workers(b, rows, n);
	kb_buf_printf(b, "<ul class=\"boards\">");
	for (size_t i = 0; i < n; i++)
		index_board(b, &rows[order[i]], now_ms);
	if (n == 0)
		kb_buf_printf(b, "<li>No public leaderboard.</li>");
	kb_buf_printf(b, "</ul></div>");
	free(order);
	return kb__web_tail(b);
}

int kb_web_render_me(struct kb_buf *b)
{
	kb__web_head(b, "My submissions", "me");
	kb_buf_printf(
		b,
		"<h1>My submissions</h1>"
		"<noscript><p>This page needs JavaScript: it calls the API with your "
		"CLI id.</p></noscript>"
		"<section id=\"signin\" class=\"js-only\"></section>"
		"<section id=\"mine\" class=\"js-only\" aria-live=\"polite\"></section>");
	return kb__web_tail(b);
}

int kb_web_render_error(struct kb_buf *b, int status, const char *message)
{
	char title[32];

	snprintf(title, sizeof(title), "Error %d", status);
	kb__web_head(b, title, "error");
	kb_buf_printf(b, "<h1>%s</h1><p>", title);
	kb_web_esc(b, message);
	kb_buf_printf(b, "</p><p><a href=\"/\">All leaderboards</a></p>");
	return kb__web_tail(b);
}
