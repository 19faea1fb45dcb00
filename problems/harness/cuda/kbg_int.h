/* kbg_int.h: the GPU timing driver's internal header.
 *
 * Internal to the driver (kbg_main.cu, kbg_child.cpp, kbg_parent.cpp,
 * kbg_case.cpp): problems include kbg.h (and kbg_api.h through it), never
 * this. What the driver's files share: its constants, the step results,
 * the request protocol between the parent and the child, the child's and
 * the parent's state, the error macros, and every function one file
 * calls in another (external linkage, hidden visibility, prefix kbg__;
 * each is described where it is defined). kbg_main.cu's header comment
 * is the theory of operation in short, README.md the whole of it.
 *
 * Thread-safety: none; each of the two processes runs the driver on one
 * thread.
 */
#ifndef KBG_INT_H
#define KBG_INT_H

#include "guard.h"
#include "kbg.h"
#include "kbg_api.h"
#include "kbg_model.h"
#include "kbg_sys.h"

#include <stddef.h>
#include <stdint.h>

#pragma GCC visibility push(hidden)

/* Every name of the driver's: out of the way of a problem's reference.cu,
 * which is linked into the same executable. */
namespace kbg_drv
{

/* ---- constants ---------------------------------------------------------- */

const int kSlots = 2;
const int kMaxSets = 8;
const unsigned kWatchdogS = 1200;
const int kBaselineGaps = 7;
/* The longest the hold waits for the host to enqueue a timed call (a
 * call that blocks on the device inside custom_kernel waits this long,
 * then runs as if there were no hold). */
const uint64_t kHoldTimeoutNs = 1000000;
/* Address space reserved for the guard's arena (it holds one reply
 * record; the guard wants at least 64 MiB of address space). */
const size_t kArenaMax = (size_t)64 << 20;
/* Size granule of every buffer exported to the child (README.md, "fresh
 * inputs, rotated buffers"). */
const size_t kIpcGranule = (size_t)2 << 20;
/* Empty requests timed before any user code (system.guard). */
const int kCalCalls = 24;
/* Device time may exceed the parent's window by this much before the
 * claim counts as forged: the event timer and CLOCK_MONOTONIC are
 * different clocks. Generous on purpose: a claim longer than the window
 * only ever costs the submission, so the tolerance gives nothing away. */
const double kClockTolRel = 1e-3;
const double kClockTolNs = 1000.0;

/* Step results: 0 ok; KBG_FAIL the submission failed (ctx.msg says why);
 * KBG_CRASH the child died or exited after user code ran (ctx.msg says
 * how); KBG_INFRA a platform error (ctx.msg says which). */
enum { KBG_OK = 0, KBG_FAIL = 1, KBG_CRASH = 2, KBG_INFRA = -1 };

/* ---- the request protocol (parent <-> child) -------------------------- *
 *
 * Every argument starts with the request's sequence number; the child
 * copies it into its reply, so a reply left over from an earlier request
 * (or none at all: the parent fills the record with 0xFF bytes before
 * each request) is told apart. */
enum : uint32_t {
	OP_INIT =
		KBH_GUARD_OP_USER, /* context, events, hold; before user code */
	OP_OPEN,                   /* map the case's work slots */
	OP_CALL,                   /* the timed region */
	OP_BASELINE,               /* end->tail gap with no work */
	OP_PROFILE,                /* cudaProfilerStart (flag 1) / Stop (0) */
	OP_CLOSE,                  /* unmap the work slots */
};

/* Where in the child a CUDA error happened (reply.where); the parent
 * names it (kWhere, kbg_parent.cpp). 0: no error. */
enum : uint32_t {
	W_NONE = 0,
	W_INIT,
	W_OPEN,
	W_ARGS,
	W_START,
	W_END,
	W_RUN,
	W_TAIL,
	W_LEFT,
	W_EVENTS,
	W_BASELINE,
	W_CLOSE,
	W_COUNT
};

/* The child's answer, in the guard's arena (the parent allocates it,
 * the child writes it before posting "done", the parent copies it once
 * while the child is stopped). Every field is a claim. */
struct kbg_reply {
	uint64_t seq;
	double dev_ns;           /* CALL: event time start -> end */
	double gap_ns;           /* CALL: end -> tail; BASELINE: its median */
	int32_t err;             /* cudaError_t of the first failure, or 0 */
	uint32_t where;          /* W_* of it */
	uint32_t hold;           /* INIT: hold set up; CALL: this call held */
	uint32_t hold_timed_out; /* CALL: the hold ended by its timeout */
	uint32_t sticky;         /* after an error: the context stays broken */
	uint32_t pad;
	/* CALL: the request's seq, stored by the child as soon as
	 * custom_kernel has returned (before it synchronises); the parent
	 * reads it while the call runs, to release its hold. */
	uint64_t launched;
};

struct op_init {
	uint64_t seq;
	uint64_t reply; /* address of the reply record (same in both) */
	uint32_t hold;  /* set up the hold */
	uint32_t pad;
};

struct op_open {
	uint64_t seq;
	uint32_t n_in, n_out, nslots, pad;
	cudaIpcMemHandle_t in[kSlots][KBG_MAX_BUFS];
	cudaIpcMemHandle_t out[kSlots][KBG_MAX_BUFS];
};

struct op_call {
	uint64_t seq;
	uint32_t slot;
	uint32_t hold;  /* hold this call */
	uint32_t empty; /* skip problem->call (calibration): 1 runs an
			 * empty kernel instead, 2 kbg_dev_spin(spin_ns) */
	uint32_t params_size;
	uint32_t no_tail; /* skip the tail event (the sentinel times the
			   * call: "done" right after the synchronize) */
	uint64_t spin_ns;
	alignas(16) unsigned char params[KBG_PARAMS_MAX];
};

struct op_flag {
	uint64_t seq;
	uint32_t flag;
	uint32_t pad;
};

static_assert(sizeof(struct op_open) <= KBH_GUARD_ARG_MAX, "OPEN too big");
static_assert(sizeof(struct op_call) <= KBH_GUARD_ARG_MAX, "CALL too big");

/* ---- the child's state (kbg_child.cpp) ----------------------------------- */

struct child {
	const struct kbg_problem *p;
	struct kbg_reply *reply;
	cudaEvent_t ev_start, ev_end, ev_tail;
	int hold;
	unsigned hold_gen;
	int open;
	uint32_t nslots, n_in, n_out;
	void *in[kSlots][KBG_MAX_BUFS];
	void *out[kSlots][KBG_MAX_BUFS];
	alignas(16) unsigned char params[KBG_PARAMS_MAX];
};

/* ---- the parent's state ------------------------------------------------- */

/* Pristine inputs on the device; for problems with data sets made once
 * per case (layout.fresh == 0) also the set's expected result, kept in
 * host memory: never on the device while the submission runs. */
struct data_set {
	void *in[KBG_MAX_BUFS];
	void *exp_host; /* cudaMallocHost, exp_bytes; NULL for fresh data */
	uint64_t seed;
};

/* What the submission gets: exported to the child (the handles). */
struct work_slot {
	void *in[KBG_MAX_BUFS];
	void *out[KBG_MAX_BUFS];
	cudaIpcMemHandle_t in_h[KBG_MAX_BUFS];
	cudaIpcMemHandle_t out_h[KBG_MAX_BUFS];
};

struct prepared {
	struct kbh_case c;
	struct kbg_layout lay;
	struct kbg_limits lim;
	uint64_t seed;
	alignas(16) unsigned char params[KBG_PARAMS_MAX];
};

struct sample {
	double ns;       /* the score: without the sentinel the child's event
			* time start -> end (or the window, when forged);
			* with it, kbg_time_score of meas_ns and the claim */
	double gap_ns;   /* the child's event time end -> tail */
	double win_ns;   /* the parent's window t_seen - t_go */
	int forged;      /* the claim does not fit the window */
	int unheld;      /* held, but the hold timed out: the start event is
			* not to be trusted, the sample not kept */
	double claim_ns; /* the child's event time (a claim, diagnostic) */
	enum kbg_tpath path; /* where ns came from (sentinel runs) */
	double outside_ns;   /* charged: the child's GPU work outside calls */
	double meas_ns;      /* the parent's measurement (sentinel runs) */
	int low_claim;       /* the claim was below the allowance */
};

struct ctx {
	enum kbh_mode mode;
	struct kbh_report *rep;
	const struct kbg_problem *p;
	struct kbg_devinfo dev;
	struct kbg_sys *sys;
	void *flush_buf;
	size_t flush_bytes;
	unsigned *sink;
	int called; /* a request that runs custom_kernel has been made */
	int hold;   /* timed calls are held (the child's INIT said so) */
	uint32_t hold_timeouts;     /* of the current case */
	uint32_t run_hold_timeouts; /* of the run: from the second, unheld */
	uint32_t forged; /* calls of the current case, warm-up included */
	/* The sentinel (README.md, "The sentinel"): on for
	 * timed modes; the watch running now (0: none), the calibration,
	 * whether the last call was long (its successor probe would land
	 * inside the next one), and per-case counts for the report. */
	int sent;
	uint32_t sent_seq, watch_seq;
	uint64_t watch_t0;  /* host clock when the watch was seen running */
	uint64_t watch_dev; /* device clock when it started */
	uint64_t renew_ns;  /* a watch older than this is renewed before "go" */
	uint64_t carry_ns;  /* charged outside time of renewed watches, for
			    * the next call */
	uint32_t probe_seq; /* the successor probe watching now (0: none) */
	struct kbg_tcal tcal;
	int last_long;
	uint32_t outside_calls, host_calls, early_probes;
	/* KBG_SAMPLE_LOG only: host clock when the last check ended and
	 * when the next call's staging was complete. */
	uint64_t ph_checked, ph_staged;
	char msg[1024];

