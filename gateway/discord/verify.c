/* kb_dc_verify: see verify.h. */
#include "verify.h"

#include <errno.h>
#include <sodium.h>
#include <stdlib.h>
#include <string.h>

/* Unix seconds in a timestamp header: 1 to 12 decimal digits. */
#define TS_DIGITS_MAX 12

static int hex_val(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

int kb_dc_hex_decode(const char *hex, unsigned char *out, size_t out_len)
{
	if (!hex || strlen(hex) != 2 * out_len)
		return -EINVAL;
	for (size_t i = 0; i < out_len; i++) {
		int hi = hex_val(hex[2 * i]), lo = hex_val(hex[2 * i + 1]);
		if (hi < 0 || lo < 0)
			return -EINVAL;
		out[i] = (unsigned char)(hi << 4 | lo);
	}
	return 0;
}

static int parse_ts(const char *s, int64_t *out)
{
	size_t n = s ? strlen(s) : 0;
	int64_t v = 0;

	if (n == 0 || n > TS_DIGITS_MAX)
		return -EINVAL;
	for (size_t i = 0; i < n; i++) {
		if (s[i] < '0' || s[i] > '9')
			return -EINVAL;
		v = v * 10 + (s[i] - '0');
	}
	*out = v;
	return 0;
}

int kb_dc_verify(const unsigned char pk[KB_DC_PUBKEY_BYTES],
		 const char *sig_hex, const char *timestamp, const void *body,
		 size_t len, int64_t now_s, long max_age_s, long max_future_s)
{
	unsigned char sig[KB_DC_SIG_BYTES];
	int64_t ts;
	size_t tn;
	int ok;

	if (kb_dc_hex_decode(sig_hex, sig, sizeof(sig)) < 0 ||
	    parse_ts(timestamp, &ts) < 0 || (!body && len))
		return -EINVAL;
	tn = strlen(timestamp);
	unsigned char *msg = malloc(tn + len + 1);
	if (!msg)
		return -ENOMEM;
	memcpy(msg, timestamp, tn);
	if (len)
		memcpy(msg + tn, body, len);
	ok = crypto_sign_verify_detached(sig, msg, tn + len, pk) == 0;
	free(msg);
	if (!ok)
		return -EBADMSG;
	if (ts < now_s - max_age_s || ts > now_s + max_future_s)
		return -ETIME;
	return 0;
}
