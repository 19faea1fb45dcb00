/* guard.h: the trusted-parent / untrusted-child split of a harness.
 *
 * Why: code running in a process can do anything that process can: write
 * to the report fd, patch the harness, fake the clock, exit(0) after
 * printing a plausible report. So the harness splits itself in two at the
 * very start of main(), before it has opened, read or computed anything,
 * and only one half ever holds user code:
 *
 *   parent (trusted): owns the report fd, generates inputs, keeps the
 *     pristine copies and the expected results in its private memory,
 *     checks every output, measures, writes the report. It never maps or
 *     calls user code: the harness executable is built without the
 *     submission, which is a shared object of its own.
 *   child (untrusted): the only process that loads the submission
 *     (kbh_guard_load: dlopen after its confinement, so constructors and
 *     everything else that runs on load run here) and calls custom_kernel.
 *     It sees nothing but a shared arena (the work slots: inputs and
 *     outputs) and a control block. It serves requests: wait for "go", run
 *     the operation, stamp its own start/end times, post "done".
 *
 * What makes the parent unreachable from the child (all set up by
 * kbh_guard_start before the submission is loaded):
 *   - the parent is PR_SET_DUMPABLE 0 (no /proc/<ppid>/mem, fd or environ
 *     access, no ptrace or process_vm_readv, even for the same uid);
 *   - the child closes every fd above 2 (the report fd included) and points
 *     a report fd <= 2 at /dev/null;
 *   - the child installs its own seccomp filter (NO_NEW_PRIVS, cannot be
 *     lifted): no new processes (clone without CLONE_THREAD, fork, vfork,
 *     clone3 -> ENOSYS so libc falls back to clone for threads), no execve,
 *     no signals to any process but itself (kill/tgkill only with its own
 *     pid), no ptrace, process_vm_*, pidfd_*, kcmp or io_uring;
 *   - the child dies with the parent (PR_SET_PDEATHSIG SIGKILL);
 *   - the child drops every capability (so a harness run as root does not
 *     hand it CAP_SYS_PTRACE);
 *   - the parent SIGSTOPs the child the moment it sees "done", posts the
 *     next request while the child is still stopped and only then SIGCONTs
 *     it: while the parent stages the next inputs, checks outputs or writes
 *     the report, no thread of the child runs (no peeking at staged inputs,
 *     no finishing the output in the background after "done", no touching
 *     the inputs while they are compared).
 *
 * Timing. For each request the parent reads its own clock right before
 * posting "go" (t_go) and when one of its threads first sees "done"
 * (t_seen: the main thread, or a SCHED_IDLE watcher thread unless the
 * driver turned it off, guard.c); the child claims [t0, t1] for the timed
 * work. A claim outside the parent's window,
 * t_go <= t0 <= t1 <= t_seen, is FORGED. Otherwise the score's source is
 * the parent (kbh_guard_verify): its measurement m = (t_seen - t_go) - h,
 * where h is a handoff overhead the driver calibrates with requests the
 * child cannot reach (the CPU driver: a second child that never loads the
 * submission, harness_cpu.c), and the sample is the claim only as far as
 * it lies above m - kbh_guard_allowance(m), issue 29's max(1 %, 2 us).
 * So nothing the child writes, patches or delays moves a sample more than
 * the allowance below the parent's own measurement; how far that
 * measurement itself can be from the truth is the driver's calibration's
 * business (problems/harness/README.md, "Unforgeable results").
 *
 * Memory. The arena is one MAP_SHARED|MAP_ANONYMOUS|MAP_NORESERVE
 * reservation made before the fork, so it sits at the same address in both
 * processes and pointers into it can be passed as they are. It starts
 * PROT_NONE in both; kbh_guard_alloc opens an array in the parent's view
 * and kbh_guard_publish opens the same pages in the child's. Every array
 * is followed by a page that stays PROT_NONE in the child, so reading past
 * the end faults there.
 *
 * Everything here is device-independent and C17 (also valid C++); a GPU
 * harness uses the same calls with its own operations (see the mirror
 * notes in problems/harness/README.md). All functions are for the parent
 * unless said otherwise; one thread at a time.
 */
#ifndef KBH_GUARD_H
#define KBH_GUARD_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__)
#pragma GCC visibility push(hidden)
#endif

