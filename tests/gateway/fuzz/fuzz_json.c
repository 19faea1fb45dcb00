/* libFuzzer target: every JSON body the API accepts, and the OAuth state
 * parameter. Byte 0 picks the parser; the rest is the body. Accepted
 * values must satisfy the documented bounds. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "http/bodies.h"
#include "http/rules.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *why = "";
	const char *body;
	int closed;

	if (size < 1)
		return 0;
	body = (const char *)data + 1;
	size--;
	switch (data[0] % 7) {
	case 0: {
		struct kb_gw_body_join j;
		if (kb_gw_body_join(body, size, &j, &why) == 0 &&
		    !kb_rules_name_ok(j.code, 64))
			abort();
		break;
	}
	case 1: {
		struct kb_gw_body_user u;
		if (kb_gw_body_user(body, size, &u, &why) == 0 &&
		    !kb_rules_user_name_ok(u.name))
			abort();
		break;
	}
	case 2: {
		struct kb_gw_body_invites iv;
		if (kb_gw_body_invites(body, size, &iv, &why) == 0 &&
		    (iv.n < 1 || iv.n > KB_GW_INVITE_LBS_MAX || iv.count < 1 ||
		     iv.count > 10000))
			abort();
		break;
	}
	case 3: {
		struct kb_gw_body_rate rl;
		if (kb_gw_body_rate(body, size, &rl, &why) == 0 &&
		    (!kb_rules_category_ok(rl.category) || rl.max < 1))
			abort();
		break;
	}
	case 4:
		(void)kb_gw_body_visibility(body, size, &closed, &why);
		break;
	case 5: {
		struct kb_gw_body_lb_create lc;
		if (kb_gw_body_lb_create(body, size, &lc, &why) == 0 &&
		    (strchr(lc.directory, '/') || strstr(lc.directory, "..")))
			abort();
		break;
	}
	default: {
		char *s = malloc(size + 1);
		struct kb_gw_oauth_state st;
		if (!s)
			return 0;
		memcpy(s, body, size);
		s[size] = '\0';
		if (kb_gw_oauth_state_parse(s, &st, &why) == 0 &&
		    !kb_rules_cli_id_ok(st.cli_id))
			abort();
		free(s);
		break;
	}
	}
	return 0;
}
