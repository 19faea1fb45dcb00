/* kb_web_render: see web_render.h. */
#include "web_render.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define MAX_SERIES 6
/* The plot's drawing area inside its viewBox. */
#define PW 720.0
#define PH 300.0
#define ML 72.0
#define MR 16.0
#define MT 14.0
#define MB 34.0

int kb_web_esc(struct kb_buf *b, const char *s)
{
	const char *run = s;
	int rc = 0;

	if (!s)
		return 0;
	for (; *s && rc == 0; s++) {
		const char *rep = NULL;
		switch (*s) {
		case '&': rep = "&amp;"; break;
		case '<': rep = "&lt;"; break;
		case '>': rep = "&gt;"; break;
		case '"': rep = "&quot;"; break;
		case '\'': rep = "&#39;"; break;
		default: continue;
		}
		rc = kb_buf_append(b, run, (size_t)(s - run));
		if (rc == 0)
			rc = kb_buf_append(b, rep, strlen(rep));
		run = s + 1;
	}
	if (rc == 0)
		rc = kb_buf_append(b, run, strlen(run));
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
		snprintf(out, size, "%" PRId64 " d %" PRId64 " h left", s / 86400,
			 s % 86400 / 3600);
	else if (s >= 3600)
		snprintf(out, size, "%" PRId64 " h %" PRId64 " min left", s / 3600,
			 s % 3600 / 60);
	else
		snprintf(out, size, "%" PRId64 " min left", s / 60 + 1);
}

/* "2026-01-02 03:04 UTC" */
static void utc(int64_t ms, char *out, size_t size)
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
static void put_time(struct kb_buf *b, int64_t ms)
{
	char iso[40], human[40];
	time_t t = (time_t)(ms / 1000);
	struct tm tm;

	utc(ms, human, sizeof(human));
	if (ms <= 0 || !gmtime_r(&t, &tm)) {
		kb_buf_printf(b, "%s", human);
		return;
	}
	strftime(iso, sizeof(iso), "%Y-%m-%dT%H:%M:%SZ", &tm);
	kb_buf_printf(b, "<time datetime=\"%s\">%s</time>", iso, human);
}

static void head(struct kb_buf *b, const char *title, const char *body_class)
{
	kb_buf_printf(b, "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
			 "<meta name=\"viewport\" content=\"width=device-width,initial-scale=1\">"
			 "<meta name=\"referrer\" content=\"no-referrer\"><title>");
	kb_web_esc(b, title);
	kb_buf_printf(b, " · KernelBot</title><link rel=\"icon\" href=\"data:,\">"
			 "<link rel=\"stylesheet\" href=\"/web/static/kb.css\">"
			 "<script src=\"/web/static/kb.js\" defer></script></head>"
			 "<body class=\"%s\"><a class=\"skip\" href=\"#main\">Skip to content</a>"
			 "<header><nav aria-label=\"Site\"><a class=\"brand\" href=\"/\">KernelBot</a>"
			 "<a href=\"/web/me\" id=\"me-link\">My submissions</a></nav></header>"
			 "<main id=\"main\">",
		      body_class);
}

static int tail(struct kb_buf *b)
{
	kb_buf_printf(b, "</main><footer><p>Scores are seconds of device time, lower "
			 "is better. No cookies, no tracking.</p></footer></body></html>\n");
	return kb_buf_append(b, "", 0);
}

static void user_link(struct kb_buf *b, const char *id, const char *name)
{
	kb_buf_printf(b, "<a href=\"/web/user/");
	kb_web_esc(b, id);
	kb_buf_printf(b, "\">");
	kb_web_esc(b, name && *name ? name : id);
	kb_buf_printf(b, "</a>");
}

static void board_link(struct kb_buf *b, const char *lb)
{
	kb_buf_printf(b, "<a href=\"/web/lb/");
	kb_web_esc(b, lb);
	kb_buf_printf(b, "\">");
	kb_web_esc(b, lb);
	kb_buf_printf(b, "</a>");
}

