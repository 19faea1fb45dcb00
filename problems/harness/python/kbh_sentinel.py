"""kbh_sentinel: the parent's own account of a timed call on an NVIDIA GPU.

Used when KBH_SENTINEL=1 (not yet the default: README.md, "The sentinel,
not yet the default", says what the H100 showed and what is left).

The CUDA harness's sentinel (../cuda/README.md, "The sentinel"; the
kernel is ../cuda/kbg_sent.cuh, loaded here as kbh_sentinel.ptx through
the driver API) and its arithmetic (../cuda/kbg_model.c, kbg_time_*),
written again in Python for this harness's parent. The two must agree:
tests/pyharness/sentinel_model.py runs both on the same numbers.

In short: kernels of different processes' contexts never run at once on
an NVIDIA GPU, they time-slice. A one-block kernel of the parent's that
reads the global timer in a loop sees every turn of the child's context
as a jump, and while it runs the child's work cannot start before the
slice (about 2.4 ms) expires. So:

  watch    runs from the end of one call to the child's "launched" of the
           next: any turn of the child's before "go" (a head start) is
           charged to the next call; a jump after "go" breaks the hold;
  release  when the child says "launched" (a word in shared memory), or
           release_ns after "go" whichever comes first, the watch ends,
           noting the device time (rel_dev);
  probe    launched behind it, starts when the child's context lets go of
           the GPU (back_dev) and watches until the child says "done".

A call's sample is back_dev - rel_dev less an empty call's (the device
path), or the parent's clock from the release to "done" (the host path:
calls that synchronise inside custom_kernel, calls longer than a slice,
a probe that saw a later turn of the child's context). The child's own
event time refines it by at most max(1 %, 2 us) (score()).
"""

import ctypes
import mmap
import time

GAP_NS = 20000               # smallest jump counted as another context's
WAIT_NS = 5_000_000_000      # a sentinel that does not start or end: fault
PROBE_TRIES = 4
PROBE_IDLE_NS = 20000

# kbg_model.c's constants
SLICE_MARGIN_NS = 30e3
SWITCH_MARGIN_NS = 50e3
CHARGE_MARGIN_NS = 10e3
UNCAL_TURN_NS = 100e3
LAUNCH_MARGIN_NS = 20e3
RELEASE_MAX_NS = 500e3
ALLOW_NS = 2e3
ALLOW_REL = 0.01
# this harness's release (Timer.hold)
WAKE_MARGIN_NS = 50e3
LAUNCH_MAX_NS = 1e6
# the armed handshake (Timer.arm): how long the parent waits for "armed"
ARM_MAX_NS = 2e9

# the shared page's words: the child writes the first four, the parent
# the last
W_STARTED, W_DONE, W_LAUNCHED, W_ARMED, W_GO = range(5)
N_WORDS = 5

DEVICE, HOST, HOST_GO = 0, 1, 2
PATH_NAMES = ("device", "host", "host-go")


class SentinelStuck(Exception):
    """A sentinel kernel did not start or end (device or driver fault)."""


# ---- the arithmetic (kbg_model.c) --------------------------------------

class TCall:
    """One timed call's numbers (kbg_model.h, struct kbg_tcall)."""
    __slots__ = ("t_go", "t_rel", "t_seen", "t_probe", "rel_dev", "back_dev",
                 "probe_dev", "watch_dev", "outside_ns", "p_charge_ns",
                 "age_ns", "p_watch", "broken",
                 "t_start")   # this harness's: "started" seen (0: not)

    def __init__(self, **kw):
        for k in self.__slots__:
            setattr(self, k, kw.get(k, 0))


class TCal:
    """Calibration from empty calls (struct kbg_tcal)."""
    __slots__ = ("dev_ns", "rel_ns", "go_ns", "probe_ns", "short_ns",
                 "tail_ns", "dprobe_ns", "wgap_ns", "launch_ns")

    def __init__(self, **kw):
        for k in self.__slots__:
            setattr(self, k, float(kw.get(k, 0.0)))


def _pos(a, b):
    return float(a - b) if a > b else 0.0


def turn_ns(cal):
    return cal.dev_ns - SWITCH_MARGIN_NS if cal.dev_ns > SWITCH_MARGIN_NS \
        else UNCAL_TURN_NS


