/* Reading the board table (gateway.h). Boards are appended, flagged and
 * never freed while the gateway serves, so these read without a lock. */
#include <stdatomic.h>
#include <string.h>
#include <strings.h>

#include "gateway.h"

size_t kb_gw_lb_count(const struct kb_gw *g)
{
	return atomic_load(&g->nboards);
}

struct kb_gw_lb *kb_gw_lb_at(const struct kb_gw *g, size_t i)
{
	return i < atomic_load(&g->nboards) ? g->boards[i] : NULL;
}

/* Names match case-insensitively (popcorn-cli lower-cases them); an
 * exact match comes first, so boards that differ only in case (which
 * task.yml allows) each stay reachable under their own spelling. */
const struct kb_gw_lb *kb_gw_lb_find(const struct kb_gw *g, const char *name)
{
	size_t n = atomic_load(&g->nboards);

	if (!name)
		return NULL;
	/* Newest first: a board re-created under a deleted one's name wins. */
	for (int fold = 0; fold < 2; fold++)
		for (size_t i = n; i-- > 0;) {
			const struct kb_gw_lb *lb = g->boards[i];
			if (!atomic_load(&lb->deleted) &&
			    (fold ? strcasecmp(lb->task->name, name)
				  : strcmp(lb->task->name, name)) == 0)
				return lb;
		}
	return NULL;
}

const char *kb_gw_lb_gpu(const struct kb_gw_lb *lb, const char *gpu)
{
	const struct kb_task *t = lb->task;

	if (!gpu)
		return NULL;
	for (int fold = 0; fold < 2; fold++)
		for (size_t i = 0; i < t->ngpus; i++)
			if ((fold ? strcasecmp(t->gpus[i], gpu)
				  : strcmp(t->gpus[i], gpu)) == 0)
				return t->gpus[i];
	return NULL;
}

int kb_gw_lb_has_gpu(const struct kb_gw_lb *lb, const char *gpu)
{
	return kb_gw_lb_gpu(lb, gpu) != NULL;
}

const char *kb_gw_gpu_canon(const struct kb_gw *g, const char *gpu)
{
	size_t n = atomic_load(&g->nboards);
	const char *folded = NULL;

	for (size_t i = 0; gpu && i < n; i++) {
		const struct kb_task *t = g->boards[i]->task;
		if (atomic_load(&g->boards[i]->deleted))
			continue;
		for (size_t k = 0; k < t->ngpus; k++) {
			if (strcmp(t->gpus[k], gpu) == 0)
				return t->gpus[k];
			if (!folded && strcasecmp(t->gpus[k], gpu) == 0)
				folded = t->gpus[k];
		}
	}
	return folded;
}

int kb_gw_gpu_known(const struct kb_gw *g, const char *gpu)
{
	return kb_gw_gpu_canon(g, gpu) != NULL;
}

size_t kb_gw_live_gpus(const struct kb_gw *g, const char **out, size_t max)
{
	size_t n = 0, nb = kb_gw_lb_count(g);

	for (size_t i = 0; i < nb; i++) {
		const struct kb_gw_lb *lb = kb_gw_lb_at(g, i);
		if (!lb || atomic_load(&lb->deleted))
			continue;
		for (size_t k = 0; k < lb->task->ngpus; k++) {
			size_t j = 0;
			while (j < n && strcmp(out[j], lb->task->gpus[k]) != 0)
				j++;
			if (j == n && n < max)
				out[n++] = lb->task->gpus[k];
		}
	}
	return n;
}