static void score_cell(struct kb_buf *b, double v)
{
	char s[48];

	kb_web_score(v, s, sizeof(s));
	kb_buf_printf(b, "<td class=\"num\" data-seconds=\"%.17g\">%s</td>", v, s);
}

/* ---- the plot ---- */

struct step {
	int64_t t;
	double v;
	uint64_t sub;
};

struct scale {
	int64_t t0, t1;
	double v0, v1;
	int log;
};

static double xof(const struct scale *s, int64_t t)
{
	double span = (double)(s->t1 - s->t0);
	return ML + (PW - ML - MR) * (span > 0 ? (double)(t - s->t0) / span : 0.5);
}

static double yof(const struct scale *s, double v)
{
	double f;

	if (s->log)
		f = (log10(v) - log10(s->v0)) / (log10(s->v1) - log10(s->v0));
	else
		f = s->v1 > s->v0 ? (v - s->v0) / (s->v1 - s->v0) : 0.5;
	/* Lower scores are better and drawn lower, as a record falls. */
	return PH - MB - (PH - MT - MB) * f;
}

/* The running minimum of the points of user (all points when NULL) as
 * steps: one per improvement. Returns the count (out holds n). */
static size_t running_min(const struct kb_web_point *p, size_t n, const char *user,
			  struct step *out)
{
	size_t k = 0;
	double best = INFINITY;

	for (size_t i = 0; i < n; i++) {
		if (user && (!p[i].user_id || strcmp(p[i].user_id, user) != 0))
			continue;
		if (!(p[i].score > 0) || !(p[i].score < best))
			continue;
		best = p[i].score;
		out[k++] = (struct step){p[i].t_ms, p[i].score, p[i].sub_id};
	}
	return k;
}

static void nice_ticks(const struct scale *s, double *ticks, size_t *n)
{
	*n = 0;
	if (s->log) {
		static const double mult[] = {1, 2, 5};
		for (int e = (int)floor(log10(s->v0)); e <= (int)ceil(log10(s->v1)); e++)
			for (size_t m = 0; m < 3; m++) {
				double v = mult[m] * pow(10, e);
				if (v >= s->v0 && v <= s->v1 && *n < 12)
					ticks[(*n)++] = v;
			}
		/* Too many: keep the decades only. */
		if (*n > 6) {
			size_t k = 0;
			for (size_t i = 0; i < *n; i++) {
				double l = log10(ticks[i]);
				if (fabs(l - round(l)) < 1e-9)
					ticks[k++] = ticks[i];
			}
			*n = k;
		}
		if (*n >= 2)
			return;
		*n = 0;
	}
	double span = s->v1 - s->v0, step = pow(10, floor(log10(span / 4)));
	if (span / step > 8)
		step *= 2;
	if (span / step > 8)
		step *= 2.5;
	for (double v = ceil(s->v0 / step) * step; v <= s->v1 + step * 1e-9 && *n < 12;
	     v += step)
		ticks[(*n)++] = v;
}

static void axes(struct kb_buf *b, const struct scale *s)
{
	double ticks[12];
	size_t n;
	char label[48];

	nice_ticks(s, ticks, &n);
	kb_buf_printf(b, "<g class=\"axis\">");
	for (size_t i = 0; i < n; i++) {
		double y = yof(s, ticks[i]);
		kb_web_score(ticks[i], label, sizeof(label));
		kb_buf_printf(b, "<line class=\"grid\" x1=\"%.1f\" x2=\"%.1f\" y1=\"%.1f\" "
				 "y2=\"%.1f\"/><text x=\"%.1f\" y=\"%.1f\" "
				 "text-anchor=\"end\">%s</text>",
			      ML, PW - MR, y, y, ML - 6, y + 4, label);
	}
	/* Four dates across; hours when the span is under two days. */
	int64_t span = s->t1 - s->t0;
	for (int i = 0; i <= 3; i++) {
		int64_t t = s->t0 + span * i / 3;
		time_t tt = (time_t)(t / 1000);
		struct tm tm;
		char d[32] = "";
		if (gmtime_r(&tt, &tm))
			strftime(d, sizeof(d),
				 span < 600000LL        ? "%H:%M:%S"
				 : span < 2 * 86400000LL ? "%H:%M"
							 : "%b %d",
				 &tm);
		kb_buf_printf(b, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"%s\">%s</text>",
			      xof(s, t), PH - MB + 18,
			      i == 0 ? "start" : i == 3 ? "end" : "middle", d);
	}
	kb_buf_printf(b, "<line class=\"base\" x1=\"%.1f\" x2=\"%.1f\" y1=\"%.1f\" "
			 "y2=\"%.1f\"/></g>",
		      ML, PW - MR, PH - MB, PH - MB);
}