	/* the child */
	struct kbh_guard *g;
	struct kbg_reply *reply; /* in the arena */
	uint64_t seq;
	int crashed;      /* it died after user code ran (msg says how) */
	int child_sticky; /* it reported a sticky error */
	int opened;       /* it has the current case's slots mapped */

	/* the case being run */
	struct prepared *cur;
	struct data_set sets[kMaxSets];
	int nsets;
	struct work_slot slots[kSlots];
	int nslots;
	void *scratch;
	/* The expected result of the current call, on the device only from
	 * after the call until its check: computed (fresh data) or copied
	 * from the set's host copy into it after the submission returned,
	 * zeroed again after the check. */
	void *exp;
	uint64_t ncalls;
	struct kbh_rng pick;
	/* Per-run randomness (getrandom in the parent after the split,
	 * before any user code): mixed into the seeds of every call but each
	 * case's first, so that no file, argument or call count tells a
	 * submission its future inputs. */
	uint64_t run_key;
};

/* KBG_TRY: a CUDA call that must succeed; on an error, returns its class
 * (kbg__blame, with `what` in x->msg). KBG_STEP: a step returning KBG_*;
 * anything but KBG_OK is returned as it is. */
#define KBG_TRY(x, expr, what)                                                 \
	do {                                                                   \
		cudaError_t e_ = (expr);                                       \
		if (e_ != cudaSuccess)                                         \
			return kbg__blame((x), e_, (what));                    \
	} while (0)

#define KBG_STEP(expr)                                                         \
	do {                                                                   \
		int r_ = (expr);                                               \
		if (r_ != KBG_OK)                                              \
			return r_;                                             \
	} while (0)

/* ---- across files ------------------------------------------------------- */

/* kbg_child.cpp: the child's side */
int kbg__child_op(void *ctx, uint32_t op, const void *arg, size_t size,
		  uint64_t *t0, uint64_t *t1);

/* kbg_parent.cpp: messages and error classes */
void kbg__msgf(struct ctx *x, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
int kbg__blame(struct ctx *x, cudaError_t e, const char *what);
int kbg__hook(struct ctx *x, int rc, const char *what);

/* kbg_parent.cpp: device and system information */
int kbg__init_device(struct ctx *x);
void kbg__report_system_start(struct ctx *x);
void kbg__report_system_end(struct ctx *x);

/* kbg_parent.cpp: requests to the child */
int kbg__child_request(struct ctx *x, uint32_t op, void *arg, size_t size,
		       const char *what, struct kbh_guard_window *w,
		       struct kbg_reply *r);
int kbg__claim_forged(const struct kbh_guard_window *w, double dev_ns);
int kbg__open_slots(struct ctx *x);
int kbg__close_slots(struct ctx *x);
int kbg__child_profile(struct ctx *x, int on);
int kbg__init_child(struct ctx *x);
int kbg__calibrate(struct ctx *x);
int kbg__timed_request(struct ctx *x, struct op_call *a, const char *what,
		       struct kbh_guard_window *w, struct kbg_reply *r,
		       struct kbg_tcall *tc);
int kbg__watch_start(struct ctx *x);
int kbg__watch_stop(struct ctx *x);
int kbg__load_submission(struct ctx *x);
void kbg__fail_all(struct ctx *x, const struct prepared *prep, size_t n);

/* kbg_case.cpp: cases and one call */
int kbg__prepare(const struct kbg_problem *p, enum kbh_mode mode,
		 const struct kbh_case *c, struct prepared *out, char *err,
		 size_t err_size);
int kbg__alloc_case(struct ctx *x, struct prepared *c, int nsets, int nslots,
		    int with_sets);
int kbg__make_set(struct ctx *x, int s);
int kbg__end_case(struct ctx *x, int rc);
int kbg__one_call(struct ctx *x, int check, struct sample *out);
int kbg__baseline_gap(struct ctx *x, double *base);

} // namespace kbg_drv

#pragma GCC visibility pop

#endif
