/* kb_web_render: a board's pages (render.h): the board, with its
 * rankings, plots, description, reference and templates, and the code
 * of a ranked submission once the board's deadline has passed. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kb_seal.h"
#include "markdown.h"
#include "render.h"
#include "render_int.h"

/* A link to the code of entry e (the deadline has passed). */
static void code_cell(struct kb_buf *b, const char *lb,
		      const struct kb_web_rank *e)
{
	if (!e->sub_id) {
		kb_buf_printf(b, "<td>–</td>");
		return;
	}
	kb_buf_printf(b, "<td><a class=\"code-link\" href=\"/web/lb/");
	kb_web_esc(b, lb);
	kb_buf_printf(b, "/code/%" PRIu64 "\">code</a></td>", e->sub_id);
}

static void rank_row(struct kb_buf *b, const char *lb,
		     const struct kb_web_gpu *g, size_t i, int closed)
{
	const struct kb_web_rank *e = &g->rank[i];
	char when[40], gap[48];

	kb_buf_printf(b, "<tr data-user=\"");
	kb_web_esc(b, e->user_id);
	kb_buf_printf(b, "\"%s><td class=\"num\">",
		      e->rank <= 3 ? " class=\"podium\"" : "");
	kb__web_medal(b, e->rank);
	kb_buf_printf(b, "%ld</td><td>", e->rank);
	kb__web_user_link(b, e->user_id, e->user_name);
	kb_buf_printf(b, "</td>");
	kb__web_score_cell(b, e->score);
	if (i == 0 || !(g->rank[0].score > 0))
		snprintf(gap, sizeof(gap), "–");
	else
		snprintf(gap, sizeof(gap), "+%.1f %%",
			 (e->score / g->rank[0].score - 1) * 100);
	kb_buf_printf(b, "<td class=\"num\">%s</td><td>", gap);
	if (e->submitted_ms > 0)
		kb__web_put_time(b, e->submitted_ms);
	else {
		kb__web_utc(0, when, sizeof(when));
		kb_buf_printf(b, "%s", when);
	}
	kb_buf_printf(b, "</td>");
	if (closed)
		code_cell(b, lb, e);
	kb_buf_printf(b, "</tr>");
}

static void ranking_table(struct kb_buf *b, const char *lb,
			  const struct kb_web_gpu *g, int closed)
{
	kb_buf_printf(
		b,
		"<div class=\"scroll\"><table class=\"ranking\"><caption>Ranking on ");
	kb_web_esc(b, g->gpu);
	kb_buf_printf(
		b,
		" (%ld ranked)</caption><thead><tr><th scope=\"col\">#</th>"
		"<th scope=\"col\">user</th><th scope=\"col\" class=\"num\">score</th>"
		"<th scope=\"col\" class=\"num\">gap to #1</th><th scope=\"col\">submitted</th>"
		"%s</tr></thead><tbody>",
		g->nranked, closed ? "<th scope=\"col\">code</th>" : "");
	for (size_t i = 0; i < g->nrank; i++)
		rank_row(b, lb, g, i, closed);
	if (g->nrank == 0)
		kb_buf_printf(
			b,
			"<tr><td colspan=\"%d\">No one is ranked yet.</td></tr>",
			closed ? 6 : 5);
	kb_buf_printf(b, "</tbody></table></div>");
}

static void option(struct kb_buf *b, const char *value, const char *label,
		   int selected)
{
	kb_buf_printf(b, "<option value=\"");
	kb_web_esc(b, value);
	kb_buf_printf(b, "\"%s>", selected ? " selected" : "");
	kb_web_esc(b, label);
	kb_buf_printf(b, "</option>");
}

/* The plot's choices as a GET form: it works without a script (the
 * server draws the plot it asks for); kb.js applies each change at once
 * and without a reload. */
