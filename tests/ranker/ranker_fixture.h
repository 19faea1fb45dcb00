/* ranker_fixture: builds ResultEvents for the ranker's tests without any
 * allocation: everything lives in one struct the test owns. */
#ifndef KB_RANKER_FIXTURE_H
#define KB_RANKER_FIXTURE_H

#include <stdint.h>

#include "kb.pb-c.h"

struct fx_result {
	Kb__ResultEvent ev;
	Kb__Result r;
	Kb__CompileResult compile;
	Kb__RunResult runs[3];
	Kb__RunResult *runp[3];
	Kb__KeyValue kv;
	Kb__KeyValue *kvp[1];
	Kb__SystemInfo sys;
	char lb[64], gpu[32], user[64];
};

/* A passed leaderboard Result that counts: test, leaderboard and private
 * runs all passed, has_score set. submitted_ms also seeds the other times
 * (started = submitted + 10, finished = submitted + 20). The string fields
 * point into f: do not copy f after this call. */
void fx_scored(struct fx_result *f, uint64_t id, const char *user, double score,
	       int64_t submitted_ms);

/* The same, changed into a failed test-stage Result with no score. */
void fx_failed(struct fx_result *f, uint64_t id, const char *user,
	       int64_t submitted_ms);

/* Packs f->ev into a malloc'd buffer; *len gets its size. */
uint8_t *fx_pack_event(const struct fx_result *f, size_t *len);

/* A packed ResultEvent carrying a Progress (malloc'd). */
uint8_t *fx_pack_progress(uint64_t id, const char *gpu, Kb__Stage stage,
			  size_t *len);

#endif