/* A step line through st[0..n), extended to t_end. */
static void step_path(struct kb_buf *b, const struct scale *s, const struct step *st,
		      size_t n, int64_t t_end, const char *cls, const char *label)
{
	char v[48], when[40];

	if (n == 0)
		return;
	kb_buf_printf(b, "<path class=\"%s\" d=\"M%.1f %.1f", cls, xof(s, st[0].t),
		      yof(s, st[0].v));
	for (size_t i = 1; i < n; i++)
		kb_buf_printf(b, "H%.1fV%.1f", xof(s, st[i].t), yof(s, st[i].v));
	kb_buf_printf(b, "H%.1f\"/>", xof(s, t_end));
	for (size_t i = 0; i < n; i++) {
		kb_web_score(st[i].v, v, sizeof(v));
		utc(st[i].t, when, sizeof(when));
		kb_buf_printf(b, "<circle class=\"%s\" cx=\"%.1f\" cy=\"%.1f\" r=\"3.5\">"
				 "<title>", cls, xof(s, st[i].t), yof(s, st[i].v));
		kb_web_esc(b, label);
		kb_buf_printf(b, ": %s, %s (submission %" PRIu64 ")</title></circle>", v,
			      when, st[i].sub);
	}
}

int kb_web_plot(struct kb_buf *b, const char *id, const char *title,
		const struct kb_web_point *points, size_t npoints,
		const struct kb_web_rank *top, size_t ntop, int64_t now_ms)
{
	struct step *rec = NULL, *mine[MAX_SERIES] = {0};
	size_t nrec, nmine[MAX_SERIES] = {0};
	struct scale s;
	char lo[48], hi[48];
	int rc = -ENOMEM;

	if (ntop > MAX_SERIES - 1)
		ntop = MAX_SERIES - 1;
	rec = malloc((npoints ? npoints : 1) * sizeof(*rec));
	if (!rec)
		return -ENOMEM;
	nrec = running_min(points, npoints, NULL, rec);
	if (nrec == 0) {
		kb_buf_printf(b, "<p class=\"empty\">No ranked submission yet: the plot "
				 "appears with the first one.</p>");
		free(rec);
		return kb_buf_append(b, "", 0);
	}
	s.t0 = rec[0].t;
	s.t1 = now_ms > points[npoints - 1].t_ms ? now_ms : points[npoints - 1].t_ms;
	if (s.t1 - s.t0 < 60000) /* a minute at least, so a lone point sits left */
		s.t1 = s.t0 + 60000;
	s.v0 = rec[nrec - 1].v;
	s.v1 = rec[0].v;
	for (size_t u = 0; u < ntop; u++) {
		mine[u] = malloc(npoints * sizeof(**mine));
		if (!mine[u])
			goto out;
		nmine[u] = running_min(points, npoints, top[u].user_id, mine[u]);
		for (size_t i = 0; i < nmine[u]; i++)
			if (mine[u][i].v > s.v1)
				s.v1 = mine[u][i].v;
	}
	s.log = s.v1 / s.v0 > 10;
	if (s.log) {
		s.v0 /= 1.15;
		s.v1 *= 1.15;
	} else {
		double pad = (s.v1 - s.v0) * 0.08;
		if (pad <= 0)
			pad = s.v0 * 0.1;
		s.v0 = s.v0 - pad > 0 ? s.v0 - pad : s.v0 / 2;
		s.v1 += pad;
	}
	kb_web_score(rec[0].v, hi, sizeof(hi));
	kb_web_score(rec[nrec - 1].v, lo, sizeof(lo));
	kb_buf_printf(b, "<figure class=\"plot\"><svg viewBox=\"0 0 %.0f %.0f\" role=\"img\" "
			 "aria-labelledby=\"%s-t %s-d\" data-points=\"%zu\"><title id=\"%s-t\">",
		      PW, PH, id, id, nrec, id);
	kb_web_esc(b, title);
	kb_buf_printf(b, "</title><desc id=\"%s-d\">The record went from %s to %s in %zu "
			 "improvement%s.</desc>",
		      id, hi, lo, nrec, nrec == 1 ? "" : "s");
	axes(b, &s);
	for (size_t u = ntop; u-- > 0;) {
		char cls[24];
		snprintf(cls, sizeof(cls), "line s%zu", u + 1);
		step_path(b, &s, mine[u], nmine[u], s.t1, cls,
			  top[u].user_name && *top[u].user_name ? top[u].user_name
								: top[u].user_id);
	}
	step_path(b, &s, rec, nrec, s.t1, "line record", "record");
	kb_buf_printf(b, "</svg><figcaption><ul class=\"legend\">"
			 "<li><span class=\"sw record\" aria-hidden=\"true\"></span>record</li>");
	for (size_t u = 0; u < ntop; u++) {
		kb_buf_printf(b, "<li><span class=\"sw s%zu\" aria-hidden=\"true\"></span>", u + 1);
		kb_web_esc(b, top[u].user_name && *top[u].user_name ? top[u].user_name
								    : top[u].user_id);
		kb_buf_printf(b, "</li>");
	}
	kb_buf_printf(b, "</ul></figcaption></figure>");
	rc = kb_buf_append(b, "", 0);
out:
	for (size_t u = 0; u < MAX_SERIES; u++)
		free(mine[u]);
	free(rec);
	return rc;
}

