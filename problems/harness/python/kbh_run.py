"""kbh_run: one run of the harness in the trusted parent: the problem's
cases, the modes, and one call from staging to verdict (kbh_eval.py's
theory of operation says how it fits together).
"""

import os
import statistics
import sys
import time

import kbh_guard
import kbh_peak
import kbh_report
import kbh_sentinel
import kbh_slots
import kbh_timing
import kbh_wire

PASS, FAIL, CRASH = "pass", "fail", "crash"

# Every fourth calibration request comes after the parent has idled
# IDLE_S and keeps the child busy IDLE_BUSY_NS (Run.calibrate says why).
IDLE_S = 0.025
IDLE_BUSY_NS = 10000000
# The sentinel's calibration (Run.calibrate_sentinel): empty calls per
# path, the time-slice test's sleep, and the quantile of an empty call's
# "launched" the release is set from (the C driver's median: this child
# wakes from SIGCONT and a socket less evenly).
SENT_CAL = 24
SPIN_NS = 4000000
SENT_LAUNCH_Q = 0.9
# KBH_SENT_LOG=N: the first N timed calls' numbers per case on stderr
_SENT_LOG = int(os.environ.get("KBH_SENT_LOG", "0") or 0)


class HarnessError(Exception):
    """Our fault (the problem's code, the device, the harness): exit 110."""


def log(msg):
    sys.stderr.write("harness: %s\n" % msg)
    sys.stderr.flush()


# ---- the problem's side of a case -----------------------------------------

class Prepared:
    """A validated case: its keys parsed by the problem, its seed and
    limits. Made for every case before anything runs (exit 113)."""

    def __init__(self, problem, case, mode, device_kind):
        allowed = set(kbh_timing.HARNESS_KEYS) | set(problem.KEYS)
        for k in case.kv:
            if k not in allowed:
                raise kbh_report.CaseError("unknown key '%s'" % k)
        self.case = case
        self.seed = case.u64("seed")
        parsed = {}
        optional = getattr(problem, "KEYS_OPTIONAL", ())
        for k, parse in problem.KEYS.items():
            if k not in case.kv:
                if k in optional:
                    continue
                raise kbh_report.CaseError("missing key '%s'" % k)
            try:
                parsed[k] = parse(case.kv[k])
            except ValueError as e:
                raise kbh_report.CaseError("'%s: %s': %s"
                                           % (k, case.kv[k], e))
        setup = getattr(problem, "setup", None)
        try:
            self.args = setup(parsed, device_kind) if setup else parsed
            self.limits = kbh_timing.limits_for(
                mode, getattr(problem, "LIMITS", None), case)
        except ValueError as e:
            raise kbh_report.CaseError(str(e))
        cost = problem.cost(self.args)
        self.cost = {"bytes": float(cost.get("bytes", 0)),
                     "flops": float(cost.get("flops", 0))}
        self.ops = cost.get("ops", "none")
        self.min_work = float(cost.get("min_work", 1.0))


