/* libFuzzer target: what the gateway reads from request lines and
 * headers before any handler runs: the router (method, path), query
 * parameter names, Content-Length, Content-Type boundaries, CLI ids,
 * admin tokens, file names, deadlines, and the UTF-8 sanitiser used on
 * everything echoed back.
 *
 * Input: NUL-separated fields (method, path, header value, ...); missing
 * fields are empty. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "http/multipart.h"
#include "http/router.h"
#include "http/rules.h"
#include "kb_time.h"
#include "kb_util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *buf = malloc(size + 1);
	const char *f[4] = {"", "", "", ""};
	struct kb_route r;
	size_t nf = 0;

	if (!buf)
		return 0;
	memcpy(buf, data, size);
	buf[size] = '\0';
	for (char *p = buf; nf < 4 && p <= buf + size; nf++) {
		f[nf] = p;
		p += strlen(p) + 1;
	}
	int rc = kb_route_match(f[0], f[1], &r);
	if (rc == 0) {
		if (r.id <= KB_ROUTE_NONE || r.id >= KB_ROUTE_COUNT ||
		    r.nparams > KB_ROUTE_MAX_PARAMS)
			abort();
		for (size_t i = 0; i < r.nparams; i++)
			if (strlen(r.params[i]) == 0 ||
			    strlen(r.params[i]) >= KB_ROUTE_PARAM_MAX)
				abort();
		(void)kb_route_query_ok(r.id, f[2]);
	} else if (rc == 405) {
		if (!r.allow)
			abort();
	} else if (rc != 404) {
		abort();
	}
	(void)kb_route_name(r.id);

	const char *why = "";
	uint64_t u;
	int64_t ms;
	char b[KB_MULTIPART_BOUNDARY_MAX + 1], name[256];
	(void)kb_rules_content_length(f[2], 1 << 20, &why);
	(void)kb_parse_u64(f[2], &u);
	if (kb_multipart_boundary(f[2], b, sizeof(b)) == 0 &&
	    strlen(b) > KB_MULTIPART_BOUNDARY_MAX)
		abort();
	(void)kb_rules_cli_id_ok(f[2]);
	(void)kb_rules_user_name_ok(f[3]);
	(void)kb_rules_name_ok(f[3], 64);
	(void)kb_rules_bool(f[3], 0);
	(void)kb_time_parse_iso8601(f[3], &ms);
	(void)kb_mode_parse(f[3]);
	(void)kb_rules_admin(f[2], "token", &why);
	size_t n = 0;
	char *clean = kb_gw_utf8_sanitize((const char *)data, size, &n);
	if (clean && n > size * 3)
		abort();
	free(clean);
	if (kb_utf8_valid(f[3], strlen(f[3]))) {
		kb_rules_file_name(f[3], name, sizeof(name));
		if (strlen(name) == 0 || strlen(name) > 255 ||
		    strchr(name, '/'))
			abort();
	}
	free(buf);
	return 0;
}