/* ---- pages ---- */

/* Whether gpu has a worker (web_render.h): a sentence in a section, a
 * short cell in a table. Says nothing while that is not known. */
static void workers_note(struct kb_buf *b, const char *gpu, int workers, int cell)
{
	if (workers == 0) {
		kb_buf_printf(b, cell ? "<td class=\"workers none\">" : "<p class=\"workers none\">");
		kb_buf_printf(b, "No worker online for ");
		kb_web_esc(b, gpu);
		kb_buf_printf(b, cell ? "</td>" : ": submissions wait until one starts.</p>");
	} else if (workers > 0) {
		kb_buf_printf(b, cell ? "<td class=\"workers\">" : "<p class=\"workers\">");
		kb_buf_printf(b, "%d worker%s online", workers, workers == 1 ? "" : "s");
		kb_buf_printf(b, cell ? "</td>" : "</p>");
	} else if (cell) {
		kb_buf_printf(b, "<td class=\"workers\">–</td>");
	}
}

static void deadline_line(struct kb_buf *b, int64_t deadline_ms, int64_t now_ms)
{
	char left[64];

	kb_web_time_left(deadline_ms, now_ms, left, sizeof(left));
	if (deadline_ms < 0) {
		kb_buf_printf(b, "<span class=\"status open\">open</span> · no deadline");
		return;
	}
	kb_buf_printf(b, "<span class=\"status %s\">%s</span> · deadline ",
		      deadline_ms > now_ms ? "open" : "closed",
		      deadline_ms > now_ms ? "open" : "closed");
	put_time(b, deadline_ms);
	if (deadline_ms > now_ms)
		kb_buf_printf(b, " (<span class=\"left\" data-deadline=\"%" PRId64 "\">%s</span>)",
			      deadline_ms, left);
}

