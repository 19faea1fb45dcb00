/* kb_web_render: a user's page (see render.h): best entries, a plot
 * of each one's history, the scored submissions. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "render.h"
#include "render_int.h"

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
	kb__web_head(b, shown, "user");
	kb_buf_printf(b, "<h1>");
	kb_web_esc(b, shown);
	kb_buf_printf(b, "</h1><p class=\"meta\">user id <code>");
	kb_web_esc(b, user_id);
	kb_buf_printf(
		b,
		"</code></p><div id=\"live\" data-gen=\"%u\" data-feed=\"\">"
		"<section><h2>Best entries</h2><div class=\"scroll\"><table "
		"class=\"ranking\"><thead><tr><th scope=\"col\">leaderboard</th>"
		"<th scope=\"col\">GPU</th><th scope=\"col\">score</th>"
		"<th scope=\"col\">rank</th></tr></thead><tbody>",
		gen);
	for (size_t i = 0; i < nbest; i++) {
		kb_buf_printf(b, "<tr><td>");
		kb__web_board_link(b, best[i].lb);
		kb_buf_printf(b, "</td><td>");
		kb_web_esc(b, best[i].gpu);
		kb_buf_printf(b, "</td>");
		kb__web_score_cell(b, best[i].score);
		kb_buf_printf(b, "<td class=\"num\">");
		kb__web_medal(b, best[i].rank);
		kb_buf_printf(b, "%ld of %ld</td></tr>", best[i].rank,
			      best[i].nranked);
	}
	if (nbest == 0)
		kb_buf_printf(
			b,
			"<tr><td colspan=\"4\">Not ranked anywhere yet.</td></tr>");
	kb_buf_printf(
		b,
		"</tbody></table></div></section><section><h2>Score history</h2>");
	/* One plot per board and gpu: the user's scores and running best. */
	for (size_t i = 0; i < nbest; i++) {
		size_t n = 0;
		char id[32], title[300];
		for (size_t k = 0; k < npts; k++)
			if (strcmp(pts[k].lb, best[i].lb) == 0 &&
			    strcmp(pts[k].gpu, best[i].gpu) == 0)
				one[n++] = (struct kb_web_point){pts[k].t_ms,
								 pts[k].score,
								 pts[k].sub_id,
								 user_id};
		snprintf(id, sizeof(id), "uplot%zu", i);
		snprintf(title, sizeof(title),
			 "%s on %s: personal best over time", best[i].lb,
			 best[i].gpu);
		kb_buf_printf(b, "<h3>");
		kb_web_esc(b, title);
		kb_buf_printf(b, "</h3>");
		kb_web_plot(b, id, title, one, n, NULL, 0, 0, NULL, now_ms);
	}
	kb_buf_printf(
		b,
		"<div class=\"scroll\"><table class=\"history\"><caption>Scored "
		"submissions, newest first</caption><thead><tr><th scope=\"col\">"
		"when</th><th scope=\"col\">leaderboard</th><th scope=\"col\">GPU"
		"</th><th scope=\"col\">score</th><th scope=\"col\">submission"
		"</th></tr></thead><tbody>");
	for (size_t k = npts; k-- > 0;) {
		kb_buf_printf(b, "<tr><td>");
		kb__web_put_time(b, pts[k].t_ms);
		kb_buf_printf(b, "</td><td>");
		kb__web_board_link(b, pts[k].lb);
		kb_buf_printf(b, "</td><td>");
		kb_web_esc(b, pts[k].gpu);
		kb_buf_printf(b, "</td>");
		kb__web_score_cell(b, pts[k].score);
		kb_buf_printf(b, "<td class=\"num\">%" PRIu64 "</td></tr>",
			      pts[k].sub_id);
	}
	kb_buf_printf(b, "</tbody></table></div></section></div>");
	free(one);
	return kb__web_tail(b);
}