/* Exit code of a harness whose child died or exited during a request (a
 * crash of the submission, or an exit() inside custom_kernel). The report
 * then carries status: fail and an error naming the signal or exit status,
 * and check: fail. The worker classifies any unexpected exit code as
 * `crashed`. Equal to KBH_EXIT_CRASHED in harness.h. */
#define KBH_GUARD_EXIT_CRASHED 115

/* Operation codes 0..15 are the guard's own; a driver numbers its
 * operations from KBH_GUARD_OP_USER. */
enum {
	KBH_GUARD_OP_HELLO = 1, /* handshake (internal) */
	KBH_GUARD_OP_MAP = 2,   /* open published ranges (internal) */
	KBH_GUARD_OP_RESET = 3, /* close the whole arena (internal) */
	KBH_GUARD_OP_LOAD = 4,  /* load the submission (kbh_guard_load) */
	KBH_GUARD_OP_USER = 16,
};

/* Largest operation argument (bytes copied into the control block). */
#define KBH_GUARD_ARG_MAX 3072
/* Longest error text the child returns from a LOAD. */
#define KBH_GUARD_MSG_MAX 512

/* Runs in the child for every driver operation: arg is a private copy of
 * what the parent passed. Stamp *t0 and *t1 (kbh_now_ns) around the work
 * being timed, if any. The return value is passed back as the request's
 * status (the parent treats it as a claim like any other). */
typedef int (*kbh_guard_fn)(void *ctx, uint32_t op, const void *arg,
			    size_t arg_size, uint64_t *t0, uint64_t *t1);

struct kbh_guard;

/* Reserves the arena (up to arena_max bytes of address space; less is
 * tried when the kernel refuses) and the control block, makes the process
 * non-dumpable, forks, and waits for the child's handshake. In the child
 * this call never returns: the child serves requests with fn(ctx, ...)
 * until the parent exits or kills it. ctx must point at memory that exists
 * before the call (the child sees the parent's memory as it was at the
 * fork). Call it first thing in main(), after kbh_trusted_init and before
 * opening the report or reading the cases. Returns 0 (parent), or a
 * negative errno with err set. */
int kbh_guard_start(struct kbh_guard **out, size_t arena_max, kbh_guard_fn fn,
		    void *ctx, char *err, size_t err_size);

/* Kills and reaps the child, unmaps everything, frees g. NULL-safe. */
void kbh_guard_stop(struct kbh_guard *g);

/* Stops the watcher thread (guard.c) for good: from now on t_seen is the
 * main thread's wake-up alone, and no parent thread spins while a request
 * runs. For drivers whose child computes on the CPU, where a spinning
 * thread beside it slows it down; call it before calibrating the slack. */
void kbh_guard_unwatch(struct kbh_guard *g);

/* The child's pid; whether its seccomp confinement is in place (as the
 * child reported at the handshake, before any user code ran). */
int kbh_guard_pid(const struct kbh_guard *g);
int kbh_guard_confined(const struct kbh_guard *g);

/* ---- the submission ------------------------------------------------------ */
/* Loads the submission's shared object `path` in the child -- dlopen with
 * RTLD_NOW | RTLD_LOCAL, after the child's confinement, so its
 * constructors, ifunc resolvers and whatever else runs on load run there
 * and nowhere else -- and looks up `symbol`, which becomes
 * kbh_guard_entry in the child. The parent never maps the object. Call it
 * right before the first request that runs user code. 0; -ECHILD when the
 * child died loading it (a crash in a constructor: kbh_guard_death says
 * how); another negative errno with err set to why it did not load (the
 * loader's message, the child's words, printable bytes only). */
int kbh_guard_load(struct kbh_guard *g, const char *path, const char *symbol,
		   char *err, size_t err_size);
/* kbh_guard_entry and KBH_ENTRY: harness.h. */

/* ---- arena -------------------------------------------------------------- */

/* An array of `bytes` (> 0) in the arena: 64-byte aligned, its data ending
 * within 63 bytes of a page the child cannot access. Readable and writable
 * by the parent at once, by the child after kbh_guard_publish. NULL when
 * the arena is full. */
void *kbh_guard_alloc(struct kbh_guard *g, size_t bytes);

/* Makes every array allocated since the last publish accessible to the
 * child. 0, or -ECHILD (child gone) / -EPROTO, with err set. */
int kbh_guard_publish(struct kbh_guard *g, char *err, size_t err_size);

/* Frees every array (both views lose access; the pages are released). */
void kbh_guard_reset(struct kbh_guard *g);