def _switched(cal, c):
    return bool(c.back_dev) and _pos(c.back_dev, c.rel_dev) >= turn_ns(cal)


def release_ns(cal, margin=LAUNCH_MARGIN_NS):
    t = cal.launch_ns + margin
    return t if cal.launch_ns > 0 and t < RELEASE_MAX_NS else RELEASE_MAX_NS


def switch_ns(cal):
    return cal.dev_ns - CHARGE_MARGIN_NS if cal.dev_ns > CHARGE_MARGIN_NS \
        else 0.0


def path(cal, c):
    if c.broken:
        return HOST_GO
    if (_switched(cal, c) and c.p_watch and c.p_charge_ns == 0 and
            _pos(c.back_dev, c.rel_dev) < cal.short_ns):
        return DEVICE
    return HOST


def end(cal, c):
    late = _pos(c.t_probe, c.t_seen) if c.t_probe else 0.0
    slack = cal.dprobe_ns if _switched(cal, c) else cal.probe_ns
    return c.t_seen + int(late - slack) if late > slack else c.t_seen


def late_work(cal, c):
    if not c.watch_dev or not c.probe_dev:
        return 0.0
    gap = _pos(c.watch_dev, c.probe_dev)
    if gap < cal.wgap_ns + turn_ns(cal):
        return 0.0
    gap -= cal.wgap_ns + switch_ns(cal)
    return gap if gap > 0 else 0.0


def sample(cal, c):
    """(ns, path): the parent's measurement of call c."""
    p = path(cal, c)
    if p == DEVICE:
        s = _pos(c.back_dev, c.rel_dev) - cal.dev_ns
    elif p == HOST:
        s = _pos(end(cal, c), c.t_rel) - (
            cal.dev_ns + cal.tail_ns if _switched(cal, c) else cal.rel_ns)
    else:
        s = _pos(end(cal, c), c.t_go) - cal.go_ns
    s += float(c.outside_ns) + late_work(cal, c)
    return (s if s > 0 else 0.0), p


def allowance(m):
    return m * ALLOW_REL if m * ALLOW_REL > ALLOW_NS else ALLOW_NS


def score(m, claim, forged):
    """The claim where it lies in [m - allowance(m), m], else the nearer
    end; m for a forged claim or one that is not a number."""
    if forged or claim != claim or claim >= m:
        return m
    lo = m - allowance(m)
    if claim < lo:
        return lo if lo > 0 else 0.0
    return claim


def _quantile(v, q):
    v = sorted(v)
    return v[int((len(v) - 1) * q)]


def calibrate(dev, host, slice_ns, spin_ns, launch_q=0.5):
    """A TCal from empty calls through the device path (dev) and the host
    path (host), and the time-slice test's back_dev - rel_dev (slice_ns)
    for a call of spin_ns; None when no device-path call waited for the
    child's context or there is no host-path call. launch_q: the quantile
    of an empty call's launch that release_ns() adds its margin to (the C
    driver's median, 0.5; this harness's child wakes less evenly)."""
    dev = [c for c in dev if _pos(c.back_dev, c.rel_dev) >= UNCAL_TURN_NS]
    if not dev or not host:
        return None
    out = TCal()
    out.dev_ns = _quantile([_pos(c.back_dev, c.rel_dev) for c in dev], 0.5)
    out.tail_ns = _quantile([_pos(c.t_seen, c.t_rel) -
                             _pos(c.back_dev, c.rel_dev) for c in dev], 0.5)
    out.dprobe_ns = _quantile([_pos(c.t_probe, c.t_seen) if c.t_probe
                               else 0.0 for c in dev], 0.9)
    out.wgap_ns = _quantile([_pos(c.watch_dev, c.probe_dev)
                             if c.watch_dev and c.probe_dev else 0.0
                             for c in dev], 0.5)
    out.launch_ns = _quantile([_pos(c.t_rel, c.t_go) for c in dev],
                              launch_q)
    out.probe_ns = _quantile([_pos(c.t_probe, c.t_seen) if c.t_probe
                              else 0.0 for c in host], 0.9)
    out.rel_ns = _quantile([_pos(end(out, c), c.t_rel) for c in host], 0.5)
    out.go_ns = _quantile([_pos(end(out, c), c.t_go) for c in host], 0.5)
    if 0 < slice_ns < spin_ns:
        out.short_ns = slice_ns - max(slice_ns / 100, SLICE_MARGIN_NS)
    else:
        out.short_ns = spin_ns / 2
    return out


