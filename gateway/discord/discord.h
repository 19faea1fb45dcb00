/* kb_gw_discord: the Discord interactions front end, built in with
 * KB_DISCORD (gateway/CMakeLists.txt, which then defines KB_GW_DISCORD
 * for main()). It creates and follows submissions through the gateway's
 * in-process API (core/api.h), as the HTTP routes do.
 *
 * main() puts the handler below in the route table for POST
 * /discord/interactions (without Discord the route answers 404), calls
 * kb_gw_discord_start() after the HTTP daemon is up and
 * kb_gw_discord_stop() while draining. Internals: internal.h.
 */
#ifndef KB_GW_DISCORD_H
#define KB_GW_DISCORD_H

#include <stddef.h>

#include "base/gateway.h"
#include "http/http.h"

/* POST /discord/interactions. */
extern const struct kb_gw_handler kb_gw_discord_interactions_handler;

/* Called once by main() after the HTTP daemon started; returns 0 or a
 * negative code (startup then fails with errstr). */
int kb_gw_discord_start(struct kb_gw *g, char *errstr, size_t errstr_size);
/* Called once by main() on shutdown, before the producer is flushed. */
void kb_gw_discord_stop(struct kb_gw *g);

#endif
