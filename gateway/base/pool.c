/* kb_gw_pool: see pool.h. */
#include "pool.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>

struct job {
	void (*fn)(void *arg);
	void *arg;
	struct job *next;
};

struct kb_gw_pool {
	pthread_mutex_t mu;
	pthread_cond_t cv;
	struct job *head, *tail;
	size_t waiting, max_waiting;
	int stopping;
	size_t n;
	pthread_t *th;
	void (*thread_exit)(void);
};

static void *pool_main(void *arg)
{
	struct kb_gw_pool *p = arg;

	for (;;) {
		pthread_mutex_lock(&p->mu);
		while (!p->head && !p->stopping)
			pthread_cond_wait(&p->cv, &p->mu);
		struct job *j = p->head;
		if (j) {
			p->head = j->next;
			if (!p->head)
				p->tail = NULL;
			p->waiting--;
		}
		pthread_mutex_unlock(&p->mu);
		if (!j)
			break; /* stopping and drained */
		j->fn(j->arg);
		free(j);
	}
	if (p->thread_exit)
		p->thread_exit();
	return NULL;
}

struct kb_gw_pool *kb_gw_pool_new(size_t n, size_t max_waiting,
				  void (*thread_exit)(void))
{
	struct kb_gw_pool *p = calloc(1, sizeof(*p));

	if (!p)
		return NULL;
	p->max_waiting = max_waiting;
	p->thread_exit = thread_exit;
	p->th = calloc(n ? n : 1, sizeof(*p->th));
	if (!p->th) {
		free(p);
		return NULL;
	}
	pthread_mutex_init(&p->mu, NULL);
	pthread_cond_init(&p->cv, NULL);
	for (size_t i = 0; i < (n ? n : 1); i++) {
		if (pthread_create(&p->th[i], NULL, pool_main, p) != 0)
			break;
		p->n++;
	}
	if (p->n == 0) {
		kb_gw_pool_destroy(p);
		return NULL;
	}
	return p;
}

int kb_gw_pool_run(struct kb_gw_pool *p, void (*fn)(void *arg), void *arg)
{
	struct job *j = malloc(sizeof(*j));

	if (!j)
		return -ENOMEM;
	j->fn = fn;
	j->arg = arg;
	j->next = NULL;
	pthread_mutex_lock(&p->mu);
	if (p->stopping || (p->max_waiting && p->waiting >= p->max_waiting)) {
		int rc = p->stopping ? -ESHUTDOWN : -EAGAIN;
		pthread_mutex_unlock(&p->mu);
		free(j);
		return rc;
	}
	p->waiting++;
	if (p->tail)
		p->tail->next = j;
	else
		p->head = j;
	p->tail = j;
	pthread_cond_signal(&p->cv);
	pthread_mutex_unlock(&p->mu);
	return 0;
}

void kb_gw_pool_stop(struct kb_gw_pool *p)
{
	size_t n;

	pthread_mutex_lock(&p->mu);
	p->stopping = 1;
	n = p->n;
	p->n = 0; /* joined once */
	pthread_cond_broadcast(&p->cv);
	pthread_mutex_unlock(&p->mu);
	for (size_t i = 0; i < n; i++)
		pthread_join(p->th[i], NULL);
}

void kb_gw_pool_destroy(struct kb_gw_pool *p)
{
	if (!p)
		return;
	kb_gw_pool_stop(p);
	pthread_mutex_destroy(&p->mu);
	pthread_cond_destroy(&p->cv);
	free(p->th);
	free(p);
}