# ---- the kernel (kbg_sent.cuh) ------------------------------------------

_u32, _u64 = ctypes.c_uint32, ctypes.c_uint64


class Rec(ctypes.Structure):
    """struct kbg_sent_rec (../cuda/kbg_dev.h)."""
    _fields_ = [("start_ns", _u64), ("end_ns", _u64), ("pre_gap_ns", _u64),
                ("pre_charge_ns", _u64), ("post_gap_ns", _u64),
                ("first_gap_ns", _u64), ("pre_gaps", _u32),
                ("broken", _u32), ("early", _u32), ("started", _u32),
                ("ended", _u32)]


class _Ctl(ctypes.Structure):
    """struct kbg_sent_ctl (../cuda/kbg_sent.cuh)."""
    _fields_ = [("release", _u32), ("go", _u32), ("pad", _u32 * 14),
                ("rec", Rec * 2)]


class Kernel:
    """The sentinel kernel in the parent's context (kbg_dev.h's
    kbg_sent_*): launch, go, release, started, ended, wait."""

    def __init__(self, drv, ptx):
        self.drv = drv
        drv.make_current()
        self.fn = drv.load_function(ptx, "kbh_sentinel")
        # The watch asks for all the shared memory a block may have, so
        # that no block of the parent's own kernels shares its SM.
        import kbh_cuda
        smem = drv.attribute(kbh_cuda.ATTR_MAX_SHARED_PER_BLOCK_OPTIN)
        self.smem = smem if smem > 0 and \
            drv.set_max_dynamic_shared(self.fn, smem) == 0 else 0
        self.stream = drv.stream()
        host, self.dev = drv.host_mapped(ctypes.sizeof(_Ctl))
        self.ctl = _Ctl.from_address(host)
        self._rec_addr = [host + _Ctl.rec.offset + i * ctypes.sizeof(Rec)
                          for i in range(2)]
        self.seq = 0

    def launch(self, watch, not_before=0, sw_ns=0):
        """Launches sentinel number self.seq + 1 and returns it."""
        self.seq += 1
        args = [_u64(self.dev), _u32(self.seq), ctypes.c_int(watch),
                _u64(GAP_NS), _u64(int(not_before)), _u64(int(sw_ns))]
        self.drv.launch(self.fn, 1, 64, self.smem if watch else 0,
                        self.stream, args)
        return self.seq

    def go(self, seq):
        self.ctl.go = seq

    def release(self, seq):
        self.ctl.release = seq

    def _read(self, seq, field):
        r = self.ctl.rec[seq & 1]
        if getattr(r, field) != seq:
            return None
        return Rec.from_buffer_copy(
            ctypes.string_at(self._rec_addr[seq & 1], ctypes.sizeof(Rec)))

    def started(self, seq):
        return self._read(seq, "started")

    def ended(self, seq):
        return self._read(seq, "ended")

    def wait(self, seq, ended):
        """The record once sentinel seq has started (ended); raises
        SentinelStuck after WAIT_NS."""
        t0 = time.monotonic_ns()
        read = self.ended if ended else self.started
        while True:
            r = read(seq)
            if r is not None:
                return r
            if time.monotonic_ns() - t0 > WAIT_NS:
                raise SentinelStuck(
                    "the harness's sentinel kernel did not %s within %.0f s "
                    "(device or driver fault)"
                    % ("end" if ended else "start", WAIT_NS / 1e9))


# ---- a timed call (../cuda/kbg_parent.cpp, kbg__timed_request) ----------