static void plot_form(struct kb_buf *b, const char *lb,
		      const struct kb_web_gpu *g,
		      const struct kb_web_plot_opts *o)
{
	static const char *const ranges[][2] = {{"all", "all time"},
						{"30d", "30 days"},
						{"7d", "7 days"},
						{"1d", "24 hours"}};
	const char *range = o->range ? o->range : "all";

	kb_buf_printf(
		b,
		"<form class=\"plot-opts\" method=\"get\" action=\"/web/lb/");
	kb_web_esc(b, lb);
	kb_buf_printf(b, "\"><input type=\"hidden\" name=\"gpu\" value=\"");
	kb_web_esc(b, g->gpu);
	kb_buf_printf(b, "\"><label>Contestant <select name=\"user\">");
	option(b, "", "top 5", !o->user);
	/* Every ranked contestant the page has (web_data.c's RANK_MAX): a
	 * contestant far down the board wants their own line too. */
	for (size_t i = 0; i < g->nrank; i++)
		option(b, g->rank[i].user_id,
		       g->rank[i].user_name && *g->rank[i].user_name
			       ? g->rank[i].user_name
			       : g->rank[i].user_id,
		       o->user && strcmp(o->user, g->rank[i].user_id) == 0);
	kb_buf_printf(b, "</select></label><label>Show <select name=\"view\">");
	option(b, "best", "best over time", !o->raw);
	option(b, "raw", "every run", o->raw);
	kb_buf_printf(b,
		      "</select></label><label>Scale <select name=\"scale\">");
	option(b, "auto", "auto", o->scale == KB_WEB_SCALE_AUTO);
	option(b, "linear", "linear", o->scale == KB_WEB_SCALE_LINEAR);
	option(b, "log", "log", o->scale == KB_WEB_SCALE_LOG);
	kb_buf_printf(b,
		      "</select></label><label>Range <select name=\"range\">");
	for (size_t i = 0; i < 4; i++)
		option(b, ranges[i][0], ranges[i][1],
		       strcmp(range, ranges[i][0]) == 0);
	kb_buf_printf(b,
		      "</select></label><button type=\"submit\" class=\"quiet "
		      "no-js-only\">Apply</button></form>");
}

static void gpu_section(struct kb_buf *b, const struct kb_web_board *bd,
			size_t k, int64_t now_ms)
{
	static const struct kb_web_plot_opts defaults = {0};
	const struct kb_web_gpu *g = &bd->gpus[k];
	const struct kb_web_plot_opts *o =
		bd->plot_gpu && strcmp(bd->plot_gpu, g->gpu) == 0 ? &bd->plot
								  : &defaults;
	int closed = bd->deadline_ms >= 0 && bd->deadline_ms <= now_ms;
	char id[32], title[256];

	snprintf(id, sizeof(id), "plot%zu", k);
	snprintf(title, sizeof(title), "%s on %s over time",
		 o->raw ? "Every scored run" : "Best score", g->gpu);
	kb_buf_printf(b, "<section class=\"gpu%s\" id=\"gpu-%zu\" data-gpu=\"",
		      g->nrank ? "" : " empty", k);
	kb_web_esc(b, g->gpu);
	kb_buf_printf(b, "\"><h2>");
	kb_web_esc(b, g->gpu);
	kb_buf_printf(b, "</h2>");
	kb__web_workers_note(b, g->gpu, g->workers, 0);
	if (!g->nrank) {
		/* Nothing to plot: folded away below the boards that have. */
		kb_buf_printf(b, "<details><summary>No one is ranked on ");
		kb_web_esc(b, g->gpu);
		kb_buf_printf(b, " yet</summary>");
	}
	/* The plot first: a long ranking would push it out of sight. */
	if (g->nrank)
		plot_form(b, bd->name, g, o);
	kb_web_plot(b, id, title, g->hist, g->nhist, g->rank,
		    o->user        ? 0
		    : g->nrank < 5 ? g->nrank
				   : 5,
		    g->nrank, o, now_ms);
	ranking_table(b, bd->name, g, closed);
	kb_buf_printf(b, "%s</section>", g->nrank ? "" : "</details>");
}

static void templates(struct kb_buf *b, const struct kb_web_board *bd)
{
	kb_buf_printf(
		b, "<section id=\"templates\" class=\"tab\"><h2>Templates</h2>"
		   "<ul class=\"templates\">");
	for (size_t i = 0; i < bd->ntemplates; i++) {
		kb_buf_printf(b, "<li><a download href=\"/web/lb/");
		kb_web_esc(b, bd->name);
		kb_buf_printf(b, "/template/");
		kb_web_esc(b, bd->templates[i]);
		kb_buf_printf(b, "\">");
		kb_web_esc(b, bd->templates[i]);
		kb_buf_printf(b, "</a></li>");
	}
	if (!bd->ntemplates)
		kb_buf_printf(b, "<li>This problem has no template.</li>");
	kb_buf_printf(b, "</ul></section>");
}

/* Problem, reference and templates: sections a link away without a
 * script, tabs with kb.js. */
