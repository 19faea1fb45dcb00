/* kb_gw_seed: the secret seed a ranked run gets.
 *
 * A board's secret (secret_seed of kb:lb:<name>) never leaves the gateway.
 * Each ranked Submission carries a seed of its own, derived from the board
 * secret with a keyed pseudo-random function:
 *
 *   HMAC-SHA256(key = the board secret as 8 bytes, big-endian,
 *               msg = "kernelbot secret seed v1" NUL <board name> NUL
 *                     <submission id in decimal>)
 *
 * truncated to its first 8 bytes, read big-endian. A run that learns its
 * seed (the secret run's cases are combined from it) learns nothing of the
 * board secret or of any other submission's seed, and a redelivered
 * Submission gets the same seed again. docs/internals.md states the same
 * rule; tests/gateway/test_security.c checks it against its own copy.
 *
 * Pure and thread-safe; sodium_init() must have run (kb_util_init).
 */
#ifndef KB_GW_SEED_H
#define KB_GW_SEED_H

#include <stdint.h>

uint64_t kb_gw_seed_derive(uint64_t board_secret, const char *board,
			   uint64_t submission_id);

#endif