class CaseRun:
    """One case's slots and calls."""

    def __init__(self, run, prep, nslots):
        self.run = run
        self.prep = prep
        self.ncalls = 0
        self.slots = None
        self.copy_ns = 0.0
        self.forged = 0
        self.reset_guard_stats()
        torch, p = run.torch, run.problem
        self.names = getattr(p, "INPUT_NAMES", None) or ()
        # data as the child builds it: kbh_slots' tree, its tensors the
        # slot arrays
        x, self.data, tensors, self.in_names, strides = \
            self._flat(self._generate(prep.seed))
        self.in_specs = [(tuple(t.shape), t.dtype, st)
                         for t, st in zip(tensors, strides)]
        self.inputs0 = (x, tensors)
        outs = p.outputs(prep.args)
        self.out_specs = [(tuple(s), d) for s, d in outs]
        if not self.out_specs:
            raise HarnessError("the problem declares no outputs")
        self.slots = run.device.slots(nslots, self.in_specs + self.out_specs)
        self.n_in = len(self.in_specs)
        self.raw = [[kbh_slots.raw(torch, t) for t in row]
                    for row in self.slots.tensors]
        for row in self.raw:     # fault every page in now, not in a call
            for r in row:
                r.fill_(0)

    def _generate(self, seed):
        return self.run.problem.generate(self.prep.args, seed,
                                         self.run.device.device)

    def _flat(self, x):
        """generate()'s data x as (data, tree, tensors, names, strides)
        (kbh_slots.flatten, kbh_slots.layout). A problem's data is a tuple
        of tensors and constants, the tensors made contiguous; with the
        problem's DATA_AS_IS, whatever kbh_slots.flatten takes, as made
        (upstream's: a bare tensor, dicts, permuted views). Tensors must
        be on the run's device."""
        torch = self.run.torch
        as_is = getattr(self.run.problem, "DATA_AS_IS", False)
        if not as_is:
            if type(x) is not tuple:
                raise HarnessError("generate() must return a tuple")
            x = tuple(v.contiguous() if isinstance(v, torch.Tensor) else v
                      for v in x)
        try:
            tree, tensors, names = kbh_slots.flatten(torch, x, self.names)
            if not as_is and any(kind not in ("t", "c")
                                 for kind, _ in tree[1]):
                raise ValueError("a tuple of tensors and constants only")
            strides = [kbh_slots.layout(t) for t in tensors]
        except ValueError as e:
            raise HarnessError("generate(): %s" % e)
        for t in tensors:
            if t.device.type != self.run.device.kind:
                raise HarnessError("generate() made a tensor on %s"
                                   % t.device)
        return x, tree, tensors, names, strides

    def reset_guard_stats(self):
        self.samples, self.flags, self.windows = [], [], []
        self.clamped = self.unexplained = 0
        self.max_gap = 0.0
        # the sentinel's (kbh_sentinel): medians and counts per case
        self.measured, self.claims = [], []
        self.host_path = self.outside = self.low_claims = 0

    def open_request(self):
        """The OPEN request's arguments and descriptors."""
        args = {"where": self.slots.open_args(), "arrays": self.slots.descs,
                "n_in": self.n_in, "data": self.data,
                "outputs": [(list(s), kbh_slots.dtype_name(d))
                            for s, d in self.out_specs],
                "promote": bool(getattr(self.run.problem, "OUTPUTS_PROMOTE",
                                        False))}
        return args, ([self.slots.fd] if self.slots.fd is not None else [])

    def measure_copy(self):
        """The parent's own time for the copy-out (kbh_timing)."""
        dev = self.run.device
        self.copy_ns = kbh_timing.COPY_MARGIN * sum(
            dev.copy_ns(t) for t in self.slots.tensors[0][self.n_in:])

    def close(self):
        if self.run.timer is not None:
            self.run.timer.stop()
        if self.slots is not None:
            self.raw = []
            self.slots.close()
            self.slots = None

    # ---- one call -----------------------------------------------------

    def call(self, timed, check=True):
        """Stages, calls, verifies. Returns (verdict, message, sample_ns);
        sample_ns is None for untimed calls."""
        run, torch = self.run, self.run.torch
        k = self.ncalls
        self.ncalls += 1
        if k == 0:
            (inputs, pristine), self.inputs0 = self.inputs0, None
        else:
            inputs, tree, pristine, _, strides = self._flat(self._generate(
                kbh_report.call_seed(self.prep.seed, run.run_key, k)))
            if tree != self.data:
                raise HarnessError("generate() changed its constants or "
                                   "the structure of its data between "
                                   "calls")
            if [(tuple(t.shape), t.dtype, st) for t, st in
                    zip(pristine, strides)] != self.in_specs:
                raise HarnessError("generate() changed shapes, dtypes or "
                                   "layouts between calls")
        timer = run.timer if timed else None
        if timer is not None:
            timer.ensure_watch()     # the GPU is held from here to "go"
        s = k % len(self.slots.tensors)
        row, raw = self.slots.tensors[s], self.raw[s]
        # Byte for byte, in memory order: any dtype, any dense layout.
        src_raw = [kbh_slots.raw(torch, t) for t in pristine]
        for dst, src in zip(raw, src_raw):
            dst.copy_(src)
        for r in raw[self.n_in:]:
            r.fill_(0xFF)       # NaN for floats: unwritten output fails
        if timed:
            run.device.flush()
        run.device.sync()
        try:
            w, rep = run.guard.request(kbh_wire.CALL,
                                       {"slot": s, "sent": timer is not None,
                                        "spin": timer is not None and
                                        timer.spin},
                                       probe=run.device.probe, timed=timed,
                                       timer=timer)
        except kbh_guard.ChildDied as e:
            return CRASH, ("custom_kernel crashed: the submission's process "
                           "%s during call %d (a crash, or an exit from the "
                           "submission)" % (e, k + 1)), None
        except kbh_wire.Malformed as e:
            return FAIL, ("the submission's process sent a malformed reply "
                          "(%s): was the harness's code in it changed?"
                          % e), None
        if rep.flags & kbh_wire.F_STICKY:
            run.sticky = True
        if rep.status != kbh_wire.ST_OK:
            return FAIL, rep.msg, None
        sample = None
        if timed:
            sample = self._verify(w)
        # INPUTS_WRITABLE (upstream's tasks, whose data may hold the output
        # buffer): writes into the inputs are allowed, since every call
        # restages them and the check sees the pristine copy only.
        writable = getattr(run.problem, "INPUTS_WRITABLE", False)
        for i, (r, want) in enumerate(zip([] if writable else raw, src_raw)):
            if not torch.equal(r, want):
                off = int((r != want).nonzero()[0][0])
                return FAIL, ("custom_kernel modified its input '%s' (first "
                              "changed byte at offset %d of %d); inputs are "
                              "read-only" % (self.in_names[i], off,
                                             r.numel())), None
        if not check:
            return PASS, "", sample
        p = run.problem
        expected = p.reference(self.prep.args, inputs)
        outs = row[self.n_in:]
        got = outs[0] if len(outs) == 1 else tuple(outs)
        ok, msg = p.check(self.prep.args, inputs, expected, got)
        del expected
        return (PASS, "", sample) if ok else (FAIL, msg, sample)

    def _verify(self, w):
        run = self.run
        if w.tcall is not None:
            return self._score(w)
        v, ns = kbh_timing.verify(w, run.slack, self.copy_ns)
        self.max_gap = max(self.max_gap, kbh_timing.gap(w, self.copy_ns))
        self.windows.append(w)
        flag = False
        if v == kbh_timing.FORGED:
            self.forged += 1
        elif v == kbh_timing.CLAMPED:
            self.clamped += 1
            flag = kbh_timing.unexplained(w, run.slack, self.copy_ns)
            self.unexplained += flag
        self.flags.append(flag)
        return ns

    def _score(self, w):
        """A sentinel-timed call's sample: the parent's measurement less
        the parent's own time for the copy-out (queued inside the timed
        work), refined by the child's claim within kbh_sentinel.score's
        allowance. A claim outside the window is forged (the case is
        suspect); the claim is otherwise never the score's source."""
        sent = kbh_sentinel
        tc = w.tcall
        m, path = sent.sample(self.run.timer.cal, tc)
        m = max(0.0, m - self.copy_ns / kbh_timing.COPY_MARGIN)
        forged = kbh_timing.verify(w, self.run.slack_cap)[0] == \
            kbh_timing.FORGED
        self.forged += forged
        self.windows.append(w)
        self.flags.append(False)
        self.measured.append(m)
        self.claims.append(w.claim)
        self.host_path += path != sent.DEVICE
        self.outside += tc.outside_ns > 0
        self.low_claims += w.claim < m - sent.allowance(m)
        if _SENT_LOG and len(self.measured) <= _SENT_LOG:
            log("sentinel: call %d %s: started %.1f us after go, released "
                "%.1f us after started, probe back %.1f us after the "
                "release (dev), measured %.1f us, claim %.1f us"
                % (len(self.measured), sent.PATH_NAMES[path],
                   (tc.t_start - tc.t_go) / 1e3 if tc.t_start else -1,
                   (tc.t_rel - tc.t_start) / 1e3 if tc.t_start else -1,
                   (tc.back_dev - tc.rel_dev) / 1e3 if tc.back_dev else -1,
                   m / 1e3, w.claim / 1e3))
        return sent.score(m, w.claim, forged)