class Timer:
    """The sentinel's side of timed CALLs on an NVIDIA GPU: the watch that
    holds the GPU between calls, the release, the successor and end
    probes. words: the shared page's 32-bit words the child writes (0:
    "started", 1: "done", 2: "launched"; the child's, so only ever a
    trigger).

    The release differs from the C driver's, whose child says "launched"
    within microseconds: this child wakes from SIGCONT and a socket in
    60-250 us, and a Python call's launches take 100-300 us more (H100
    host, bench/RESULTS.md). Released any sooner, the call's launches
    and the child's wake-up land in a host-path sample (15-60 % above
    the claim, several % apart from run to run there); held until
    "launched", the device path times it within about 1 % of its claim.
    So the hold ends at "launched", or when "started" has not come
    wake_ns + margin after "go" (wake_ns: an empty call's p90), or
    LAUNCH_MAX_NS after "started"; a call released by those is timed on
    the host path from the release. The price: host time up to
    wake_ns + margin + LAUNCH_MAX_NS per call that the sample does not
    see while the GPU is held, in which copies still run (a call that
    copies its inputs out, computes on the host and copies the result
    back within it is charged for the copies alone).
    reset_l2: the parent's persisting-L2 reset, which waits for its whole
    context and so runs only when no sentinel does."""

    def __init__(self, kernel, words, reset_l2):
        self.k = kernel
        self.words = words
        self.reset_l2 = reset_l2
        self.cal = TCal(short_ns=1e18)      # probes decide nothing yet
        self.watch_seq = self.watch_t0 = self.watch_dev = 0
        self.probe_seq = 0
        self.carry_ns = 0
        self.last_long = False
        self.renew_ns = 0
        self.force_host = False             # calibration's host path
        self.margin = WAKE_MARGIN_NS
        self.wake_ns = RELEASE_MAX_NS       # "started" after "go" (p90)
        self.launch_ns = LAUNCH_MAX_NS      # "launched" after "started"
        self.hold_timeouts = self.early_probes = self.outside_calls = 0
        # The armed handshake: the parent continues the child before
        # "go", the child says "armed" and spins on the page until "go",
        # so "go" finds it awake (KBH_SENT_SPIN=1; arm())
        self.spin = False
        self.arm_timeouts = 0

    def watching(self):
        return bool(self.watch_seq or self.probe_seq)

    def ensure_watch(self):
        """Before staging: the reset of persisting lines, then a watch
        (none runs at a case's first call)."""
        if not self.watch_seq:
            self.reset_l2()
            self._watch_start()

    def _watch_start(self):
        seq = self.k.launch(1, 0, switch_ns(self.cal))
        r = self.k.wait(seq, False)
        self.watch_seq, self.watch_t0 = seq, time.monotonic_ns()
        self.watch_dev = r.start_ns

    def stop(self):
        """Ends the watch (a case's end; before anything that waits for
        the whole context)."""
        seq = self.watch_seq
        if seq:
            self.watch_seq = 0
            self.k.release(seq)
            r = self.k.wait(seq, True)
            self.outside_calls += r.pre_gaps > 0
        self.carry_ns = 0

    def _renew(self):
        old = self.watch_seq
        seq = self.k.launch(1, 0, switch_ns(self.cal))
        self.k.release(old)
        r = self.k.wait(old, True)
        n = self.k.wait(seq, False)
        self.carry_ns += r.pre_charge_ns
        self.outside_calls += r.pre_gaps > 0
        self.watch_seq, self.watch_t0 = seq, time.monotonic_ns()
        self.watch_dev = n.start_ns

    def arm(self, seq, poll):
        """The armed handshake, after the child was continued and before
        before_go(): spins until the child says "armed" (it has read the
        request and spins until "go"), poll() says the reply is there or
        it died, or ARM_MAX_NS passed. What the child does meanwhile on
        the GPU, the watch charges to this call as a head start; what it
        does on the host it could do before any call (its inputs live on
        the device). Returns whether it armed."""
        words, i = self.words, 0
        t = time.monotonic_ns()
        while words[W_ARMED] != seq:
            i += 1
            if (i & 63) == 0:
                if poll():
                    return False
                if time.monotonic_ns() - t > ARM_MAX_NS:
                    self.arm_timeouts += 1
                    return False
        return True

    def go_word(self, seq):
        self.words[W_GO] = seq

    def before_go(self):
        """Right before the request goes out: a TCall for it."""
        if self.renew_ns and time.monotonic_ns() - self.watch_t0 > \
                self.renew_ns:
            self._renew()
        tc = TCall(age_ns=time.monotonic_ns() - self.watch_t0)
        self.k.go(self.watch_seq)
        return tc

    def hold(self, tc, seq, poll):
        """After "go" (tc.t_go set): releases the hold once the child
        says it launched, its work broke the hold, poll() says the reply
        is there (or the child died), or release_ns passed; then the
        successor probe."""
        hold = self.watch_seq
        limit = tc.t_go + self.wake_ns + self.margin
        words, rec, timed_out, i = self.words, None, False, 0
        while words[W_LAUNCHED] != seq:
            if not tc.t_start and words[W_STARTED] == seq:
                tc.t_start = time.monotonic_ns()
                limit = tc.t_start + self.launch_ns
            rec = self.k.ended(hold)
            if rec is not None:
                break
            i += 1
            if (i & 63) == 0:
                if poll():
                    break
                if time.monotonic_ns() > limit:
                    self.hold_timeouts += 1
                    timed_out = True
                    break
        tc.t_rel = time.monotonic_ns()
        self.k.release(hold)
        self.watch_seq = 0
        if rec is None:
            rec = self.k.wait(hold, True)
        tc.rel_dev = rec.end_ns
        tc.broken = int(rec.broken)
        tc.outside_ns = rec.pre_charge_ns + self.carry_ns
        self.carry_ns = 0
        self.outside_calls += rec.pre_gaps > 0
        if not tc.broken and not self.last_long and not timed_out and \
                not self.force_host:
            self._successor(tc)

    def _successor(self, tc):
        not_before = tc.rel_dev + int(turn_ns(self.cal))
        for _ in range(PROBE_TRIES):
            seq = self.k.launch(2, not_before, switch_ns(self.cal))
            r = self.k.wait(seq, False)
            tc.back_dev = r.start_ns
            if not r.early:
                self.probe_seq = seq
                return
            self.k.wait(seq, True)
            self.early_probes += 1
            t = time.monotonic_ns()
            while time.monotonic_ns() - t < PROBE_IDLE_NS:
                pass

    def until_done(self, seq, poll):
        """Spins until the child says "done" (or poll() says the reply is
        there, or it died); returns the parent's clock then."""
        words, i = self.words, 0
        while words[W_DONE] != seq:
            i += 1
            if (i & 63) == 0 and poll():
                break
        return time.monotonic_ns()

    def end_probe(self, tc):
        """After "done" (or the reply, or the child's death): the
        watching probe ends (it would hold the parent's context for ever,
        whatever the child did); where none watched, an end probe, which
        starts once the child's context lets go of the GPU (work left
        after "done" delays it). Right after "done", before the parent
        reads the reply and stops the child: stopping takes this parent
        hundreds of us to milliseconds, which would read as work left."""
        seq = self.probe_seq
        if seq:
            self.probe_seq = 0
            self.k.release(seq)
            r = self.k.wait(seq, True)
            tc.t_probe = time.monotonic_ns()
            tc.probe_dev = r.end_ns
            tc.p_charge_ns = r.pre_charge_ns
            tc.p_watch = 1
        else:
            seq = self.k.launch(0)
            r = self.k.wait(seq, False)
            tc.t_probe = time.monotonic_ns()
            tc.probe_dev = r.start_ns

    def after(self, tc):
        """The child stopped, its reply read: the reset, the next
        watch."""
        s, _ = sample(self.cal, tc)
        self.last_long = bool(tc.broken) or \
            s - tc.outside_ns >= self.cal.short_ns
        self.reset_l2()
        self._watch_start()
        tc.watch_dev = self.watch_dev


def open_timer(drv, ptx_path):
    """The Timer of a timed run and the shared page's descriptor, which
    the child gets with HELLO. Raises OSError, kbh_cuda.CudaError (the
    driver cannot load the PTX: older than the nvcc that made it)."""
    import kbh_slots
    with open(ptx_path, "rb") as f:
        ptx = f.read()
    kernel = Kernel(drv, ptx)
    fd, page = kbh_slots.sealed_memfd("kbh-sentinel", mmap.PAGESIZE)
    words = (ctypes.c_uint32 * N_WORDS).from_buffer(page)
    t = Timer(kernel, words, drv.reset_persisting_l2)
    t.page = page
    return t, fd
