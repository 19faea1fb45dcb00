/* kb_starve: was a run that timed out or crashed starved by its host?
 *
 * A run that ends by a time limit, or is killed by the kernel, may have
 * been slowed by other load on the host rather than by its own code: its
 * threads waited in the run queue, or its pages were reclaimed. That is
 * the platform's fault (the run is retried, never charged to the user).
 *
 * The worker samples the host around each run (kb_starve_sample: the
 * kernel's pressure stall information, /proc/pressure/{cpu,memory}, and
 * the CPU time of the whole host from /proc/stat) and kb_starve_judge
 * decides from two samples and what the run itself got:
 *
 *   a timeout is the host's when the run's own CPU time is under half
 *   its wall time (it could not run most of the time) while the host's
 *   CPU pressure covered at least half of the run (tasks were waiting
 *   for a CPU), or, where the kernel gives no pressure figures, the
 *   host's CPUs were at least 90 % busy; or when memory pressure covered
 *   at least half of the run;
 *   a kill by SIGKILL that was not the run's own memory limit is the
 *   host's when memory pressure covered at least a quarter of the run
 *   (the kernel's OOM killer picked it).
 * Memory pressure never counts for a run that reached its own memory
 * limit: the pressure figures are the host's, and a run thrashing in its
 * own limit makes them too (it would be retried for ever, never charged).
 *
 * A run that sleeps or blocks uses little CPU but causes no pressure, so
 * it is still charged to the user; a run that overloads the host itself
 * with threads uses CPU time, so its timeout is still the user's.
 *
 * kb_starve_sample reads /proc; kb_starve_judge is pure. Both are
 * thread-safe.
 */
#ifndef KB_STARVE_H
#define KB_STARVE_H

#include <stddef.h>
#include <stdint.h>

struct kb_starve_sample {
	int psi;              /* the pressure figures were read */
	uint64_t cpu_some_us; /* /proc/pressure/cpu "some total" */
	uint64_t mem_some_us; /* /proc/pressure/memory "some total" */
	int stat;             /* /proc/stat was read */
	uint64_t busy, total; /* host CPU time, in clock ticks */
};

/* What a finished run got, and how it ended. */
struct kb_starve_run {
	double wall_s, cpu_s;
	int timed_out; /* ended by a time limit (ours or the harness's) */
	int killed;    /* killed by SIGKILL, not by the worker */
	int oom;       /* killed by its own memory limit */
	int at_limit;  /* reached its own memory limit: the memory
			       * pressure may be its own doing */
};

/* Fills s with what the host says now; fields it cannot read stay 0 with
 * their flag 0. Never fails. */
void kb_starve_sample(struct kb_starve_sample *s);

/* 1 when the run ended as it did because the host starved it, with why
 * set to a sentence for the user (the run's CPU time and the pressure
 * figures); else 0. Pure. */
int kb_starve_judge(const struct kb_starve_sample *before,
		    const struct kb_starve_sample *after,
		    const struct kb_starve_run *run, char *why,
		    size_t why_size);

#endif
