/* kb_dc_verify: the authenticity check of Discord's interaction requests.
 *
 * Discord signs every request it sends to the interactions endpoint with
 * the application's Ed25519 key: X-Signature-Ed25519 is the hex signature
 * of the bytes X-Signature-Timestamp || body (the raw body, exactly as
 * received). The timestamp is Unix seconds in decimal. We also refuse
 * timestamps too far from our clock, so a captured request cannot be
 * replayed later.
 *
 * Pure (no I/O) and thread-safe. libsodium must be initialised
 * (kb_util_init) before the first call.
 */
#ifndef KB_DC_VERIFY_H
#define KB_DC_VERIFY_H

#include <stddef.h>
#include <stdint.h>

#define KB_DC_PUBKEY_BYTES 32
#define KB_DC_SIG_BYTES 64

/* Decodes exactly out_len bytes from hex (2 * out_len hex digits, either
 * case, nothing else). Returns 0 or -EINVAL. */
int kb_dc_hex_decode(const char *hex, unsigned char *out, size_t out_len);

/* Checks one request. Returns 0 when sig_hex is a valid signature by pk of
 * timestamp || body and the timestamp lies in [now_s - max_age_s,
 * now_s + max_future_s]; -EINVAL when a header is missing or malformed;
 * -EBADMSG when the signature does not verify; -ETIME when the signature
 * is good but the timestamp is outside the window; -ENOMEM. The signature
 * is checked first, so the answer never tells an unauthenticated caller
 * anything about our clock. */
int kb_dc_verify(const unsigned char pk[KB_DC_PUBKEY_BYTES],
		 const char *sig_hex, const char *timestamp, const void *body,
		 size_t len, int64_t now_s, long max_age_s, long max_future_s);

#endif
