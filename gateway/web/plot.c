/* kb_web_plot: the score plot of render.h, inline SVG drawn here. */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "render.h"
#include "render_int.h"

#define MAX_SERIES 6
/* The plot's drawing area inside its viewBox. */
#define PW 720.0
#define PH 300.0
/* Room for the score labels at the size a phone shows them (kb.css). */
#define ML 112.0
#define MR 16.0
#define MT 14.0
#define MB 44.0

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
	return ML +
	       (PW - ML - MR) * (span > 0 ? (double)(t - s->t0) / span : 0.5);
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
static size_t running_min(const struct kb_web_point *p, size_t n,
			  const char *user, struct step *out)
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
		for (int e = (int)floor(log10(s->v0));
		     e <= (int)ceil(log10(s->v1)); e++)
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
	for (double v = ceil(s->v0 / step) * step;
	     v <= s->v1 + step * 1e-9 && *n < 12; v += step)
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
		kb_buf_printf(
			b,
			"<line class=\"grid\" x1=\"%.1f\" x2=\"%.1f\" y1=\"%.1f\" "
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
				 span < 600000LL         ? "%H:%M:%S"
				 : span < 2 * 86400000LL ? "%H:%M"
							 : "%b %d",
				 &tm);
		kb_buf_printf(
			b,
			"<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"%s\">%s</text>",
			xof(s, t), PH - MB + 26,
			i == 0   ? "start"
			: i == 3 ? "end"
				 : "middle",
			d);
	}
	kb_buf_printf(
		b,
		"<line class=\"base\" x1=\"%.1f\" x2=\"%.1f\" y1=\"%.1f\" "
		"y2=\"%.1f\"/></g>",
		ML, PW - MR, PH - MB, PH - MB);
}

/* A step line through st[0..n), extended to t_end. */
static void step_path(struct kb_buf *b, const struct scale *s,
		      const struct step *st, size_t n, int64_t t_end,
		      const char *cls, const char *label)
{
	char v[48], when[40];

	if (n == 0)
		return;
	kb_buf_printf(b, "<path class=\"%s\" d=\"M%.1f %.1f", cls,
		      xof(s, st[0].t), yof(s, st[0].v));
	for (size_t i = 1; i < n; i++)
		kb_buf_printf(b, "H%.1fV%.1f", xof(s, st[i].t),
			      yof(s, st[i].v));
	kb_buf_printf(b, "H%.1f\"/>", xof(s, t_end));
	for (size_t i = 0; i < n; i++) {
		kb_web_score(st[i].v, v, sizeof(v));
		kb__web_utc(st[i].t, when, sizeof(when));
		kb_buf_printf(
			b,
			"<circle class=\"%s\" cx=\"%.1f\" cy=\"%.1f\" r=\"3.5\">"
			"<title>",
			cls, xof(s, st[i].t), yof(s, st[i].v));
		kb_web_esc(b, label);
		kb_buf_printf(b,
			      ": %s, %s (submission %" PRIu64
			      ")</title></circle>",
			      v, when, st[i].sub);
	}
}

/* The series drawn: the chosen contestant alone, else the top users
 * (with their names, for the legend and the points' titles). */
struct series {
	const char *user_id, *label;
	struct step *st;
	size_t n;
};

struct plot {
	const struct kb_web_point *pts; /* in the range */
	size_t npts;
	struct step *rec;
	size_t nrec;
	struct series ser[MAX_SERIES];
	size_t nser;
	struct scale s;
};

static const char *label_of(const struct kb_web_rank *r)
{
	return r->user_name && *r->user_name ? r->user_name : r->user_id;
}

/* The contestants' series: o->user alone (named as the ranking names
 * it, when it is there), else the top ones. */
static int pick_series(struct plot *p, const struct kb_web_rank *top,
		       size_t ntop, size_t nall,
		       const struct kb_web_plot_opts *o)
{
	if (o->user && *o->user) {
		p->ser[0] = (struct series){o->user, o->user, NULL, 0};
		for (size_t i = 0; i < nall; i++)
			if (strcmp(top[i].user_id, o->user) == 0)
				p->ser[0].label = label_of(&top[i]);
		p->nser = 1;
	} else {
		p->nser = ntop < MAX_SERIES - 1 ? ntop : MAX_SERIES - 1;
		for (size_t u = 0; u < p->nser; u++)
			p->ser[u] = (struct series){top[u].user_id,
						    label_of(&top[u]), NULL, 0};
	}
	for (size_t u = 0; u < p->nser; u++) {
		p->ser[u].st =
			malloc((p->npts ? p->npts : 1) * sizeof(struct step));
		if (!p->ser[u].st)
			return -ENOMEM;
		p->ser[u].n = running_min(p->pts, p->npts, p->ser[u].user_id,
					  p->ser[u].st);
	}
	return 0;
}

