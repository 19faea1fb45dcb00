/* kb_web_render: the web pages' HTML and SVG, as pure functions of the
 * data the page shows (no I/O, no clock: "now" is an argument), so tests
 * render them without a server and the gateway caches their output.
 *
 * Every page is a complete HTML5 document: one stylesheet and one script
 * (/web/static/kb.css, kb.js; no inline script or style, so the pages
 * carry a strict Content-Security-Policy), a <main> whose live part has
 * the id "live" and a data-gen attribute (the feed generation the page was
 * rendered at; feed.c). Everything that comes from users or problem
 * files is HTML-escaped. The score plot is inline SVG drawn here: the
 * record (running minimum of every scored result) as a step line, and the
 * top users' personal bests, each with its own CSS class (s0..s5) and dash
 * pattern so that colour is not the only cue.
 *
 * A board that is not sealed (an upstream problem timed by its own
 * eval.py, in the submission's process) says so under its title, with
 * the reason.
 *
 * A gpu no worker serves is said so on the board (its section) and the
 * index (its row, and a notice above the boards naming every such gpu):
 * submissions to it wait in the queue until one starts.
 *
 * Ranks 1-3 carry a medal (gold, silver, bronze) in words as well as
 * colour. After a board's deadline its ranking links each entry's code
 * (/web/lb/{lb}/code/{id}); before, no code is linked or shown.
 * Descriptions are Markdown (markdown.h).
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
	double score;         /* seconds */
	int64_t submitted_ms; /* <= 0 unknown */
	uint64_t sub_id;      /* the ranked submission; 0 unknown */
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
	long nranked;                    /* all ranked users (>= nrank) */
	const struct kb_web_point *hist; /* by time */
	size_t nhist;
	/* Workers serving the gpu now: > 0 how many, 0 none (the section
	 * says that submissions wait), KB_WEB_WORKERS_UNKNOWN while the
	 * gateway cannot tell yet (nothing is said). */
	int workers;
};

#define KB_WEB_WORKERS_UNKNOWN (-1)

/* How a plot is drawn (the board's plot form; kb_web_plot_opts_parse). */
enum { KB_WEB_SCALE_AUTO, KB_WEB_SCALE_LINEAR, KB_WEB_SCALE_LOG };
struct kb_web_plot_opts {
	const char *user;  /* one contestant's line (and dots) only; NULL all */
	int raw;           /* every scored result as a dot, with the lines */
	int scale;         /* KB_WEB_SCALE_*: auto is log past a ratio of 10 */
	int64_t since_ms;  /* the range: results at or after it; 0 all */
	const char *range; /* its name ("all", "30d", "7d", "1d"), for forms */
};

struct kb_web_board {
	const char *name, *lang, *description, *ranking_by;
	const char *deadline; /* ISO 8601 as the competition file says; NULL */
	int64_t deadline_ms;  /* -1: none */
	const char *const *templates; /* template language names */
	size_t ntemplates;
	const struct kb_web_gpu *gpus;
	size_t ngpus;
	/* The task's reference implementation (a file of the task: see
	 * kb_web_reference_file), or NULL when it has none. */
	const char *reference_name, *reference;
	/* Why the board is not sealed (services/kb_seal.h,
	 * kb_seal_not_sealed), or NULL when the trusted side times it: the
	 * page then says nothing about it. */
	const char *not_sealed;
	/* The plot form's choices for the section of gpu plot_gpu (NULL: no
	 * choice made; every plot drawn by default). */
	const char *plot_gpu;
	struct kb_web_plot_opts plot;
};

/* One board on the index: per gpu, its podium top[k][0..ntop[k]) (at
 * most 3, best first). The index shows boards still open before closed
 * ones, boards with participants before empty ones, and in a board the
 * gpus where someone is ranked first. */
struct kb_web_index_row {
	const char *name, *lang,
		*summary; /* summary: description's first line */
	int64_t deadline_ms;
	const char *const *gpus;
	size_t ngpus;
	const struct kb_web_rank *const *top;
	const size_t *ntop;
	long participants;  /* users ranked on any gpu */
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
/* The same for s[0..n) (NULs included, escaped as nothing else is). */
int kb_web_escn(struct kb_buf *b, const char *s, size_t n);

/* "1.234 ms", "12.35 µs", "1.000 s"; "–" for a value <= 0 or not finite. */
void kb_web_score(double seconds, char *out, size_t size);

/* "3 d 4 h left", "5 h 12 min left", "closed", or "" without a deadline. */
void kb_web_time_left(int64_t deadline_ms, int64_t now_ms, char *out,
		      size_t size);

/* The SVG plot of points (and the personal bests of top[0..ntop), at most
 * 5), titled by title; a paragraph saying so when there is no point. id
 * makes the plot's element ids unique on the page. top[0..nall) is the
 * ranking, where o->user's name is found. o NULL: the defaults. The
 * leader's line is drawn last, above the record's. */
int kb_web_plot(struct kb_buf *b, const char *id, const char *title,
		const struct kb_web_point *points, size_t npoints,
		const struct kb_web_rank *top, size_t ntop, size_t nall,
		const struct kb_web_plot_opts *o, int64_t now_ms);

/* The plot form's query values (any may be NULL: the default) into *o:
 * view "best"|"raw", scale "auto"|"linear"|"log", range
 * "all"|"30d"|"7d"|"1d" (before now_ms). o->user points to user. Returns
 * 0, or -EINVAL for a value not among those (its default is then used). */
int kb_web_plot_opts_parse(const char *user, const char *view,
			   const char *scale, const char *range, int64_t now_ms,
			   struct kb_web_plot_opts *o);

/* Of a task's file names names[0..n), the one to show as its reference
 * implementation: the first named "reference.*" (upstream's problems),
 * else the first "problem.*" (ours keep generator and reference there);
 * -1 when none. */
int kb_web_reference_file(const char *const *names, size_t n);

/* A ranked, passing submission's code on a board whose deadline has
 * passed (the caller has checked both). */
struct kb_web_code {
	const char *lb, *gpu, *user_id, *user_name, *file_name, *code;
	uint64_t sub_id;
	double score;
	int64_t submitted_ms;
};

int kb_web_render_index(struct kb_buf *b, const struct kb_web_index_row *rows,
			size_t n, int64_t now_ms, unsigned gen);
int kb_web_render_board(struct kb_buf *b, const struct kb_web_board *bd,
			int64_t now_ms, unsigned gen);
int kb_web_render_user(struct kb_buf *b, const char *user_id,
		       const char *user_name,
		       const struct kb_web_user_best *best, size_t nbest,
		       const struct kb_web_user_point *pts, size_t npts,
		       int64_t now_ms, unsigned gen);
int kb_web_render_code(struct kb_buf *b, const struct kb_web_code *c);
/* The signed-in page: a shell that kb.js fills from the API. */
int kb_web_render_me(struct kb_buf *b);
int kb_web_render_error(struct kb_buf *b, int status, const char *message);

#endif