int kb_web_render_index(struct kb_buf *b, const struct kb_web_index_row *rows,
			size_t n, int64_t now_ms, unsigned gen)
{
	head(b, "Leaderboards", "index");
	kb_buf_printf(b, "<h1>Leaderboards</h1><div id=\"live\" data-gen=\"%u\" "
			 "data-feed=\"\" aria-live=\"polite\"><ul class=\"boards\">", gen);
	for (size_t i = 0; i < n; i++) {
		const struct kb_web_index_row *r = &rows[i];
		kb_buf_printf(b, "<li class=\"board\" data-lb=\"");
		kb_web_esc(b, r->name);
		kb_buf_printf(b, "\"><h2>");
		board_link(b, r->name);
		kb_buf_printf(b, "</h2><p class=\"meta\">");
		kb_web_esc(b, r->lang);
		kb_buf_printf(b, " · ");
		deadline_line(b, r->deadline_ms, now_ms);
		kb_buf_printf(b, " · %ld participant%s</p>", r->participants,
			      r->participants == 1 ? "" : "s");
		if (r->summary && *r->summary) {
			kb_buf_printf(b, "<p class=\"summary\">");
			kb_web_esc(b, r->summary);
			kb_buf_printf(b, "</p>");
		}
		kb_buf_printf(b, "<table class=\"best\"><caption class=\"vh\">Best score per "
				 "GPU</caption><thead><tr><th scope=\"col\">GPU</th>"
				 "<th scope=\"col\">best</th><th scope=\"col\">by</th>"
				 "<th scope=\"col\">workers</th></tr></thead><tbody>");
		for (size_t k = 0; k < r->ngpus; k++) {
			kb_buf_printf(b, "<tr><th scope=\"row\">");
			kb_web_esc(b, r->gpus[k]);
			kb_buf_printf(b, "</th>");
			score_cell(b, r->best[k]);
			kb_buf_printf(b, "<td>");
			if (r->best_user_id[k])
				user_link(b, r->best_user_id[k], r->best_user[k]);
			else
				kb_buf_printf(b, "–");
			kb_buf_printf(b, "</td>");
			workers_note(b, r->gpus[k],
				     r->workers ? r->workers[k] : KB_WEB_WORKERS_UNKNOWN, 1);
			kb_buf_printf(b, "</tr>");
		}
		kb_buf_printf(b, "</tbody></table></li>");
	}
	if (n == 0)
		kb_buf_printf(b, "<li>No public leaderboard.</li>");
	kb_buf_printf(b, "</ul></div>");
	return tail(b);
}

static void ranking_table(struct kb_buf *b, const struct kb_web_gpu *g)
{
	char when[40], gap[48];

	kb_buf_printf(b, "<div class=\"scroll\"><table class=\"ranking\"><caption>Ranking on ");
	kb_web_esc(b, g->gpu);
	kb_buf_printf(b, " (%ld ranked)</caption><thead><tr><th scope=\"col\">#</th>"
			 "<th scope=\"col\">user</th><th scope=\"col\" class=\"num\">score</th>"
			 "<th scope=\"col\" class=\"num\">gap to #1</th><th scope=\"col\">submitted</th>"
			 "</tr></thead><tbody>",
		      g->nranked);
	for (size_t i = 0; i < g->nrank; i++) {
		const struct kb_web_rank *e = &g->rank[i];
		kb_buf_printf(b, "<tr data-user=\"");
		kb_web_esc(b, e->user_id);
		kb_buf_printf(b, "\"><td class=\"num\">%ld</td><td>", e->rank);
		user_link(b, e->user_id, e->user_name);
		kb_buf_printf(b, "</td>");
		score_cell(b, e->score);
		if (i == 0 || !(g->rank[0].score > 0))
			snprintf(gap, sizeof(gap), "–");
		else
			snprintf(gap, sizeof(gap), "+%.1f %%",
				 (e->score / g->rank[0].score - 1) * 100);
		kb_buf_printf(b, "<td class=\"num\">%s</td><td>", gap);
		if (e->submitted_ms > 0)
			put_time(b, e->submitted_ms);
		else {
			utc(0, when, sizeof(when));
			kb_buf_printf(b, "%s", when);
		}
		kb_buf_printf(b, "</td></tr>");
	}
	if (g->nrank == 0)
		kb_buf_printf(b, "<tr><td colspan=\"5\">No one is ranked yet.</td></tr>");
	kb_buf_printf(b, "</tbody></table></div>");
}