/* Whether a raw dot of point q is drawn (the chosen contestant's only). */
static int dot_shown(const struct kb_web_point *q,
		     const struct kb_web_plot_opts *o)
{
	return q->score > 0 &&
	       (!o->user || !*o->user ||
		(q->user_id && strcmp(q->user_id, o->user) == 0));
}

static void fit(struct plot *p, const struct kb_web_plot_opts *o,
		int64_t now_ms)
{
	struct scale *s = &p->s;

	s->t0 = o->since_ms > 0 && o->since_ms < p->pts[0].t_ms
			? o->since_ms
			: p->pts[0].t_ms;
	s->t1 = now_ms > p->pts[p->npts - 1].t_ms ? now_ms
						  : p->pts[p->npts - 1].t_ms;
	/* A minute at least, so that a lone point sits left. */
	if (s->t1 - s->t0 < 60000)
		s->t1 = s->t0 + 60000;
	s->v0 = p->rec[p->nrec - 1].v;
	s->v1 = p->rec[0].v;
	for (size_t u = 0; u < p->nser; u++)
		for (size_t i = 0; i < p->ser[u].n; i++)
			if (p->ser[u].st[i].v > s->v1)
				s->v1 = p->ser[u].st[i].v;
	for (size_t i = 0; o->raw && i < p->npts; i++)
		if (dot_shown(&p->pts[i], o) && p->pts[i].score > s->v1)
			s->v1 = p->pts[i].score;
	s->log = o->scale == KB_WEB_SCALE_LOG ||
		 (o->scale == KB_WEB_SCALE_AUTO && s->v1 / s->v0 > 10);
	if (s->log) {
		s->v0 /= 1.15;
		s->v1 *= 1.15;
	} else {
		double pad = (s->v1 - s->v0) * 0.08;
		if (pad <= 0)
			pad = s->v0 * 0.1;
		s->v0 = s->v0 - pad > 0 ? s->v0 - pad : s->v0 / 2;
		s->v1 += pad;
	}
}

/* Every scored result in the range as a dot, in its user's series
 * class when that user has a line, grey otherwise. */
static void raw_dots(struct kb_buf *b, const struct plot *p,
		     const struct kb_web_plot_opts *o)
{
	char v[48], when[40];

	kb_buf_printf(b, "<g class=\"dots\">");
	for (size_t i = 0; i < p->npts; i++) {
		const struct kb_web_point *q = &p->pts[i];
		size_t u = 0;
		if (!dot_shown(q, o))
			continue;
		while (u < p->nser &&
		       (!q->user_id ||
			strcmp(q->user_id, p->ser[u].user_id) != 0))
			u++;
		kb_web_score(q->score, v, sizeof(v));
		kb__web_utc(q->t_ms, when, sizeof(when));
		kb_buf_printf(
			b,
			"<circle class=\"dot s%zu\" cx=\"%.1f\" cy=\"%.1f\" "
			"r=\"2.5\"><title>",
			u < p->nser ? u + 1 : 0, xof(&p->s, q->t_ms),
			yof(&p->s, q->score));
		kb_web_esc(b, u < p->nser ? p->ser[u].label : q->user_id);
		kb_buf_printf(b, ": %s, %s</title></circle>", v, when);
	}
	kb_buf_printf(b, "</g>");
}

static void series_path(struct kb_buf *b, const struct plot *p, size_t u)
{
	char cls[24];

	snprintf(cls, sizeof(cls), "line s%zu", u + 1);
	step_path(b, &p->s, p->ser[u].st, p->ser[u].n, p->s.t1, cls,
		  p->ser[u].label);
}

static void legend(struct kb_buf *b, const struct plot *p)
{
	kb_buf_printf(b,
		      "<figcaption><ul class=\"legend\"><li><span class=\"sw "
		      "record\" aria-hidden=\"true\"></span>record</li>");
	for (size_t u = 0; u < p->nser; u++) {
		kb_buf_printf(
			b,
			"<li><span class=\"sw s%zu\" aria-hidden=\"true\">"
			"</span>",
			u + 1);
		kb_web_esc(b, p->ser[u].label);
		kb_buf_printf(b, "</li>");
	}
	kb_buf_printf(b, "</ul></figcaption>");
}

