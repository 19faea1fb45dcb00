"""Unit tests of the Python harness's pure parts: the report writer, the
cases parser, seeds, statistics and the stopping rule, the sample rules
(window, clamp, slack, gainful), the peak model, the reply format and the
seccomp filter (run through a small BPF interpreter; tighten() also in a
real process). No harness child, no device. Run by CTest (pyharness_unit)."""
import math
import os
import subprocess
import sys
import threading
import unittest

import pyh_lib as L

sys.path.insert(0, L.HARNESS)

import kbh_peak  # noqa: E402
import kbh_report as R  # noqa: E402
import kbh_seccomp as S  # noqa: E402
import kbh_timing as T  # noqa: E402
import kbh_wire as W  # noqa: E402


class Pipe:
    def __init__(self):
        self.r, self.w = os.pipe()

    def text(self):
        os.close(self.w)
        out = b""
        while True:
            b = os.read(self.r, 65536)
            if not b:
                break
            out += b
        os.close(self.r)
        return out.decode()


class ReportTest(unittest.TestCase):
    def test_order_enforced(self):
        p = Pipe()
        rep = R.Report(p.w)
        with self.assertRaises(R.ReportError):
            rep.test(0, "spec", "x")          # before test-count
        rep.kv("test-count", 2)
        rep.test(0, "spec", "a: 1")
        rep.test(0, "status", "pass")
        with self.assertRaises(R.ReportError):
            rep.test(0, "status", "fail")      # twice
        with self.assertRaises(R.ReportError):
            rep.test(2, "spec", "x")           # beyond the count
        rep.test(1, "spec", "b: 2")
        with self.assertRaises(R.ReportError):
            rep.test(0, "error", "x")          # going back
        with self.assertRaises(R.ReportError):
            rep.kv("test-count", 3)
        with self.assertRaises(R.ReportError):
            rep.kv("bad key", "x")
        rep.kv("note", "multi\nline\rvalue")
        rep.kv("check", "pass")
        text = p.text()
        self.assertEqual(text.splitlines()[-2], "note: multi line value")
        self.assertEqual(L.validate(text), [])

    def test_value_truncated_to_utf8(self):
        p = Pipe()
        rep = R.Report(p.w)
        rep.kv("x", "é" * 2000)
        line = p.text()
        self.assertLessEqual(len(line.encode()), R.VALUE_MAX + 4)
        line.encode("utf-8")

    def test_from_env(self):
        env = {}
        with self.assertRaisesRegex(R.ReportError, "not set"):
            R.Report.from_env(env)
        with self.assertRaisesRegex(R.ReportError, "not a descriptor"):
            R.Report.from_env({"POPCORN_FD": "abc"})
        with self.assertRaisesRegex(R.ReportError, "not open"):
            R.Report.from_env({"POPCORN_FD": "999"})
        r, w = os.pipe()
        with self.assertRaisesRegex(R.ReportError, "not open for writing"):
            R.Report.from_env({"POPCORN_FD": str(r)})
        env = {"POPCORN_FD": str(w)}
        rep = R.Report.from_env(env)
        self.assertEqual(rep.fd, w)
        self.assertNotIn("POPCORN_FD", env)
        self.assertFalse(os.get_inheritable(w))
        os.close(r)
        os.close(w)


class CasesTest(unittest.TestCase):
    def test_parse(self):
        c = R.parse_case("  size: 5 ;seed:10; ")
        self.assertEqual(c.spec, "size: 5 ;seed:10;")
        self.assertEqual(c.kv, {"size": "5", "seed": "10"})
        self.assertEqual(c.u64("seed"), 10)
        self.assertIsNone(c.u64("max_ms", required=False))

    def test_bad(self):
        for bad in ("size 10; seed: 1", "size: ; seed: 1", ": 5",
                    "size: 10; size: 11", "a-b: 1", "x: 1: 2", "",
                    "; ".join("k%d: 1" % i for i in range(17)),
                    "k: " + "1" * 64, "k" * 32 + ": 1"):
            with self.assertRaises(R.CaseError, msg=bad):
                R.parse_case(bad)

    def test_u64(self):
        c = R.parse_case("seed: 18446744073709551616; a: -1; b: 7")
        with self.assertRaisesRegex(R.CaseError, "overflows"):
            c.u64("seed")
        with self.assertRaisesRegex(R.CaseError, "not an unsigned"):
            c.u64("a")
        with self.assertRaisesRegex(R.CaseError, "outside"):
            c.u64("b", 8, 9)
        with self.assertRaisesRegex(R.CaseError, "missing"):
            c.u64("nope")

    def test_file(self):
        cs = R.parse_cases("# c\n\nsize: 5; seed: 9;\r\n  size: 6 ;seed:10\n")
        self.assertEqual([c.kv["size"] for c in cs], ["5", "6"])
        with self.assertRaisesRegex(R.CaseError, "no cases"):
            R.parse_cases("# nothing\n\n")
        with self.assertRaisesRegex(R.CaseError, ":2:"):
            R.parse_cases("a: 1\nbroken\n")
        with self.assertRaises(R.CaseError):
            R.load_cases("/nonexistent/cases.txt")