int kb_web_render_board(struct kb_buf *b, const struct kb_web_board *bd,
			int64_t now_ms, unsigned gen)
{
	head(b, bd->name, "board");
	kb_buf_printf(b, "<h1>");
	kb_web_esc(b, bd->name);
	kb_buf_printf(b, "</h1><p class=\"meta\">");
	kb_web_esc(b, bd->lang);
	kb_buf_printf(b, " · ranked by ");
	kb_web_esc(b, bd->ranking_by ? bd->ranking_by : "mean");
	kb_buf_printf(b, " · ");
	deadline_line(b, bd->deadline_ms, now_ms);
	kb_buf_printf(b, "</p><div id=\"live\" data-gen=\"%u\" data-feed=\"", gen);
	kb_web_esc(b, bd->name);
	kb_buf_printf(b, "\" aria-live=\"polite\">");
	for (size_t k = 0; k < bd->ngpus; k++) {
		const struct kb_web_gpu *g = &bd->gpus[k];
		char id[32], title[256];
		snprintf(id, sizeof(id), "plot%zu", k);
		snprintf(title, sizeof(title), "Best score on %s over time", g->gpu);
		kb_buf_printf(b, "<section class=\"gpu\" data-gpu=\"");
		kb_web_esc(b, g->gpu);
		kb_buf_printf(b, "\"><h2>");
		kb_web_esc(b, g->gpu);
		kb_buf_printf(b, "</h2>");
		workers_note(b, g->gpu, g->workers, 0);
		/* The plot first: a long ranking would push it out of sight. */
		kb_web_plot(b, id, title, g->hist, g->nhist, g->rank,
			    g->nrank < 5 ? g->nrank : 5, now_ms);
		ranking_table(b, g);
		kb_buf_printf(b, "</section>");
	}
	kb_buf_printf(b, "</div>");
	/* Filled and shown by kb.js for a signed-in user. */
	kb_buf_printf(b, "<section id=\"submit\" class=\"js-only\" data-lb=\"");
	kb_web_esc(b, bd->name);
	kb_buf_printf(b, "\" data-gpus=\"");
	for (size_t k = 0; k < bd->ngpus; k++) {
		kb_buf_printf(b, "%s", k ? "," : "");
		kb_web_esc(b, bd->gpus[k].gpu);
	}
	kb_buf_printf(b, "\"></section><section><h2>Problem</h2><div class=\"desc\">");
	kb_web_esc(b, bd->description);
	kb_buf_printf(b, "</div></section>");
	if (bd->ntemplates) {
		kb_buf_printf(b, "<section><h2>Templates</h2><ul class=\"templates\">");
		for (size_t i = 0; i < bd->ntemplates; i++) {
			kb_buf_printf(b, "<li><a download href=\"/web/lb/");
			kb_web_esc(b, bd->name);
			kb_buf_printf(b, "/template/");
			kb_web_esc(b, bd->templates[i]);
			kb_buf_printf(b, "\">");
			kb_web_esc(b, bd->templates[i]);
			kb_buf_printf(b, "</a></li>");
		}
		kb_buf_printf(b, "</ul></section>");
	}
	return tail(b);
}