/* Bytes of the arena in use and in total. */
size_t kbh_guard_arena_used(const struct kbh_guard *g);
size_t kbh_guard_arena_size(const struct kbh_guard *g);

/* ---- requests ----------------------------------------------------------- */

/* What one request looked like: the parent's own clock readings and the
 * child's claims. */
struct kbh_guard_window {
	uint64_t t_go;   /* parent: right after posting "go" */
	uint64_t t_seen; /* parent: right after seeing "done" */
	uint64_t t0, t1; /* child's claimed start and end of the timed work */
	uint64_t waited; /* kernel's account: time the parent and every
			  * thread of the child spent runnable but not
			  * running around the request (schedstat); tells
			  * a loaded machine from a lying child */
	int status;      /* child's return value */
};

/* Runs op (>= KBH_GUARD_OP_USER) with arg (<= KBH_GUARD_ARG_MAX bytes) in
 * the child and waits for it; the child is stopped again afterwards.
 * Returns 0, or -ECHILD when the child died or exited (kbh_guard_death
 * says how; the guard is then dead for good), -EINVAL for a bad op/size. */
int kbh_guard_request(struct kbh_guard *g, uint32_t op, const void *arg,
		      size_t arg_size, struct kbh_guard_window *w);

/* kbh_guard_request in two halves, for a driver that works while the
 * child runs (the CUDA driver releases its sentinel when the child has
 * launched its work): post sets w->t_go and continues the child; finish
 * waits for "done" and fills the rest of *w, as kbh_guard_request. Every
 * post is followed by exactly one finish. poll: 1 once the child has
 * posted "done" for the current request, -ECHILD if it died, else 0 (it
 * reaps: call it every few microseconds at most). */
int kbh_guard_post(struct kbh_guard *g, uint32_t op, const void *arg,
		   size_t arg_size, struct kbh_guard_window *w);
int kbh_guard_finish(struct kbh_guard *g, struct kbh_guard_window *w);
int kbh_guard_poll(struct kbh_guard *g);

/* After -ECHILD: "killed by signal 11 (Segmentation fault)" or "exited
 * with status 0"; "" while the child lives. */
const char *kbh_guard_death(const struct kbh_guard *g);

/* ---- verification (pure) ------------------------------------------------ */

enum kbh_guard_verdict {
	KBH_GUARD_OK = 0,  /* the claim is the sample */
	KBH_GUARD_CLAMPED, /* the claim is shorter than the parent's
			    * measurement allows: the sample is raised */
	KBH_GUARD_FORGED,  /* the claim is outside the window: impossible
			    * for an honest child (one clock, causality) */
};

/* What a claim may take off the parent's measurement m (ns): issue 29's
 * max(1 % of m, 2 us). Pure. */
#define KBH_GUARD_ALLOW_NS 2000ull
uint64_t kbh_guard_allowance(uint64_t m_ns);

/* The sample of a window, with handoff_ns the calibrated overhead of a
 * request that does no work: m = (t_seen - t_go) - handoff_ns (0 at
 * least), and *sample_ns = max(t1 - t0, m - kbh_guard_allowance(m)) (OK
 * when the claim is the larger, CLAMPED otherwise); FORGED when [t0, t1]
 * is not inside [t_go, t_seen], *sample_ns = m. A claim above m is kept:
 * an honest child's handoff can only be slower than the calibrated one,
 * and a longer claim only costs the child. handoff_ns = UINT64_MAX: the
 * claim is the sample unless forged (the CUDA driver's check, and the CPU
 * driver's test-only ablation). Pure. */
enum kbh_guard_verdict kbh_guard_verify(const struct kbh_guard_window *w,
					uint64_t handoff_ns,
					uint64_t *sample_ns);

/* The handoff to use from the last n calibration overheads (gaps, n > 0;
 * not modified): the smallest. Why the minimum: nothing outside the
 * driver's own calibration child can make it larger except by slowing
 * every one of the n (a neighbour that does that slows the timed calls
 * alike), and a smaller h only raises the samples. 0 for n == 0. Pure. */
uint64_t kbh_guard_handoff(const uint64_t *gaps, size_t n);

/* The handoff overhead of a window, (t_seen - t_go) - (t1 - t0); 0 when
 * the claim is longer than the window. Pure. */
uint64_t kbh_guard_gap(const struct kbh_guard_window *w);

