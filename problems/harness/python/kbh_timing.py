"""kbh_timing: statistics, the stopping rule, per-mode limits and the rules
that decide what a timed call's sample is (trusted parent only; pure).

The sample rule is the claim-within-slack rule the CPU harness scored
with before issue 29 (../guard.h, kbh_guard_slack and friends), with one
addition for the copy-out:

  The parent's window of a request is [t_go, t_seen]: its own clock right
  before it lets the child run and right after it has seen the reply (on a
  GPU, after its own probe op has also run: the device drained whatever the
  child left on it). The child claims host stamps t0 <= t1 <= t2 (t0..t1
  the call to custom_kernel, t1..t2 copying the result into the output
  slot) and `claim`, the call's time (CUDA events on a GPU, t1 - t0 on the
  CPU).

  forged   t0..t2 outside the window, out of order, or a claim longer than
           t1 - t0 (+0.1% + 1 us for two clocks): impossible for an honest
           child. The sample becomes the parent's lower bound (below) and
           the case is suspect.
  clamped  claim < window - slack - copy: the rest of the window is longer
           than the handoff (calibrated before any user code ran, `slack`)
           plus copying the result (measured by the parent itself on the
           case's output slot, `copy`). The sample becomes that bound:
           the shortest time the parent's own clock allows. Many clamps
           that the kernel's scheduling statistics do not explain, below
           the median sample, make the case suspect (gainful,
           too_many_clamped).
  ok       the sample is the claim.

So a child that lies (patched clocks, patched events, a patched harness),
that leaves its work for the copy (a lazy tensor) or for after the reply
(work left on a GPU stream: the probe waits for it) gains at most `slack`
per sample, and is flagged when it does so often.
"""

import math

# ---- running statistics ---------------------------------------------------


class Stats:
    """Welford's running mean and variance (harness.h kbh_stats)."""

    def __init__(self):
        self.n = 0
        self.mean = 0.0
        self.m2 = 0.0
        self.best = math.inf
        self.worst = 0.0

    def add(self, x):
        x = float(x)
        self.n += 1
        d = x - self.mean
        self.mean += d / self.n
        self.m2 += d * (x - self.mean)
        self.best = min(self.best, x)
        self.worst = max(self.worst, x)

    def std(self):
        return math.sqrt(self.m2 / (self.n - 1)) if self.n >= 2 else 0.0

    def err(self):
        return self.std() / math.sqrt(self.n) if self.n >= 2 else 0.0

    def rel_err(self):
        if self.n < 2 or self.mean <= 0:
            return math.inf
        return self.err() / self.mean


# ---- stopping rule and limits ---------------------------------------------

CONTINUE, CONVERGED, MAX_RUNS, TIME_CAP = range(4)
STOP_NAMES = ("continue", "converged", "max-runs", "time-cap")


class Limits:
    """One case's sampling limits in one mode."""

    def __init__(self, rel_err, min_runs, max_runs, max_ns, warmup_min,
                 warmup_max, warmup_ns):
        self.rel_err = rel_err
        self.min_runs = min_runs
        self.max_runs = max_runs
        self.max_ns = max_ns
        self.warmup_min = warmup_min
        self.warmup_max = warmup_max
        self.warmup_ns = warmup_ns


# Defaults per mode, those of the CUDA harness (cuda/kbg_model.c): 0.1%
# relative standard error; benchmark at least 10 samples, at most 400 or
# 2 s per case (overheads included: staging, flush, checks); leaderboard
# more, since its mean becomes a score; profile exactly 5 timed calls. Test
# mode makes one untimed call per case.
DEFAULT_LIMITS = {
    "test": dict(rel_err=0.001, min_runs=1, max_runs=1, max_ns=0,
                 warmup_min=0, warmup_max=0, warmup_ns=0),
    "benchmark": dict(rel_err=0.001, min_runs=10, max_runs=400,
                      max_ns=2000000000, warmup_min=2, warmup_max=10,
                      warmup_ns=30000000),
    "leaderboard": dict(rel_err=0.001, min_runs=20, max_runs=1000,
                        max_ns=3000000000, warmup_min=3, warmup_max=20,
                        warmup_ns=50000000),
    "profile": dict(rel_err=0.0, min_runs=5, max_runs=5,
                    max_ns=10000000000, warmup_min=2, warmup_max=2,
                    warmup_ns=0),
}

# The parent's watchdog per mode (s): inside the timeouts our task.yml
# files declare, so that a hang ends as exit 114 with the report so far
# rather than as a kill from outside.
DEFAULT_WATCHDOG_S = {"test": 110, "benchmark": 280, "profile": 280,
                      "leaderboard": 280}


def limits_for(mode, overrides=None, case=None):
    """The limits of a case: the mode's defaults, then the problem's
    overrides (problem.LIMITS[mode], a dict of Limits fields), then the
    case's keys min_runs, max_runs, max_ms (1..100000 runs, 1..600000 ms;
    not in profile mode). case is a kbh_report.Case or None. Raises
    ValueError (a bad case: exit 113)."""
    d = dict(DEFAULT_LIMITS[mode])
    for k, v in ((overrides or {}).get(mode) or {}).items():
        if k not in d:
            raise ValueError("unknown limit '%s' in the problem's LIMITS" % k)
        d[k] = v
    if case is not None and mode != "profile":
        v = case.u64("min_runs", 1, 100000, required=False)
        if v is not None:
            d["min_runs"] = v
        v = case.u64("max_runs", 1, 100000, required=False)
        if v is not None:
            d["max_runs"] = v
        v = case.u64("max_ms", 1, 600000, required=False)
        if v is not None:
            d["max_ns"] = v * 1000000
    if d["min_runs"] > d["max_runs"]:
        raise ValueError("min_runs %d exceeds max_runs %d"
                         % (d["min_runs"], d["max_runs"]))
    return Limits(**d)


