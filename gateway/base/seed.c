/* kb_gw_seed: see seed.h. */
#include "seed.h"

#include <inttypes.h>
#include <sodium.h>
#include <stdio.h>
#include <string.h>

/* Versioned, so that a change of the rule can never yield a seed of the
 * old one for the same submission. */
static const char domain[] = "kernelbot secret seed v1";

uint64_t kb_gw_seed_derive(uint64_t board_secret, const char *board,
			   uint64_t submission_id)
{
	unsigned char key[8], mac[crypto_auth_hmacsha256_BYTES];
	char id[24];
	crypto_auth_hmacsha256_state st;
	uint64_t seed = 0;

	for (int i = 0; i < 8; i++)
		key[i] = (unsigned char)(board_secret >> (56 - 8 * i));
	snprintf(id, sizeof(id), "%" PRIu64, submission_id);
	crypto_auth_hmacsha256_init(&st, key, sizeof(key));
	/* The NULs (sizeof of the literal, strlen + 1 of the name) keep the
	 * fields apart: no two (board, id) pairs give one message. */
	crypto_auth_hmacsha256_update(&st, (const unsigned char *)domain,
				      sizeof(domain));
	crypto_auth_hmacsha256_update(&st, (const unsigned char *)board,
				      strlen(board) + 1);
	crypto_auth_hmacsha256_update(&st, (const unsigned char *)id,
				      strlen(id));
	crypto_auth_hmacsha256_final(&st, mac);
	for (int i = 0; i < 8; i++)
		seed = seed << 8 | mac[i];
	sodium_memzero(key, sizeof(key));
	sodium_memzero(mac, sizeof(mac));
	sodium_memzero(&st, sizeof(st));
	return seed;
}
