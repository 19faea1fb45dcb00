/* The renderer's own helpers, shared by its files (render.c: the common
 * parts and the index; board.c: a board and its code pages; user.c: a
 * user's page; plot.c: the plot). Not for other modules. */
#ifndef KB_WEB_RENDER_INT_H
#define KB_WEB_RENDER_INT_H

#include <stddef.h>
#include <stdint.h>

#include "kb_util.h"

/* "2026-01-02 03:04 UTC"; "–" for ms <= 0. */
void kb__web_utc(int64_t ms, char *out, size_t size);
/* <time datetime="ISO">human</time> */
void kb__web_put_time(struct kb_buf *b, int64_t ms);
/* The document up to <main>, and what follows it (returns 0/-ENOMEM). */
void kb__web_head(struct kb_buf *b, const char *title, const char *body_class);
int kb__web_tail(struct kb_buf *b);
void kb__web_user_link(struct kb_buf *b, const char *id, const char *name);
void kb__web_board_link(struct kb_buf *b, const char *lb);
void kb__web_score_cell(struct kb_buf *b, double v);
/* Whether gpu has a worker: a sentence (cell 0) or a table cell. */
void kb__web_workers_note(struct kb_buf *b, const char *gpu, int workers,
			  int cell);
void kb__web_deadline_line(struct kb_buf *b, int64_t deadline_ms,
			   int64_t now_ms);
/* "gold", "silver", "bronze" for ranks 1-3 as a marked word (the mark is
 * not colour alone); nothing for the others. */
void kb__web_medal(struct kb_buf *b, long rank);

#endif