class SeedTest(unittest.TestCase):
    def test_combine(self):
        a, b = 54352, 12345
        self.assertEqual(R.combine_seed(a, b), a + (a + b) * (a + b + 1) // 2)
        big = R.U64
        self.assertEqual(R.combine_seed(big, big),
                         (big + (2 * big) * (2 * big + 1) // 2) % (1 << 64))

    def test_derive_matches_c(self):
        # the values harness.c's kbh_hash_u64 and kbh_seed_derive give
        self.assertEqual(R.hash_u64(5, 6), 7305338399799513099)
        self.assertEqual(R.seed_derive(1, 2, 3), 2165586520410257081)
        self.assertEqual(R.seed_derive(R.U64, 2, 12345), 8108623623616019614)
        s = {R.seed_derive(7, 2, i) for i in range(1000)}
        self.assertEqual(len(s), 1000)
        self.assertNotEqual(R.seed_derive(7, 1, 0), R.seed_derive(7, 2, 0))

    def test_call_seed(self):
        self.assertEqual(R.call_seed(99, 1234, 0), 99)
        self.assertNotEqual(R.call_seed(99, 1234, 1), 99)
        self.assertNotEqual(R.call_seed(99, 1234, 1), R.call_seed(99, 1235, 1))
        self.assertNotEqual(R.call_seed(99, 1234, 1), R.call_seed(99, 1234, 2))


class StatsTest(unittest.TestCase):
    def test_welford(self):
        st = T.Stats()
        for x in (1, 2, 3, 4):
            st.add(x)
        self.assertAlmostEqual(st.mean, 2.5)
        self.assertAlmostEqual(st.std(), math.sqrt(5 / 3))
        self.assertAlmostEqual(st.err(), math.sqrt(5 / 3) / 2)
        self.assertEqual((st.best, st.worst), (1, 4))

    def test_stop(self):
        lim = T.limits_for("benchmark")
        st = T.Stats()
        for _ in range(9):
            st.add(100.0)
        self.assertEqual(T.stop_check(lim, st, 0), T.CONTINUE)
        st.add(100.0)
        self.assertEqual(T.stop_check(lim, st, 0), T.CONVERGED)
        st = T.Stats()
        for i in range(400):
            st.add(100.0 + (i % 2) * 50)
        self.assertEqual(T.stop_check(lim, st, 0), T.MAX_RUNS)
        st = T.Stats()
        st.add(1.0)
        self.assertEqual(T.stop_check(lim, st, 10 ** 12), T.CONTINUE)
        st.add(2.0)
        self.assertEqual(T.stop_check(lim, st, 10 ** 12), T.TIME_CAP)

    def test_limits(self):
        c = R.parse_case("seed: 1; min_runs: 5; max_runs: 7; max_ms: 9")
        lim = T.limits_for("leaderboard", None, c)
        self.assertEqual((lim.min_runs, lim.max_runs, lim.max_ns),
                         (5, 7, 9000000))
        lim = T.limits_for("profile", None, c)      # ignored there
        self.assertEqual((lim.min_runs, lim.max_runs), (5, 5))
        with self.assertRaisesRegex(ValueError, "exceeds"):
            T.limits_for("leaderboard", None, R.parse_case("max_runs: 3"))
        lim = T.limits_for("benchmark", {"benchmark": {"max_runs": 50}})
        self.assertEqual(lim.max_runs, 50)
        with self.assertRaisesRegex(ValueError, "unknown limit"):
            T.limits_for("benchmark", {"benchmark": {"nope": 1}})


class SampleRuleTest(unittest.TestCase):
    def w(self, t0, t1, t2, claim, go=1000, seen=11000, waited=0):
        return T.Window(go, seen, t0, t1, t2, claim, waited)

    def test_ok(self):
        v, ns = T.verify(self.w(2000, 9000, 9500, 7000), 3000)
        self.assertEqual((v, ns), (T.OK, 7000))

    def test_forged(self):
        for w in (self.w(500, 9000, 9500, 8000),      # before the window
                  self.w(2000, 9000, 12000, 7000),    # after it
                  self.w(2000, 1500, 9500, 0),        # out of order
                  self.w(2000, 3000, 9500, 7000)):    # claim > t1 - t0
            v, ns = T.verify(w, 3000)
            self.assertEqual(v, T.FORGED)
            self.assertEqual(ns, 10000 - 3000)

    def test_clamped(self):
        w = self.w(2000, 2100, 9500, 100)
        self.assertEqual(T.verify(w, 3000), (T.CLAMPED, 7000))
        # the copy-out allowance lowers the bound
        self.assertEqual(T.verify(w, 3000, 2000), (T.CLAMPED, 5000))
        self.assertEqual(T.verify(self.w(2000, 9000, 9500, 6000), 3000, 1500),
                         (T.OK, 6000))
        self.assertTrue(T.unexplained(w, 3000))
        w.waited = 8000           # the kernel says both sides waited
        self.assertFalse(T.unexplained(w, 3000))

    def test_slack(self):
        s, q = T.slack([50000] * 95 + [10 ** 7] * 5)
        self.assertEqual(s, 2 * 50000 + 10000)
        self.assertEqual(q["max"], 10 ** 7)
        self.assertEqual(T.slack([10] * 100)[0], 10020)
        self.assertEqual(T.slack([10 ** 6] * 100)[0], T.SLACK_MAX_NS)
        # a GPU's handoff (two CUDA contexts): p95 700 us is not capped
        gpu = [600000] * 90 + [700000] * 10
        self.assertEqual(T.slack(gpu)[0], T.SLACK_MAX_NS)
        self.assertEqual(T.slack(gpu, T.SLACK_MAX_CUDA_NS)[0], 1410000)
        self.assertEqual(T.slack([10 ** 7] * 100, T.SLACK_MAX_CUDA_NS)[0],
                         T.SLACK_MAX_CUDA_NS)
        with self.assertRaises(ValueError):
            T.slack([])

    def test_cal_gap(self):
        # a neighbour loading the CPUs while the harness calibrates: every
        # handoff 300 us longer, all of it run-queue wait; the slack from
        # cal_gap is the quiet one, from the raw gaps 600 us wider
        quiet = T.Window(0, 65000, 10000, 15000, 15000, 5000, 0)
        loaded = T.Window(0, 365000, 10000, 15000, 15000, 5000, 300000)
        self.assertEqual(T.cal_gap(loaded), T.cal_gap(quiet))
        s_quiet = T.slack([T.cal_gap(quiet)] * 100)[0]
        self.assertEqual(T.slack([T.cal_gap(loaded)] * 100)[0], s_quiet)
        self.assertGreaterEqual(T.slack([T.gap(loaded)] * 100)[0],
                                s_quiet + 600000)
        self.assertEqual(T.cal_gap(T.Window(0, 100, 10, 20, 20, 10, 5000)),
                         0)

    def test_gainful(self):
        samples = [10, 20, 30, 40, 50, 60]
        self.assertEqual(T.gainful(samples, [1, 1, 0, 0, 1, 1]), 2)
        self.assertEqual(T.gainful([], []), 0)
        self.assertFalse(T.too_many_clamped(2, 50))
        self.assertTrue(T.too_many_clamped(4, 50))


class PeakTest(unittest.TestCase):
    H100 = dict(name="NVIDIA H100 80GB HBM3", cc=(9, 0), sms=132,
                clock_khz=1980000, mem_clock_khz=2619000, bus_bits=5120)

    def test_h100(self):
        p = kbh_peak.gpu_peak(self.H100, "fp16_tc")
        self.assertEqual(p.source, "attributes")
        self.assertAlmostEqual(p.bytes_per_s, 2619e6 * 2 * 5120 / 8 * 1.1,
                               delta=1e6)
        self.assertAlmostEqual(p.flops_per_s, 132 * 1.98e9 * 4096 * 1.1,
                               delta=1e9)
        # vectoradd's benchmark, 6 x 2^28 bytes: about 437 us
        f = kbh_peak.floor_ns({"bytes": 6 * 2 ** 28}, p)
        self.assertTrue(430000 < f < 445000, f)

    def test_table_and_unknown(self):
        d = dict(self.H100, mem_clock_khz=0)
        p = kbh_peak.gpu_peak(d, "none")
        self.assertEqual((p.source, p.flops_per_s), ("table", 0.0))
        self.assertAlmostEqual(p.bytes_per_s, 3.35e12 * 1.1)
        p = kbh_peak.gpu_peak(dict(name="?", cc=(99, 0), sms=10), "fp32")
        self.assertEqual(p.bytes_per_s, 0.0)
        self.assertEqual(p.flops_per_s, 10 * 3e9 * 512 * 1.1)
        self.assertEqual(kbh_peak.floor_ns({"bytes": 1}, kbh_peak.Peak()), 0)

    def test_flush_and_cpu(self):
        self.assertEqual(kbh_peak.gpu_flush_bytes(50 << 20), 200 << 20)
        self.assertEqual(kbh_peak.gpu_flush_bytes(1 << 20), 64 << 20)
        self.assertEqual(kbh_peak.gpu_flush_bytes(0), 256 << 20)
        p = kbh_peak.cpu_peak("fp32", 1.0, ncpu=2, hz=3e9)
        self.assertEqual((p.bytes_per_s, p.flops_per_s), (768e9, 384e9))
        self.assertGreater(kbh_peak.cpu_llc_bytes(), 0)

    def test_rates(self):
        cost = {"bytes": 6000, "flops": 2000}
        self.assertEqual(kbh_peak.rates(cost, 1000.0),
                         [("bytes", "6000"), ("gbps", "6.000"),
                          ("flops", "2000"), ("gflops", "2.000")])
        # a mean of 0 (forged calls inside the slack): no rate, no error
        self.assertEqual(kbh_peak.rates(cost, 0.0),
                         [("bytes", "6000"), ("flops", "2000")])
        self.assertEqual(kbh_peak.rates({"bytes": 0, "flops": 0}, 5.0), [])


class ProblemHelpersTest(unittest.TestCase):
    """kbh_problem's helpers for problem.py (torch on the CPU)."""

    def setUp(self):
        import torch
        import kbh_problem
        self.torch, self.kp = torch, kbh_problem

    def test_cpu_scale(self):
        kp = self.kp
        self.assertEqual(kp.cpu_scale((8192, 8192), 8192 ** 2, "cpu"),
                         (512, 512))
        self.assertEqual(kp.cpu_scale((6144, 10240), 6144 * 10240, "cpu"),
                         (384, 640))
        self.assertEqual(kp.cpu_scale((1000, 999), 999000, "cpu"),
                         (1000, 999))
        self.assertEqual(kp.cpu_scale((8192, 8192), 8192 ** 2, "cuda"),
                         (8192, 8192))
        self.assertEqual(kp.cpu_scale((1024, 1024, 1024), 1 << 30, "cpu",
                                      limit=1 << 30), (1024, 1024, 1024))
        self.assertEqual(kp.cpu_scale((65536,), 65536 * 4096, "cpu",
                                      divisor=256), (256,))
        self.assertEqual(kp.cpu_scale((17,), 1 << 21, "cpu"), (2,))

    def test_compare_exact(self):
        torch, kp = self.torch, self.kp
        a = torch.tensor([1.0, 0.0, -2.5])
        self.assertEqual(kp.compare_exact(a, a.clone()), (True, ""))
        ok, msg = kp.compare_exact(a, torch.tensor([1.0, -0.0, -2.5]))
        self.assertFalse(ok)         # -0.0 is not 0.0, bit for bit
        self.assertIn("1 of 3 elements", msg)
        self.assertIn("index 1", msg)
        poison = torch.full((3,), -1, dtype=torch.int32).view(torch.float32)
        self.assertFalse(kp.compare_exact(poison, a)[0])
        i = torch.tensor([3, 4, 5], dtype=torch.int32)
        self.assertTrue(kp.compare_exact(i, i.to(torch.int64))[0])
        ok, msg = kp.compare_exact(i, torch.tensor([3, 4, 6]))
        self.assertIn("got 5, expected 6", msg)
        self.assertIn("shape", kp.compare_exact(i, i[:2])[1])

    def test_compare_tolerance_per_element(self):
        torch, kp = self.torch, self.kp
        want = torch.tensor([0.0, 10.0, 100.0], dtype=torch.float64)
        got = torch.tensor([0.5, 10.5, 100.5])
        tol = torch.tensor([1.0, 1.0, 0.1], dtype=torch.float64)
        ok, msg = kp.compare(got, want, rtol=0.0, atol=tol)
        self.assertFalse(ok)
        self.assertIn("1 of 3 elements", msg)
        self.assertIn("index 2", msg)
        self.assertIn("tolerance 0.1", msg)
        self.assertTrue(kp.compare(got, want, rtol=0.0, atol=tol * 10)[0])

    def test_draw(self):
        torch, kp = self.torch, self.kp
        g = kp.generator(7, "cpu")
        a, b = kp.draw(g, (1000,)), kp.draw(g, (1000,), torch.float16)
        self.assertFalse(torch.equal(a, b.float()))
        self.assertEqual(b.dtype, torch.float16)
        self.assertTrue(bool((a >= -1).all() and (a < 1).all()))
        self.assertTrue(torch.equal(kp.uniform((1000,), 7, "cpu"), a))


class WireTest(unittest.TestCase):
    def test_roundtrip(self):
        r = W.Reply(W.CALL, 7, W.ST_USER, W.F_STICKY, 1, 2, 3, 4.5, 9,
                    "bad\x00\nthing\u20ac")
        got = W.parse_reply(W.pack_reply(r), W.CALL, 7)
        self.assertEqual((got.status, got.flags, got.t0, got.t2, got.claim),
                         (W.ST_USER, W.F_STICKY, 1, 3, 4.5))
        self.assertEqual(got.msg, "bad??thing?")

    def test_malformed(self):
        good = W.pack_reply(W.Reply(W.CALL, 7))
        with self.assertRaises(W.Malformed):
            W.parse_reply(good[:-1], W.CALL, 7)
        with self.assertRaises(W.Malformed):
            W.parse_reply(good, W.CALL, 8)
        with self.assertRaises(W.Malformed):
            W.parse_reply(good, W.OPEN, 7)
        for field, value in (("status", 9), ("flags", 64),
                             ("claim", float("nan")), ("claim", -1.0)):
            r = W.Reply(W.CALL, 7)
            setattr(r, field, value)
            with self.assertRaises(W.Malformed, msg=field):
                W.parse_reply(W.pack_reply(r), W.CALL, 7)
        bad = bytearray(good)
        bad[0] ^= 1
        with self.assertRaises(W.Malformed):
            W.parse_reply(bytes(bad), W.CALL, 7)


class SeccompTest(unittest.TestCase):
    CHILD, PARENT = 5000, 4000
    TIDS = [4000, 4001, 4002, 6000]   # 6000: a parent thread made later

    def verdict(self, arch, name, *args):
        sc = S.SYSCALLS[arch]
        prog = S.build(arch, self.CHILD, self.CHILD, self.TIDS)
        args = args + (0,) * (6 - len(args))
        return S.run(prog, sc["audit"], sc[name] if isinstance(name, str)
                     else name, args)

    def test_signals(self):
        for arch in S.SYSCALLS:
            for name in S.SIGNALS:
                v = lambda pid: self.verdict(arch, name, pid, 9)  # noqa
                self.assertEqual(v(self.PARENT), S.RET_EPERM)
                self.assertEqual(v(4002), S.RET_EPERM)     # a thread
                self.assertEqual(v(6000), S.RET_EPERM)     # listed
                self.assertEqual(v(1), S.RET_EPERM)        # init, older
                self.assertEqual(v(-1), S.RET_EPERM)       # everyone
                self.assertEqual(v(-self.PARENT), S.RET_EPERM)
                self.assertEqual(v(0), S.SECCOMP_RET_ALLOW)     # own group
                self.assertEqual(v(-self.CHILD), S.SECCOMP_RET_ALLOW)
                self.assertEqual(v(self.CHILD), S.SECCOMP_RET_ALLOW)
                self.assertEqual(v(self.CHILD + 7), S.SECCOMP_RET_ALLOW)
                # the kernel reads a 32-bit pid_t: high bits do not help
                self.assertEqual(v((1 << 32) | self.PARENT), S.RET_EPERM)
                self.assertEqual(v((7 << 32) | (self.CHILD + 1)),
                                 S.SECCOMP_RET_ALLOW)

    def test_denied_faked_allowed(self):
        for arch in S.SYSCALLS:
            for name in S.DENIED:
                self.assertEqual(self.verdict(arch, name), S.RET_EPERM, name)
            for name in S.FAKED:
                self.assertEqual(self.verdict(arch, name), S.RET_FAKE_OK)
            self.assertEqual(self.verdict(arch, 0), S.SECCOMP_RET_ALLOW)
            self.assertEqual(self.verdict(arch, 1), S.SECCOMP_RET_ALLOW)
        sc = S.SYSCALLS["x86_64"]
        prog = S.build("x86_64", self.CHILD, self.CHILD, self.TIDS)
        self.assertEqual(S.run(prog, sc["audit"], 0x40000000 | 1), S.RET_EPERM)
        self.assertEqual(S.run(prog, 0x40000003, 0),
                         S.SECCOMP_RET_KILL_PROCESS)

    def test_many_tids(self):
        S.build("x86_64", 5000, 5000, list(range(100, 300)))


# A child confined with the parent's threads of its start, a thread of its
# own made before tighten() (torch's and CUDA's are), then tighten() with
# a parent thread made after the child started: that thread probes it
# (signal 0) and must be refused.
TIGHTEN_CHILD = r"""
import os, sys, threading
sys.path.insert(0, sys.argv[1])
import kbh_seccomp as S
parent = int(sys.argv[2])
first = S.confine([parent])
late = int(sys.stdin.readline())
go, got = threading.Event(), []
def probe():
    go.wait()
    try:
        os.kill(late, 0)
        got.append("allowed")
    except OSError as e:
        got.append("refused" if e.errno == 1 else e.strerror)
t = threading.Thread(target=probe)
t.start()
second = S.tighten([parent, late])
go.set()
t.join()
print(first, second, got[0], late > os.getpid())
"""


class TightenTest(unittest.TestCase):
    def test_threads_made_before_it_are_held(self):
        stop = threading.Event()
        proc = subprocess.Popen(
            [sys.executable, "-c", TIGHTEN_CHILD, L.HARNESS,
             str(os.getpid())], stdin=subprocess.PIPE,
            stdout=subprocess.PIPE, text=True)
        late = threading.Thread(target=stop.wait)   # after the child
        late.start()
        try:
            out, _ = proc.communicate("%d\n" % late.native_id, timeout=60)
        finally:
            stop.set()
            late.join()
        self.assertEqual(out.split(), ["None", "None", "refused", "True"])


def load_upstream(ref, rules="v1"):
    """kbh_upstream over the module ref as the task's reference.py, with
    kbh_upstream_rules_<rules>.py as the version's case rule (the loader
    copies it in as kbh_upstream_rules.py)."""
    import importlib
    import types
    mod = types.ModuleType("reference")
    mod.__dict__.update(ref)
    sys.modules["reference"] = mod
    sys.modules["kbh_upstream_rules"] = importlib.import_module(
        "kbh_upstream_rules_" + rules)
    sys.modules.pop("kbh_upstream", None)
    try:
        return importlib.import_module("kbh_upstream")
    finally:
        del sys.modules["reference"]
        del sys.modules["kbh_upstream_rules"]


class DataTreeTest(unittest.TestCase):
    """kbh_slots: data as a tree the child rebuilds, tensors in their
    dense layouts."""

    def setUp(self):
        import torch
        self.torch = torch

    def test_round_trip(self):
        import kbh_slots
        torch = self.torch
        a, b, m = torch.zeros(3), torch.ones(2, 2), torch.arange(4)
        data = (a, [m, 7], {"w": b, "cfg": {"dim": 4, "on": True}}, None)
        tree, tensors, names = kbh_slots.flatten(torch, data, ("x",))
        self.assertEqual(len(tensors), 3)
        self.assertIs(tensors[0], a)
        self.assertEqual(names, ["x", "input 1[0]", "input 2['w']"])
        copies = [t.clone() for t in tensors]
        back = kbh_slots.build(tree, copies)
        self.assertEqual(type(back), tuple)
        self.assertEqual(type(back[1]), list)
        self.assertIs(back[2]["w"], copies[2])
        self.assertEqual(back[2]["cfg"], {"dim": 4, "on": True})
        self.assertEqual((back[1][1], back[3]), (7, None))
        # Built afresh: a list or dict a call changed is not the next's.
        back[1].append(1)
        self.assertEqual(len(kbh_slots.build(tree, copies)[1]), 2)
        # A bare tensor is data too.
        tree, tensors, names = kbh_slots.flatten(torch, a)
        self.assertEqual((tree, names), (("t", 0), ["data"]))

    def test_refused(self):
        import kbh_slots
        torch = self.torch
        for bad in ((object(),), {1.5: torch.zeros(1)}, (torch.nn.Linear(1, 1),)):
            self.assertRaises(ValueError, kbh_slots.flatten, torch, bad)
        deep = torch.zeros(1)
        for _ in range(kbh_slots.DATA_DEPTH + 1):
            deep = [deep]
        self.assertRaises(ValueError, kbh_slots.flatten, torch, deep)

    def test_layouts(self):
        import kbh_slots
        torch = self.torch
        base = torch.arange(24, dtype=torch.float32).reshape(2, 3, 4)
        self.assertIsNone(kbh_slots.layout(base))
        p = base.permute(1, 2, 0)
        self.assertEqual(kbh_slots.layout(p), (4, 1, 12))
        # memory order: the permuted view's bytes are base's
        self.assertTrue(torch.equal(kbh_slots.raw(torch, p),
                                    base.reshape(-1).view(torch.uint8)))
        for bad in (base[:, :, :2], torch.zeros(3).expand(2, 3)):
            self.assertRaises(ValueError, kbh_slots.layout, bad)
        # A slot viewed with p's strides holds p once staged bytewise.
        buf = torch.zeros(96, dtype=torch.uint8)
        v = kbh_slots.view(torch, buf, 0, 96, torch.float32, p.shape,
                           kbh_slots.layout(p))
        kbh_slots.raw(torch, v).copy_(kbh_slots.raw(torch, p))
        self.assertEqual(v.stride(), p.stride())
        self.assertTrue(torch.equal(v, p))


class UpstreamAdapterTest(unittest.TestCase):
    """kbh_upstream.py (the problem.py of a sealed upstream task)."""

    def setUp(self):
        import torch
        self.torch = torch

        def generate_input(size, seed, mode=3, device="cuda"):
            g = torch.Generator(device=device)
            g.manual_seed(seed)
            a = torch.rand(size, generator=g, device=device)
            return a, torch.empty(size, device=device), mode

        def ref_kernel(data):
            a, out, _ = data
            out[...] = a * 2    # upstream's references write into data
            return out

        self.ref = {"generate_input": generate_input,
                    "ref_kernel": ref_kernel}

    def test_keys_as_upstream_parses_them(self):
        u = load_upstream(dict(self.ref, check_implementation=None))
        self.assertEqual(sorted(u.KEYS), ["mode", "size"])
        self.assertEqual(u.KEYS_OPTIONAL, ("mode",))
        self.assertTrue(u.INPUTS_WRITABLE)
        p = u.KEYS["size"]
        self.assertEqual((p("12"), p("-3"), p("+4"), p("fast")),
                         (12, -3, 4, "fast"))
        for bad in ("1.5", "a b", "", "x1"):
            self.assertRaises(ValueError, p, bad)

    def test_generate_outputs_cost(self):
        u = load_upstream(dict(self.ref, check_implementation=None))
        args = u.setup({"size": 5}, "cpu")
        self.assertEqual(u.outputs(args), [((5,), self.torch.float32)])
        self.assertEqual(u.cost(args)["bytes"], 40)
        x, y = u.generate(args, 7, "cpu"), u.generate(args, 7, "cpu")
        self.assertTrue(self.torch.equal(x[0], y[0]))
        self.assertEqual(x[2], 3)
        self.assertFalse(self.torch.equal(
            x[0], u.generate(args, 8, "cpu")[0]))

    def test_check_styles_and_pristine_inputs(self):
        torch = self.torch
        seen = []

        def tuple_style(data, output):
            seen.append(data)
            want = self.ref["ref_kernel"](data)
            ok = torch.equal(output, want)
            return ok, "" if ok else "mismatch"

        def string_style(data, output):
            ok = torch.equal(output, self.ref["ref_kernel"](data))
            return "" if ok else "mismatch"

        def list_style(data, output):
            ok = torch.equal(output, self.ref["ref_kernel"](data))
            return [] if ok else ["mismatch", "at 0"]

        for style in (tuple_style, string_style, list_style):
            u = load_upstream(dict(self.ref, check_implementation=style))
            args = u.setup({"size": 4}, "cpu")
            inputs = u.generate(args, 1, "cpu")
            inputs[1].zero_()
            good = inputs[0] * 2
            exp = u.reference(args, inputs)
            self.assertEqual(u.check(args, inputs, exp, good), (True, ""))
            exp = u.reference(args, inputs)
            ok, msg = u.check(args, inputs, exp, good + 1)
            self.assertFalse(ok)
            self.assertIn("mismatch", msg)
            # The reference wrote into its clone, never the inputs.
            self.assertFalse(inputs[1].any())
        self.assertIsNot(seen[0][0], inputs[0])

    def test_refuses_what_slots_cannot_stage(self):
        torch = self.torch
        for bad in (lambda size, seed: (torch.zeros(size), object()),
                    lambda size, seed: torch.zeros(size, 2)[:, :1]):
            u = load_upstream({"generate_input": bad,
                               "ref_kernel": lambda d: d[0],
                               "check_implementation": None})
            self.assertRaises(RuntimeError, u.setup, {"size": 2}, "cpu")

    def test_data_as_generated(self):
        """A bare tensor, dicts and permuted views pass as they are."""
        torch = self.torch

        def generate_input(size, seed, device="cuda"):
            g = torch.Generator(device=device)
            g.manual_seed(seed)
            x = torch.rand(2, size, generator=g, device=device).t()
            return {"x": x, "cfg": {"n": size}}

        u = load_upstream({"generate_input": generate_input,
                           "ref_kernel": lambda d: d["x"] * 2,
                           "check_implementation": None})
        self.assertTrue(u.DATA_AS_IS)
        args = u.setup({"size": 3}, "cpu")
        self.assertEqual(u.outputs(args), [((3, 2), torch.float32)])
        self.assertEqual(u.cost(args)["bytes"], 24)
        d = u.generate(args, 5, "cpu")
        self.assertEqual(d["cfg"], {"n": 3})
        self.assertEqual(d["x"].stride(), (1, 3))
        u = load_upstream({"generate_input": lambda size, seed:
                           torch.ones(size),
                           "ref_kernel": lambda d: d.sum(),
                           "check_implementation": None})
        self.assertEqual(u.outputs(u.setup({"size": 4}, "cpu")),
                         [((), torch.float32)])

    def test_case_rules(self):
        """Each version's rule: v1 words [a-zA-Z]+ (strings), keys without
        '_'; v2 words and keys [a-zA-Z_]\\w*, 'true'/'false' booleans."""
        def generate_input(num_tokens, kind, seed, flag=False):
            pass
        ref = {"generate_input": generate_input, "ref_kernel": None,
               "check_implementation": None}
        u = load_upstream(ref)
        self.assertEqual(sorted(u.KEYS), ["flag", "kind"])
        p = u.KEYS["kind"]
        self.assertEqual((p("true"), p("False"), p(" 7 ")),
                         ("true", "False", 7))
        for bad in ("fp8", "a_b", "_x"):
            self.assertRaises(ValueError, p, bad)
        u = load_upstream(ref, "v2")
        self.assertEqual(sorted(u.KEYS), ["flag", "kind", "num_tokens"])
        p = u.KEYS["kind"]
        self.assertEqual((p("true"), p("false"), p("True"), p("fp8"),
                          p("_x"), p("-3")),
                         (True, False, "True", "fp8", "_x", -3))
        for bad in ("1x", "a-b", "1.5"):
            self.assertRaises(ValueError, p, bad)


if __name__ == "__main__":
    unittest.main()