static void draw(struct kb_buf *b, const char *id, const char *title,
		 const struct plot *p, const struct kb_web_plot_opts *o)
{
	char lo[48], hi[48];

	kb_web_score(p->rec[0].v, hi, sizeof(hi));
	kb_web_score(p->rec[p->nrec - 1].v, lo, sizeof(lo));
	kb_buf_printf(
		b,
		"<figure class=\"plot\" data-view=\"%s\" data-scale=\"%s\">"
		"<svg viewBox=\"0 0 %.0f %.0f\" role=\"img\" "
		"aria-labelledby=\"%s-t %s-d\" data-points=\"%zu\"><title id=\"%s-t\">",
		o->raw ? "raw" : "best", p->s.log ? "log" : "linear", PW, PH,
		id, id, p->nrec, id);
	kb_web_esc(b, title);
	kb_buf_printf(
		b,
		"</title><desc id=\"%s-d\">The record went from %s to %s in %zu "
		"improvement%s.</desc>",
		id, hi, lo, p->nrec, p->nrec == 1 ? "" : "s");
	axes(b, &p->s);
	if (o->raw)
		raw_dots(b, p, o);
	/* The others first, then the record, then the leader's line (or the
	 * chosen contestant's) on top: the leader's best often is the
	 * record, and would be hidden under it. */
	for (size_t u = p->nser; u-- > 1;)
		series_path(b, p, u);
	step_path(b, &p->s, p->rec, p->nrec, p->s.t1, "line record", "record");
	if (p->nser)
		series_path(b, p, 0);
	kb_buf_printf(b, "</svg>");
	legend(b, p);
	kb_buf_printf(b, "</figure>");
}

int kb_web_plot(struct kb_buf *b, const char *id, const char *title,
		const struct kb_web_point *points, size_t npoints,
		const struct kb_web_rank *top, size_t ntop, size_t nall,
		const struct kb_web_plot_opts *opts, int64_t now_ms)
{
	static const struct kb_web_plot_opts defaults = {0};
	const struct kb_web_plot_opts *o = opts ? opts : &defaults;
	struct plot p = {.pts = points, .npts = npoints};
	int rc = -ENOMEM;

	/* The range: points are by time, so it is a tail. */
	while (o->since_ms > 0 && p.npts && p.pts[0].t_ms < o->since_ms) {
		p.pts++;
		p.npts--;
	}
	p.rec = malloc((p.npts ? p.npts : 1) * sizeof(*p.rec));
	if (!p.rec)
		return -ENOMEM;
	p.nrec = running_min(p.pts, p.npts, NULL, p.rec);
	if (p.nrec == 0) {
		kb_buf_printf(
			b, "<p class=\"empty\">%s</p>",
			npoints ? "No ranked submission in this time range."
				: "No ranked submission yet: the plot "
				  "appears with the first one.");
		free(p.rec);
		return kb_buf_append(b, "", 0);
	}
	if (pick_series(&p, top, ntop, nall, o) == 0) {
		fit(&p, o, now_ms);
		draw(b, id, title, &p, o);
		rc = kb_buf_append(b, "", 0);
	}
	for (size_t u = 0; u < p.nser; u++)
		free(p.ser[u].st);
	free(p.rec);
	return rc;
}

int kb_web_plot_opts_parse(const char *user, const char *view,
			   const char *scale, const char *range, int64_t now_ms,
			   struct kb_web_plot_opts *o)
{
	static const struct {
		const char *name;
		int64_t ms;
	} ranges[] = {{"all", 0},
		      {"30d", 30 * 86400000LL},
		      {"7d", 7 * 86400000LL},
		      {"1d", 86400000LL}};
	int bad = 0;

	memset(o, 0, sizeof(*o));
	o->user = user && *user ? user : NULL;
	if (view && strcmp(view, "raw") == 0)
		o->raw = 1;
	else if (view && strcmp(view, "best") != 0)
		bad = 1;
	if (scale && strcmp(scale, "log") == 0)
		o->scale = KB_WEB_SCALE_LOG;
	else if (scale && strcmp(scale, "linear") == 0)
		o->scale = KB_WEB_SCALE_LINEAR;
	else if (scale && strcmp(scale, "auto") != 0)
		bad = 1;
	size_t i = 0;
	while (range && i < sizeof(ranges) / sizeof(ranges[0]) &&
	       strcmp(range, ranges[i].name) != 0)
		i++;
	if (range && i == sizeof(ranges) / sizeof(ranges[0]))
		bad = 1;
	else if (range && ranges[i].ms)
		o->since_ms = now_ms - ranges[i].ms;
	o->range = range && !bad ? range : "all";
	return bad ? -EINVAL : 0;
}
