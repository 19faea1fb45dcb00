/* kb_gw_web: the web leaderboard, served by kb-gateway itself.
 *
 * Pages (server-rendered HTML, render.h; one stylesheet and one small
 * script compiled into the binary, no build step, no third-party asset):
 *
 *   GET /                              the competitions and leaderboards
 *   GET /web/lb/{lb}[?gpu=&user=&view=&scale=&range=]
 *                                      a board: ranking and plot per gpu
 *                                      (the query: the plot's choices for
 *                                      gpu's plot; such a page is not
 *                                      cached), description, reference,
 *                                      templates, submit form
 *   GET /web/lb/{lb}/template/{lang}   a template file, as a download
 *   GET /web/lb/{lb}/code/{id}         a ranked pass's code, once the
 *                                      board's deadline has passed
 *   GET /web/user/{user_id}            a user's best entries and history
 *   GET /web/me                        the signed-in user's submissions
 *   GET /web/static/{kb.css,kb.js}
 *   GET /web/events[?lb=]              server-sent events: "board" when a
 *                                      Result changed a board (all boards
 *                                      without lb), "workers" when a gpu
 *                                      of it gained or lost workers
 *
 * Reading is public; closed (invite-only) and deleted boards are not
 * shown. Signing in is client-side: kb.js keeps the user's CLI id in
 * localStorage and calls the same API the CLI does (X-Popcorn-Cli-Id), so
 * the gateway holds no web session and sets no cookie.
 *
 * Rendered pages are cached (their own kb_gw_cache, KB_WEB_CACHE_MS) and
 * dropped as soon as the ranker has folded a Result that changes them
 * (feed.c): the feed listens to the hub (hub.h), where the events
 * thread publishes each Result; the feed
 * thread waits until kb:res:<id>:<gpu> exists (the ranker's fold is
 * visible), then drops the board's, the index's and the user's pages and
 * the API's cached rankings of that board, bumps the feed generation and
 * tells the board's event streams. A page carries the generation it was
 * rendered at, and an event stream starts with the current one, so a
 * browser that missed a change between loading the page and connecting
 * reloads the live part at once. A page rendered while the generation
 * moved is served but not cached. The pages say per gpu whether a worker
 * serves it (from the events thread's memory); the feed thread drops
 * them and tells their streams when that changes.
 *
 * Thread-safety: every call is thread-safe. kb_gw_web_start() runs in
 * main() before the HTTP daemon, kb_gw_web_close_streams() while
 * draining, kb_gw_web_stop() after the daemon stopped.
 */
#ifndef KB_GW_WEB_H
#define KB_GW_WEB_H

#include <stddef.h>
#include <stdint.h>

#include "base/gateway.h"
#include "http/http.h"

/* Makes the page cache, starts the feed thread and has it listen to
 * g->hub. Returns 0, or -1 with errstr set. With cfg.web off, does
 * nothing (the routes answer 404). */
int kb_gw_web_start(struct kb_gw *g, char *errstr, size_t errstr_size);

/* Ends every event stream (they then close) and refuses new ones. */
void kb_gw_web_close_streams(struct kb_gw *g);

/* Stops the feed thread and frees. Safe when never started. */
void kb_gw_web_stop(struct kb_gw *g);

/* The pages' handlers, indexed by route id (http.h; entries for other
 * routes are zero). */
extern const struct kb_gw_handler kb_gw_web_handlers[KB_ROUTE_COUNT];

/* Open GET /web/events streams. */
size_t kb_gw_web_streams(struct kb_gw *g);

#endif