static void tabs(struct kb_buf *b, const struct kb_web_board *bd)
{
	kb_buf_printf(
		b,
		"<div class=\"tabbed\"><nav class=\"tabs\" aria-label=\"Problem\">"
		"<a href=\"#problem\">Problem</a><a href=\"#reference\">Reference"
		"</a><a href=\"#templates\">Templates</a></nav>"
		"<section id=\"problem\" class=\"tab\"><h2>Problem</h2>"
		"<div class=\"desc md\">");
	kb_web_md(b, bd->description);
	kb_buf_printf(b,
		      "</div></section><section id=\"reference\" class=\"tab\">"
		      "<h2>Reference implementation</h2>");
	if (bd->reference) {
		kb_buf_printf(b, "<p class=\"meta\">");
		kb_web_esc(b, bd->reference_name);
		kb_buf_printf(
			b,
			", as the problem's files give it.</p><pre class=\"code\">"
			"<code>");
		kb_web_esc(b, bd->reference);
		kb_buf_printf(b, "</code></pre>");
	} else {
		kb_buf_printf(b,
			      "<p class=\"empty\">This problem's files name no "
			      "reference implementation.</p>");
	}
	kb_buf_printf(b, "</section>");
	templates(b, bd);
	kb_buf_printf(b, "</div>");
}

int kb_web_render_board(struct kb_buf *b, const struct kb_web_board *bd,
			int64_t now_ms, unsigned gen)
{
	kb__web_head(b, bd->name, "board");
	kb_buf_printf(b, "<h1>");
	kb_web_esc(b, bd->name);
	kb_buf_printf(b, "</h1><p class=\"meta\">");
	kb_web_esc(b, bd->lang);
	kb_buf_printf(b, " · ranked by ");
	kb_web_esc(b, bd->ranking_by ? bd->ranking_by : "mean");
	kb_buf_printf(b, " · ");
	kb__web_deadline_line(b, bd->deadline_ms, now_ms);
	kb_buf_printf(b, "</p>");
	if (bd->not_sealed) {
		kb_buf_printf(b, "<p class=\"notice unsealed\"><strong>Not "
				 "sealed:</strong> ");
		kb_web_esc(b, bd->not_sealed);
		kb_buf_printf(b, "; " KB_SEAL_NOT_SEALED_MEANS ".</p>");
	}
	kb_buf_printf(b, "<div id=\"live\" data-gen=\"%u\" data-feed=\"", gen);
	kb_web_esc(b, bd->name);
	kb_buf_printf(b, "\" aria-live=\"polite\">");
	/* Gpus where someone is ranked first, the empty ones after. */
	for (int pass = 0; pass < 2; pass++)
		for (size_t k = 0; k < bd->ngpus; k++)
			if ((bd->gpus[k].nrank == 0) == pass)
				gpu_section(b, bd, k, now_ms);
	kb_buf_printf(b, "</div>");
	/* Filled and shown by kb.js for a signed-in user. */
	kb_buf_printf(b, "<section id=\"submit\" class=\"js-only\" data-lb=\"");
	kb_web_esc(b, bd->name);
	kb_buf_printf(b, "\" data-gpus=\"");
	for (size_t k = 0; k < bd->ngpus; k++) {
		kb_buf_printf(b, "%s", k ? "," : "");
		kb_web_esc(b, bd->gpus[k].gpu);
	}
	kb_buf_printf(b, "\"></section>");
	tabs(b, bd);
	return kb__web_tail(b);
}

int kb_web_render_code(struct kb_buf *b, const struct kb_web_code *c)
{
	char title[300], score[48];

	snprintf(title, sizeof(title), "%s: submission %" PRIu64, c->lb,
		 c->sub_id);
	kb__web_head(b, title, "code");
	kb_buf_printf(b, "<h1>");
	kb_web_esc(b, title);
	kb_buf_printf(b, "</h1><p class=\"meta\">");
	kb__web_user_link(b, c->user_id, c->user_name);
	kb_web_score(c->score, score, sizeof(score));
	kb_buf_printf(b, " · ");
	kb_web_esc(b, c->gpu);
	kb_buf_printf(b, " · score %s · submitted ", score);
	kb__web_put_time(b, c->submitted_ms);
	kb_buf_printf(b, " · ");
	kb__web_board_link(b, c->lb);
	kb_buf_printf(b,
		      "</p><p>A ranked, passing submission, shown now that the "
		      "board's deadline has passed.</p><h2>");
	kb_web_esc(b,
		   c->file_name && *c->file_name ? c->file_name : "submission");
	kb_buf_printf(b, "</h2><pre class=\"code\"><code>");
	kb_web_esc(b, c->code);
	kb_buf_printf(b, "</code></pre>");
	return kb__web_tail(b);
}

int kb_web_reference_file(const char *const *names, size_t n)
{
	static const char *const prefixes[] = {"reference.", "problem."};

	for (size_t p = 0; p < 2; p++)
		for (size_t i = 0; i < n; i++)
			if (names[i] && strncmp(names[i], prefixes[p],
						strlen(prefixes[p])) == 0)
				return (int)i;
	return -1;
}
