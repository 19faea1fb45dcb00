/* kb_sse: an incremental parser for server-sent events (text/event-stream).
 *
 * It follows the WHATWG "event stream interpretation" rules, so it accepts
 * whatever a conforming server sends, split across network reads at any
 * byte:
 *  - Lines end in CRLF, LF or CR. A CR at the end of one chunk followed by
 *    LF at the start of the next is one line end, not two.
 *  - "field: value" (one space after the colon is dropped), "field:value",
 *    or "field" alone (empty value). Lines starting with ':' are comments
 *    (keep-alives) and are ignored. A UTF-8 byte order mark at the very
 *    start of the stream is skipped.
 *  - Fields: "event" sets the type, "data" appends a line to the data
 *    (several data lines are joined with '\n'), "id" sets the last event
 *    id (ignored when it holds a NUL), "retry" is accepted and ignored.
 *    Unknown fields are ignored.
 *  - An empty line dispatches the event: the callback runs if any data
 *    line was seen (an event with no data is dropped, as the standard
 *    says); the type defaults to "message". Type and data then reset; the
 *    last id persists.
 *  - At end of stream an event without its terminating empty line is
 *    discarded (kb_sse_finish says whether that happened).
 *
 * Memory is bounded: a single line or the data of one event longer than
 * max_event bytes is an error (-EMSGSIZE), so a hostile or broken server
 * cannot make the client grow without limit.
 *
 * Pure (no I/O). One parser per stream; not thread-safe per parser,
 * independent parsers may be used from different threads.
 */
#ifndef KB_SSE_H
#define KB_SSE_H

#include <stddef.h>

struct kb_sse_event {
	const char *type; /* "message" unless an event: line said otherwise */
	const char *data; /* NUL-terminated; may hold '\n' (multi-line) */
	size_t data_len;
	const char *id; /* last event id seen on the stream, "" if none */
};

/* Called once per dispatched event. The strings are valid only during the
 * call. Return 0 to go on; any other value stops the parse and is
 * returned by kb_sse_feed() (use positive values so they cannot be taken
 * for the parser's own negative errors). */
typedef int (*kb_sse_cb)(const struct kb_sse_event *ev, void *opaque);

struct kb_sse;

/* A new parser, or NULL on allocation failure. max_event: the longest line
 * and the most data per event, in bytes (0 means 1 MiB). */
struct kb_sse *kb_sse_new(size_t max_event, kb_sse_cb cb, void *opaque);

/* Feeds len bytes (any split). Returns 0, the callback's non-zero value
 * (parsing stopped inside this chunk: the rest of it was not consumed, and
 * the parser must not be fed again), -EMSGSIZE or -ENOMEM. After an error
 * the parser is unusable except for kb_sse_destroy(). */
int kb_sse_feed(struct kb_sse *p, const char *buf, size_t len);

/* Ends the stream. Returns 1 if an incomplete event (a partial line or
 * fields without the final empty line) was discarded, else 0. */
int kb_sse_finish(struct kb_sse *p);

/* Number of events dispatched so far. */
unsigned long kb_sse_count(const struct kb_sse *p);

/* Frees the parser; NULL is a no-op. */
void kb_sse_destroy(struct kb_sse *p);

#endif