/* ---- the claim-within-slack rule ---------------------------------------- */
/* The rule before issue 29's: the claim was believed within a slack
 * calibrated before any user code ran, and many clamps flagged the case.
 * The CPU driver no longer scores with it (kbh_guard_slack still gives
 * its log the calibration's quantiles, and its test-only ablation 3 the
 * slack, harness_cpu.c); the Python harness's kbh_timing.py mirrors it,
 * and the CUDA driver flags runs with kbh_guard_too_many_clamped. */

/* A calibration window's handoff overhead as the slack is made from:
 * kbh_guard_gap less the time the kernel says both sides waited for a CPU
 * (w->waited), 0 at least. Why: a neighbour that loads the host's CPUs
 * while the harness calibrates would otherwise widen every later lie's
 * room (the slack is 2 x p95 of these); its load shows as run-queue wait,
 * which is taken off. Smaller gaps only make the slack tighter. Pure. */
uint64_t kbh_guard_cal_gap(const struct kbh_guard_window *w);

struct kbh_guard_cal {
	size_t n;                         /* windows used */
	uint64_t p50, p90, p95, p99, max; /* handoff overhead quantiles (ns) */
	uint64_t slack; /* the bound of the claim-within-slack rule */
};

/* Slack from the overheads of n calibration windows (gaps, sorted in place
 * by this call): 2 * p95 + 10 us, at least KBH_GUARD_SLACK_MIN_NS and at
 * most KBH_GUARD_SLACK_MAX_NS. Why: an honest sample is clamped only when
 * its handoff took more than twice the 95th percentile seen at start (a
 * preemption or a deep sleep of a CPU; rare, and the clamp then costs it
 * little); p95 rather than p99 because with a hundred windows the 99th is
 * the largest, and one preemption by another process during calibration
 * would hand every liar milliseconds. A lying child gains at most `slack`
 * per sample -- hence also the cap: on a machine so loaded that handoffs
 * take longer, honest samples are clamped (to the parent's own measurement
 * minus the cap, i.e. they keep the load's noise) rather than cheaters
 * given more. 0, or -EINVAL for n == 0. Pure. */
#define KBH_GUARD_SLACK_MIN_NS 10000ull
#define KBH_GUARD_SLACK_MAX_NS 1000000ull
int kbh_guard_slack(uint64_t *gaps, size_t n, struct kbh_guard_cal *out);

/* 1 when a window's overhead exceeds slack_ns even after taking off the
 * time the kernel says the two sides waited for a CPU (w->waited): a clamp
 * that load does not explain. Only for deciding whether to flag a run: the
 * sample itself stays clamped, because a child can make the parent wait
 * (by keeping every core busy) and must not gain from it. Pure. */
int kbh_guard_unexplained(const struct kbh_guard_window *w, uint64_t slack_ns);

/* Of n recorded samples (under this rule), how many are
 * flagged (flag[i] != 0: a clamp kbh_guard_unexplained could not explain)
 * AND below the median of all n. Why the median: a clamp can only lower a
 * sample below the truth when the claim was short, and a clamp caused by
 * a late handoff records (t_seen - t_go) - slack = claim + (gap - slack),
 * i.e. more than the child's honest claim, so on an honest run clamped
 * samples land in the upper half (a preemption of a VM's vCPU, a deep
 * C-state exit, none of which the kernel's run-queue accounting sees:
 * such spikes of over 1 ms flagged 3 of 6 honest runs on a 16-vCPU host).
 * A liar gains only from clamps that record less than it really took:
 * lying on every call puts half its samples below the median; lying only
 * on its slow calls can pull those no lower than the median unseen.
 * scratch: n elements (the samples are copied and sorted there). 0 for
 * n == 0. Pure. */
uint64_t kbh_guard_gainful(const uint64_t *sample, const unsigned char *flag,
			   size_t n, uint64_t *scratch);

/* 1 when `clamped` of `n` samples is too many for an honest run: more than
 * 2 + n/50 (a few preemptions of the parent are normal; a child that
 * claims short times is clamped on nearly every sample). Pass the count of
 * clamps that could have helped the child (kbh_guard_gainful). Pure. */
int kbh_guard_too_many_clamped(uint64_t clamped, uint64_t n);

#if defined(__GNUC__)
#pragma GCC visibility pop
#endif

#ifdef __cplusplus
}
#endif

#endif
