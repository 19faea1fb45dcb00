/* reconcile_rules: the reconciler's decision (see reconcile_rules.h). */
#include "reconcile_rules.h"

#include <string.h>

int kb_gw_reconcile_gone(const struct kb_gw_queued *q,
			 const struct kb_gw_log *log, int64_t now_ms,
			 int64_t grace_ms)
{
	if (!q->placed)
		return now_ms - q->published_ms > grace_ms;
	if (strcmp(q->cluster, log->cluster) != 0)
		return 1;
	if (q->partition < 0 || q->partition >= log->nparts)
		return 1;
	return q->offset < log->low[q->partition] ||
	       q->offset >= log->high[q->partition];
}

enum kb_gw_reconcile_action kb_gw_reconcile_decide(const struct kb_gw_queued *q,
						   const struct kb_gw_log *log,
						   int64_t now_ms,
						   int64_t grace_ms,
						   long max_republish)
{
	if (!q->queued)
		return KB_GW_RECON_FORGET;
	/* A worker has it (its lease), or evaluated it: the log no longer
	 * matters. */
	if (q->lease_active || !kb_gw_reconcile_gone(q, log, now_ms, grace_ms))
		return KB_GW_RECON_KEEP;
	return q->republished >= max_republish ? KB_GW_RECON_FAIL
					       : KB_GW_RECON_REPUBLISH;
}
