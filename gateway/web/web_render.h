/* kb_web_render: the web pages' HTML and SVG, as pure functions of the
 * data the page shows (no I/O, no clock: "now" is an argument), so tests
 * render them without a server and the gateway caches their output.
 *
 * Every page is a complete HTML5 document: one stylesheet and one script
 * (/web/static/kb.css, kb.js; no inline script or style, so the pages
 * carry a strict Content-Security-Policy), a <main> whose live part has
 * the id "live" and a data-gen attribute (the feed generation the page was
 * rendered at; web_feed.h). Everything that comes from users or problem
 * files is HTML-escaped. The score plot is inline SVG drawn here: the
 * record (running minimum of every scored result) as a step line, and the
 * top users' personal bests, each with its own CSS class (s0..s5) and dash
 * pattern so that colour is not the only cue.
 *
 * A gpu no worker serves is said so on the board (its section) and the
 * index (its row): submissions to it wait in the queue until one starts.
 *
 * Scores are seconds; they are shown with a unit chosen per value (s, ms,
 * µs, ns) and four significant digits.
 *
 * Return values: 0, or -ENOMEM (the buffer is then incomplete). All
 * functions are thread-safe.
 */
#ifndef KB_WEB_RENDER_H
#define KB_WEB_RENDER_H

#include <stddef.h>
#include <stdint.h>

#include "kb_util.h"

/* One ranked user on a board's gpu. */
struct kb_web_rank {
	long rank;
	const char *user_id, *user_name;
	double score;          /* seconds */
	int64_t submitted_ms;  /* <= 0 unknown */
};

/* One scored result (kb:hist): when it was ranked, its score, whose. */
struct kb_web_point {
	int64_t t_ms;
	double score;
	uint64_t sub_id;
	const char *user_id;
};

struct kb_web_gpu {
	const char *gpu;
	const struct kb_web_rank *rank; /* best first */
	size_t nrank;
	long nranked;                   /* all ranked users (>= nrank) */
	const struct kb_web_point *hist; /* by time */
	size_t nhist;
	/* Workers serving the gpu now: > 0 how many, 0 none (the section
	 * says that submissions wait), KB_WEB_WORKERS_UNKNOWN while the
	 * gateway cannot tell yet (nothing is said). */
	int workers;
};

#define KB_WEB_WORKERS_UNKNOWN (-1)

struct kb_web_board {
	const char *name, *lang, *description, *ranking_by;
	const char *deadline;   /* ISO 8601 as the competition file says; NULL */
	int64_t deadline_ms;    /* -1: none */
	const char *const *templates; /* template language names */
	size_t ntemplates;
	const struct kb_web_gpu *gpus;
	size_t ngpus;
};

/* One board on the index. best[i]/best_user[i] per gpu: NAN/NULL when no
 * one is ranked there. */
struct kb_web_index_row {
	const char *name, *lang, *summary; /* summary: description's first line */
	int64_t deadline_ms;
	const char *const *gpus;
	size_t ngpus;
	const double *best;
	const char *const *best_user_id, *const *best_user;
	long participants; /* users ranked on any gpu */
	const int *workers; /* per gpu, as kb_web_gpu's; NULL: not known */
};

/* A user's standing on one board and gpu. */
struct kb_web_user_best {
	const char *lb, *gpu;
	double score;
	long rank, nranked;
};

/* One scored result of a user (kb:uhist). */
struct kb_web_user_point {
	int64_t t_ms;
	double score;
	uint64_t sub_id;
	const char *lb, *gpu;
};

/* Appends s HTML-escaped (& < > " '). NULL appends nothing. */
int kb_web_esc(struct kb_buf *b, const char *s);

/* "1.234 ms", "12.35 µs", "1.000 s"; "–" for a value <= 0 or not finite. */
void kb_web_score(double seconds, char *out, size_t size);

/* "3 d 4 h left", "5 h 12 min left", "closed", or "" without a deadline. */
void kb_web_time_left(int64_t deadline_ms, int64_t now_ms, char *out,
		      size_t size);

/* The SVG plot of points (and the personal bests of top[0..ntop), at most
 * 6), titled by title; a paragraph saying so when there is no point. id
 * makes the plot's element ids unique on the page. */
int kb_web_plot(struct kb_buf *b, const char *id, const char *title,
		const struct kb_web_point *points, size_t npoints,
		const struct kb_web_rank *top, size_t ntop, int64_t now_ms);

int kb_web_render_index(struct kb_buf *b, const struct kb_web_index_row *rows,
			size_t n, int64_t now_ms, unsigned gen);
int kb_web_render_board(struct kb_buf *b, const struct kb_web_board *bd,
			int64_t now_ms, unsigned gen);
int kb_web_render_user(struct kb_buf *b, const char *user_id,
		       const char *user_name,
		       const struct kb_web_user_best *best, size_t nbest,
		       const struct kb_web_user_point *pts, size_t npts,
		       int64_t now_ms, unsigned gen);
/* The signed-in page: a shell that kb.js fills from the API. */
int kb_web_render_me(struct kb_buf *b);
int kb_web_render_error(struct kb_buf *b, int status, const char *message);

#endif
