"""The sentinel's arithmetic is written twice: kbg_model.c (the CUDA
driver) and kbh_sentinel.py (the Python harness's parent). This runs both
on the same random numbers and fails on any difference, so a change to
one that is not made to the other is caught.

    python3 sentinel_model.py <libkbg_model_shim.so>
"""

import ctypes
import os
import random
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "problems", "harness",
                                "python"))
import kbh_sentinel as S  # noqa: E402

U64 = ctypes.c_uint64
CALL_FIELDS = ("t_go", "t_rel", "t_seen", "t_probe", "rel_dev", "back_dev",
               "probe_dev", "watch_dev", "outside_ns", "p_charge_ns",
               "age_ns")


class CCall(ctypes.Structure):
    _fields_ = [(f, U64) for f in CALL_FIELDS] + \
        [("p_watch", ctypes.c_int), ("broken", ctypes.c_int)]


class CCal(ctypes.Structure):
    _fields_ = [(f, ctypes.c_double) for f in S.TCal.__slots__]


def rand_call(rng):
    """A call shaped like the device's: host times around 1e15 ns, device
    times around 1.7e18 ns, gaps from 0 to a few ms, some fields 0."""
    h, d = 10 ** 15 + rng.randrange(10 ** 9), 17 * 10 ** 17 + \
        rng.randrange(10 ** 9)

    def gap():
        return rng.choice((0, rng.randrange(1, 40000),
                           rng.randrange(40000, 400000),
                           rng.randrange(400000, 5000000)))
    t_rel = h + gap()
    t_seen = t_rel + gap()
    rel_dev = d
    back_dev = rel_dev + gap() if rng.random() < 0.8 else 0
    probe_dev = (back_dev or rel_dev) + gap() if rng.random() < 0.8 else 0
    return S.TCall(
        t_go=h, t_rel=t_rel, t_seen=t_seen,
        t_probe=t_seen + gap() if rng.random() < 0.8 else 0,
        rel_dev=rel_dev, back_dev=back_dev, probe_dev=probe_dev,
        watch_dev=probe_dev + gap() if probe_dev and rng.random() < 0.8
        else 0,
        outside_ns=rng.choice((0, 0, rng.randrange(300000))),
        p_charge_ns=rng.choice((0, 0, 0, rng.randrange(1, 300000))),
        age_ns=rng.randrange(3000000), p_watch=rng.choice((0, 1, 1)),
        broken=rng.choice((0, 0, 0, 1)))


def rand_cal(rng):
    v = {k: rng.choice((0.0, rng.uniform(1e3, 5e5))) for k in
         S.TCal.__slots__}
    v["short_ns"] = rng.choice((1e18, rng.uniform(2e5, 2.4e6)))
    return S.TCal(**v)


def to_c(c):
    return CCall(*[getattr(c, f) for f in CALL_FIELDS],
                 c.p_watch, c.broken)


def cal_c(cal):
    return CCal(*[getattr(cal, f) for f in S.TCal.__slots__])


def close(a, b):
    return abs(a - b) <= 1e-6 * max(1.0, abs(a), abs(b))


def main():
    lib = ctypes.CDLL(sys.argv[1])
    P = ctypes.POINTER
    lib.shim_sample.restype = ctypes.c_double
    lib.shim_sample.argtypes = [P(CCal), P(CCall), P(ctypes.c_int)]
    lib.shim_score.restype = ctypes.c_double
    lib.shim_score.argtypes = [ctypes.c_double, ctypes.c_double,
                               ctypes.c_int]
    lib.shim_release_ns.restype = ctypes.c_double
    lib.shim_release_ns.argtypes = [P(CCal)]
    lib.shim_late_work.restype = ctypes.c_double
    lib.shim_late_work.argtypes = [P(CCal), P(CCall)]
    lib.shim_calibrate.restype = ctypes.c_int
    lib.shim_calibrate.argtypes = [P(CCall), ctypes.c_size_t, P(CCall),
                                   ctypes.c_size_t, ctypes.c_double,
                                   ctypes.c_double, P(CCal)]
    rng = random.Random(int(os.environ.get("KB_SEED", "29")))
    bad, paths = [], set()
    for i in range(20000):
        cal, c = rand_cal(rng), rand_call(rng)
        cc, ccal, p = to_c(c), cal_c(cal), ctypes.c_int()
        s_c = lib.shim_sample(ctypes.byref(ccal), ctypes.byref(cc),
                              ctypes.byref(p))
        s_py, p_py = S.sample(cal, c)
        paths.add(p_py)
        if not close(s_c, s_py) or p.value != p_py:
            bad.append("sample %d: C %.1f (path %d), Python %.1f (path %d)"
                       % (i, s_c, p.value, s_py, p_py))
        if not close(lib.shim_late_work(ctypes.byref(ccal), ctypes.byref(cc)),
                     S.late_work(cal, c)):
            bad.append("late_work %d" % i)
        if not close(lib.shim_release_ns(ctypes.byref(ccal)),
                     S.release_ns(cal)):
            bad.append("release_ns %d" % i)
        m = rng.uniform(0, 1e7)
        claim = rng.choice((m, m * rng.uniform(0.5, 1.2), m - 1500.0,
                            float("nan")))
        forged = rng.random() < 0.1
        if not close(lib.shim_score(m, claim, forged),
                     S.score(m, claim, forged)):
            bad.append("score %d: m %.1f claim %.1f" % (i, m, claim))
    for i in range(2000):
        dev = [rand_call(rng) for _ in range(rng.randrange(0, 30))]
        host = [rand_call(rng) for _ in range(rng.randrange(0, 30))]
        slice_ns = rng.choice((0.0, rng.uniform(1e6, 5e6)))
        out = CCal()
        arr = (CCall * max(1, len(dev)))(*[to_c(c) for c in dev])
        harr = (CCall * max(1, len(host)))(*[to_c(c) for c in host])
        rc = lib.shim_calibrate(arr, len(dev), harr, len(host), slice_ns,
                                4e6, ctypes.byref(out))
        py = S.calibrate(dev, host, slice_ns, 4e6)
        if (rc != 0) != (py is None):
            bad.append("calibrate %d: C %d, Python %s" % (i, rc, py))
        elif py is not None:
            for f in S.TCal.__slots__:
                if not close(getattr(out, f), getattr(py, f)):
                    bad.append("calibrate %d: %s C %.1f Python %.1f"
                               % (i, f, getattr(out, f), getattr(py, f)))
    # the numbers reached every path
    if paths != {S.DEVICE, S.HOST, S.HOST_GO}:
        bad.append("paths reached: %s" % sorted(paths))
    for b in bad[:20]:
        print("MISMATCH", b)
    print("%d mismatches" % len(bad))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