HARNESS_KEYS = ("seed", "min_runs", "max_runs", "max_ms")


def stop_check(lim, st, elapsed_ns):
    """After each sample: converged (rel_err reached with >= min_runs), then
    max runs, then the time cap (with >= 2 samples, so std and err exist),
    else CONTINUE (harness.h kbh_stop_check)."""
    if st.n >= lim.min_runs and st.n >= 2 and st.rel_err() < lim.rel_err:
        return CONVERGED
    if lim.max_runs and st.n >= lim.max_runs:
        return MAX_RUNS
    if lim.max_ns and elapsed_ns >= lim.max_ns and st.n >= 2:
        return TIME_CAP
    return CONTINUE


# ---- what a timed call's sample is ----------------------------------------

OK, CLAMPED, FORGED = range(3)

# The copy-out allowance is the parent's own median copy time times this:
# room for the child's copy to be a little slower than the parent's
# without handing a liar more than a tenth of it.
COPY_MARGIN = 1.10

# The slack's bounds (slack()). The cap limits what a calibration made
# while the host was busy can hand a liar. On a GPU it is higher: each
# request crosses the two CUDA contexts twice (the child's call, then the
# parent's probe), and the driver switches between them on the device, so
# the handoff of an idle H100 is already 500-650 us at p50 and 650-750 us
# at p95 (bench/RESULTS.md, "The Python harness's handoff on the H100");
# 2 x p95 is about 1.4 ms there, and a 1 ms cap clamped honest samples and
# flagged honest runs.
SLACK_MIN_NS = 10000
SLACK_MAX_NS = 1000000
SLACK_MAX_CUDA_NS = 2000000


class Window:
    """One request as the parent saw it and as the child claimed it."""

    __slots__ = ("t_go", "t_seen", "t0", "t1", "t2", "claim", "waited",
                 "tcall")

    def __init__(self, t_go, t_seen, t0=0, t1=0, t2=0, claim=0.0, waited=0):
        self.t_go = t_go
        self.t_seen = t_seen
        self.t0 = t0
        self.t1 = t1
        self.t2 = t2
        self.claim = claim
        self.waited = waited   # run-queue wait of both sides (schedstat)
        self.tcall = None      # the sentinel's numbers (kbh_sentinel)

    def width(self):
        return max(0, self.t_seen - self.t_go)


def parts(ws):
    """Where the windows ws went, as medians in us: "go" (t_go to the
    child's t0: waking the child, reading the request), "host" (the call's
    host time its claim does not cover: launch and synchronize), "copy"
    (t1 to t2) and "back" (t2 to t_seen: the reply, waking the parent, its
    probe). For the log: it says which side a wide window comes from."""
    def med(xs):
        xs = sorted(xs)
        return xs[len(xs) // 2] / 1e3 if xs else 0.0
    return "go %.1f host %.1f copy %.1f back %.1f" % (
        med([w.t0 - w.t_go for w in ws]),
        med([max(0.0, w.t1 - w.t0 - w.claim) for w in ws]),
        med([w.t2 - w.t1 for w in ws]), med([w.t_seen - w.t2 for w in ws]))


def gap(w, copy_ns=0):
    """The part of the window the claim does not cover, less the copy
    allowance; 0 when the claim covers it all."""
    return max(0.0, w.width() - w.claim - copy_ns)


def cal_gap(w):
    """A calibration window's gap less the time both sides waited for a
    CPU (guard.h kbh_guard_cal_gap: a neighbour loading the host while
    the harness calibrates must not widen the slack)."""
    return max(0.0, gap(w) - w.waited)


def verify(w, slack_ns, copy_ns=0):
    """(verdict, sample_ns) for a timed call (see the module's doc)."""
    lower = max(0.0, w.width() - slack_ns - copy_ns)
    inside = w.t_go <= w.t0 <= w.t1 <= w.t2 <= w.t_seen
    if not inside or not (0 <= w.claim <= (w.t1 - w.t0) * 1.001 + 1000):
        return FORGED, lower
    if w.claim < lower:
        return CLAMPED, lower
    return OK, float(w.claim)


def unexplained(w, slack_ns, copy_ns=0):
    """A clamp that the time both sides spent waiting for a CPU does not
    explain (guard.h kbh_guard_unexplained). Only for flagging: the sample
    stays clamped, since a child can make the parent wait."""
    g = gap(w, copy_ns)
    return g > w.waited and g - w.waited > slack_ns


def slack(gaps, cap=SLACK_MAX_NS):
    """(slack_ns, quantiles) from the gaps of calibration requests made
    before any user code: 2 x p95 + 10 us, within [10 us, cap] (guard.h
    kbh_guard_slack says why p95 and why a cap; SLACK_MAX_CUDA_NS why
    another on a GPU)."""
    if not gaps:
        raise ValueError("no calibration gaps")
    g = sorted(gaps)
    n = len(g)
    q = {"p50": g[n // 2], "p90": g[(n - 1) * 9 // 10],
         "p95": g[(n - 1) * 95 // 100], "max": g[-1]}
    s = 2 * q["p95"] + 10000
    return min(max(s, SLACK_MIN_NS), cap), q


def gainful(samples, flags):
    """How many flagged samples (an unexplained clamp) lie below the median
    of all samples: the clamps that can have helped a liar (guard.h
    kbh_guard_gainful says why the median)."""
    if not samples:
        return 0
    med = sorted(samples)[len(samples) // 2]
    return sum(1 for s, f in zip(samples, flags) if f and s < med)


def too_many_clamped(clamped, n):
    """More than 2 + n/50 gainful clamps: not an honest run."""
    return clamped > 2 + n // 50