int kb_web_render_user(struct kb_buf *b, const char *user_id,
		       const char *user_name,
		       const struct kb_web_user_best *best, size_t nbest,
		       const struct kb_web_user_point *pts, size_t npts,
		       int64_t now_ms, unsigned gen)
{
	const char *shown = user_name && *user_name ? user_name : user_id;
	struct kb_web_point *one = malloc((npts ? npts : 1) * sizeof(*one));

	if (!one)
		return -ENOMEM;
	head(b, shown, "user");
	kb_buf_printf(b, "<h1>");
	kb_web_esc(b, shown);
	kb_buf_printf(b, "</h1><p class=\"meta\">user id <code>");
	kb_web_esc(b, user_id);
	kb_buf_printf(b, "</code></p><div id=\"live\" data-gen=\"%u\" data-feed=\"\">"
			 "<section><h2>Best entries</h2><div class=\"scroll\"><table "
			 "class=\"ranking\"><thead><tr><th scope=\"col\">leaderboard</th>"
			 "<th scope=\"col\">GPU</th><th scope=\"col\">score</th>"
			 "<th scope=\"col\">rank</th></tr></thead><tbody>", gen);
	for (size_t i = 0; i < nbest; i++) {
		kb_buf_printf(b, "<tr><td>");
		board_link(b, best[i].lb);
		kb_buf_printf(b, "</td><td>");
		kb_web_esc(b, best[i].gpu);
		kb_buf_printf(b, "</td>");
		score_cell(b, best[i].score);
		kb_buf_printf(b, "<td class=\"num\">%ld of %ld</td></tr>", best[i].rank,
			      best[i].nranked);
	}
	if (nbest == 0)
		kb_buf_printf(b, "<tr><td colspan=\"4\">Not ranked anywhere yet.</td></tr>");
	kb_buf_printf(b, "</tbody></table></div></section><section><h2>Score history</h2>");
	/* One plot per board and gpu: the user's scores and running best. */
	for (size_t i = 0; i < nbest; i++) {
		size_t n = 0;
		char id[32], title[300];
		for (size_t k = 0; k < npts; k++)
			if (strcmp(pts[k].lb, best[i].lb) == 0 &&
			    strcmp(pts[k].gpu, best[i].gpu) == 0)
				one[n++] = (struct kb_web_point){pts[k].t_ms, pts[k].score,
								 pts[k].sub_id, user_id};
		snprintf(id, sizeof(id), "uplot%zu", i);
		snprintf(title, sizeof(title), "%s on %s: personal best over time",
			 best[i].lb, best[i].gpu);
		kb_buf_printf(b, "<h3>");
		kb_web_esc(b, title);
		kb_buf_printf(b, "</h3>");
		kb_web_plot(b, id, title, one, n, NULL, 0, now_ms);
	}
	kb_buf_printf(b, "<div class=\"scroll\"><table class=\"history\"><caption>Scored "
			 "submissions, newest first</caption><thead><tr><th scope=\"col\">"
			 "when</th><th scope=\"col\">leaderboard</th><th scope=\"col\">GPU"
			 "</th><th scope=\"col\">score</th><th scope=\"col\">submission"
			 "</th></tr></thead><tbody>");
	for (size_t k = npts; k-- > 0;) {
		kb_buf_printf(b, "<tr><td>");
		put_time(b, pts[k].t_ms);
		kb_buf_printf(b, "</td><td>");
		board_link(b, pts[k].lb);
		kb_buf_printf(b, "</td><td>");
		kb_web_esc(b, pts[k].gpu);
		kb_buf_printf(b, "</td>");
		score_cell(b, pts[k].score);
		kb_buf_printf(b, "<td class=\"num\">%" PRIu64 "</td></tr>", pts[k].sub_id);
	}
	kb_buf_printf(b, "</tbody></table></div></section></div>");
	free(one);
	return tail(b);
}

int kb_web_render_me(struct kb_buf *b)
{
	head(b, "My submissions", "me");
	kb_buf_printf(b, "<h1>My submissions</h1>"
			 "<noscript><p>This page needs JavaScript: it calls the API with your "
			 "CLI id.</p></noscript>"
			 "<section id=\"signin\" class=\"js-only\"></section>"
			 "<section id=\"mine\" class=\"js-only\" aria-live=\"polite\"></section>");
	return tail(b);
}

int kb_web_render_error(struct kb_buf *b, int status, const char *message)
{
	char title[32];

	snprintf(title, sizeof(title), "Error %d", status);
	head(b, title, "error");
	kb_buf_printf(b, "<h1>%s</h1><p>", title);
	kb_web_esc(b, message);
	kb_buf_printf(b, "</p><p><a href=\"/\">All leaderboards</a></p>");
	return tail(b);
}
