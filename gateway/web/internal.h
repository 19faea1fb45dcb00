/* The web module's private state, shared by pages.c (pages, cache) and
 * feed.c (the feed thread and the event streams). */
#ifndef KB_GW_WEB_INTERNAL_H
#define KB_GW_WEB_INTERNAL_H

#include <microhttpd.h>
#include <pthread.h>
#include <stdatomic.h>

#include "http/http.h"
#include "web.h"

#define KB_WEB_PENDING_MAX 512
#define KB_WEB_GPUS_MAX 64

/* How many workers a gpu had when the feed thread last looked. */
struct kb__web_gpu_seen {
	char gpu[64];
	int workers;
};

struct kb__web_pending {
	char lb[128], gpu[64], user[96];
	uint64_t id;
	double since; /* kb_mono_s() when the Result was seen */
};

struct kb__web_stream;

struct kb_gw_web {
	struct kb_gw *g;
	struct kb_gw_cache *
		pages; /* rendered pages by "i|", "b|<lb>|<board index>", "u|<id>|" */
	atomic_uint gen; /* bumped on every visible change */
	pthread_t th;
	int started;
	int listening; /* on g->hub (kb__web_feed_start) */
	atomic_int stop;
	pthread_mutex_t mu; /* pending, streams, closed */
	pthread_cond_t cv;
	struct kb__web_pending pending[KB_WEB_PENDING_MAX];
	size_t npending;
	struct kb__web_stream *streams;
	atomic_size_t nstreams;
	int closed;
	struct MHD_Response *css, *js, *me;
	/* The feed thread's own (no lock): the gpus of public boards. */
	struct kb__web_gpu_seen seen[KB_WEB_GPUS_MAX];
	size_t nseen;
};

/* feed.c */
int kb__web_feed_start(struct kb_gw_web *w, char *errstr, size_t errstr_size);
void kb__web_feed_stop(struct kb_gw_web *w);
void kb__web_events_begin(struct kb_gw_req *r);

/* Same-origin everything, no inline script or style, no framing: the
 * pages show text other people wrote (user names, problem descriptions),
 * and a signed-in page holds a CLI id. */
#define KB__WEB_CSP                                                            \
	"default-src 'self'; script-src 'self'; style-src 'self'; "            \
	"img-src 'self' data:; connect-src 'self'; frame-ancestors 'none'; "   \
	"base-uri 'none'; form-action 'self'"

/* The security headers every web answer carries (pages and streams). */
static inline void kb__web_headers(struct MHD_Response *resp,
				   const char *content_type)
{
	MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE,
				content_type);
	MHD_add_response_header(resp, "Content-Security-Policy", KB__WEB_CSP);
	MHD_add_response_header(resp, "X-Content-Type-Options", "nosniff");
	MHD_add_response_header(resp, "Referrer-Policy", "no-referrer");
}

#endif