def _quantile(v, q):
    v = sorted(v)
    return float(v[int((len(v) - 1) * q)]) if v else 0.0


# ---- the run --------------------------------------------------------------

class Run:
    def __init__(self, mode, problem, preps, report, torch, device, guard,
                 run_key):
        self.mode = mode
        self.problem = problem
        self.preps = preps
        self.rep = report
        self.torch = torch
        self.device = device
        self.guard = guard
        self.run_key = run_key
        self.failed = False
        self.crash = None         # how the child ended, for "crash:"
        self.sticky = False
        self.user_started = False
        self.slack_cap = kbh_timing.SLACK_MAX_CUDA_NS \
            if device.kind == "cuda" else kbh_timing.SLACK_MAX_NS
        self.slack = self.slack_cap
        self.timer = None         # kbh_sentinel.Timer (kbh_eval sets it)

    # ---- before user code ---------------------------------------------

    def calibrate(self):
        """The handoff slack from 100 empty requests made like timed calls
        (after a flush; busy 20 us, 300 us or 2 ms), before any user code
        runs, so the child cannot inflate it. Returns the system.guard
        text's timing part.

        Every fourth request comes after IDLE_S of the parent doing
        nothing and keeps the child busy IDLE_BUSY_NS, as a timed call
        comes after the parent has staged and checked a case for
        milliseconds and the parent then waits for the call: a CPU that
        has idled that long wakes more slowly (a VM's vCPU goes back to
        its host), which on the development VM made the child's wake-up
        150-190 us instead of 40 us and the parent's 70 us instead of 15.
        Calibrated without them, the slack fit back-to-back requests only
        and flagged honest runs."""
        busy = (20000, 300000, 2000000)
        ws = []
        dev = self.device
        for i in range(4 + 100):
            idle = i % 4 == 3
            b = IDLE_BUSY_NS if idle else busy[i % 3]
            args = {"busy_ns": b}
            if dev.kind == "cuda":
                args["cycles"] = dev.sleep_cycles(b)
            if idle:
                time.sleep(IDLE_S)
            dev.flush()
            dev.sync()
            w, r = self.guard.request(kbh_wire.CAL, args, probe=dev.probe,
                                      timed=True)
            if r.status != kbh_wire.ST_OK:
                raise HarnessError("calibration: %s" % r.msg)
            if kbh_timing.verify(w, self.slack_cap)[0] == \
                    kbh_timing.FORGED:
                raise HarnessError("calibration: the child's times do not "
                                   "fit the window (clock mismatch?)")
            if i >= 4:
                ws.append(w)
        self.slack, q = kbh_timing.slack([kbh_timing.cal_gap(w) for w in ws],
                                         self.slack_cap)
        log("guard: handoff p50=%.1fus p90=%.1fus p95=%.1fus max=%.1fus -> "
            "slack %.1fus (median us: %s)"
            % (q["p50"] / 1e3, q["p90"] / 1e3, q["p95"] / 1e3, q["max"] / 1e3,
               self.slack / 1e3, kbh_timing.parts(ws)))
        wins = sorted(w.width() for w in ws)
        return ("empty call: window p50 %.1f us, p95 %.1f us; slack %.1f us"
                % (wins[len(wins) // 2] / 1e3,
                   wins[(len(wins) - 1) * 95 // 100] / 1e3, self.slack / 1e3))

    def calibrate_sentinel(self):
        """The sentinel's calibration (kbh_sentinel.calibrate), before any
        user code: SENT_CAL empty calls on the device path, as many on the
        host path, and one whose kernel sleeps SPIN_NS (how soon the GPU's
        time slice lets a probe in). A call whose hold broke (the slice
        ran out while the watch held, and the empty call's work got in)
        is made again, up to 4 x SENT_CAL tries in all. Returns the
        system.sentinel text."""
        t, dev = self.timer, self.device
        devs, hosts, spin, tries = [], [], None, 0
        while len(devs) < SENT_CAL or len(hosts) < SENT_CAL or spin is None:
            on_dev = len(devs) < SENT_CAL
            test = not on_dev and len(hosts) >= SENT_CAL
            tries += 1
            if tries > 4 * SENT_CAL:
                raise HarnessError(
                    "calibrating the sentinel: the hold broke in %d of %d "
                    "calls with no user code (another process on the GPU?)"
                    % (tries - 1 - len(devs) - len(hosts), tries - 1))
            t.force_host = not on_dev and not test
            t.ensure_watch()
            dev.sync()
            w, r = self.guard.request(
                kbh_wire.CAL, {"busy_ns": 0, "sent": True, "spin": t.spin,
                               "cycles": dev.sleep_cycles(SPIN_NS)
                               if test else 0},
                timed=True, timer=t)
            if r.status != kbh_wire.ST_OK:
                raise HarnessError("calibrating the sentinel: %s" % r.msg)
            tc = w.tcall
            if tc.broken or (not t.force_host and not tc.back_dev):
                continue
            if on_dev:
                devs.append(tc)
            elif test:
                spin = tc
            else:
                hosts.append(tc)
        t.force_host = False
        t.stop()
        slice_ns = float(spin.back_dev - spin.rel_dev) \
            if spin.back_dev > spin.rel_dev else 0.0
        cal = kbh_sentinel.calibrate(devs, hosts, slice_ns, SPIN_NS,
                                     launch_q=SENT_LAUNCH_Q)
        if cal is None:
            raise HarnessError("calibrating the sentinel: no empty call's "
                               "probe waited for the child's context")
        t.cal = cal
        t.wake_ns = _quantile([c.t_start - c.t_go for c in devs + hosts
                               if c.t_start], SENT_LAUNCH_Q)
        t.renew_ns = int(cal.short_ns / 2)
        t.last_long = False
        t.hold_timeouts = t.early_probes = t.outside_calls = 0
        t.arm_timeouts = 0
        return ("device path overhead %.1f us, host path %.1f us (from go "
                "%.1f us), end probe p90 %.1f us, time slice test %.1f us "
                "(short calls below %.1f us), done %.1f us after the probe; "
                "the hold released at launched, or %.1f us after go "
                "(started p%d + %.1f us), or %.1f us after started; %s"
                % (cal.dev_ns / 1e3, cal.rel_ns / 1e3, cal.go_ns / 1e3,
                   cal.probe_ns / 1e3, slice_ns / 1e3, cal.short_ns / 1e3,
                   cal.tail_ns / 1e3, (t.wake_ns + t.margin) / 1e3,
                   SENT_LAUNCH_Q * 100, t.margin / 1e3,
                   t.launch_ns / 1e3,
                   "go to an armed child" if t.spin else
                   "go with SIGCONT"))

    # ---- the submission -----------------------------------------------

    def load(self):
        """LOAD in the child, "user-code: started" first. Returns None, or
        the message every case fails with (self.crash set when the child
        died loading it)."""
        self.rep.kv("user-code", "started")
        self.user_started = True
        try:
            _, r = self.guard.request(kbh_wire.LOAD, {})
        except kbh_guard.ChildDied as e:
            self.crash = "the submission's process %s while importing " \
                "submission.py" % e
            return "custom_kernel crashed: " + self.crash
        except kbh_wire.Malformed as e:
            return "the submission's process sent a malformed reply (%s)" % e
        if r.status != kbh_wire.ST_OK:
            return "cannot load the submission: %s" % r.msg
        return None

    def _all_failed(self, count, put, msg):
        self.failed = True
        count(len(self.preps))
        for i, p in enumerate(self.preps):
            put(i, "spec", p.case.spec)
            put(i, "status", "fail")
            put(i, "error", msg)

    def _open(self, prep, nslots, timed):
        """A CaseRun with its slots mapped in the child; (CaseRun, None) or
        (None or CaseRun, (verdict, message))."""
        c = CaseRun(self, prep, nslots)
        args, fds = c.open_request()
        try:
            _, r = self.guard.request(kbh_wire.OPEN, args, fds=fds)
        except kbh_guard.ChildDied as e:
            return c, (CRASH, "custom_kernel crashed between calls: the "
                       "submission's process %s" % e)
        except kbh_wire.Malformed as e:
            return c, (FAIL, "the submission's process sent a malformed "
                       "reply (%s)" % e)
        if r.status != kbh_wire.ST_OK:
            return c, (FAIL, "the submission's process could not map the "
                       "work buffers: %s" % r.msg)
        if timed:
            c.measure_copy()
        return c, None

    def _close(self, c):
        if c is None:
            return
        try:
            if self.crash is None:
                self.guard.request(kbh_wire.CLOSE, {})
        except (kbh_guard.ChildDied, kbh_wire.Malformed):
            pass
        c.close()

    # ---- test mode ----------------------------------------------------

    def run_test(self):
        rep = self.rep
        msg = self.load()
        if msg:
            self._all_failed(lambda n: rep.kv("test-count", n), rep.test,
                             msg)
            return
        rep.kv("test-count", len(self.preps))
        for i, prep in enumerate(self.preps):
            rep.test(i, "spec", prep.case.spec)
            if self.sticky:
                self._fail_test(i, "not run: an earlier CUDA error left the "
                                "submission's CUDA context unusable")
                continue
            c, bad = self._open(prep, 1, False)
            if bad is None:
                bad = c.call(False)[:2]
            self._close(c)
            if bad[0] == PASS:
                rep.test(i, "status", "pass")
                continue
            self._fail_test(i, bad[1])
            if bad[0] == CRASH:
                self.crash = bad[1]
                log("test %d: %s" % (i, bad[1]))
                return

    def _fail_test(self, i, msg):
        self.failed = True
        self.rep.test(i, "status", "fail")
        self.rep.test(i, "error", msg)

    # ---- timed modes --------------------------------------------------

    def run_bench(self):
        rep = self.rep
        msg = self.load()
        if msg:
            self._all_failed(lambda n: rep.kv("benchmark-count", n),
                             rep.bench, msg)
            return
        rep.kv("benchmark-count", len(self.preps))
        for i, prep in enumerate(self.preps):
            rep.bench(i, "spec", prep.case.spec)
            if self.sticky:
                self._fail_bench(i, "not run: an earlier CUDA error left the "
                                 "submission's CUDA context unusable")
                continue
            t0 = time.monotonic_ns()
            c, bad = self._open(prep, 2, True)
            t1 = time.monotonic_ns()
            if bad is None:
                bad = self._bench_case(i, c)
            log("benchmark %d: open %.0f ms, run %.0f ms (%d calls)"
                % (i, (t1 - t0) / 1e6, (time.monotonic_ns() - t1) / 1e6,
                   c.ncalls if c else 0))
            self._close(c)
            if bad is not None:
                self._fail_bench(i, bad[1])
                if bad[0] == CRASH:
                    self.crash = bad[1]
                    log("benchmark %d: %s" % (i, bad[1]))
                    return

    def _fail_bench(self, i, msg):
        self.failed = True
        self.rep.bench(i, "status", "fail")
        self.rep.bench(i, "error", msg)

    def _bench_case(self, i, c):
        """Quick check, warm-up, timed calls, report. None, or the
        (verdict, message) the case fails with."""
        lim = c.prep.limits
        v, msg, _ = c.call(False)
        if v != PASS:
            return v, msg
        # Warm-up: staged, flushed, verified and checked like timed calls,
        # not recorded; at most a quarter of the time cap.
        w0, warm = time.monotonic_ns(), 0
        while warm < lim.warmup_min or (
                warm < lim.warmup_max and
                time.monotonic_ns() - w0 < lim.warmup_ns):
            if warm >= 1 and lim.max_ns and \
                    time.monotonic_ns() - w0 >= lim.max_ns // 4:
                break
            v, msg, _ = c.call(True)
            if v != PASS:
                return v, "warm-up: " + msg
            warm += 1
        c.reset_guard_stats()
        profiling = self.mode == "profile"
        if profiling:
            self._profile(True, i)
        st = kbh_timing.Stats()
        start = time.monotonic_ns()
        while True:
            v, msg, ns = c.call(True)
            if v != PASS:
                return v, "timed call %d: %s" % (st.n + 1, msg)
            st.add(ns)
            c.samples.append(ns)
            stop = kbh_timing.stop_check(lim, st, time.monotonic_ns() - start)
            if stop != kbh_timing.CONTINUE:
                break
        report = self._profile(False, i) if profiling else None
        self._report_bench(i, c, st, stop, warm, report)
        return None

    def _profile(self, on, i):
        path = os.path.abspath("kbh_profile.txt")
        trace = os.path.abspath("kbh_trace.%d.json" % i)
        try:
            _, r = self.guard.request(kbh_wire.PROFILE,
                                      {"on": on, "path": path,
                                       "trace": trace})
        except (kbh_guard.ChildDied, kbh_wire.Malformed):
            return None
        if on or r.status != kbh_wire.ST_OK:
            return None
        return _read_child_file(path, 1 << 16)

    def _report_bench(self, i, c, st, stop, warm, profile):
        rep, prep = self.rep, c.prep
        peak = self.device.peak(prep.ops, prep.min_work)
        floor = kbh_peak.floor_ns(prep.cost, peak)
        for k, v in (("runs", st.n), ("mean", "%.3f" % st.mean),
                     ("std", "%.3f" % st.std()), ("err", "%.3f" % st.err()),
                     ("best", "%.3f" % st.best),
                     ("worst", "%.3f" % st.worst)):
            rep.bench(i, k, v)
        for k, v in kbh_peak.rates(prep.cost, st.mean):
            rep.bench(i, k, v)
        if floor > 0:
            rep.bench(i, "floor_ns", "%.3f" % floor)
        rep.bench(i, "stop", kbh_timing.STOP_NAMES[stop])
        rep.bench(i, "warmup", warm)
        rep.bench(i, "window_ns", "%.0f" % statistics.median(
            w.width() for w in c.windows))
        gain = kbh_timing.gainful(c.samples, c.flags)
        if c.measured:
            t = self.timer
            rep.bench(i, "timing", "sentinel")
            rep.bench(i, "claim_ns", "%.0f" % statistics.median(c.claims))
            rep.bench(i, "measured_ns", "%.0f" %
                      statistics.median(c.measured))
            rep.bench(i, "low_claims", c.low_claims)
            rep.bench(i, "host_path", "%d (hold timeouts %d, early probes "
                      "%d, arm timeouts %d in the run)"
                      % (c.host_path, t.hold_timeouts, t.early_probes,
                         t.arm_timeouts))
            rep.bench(i, "outside", c.outside)
        else:
            rep.bench(i, "clamped", "%d (%d not explained by load, %d of "
                      "them below the median)"
                      % (c.clamped, c.unexplained, gain))
        log("benchmark %d: guard: %d clamped (%d unexplained, %d below the "
            "median), %d forged of %d samples; largest gap %.1f us (slack "
            "%.1f us, copy %.1f us; median us: %s)"
            % (i, c.clamped, c.unexplained, gain, c.forged, st.n,
               c.max_gap / 1e3, self.slack / 1e3, c.copy_ns / 1e3,
               kbh_timing.parts(c.windows)))
        if profile is not None:
            import base64
            rep.bench(i, "report", base64.b64encode(
                profile, b"+*").decode("ascii"), max_len=1 << 17)
        why = None
        if c.forged:
            why = ("forged-timing: %d timed calls reported times outside the "
                   "harness's own measurement of them; not ranked" % c.forged)
        elif kbh_timing.too_many_clamped(c.outside, st.n):
            why = ("outside-timing: %d of %d timed calls had work of the "
                   "submission's run on the GPU before the harness started "
                   "them (charged to them); not ranked" % (c.outside, st.n))
        elif kbh_timing.too_many_clamped(gain, st.n):
            why = ("%d of %d timed calls took longer by the harness's clock "
                   "than the submission's process claimed (by more than the "
                   "%.0f us the handoff and the copy-out allow, and load does "
                   "not explain it); not ranked"
                   % (gain, st.n, self.slack / 1e3))
        elif floor > 0 and st.best < floor:
            why = ("below-floor: best time %.0f ns is below the physical "
                   "floor %.0f ns for the declared work; not ranked"
                   % (st.best, floor))
        rep.bench(i, "status", "suspect" if why else "pass")
        if why:
            rep.bench(i, "error", why)


def _read_child_file(path, limit):
    """A file the child wrote: a regular file (not a link, a FIFO or a
    device), at most limit bytes. None when it is not one."""
    import stat
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK |
                     os.O_CLOEXEC)
    except OSError:
        return None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        return os.read(fd, limit)
    finally:
        os.close(fd)
