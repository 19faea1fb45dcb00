"""The Python sentinel's Timer (kbh_sentinel.Timer) without a GPU: its
decisions -- when the hold is released, whether a successor probe
follows, the end probe after "done" -- against a kernel simulated in
Python (records that start at once, watches that end when released,
probes that are early before not_before). What the kernel does on a
device is measured by bench/gpu/py/timing.py; this checks the parent's
logic around it, so that a change to it fails here first.

    python3 sentinel_timer.py
"""

import os
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "problems", "harness",
                                "python"))
import kbh_sentinel as S  # noqa: E402


class SimKernel:
    """kbh_sentinel.Kernel's interface: every launch starts at once (its
    record's start_ns is the host clock); a watch (mode 1, or mode 2 not
    early) ends when released; a plain probe (mode 0) or an early one
    ends at once."""

    def __init__(self):
        self.seq = 0
        self.recs = {}
        self.live = {}         # seq -> mode, while running
        self.launches = []     # (seq, mode)

    def launch(self, watch, not_before=0, sw_ns=0):
        self.seq += 1
        now = time.monotonic_ns()
        early = watch == 2 and now < not_before
        r = S.Rec(start_ns=now, started=self.seq, early=int(early))
        self.recs[self.seq] = r
        self.launches.append((self.seq, watch))
        if watch and not early:
            self.live[self.seq] = watch
        else:
            r.end_ns, r.ended = now, self.seq
        return self.seq

    def go(self, seq):
        pass

    def release(self, seq):
        if seq in self.live:
            del self.live[seq]
            r = self.recs[seq]
            r.end_ns, r.ended = time.monotonic_ns(), seq

    def started(self, seq):
        r = self.recs.get(seq)
        return r if r is not None and r.started == seq else None

    def ended(self, seq):
        r = self.recs.get(seq)
        return r if r is not None and r.ended == seq else None

    def wait(self, seq, ended):
        r = (self.ended if ended else self.started)(seq)
        if r is None:
            raise S.SentinelStuck("simulated sentinel %d never %s"
                                  % (seq, "ends" if ended else "starts"))
        return r


FAILS = []


def check(cond, what):
    print("%s %s" % ("ok  " if cond else "FAIL", what))
    if not cond:
        FAILS.append(what)


def timer():
    k = SimKernel()
    words = [0] * S.N_WORDS
    resets = []
    t = S.Timer(k, words, lambda: resets.append(len(k.live)))
    # calibrated as on an H100, but for dev_ns: turn_ns 1 ns, so that the
    # simulated probe, which starts at once, is early only where a test
    # asks
    t.cal = S.TCal(dev_ns=50e3 + 1, rel_ns=150e3, go_ns=250e3, probe_ns=190e3,
                   short_ns=2.36e6, tail_ns=8e3, dprobe_ns=190e3,
                   wgap_ns=20e3, launch_ns=60e3)
    t.wake_ns, t.launch_ns, t.margin = 2e6, 3e6, 0
    return t, k, words, resets


def call(t, words, seq, set_words=(), poll=lambda: False):
    t.ensure_watch()
    tc = t.before_go()
    for i in set_words:
        words[i] = seq
    tc.t_go = time.monotonic_ns()
    t.hold(tc, seq, poll)
    return tc


def main():
    # "launched" releases the hold at once; a successor probe follows
    t, k, words, resets = timer()
    tc = call(t, words, 1, set_words=(0, 2))
    check(t.hold_timeouts == 0 and tc.t_rel - tc.t_go < 1e6,
          "launched: released at once, no timeout")
    check(t.probe_seq and k.launches[-1][1] == 2,
          "launched: a successor probe watches")
    check(resets == [0], "the persisting-L2 reset ran before the watch, "
          "with no sentinel running")
    words[1] = 1
    t.until_done(1, lambda: False)
    t.end_probe(tc)
    check(tc.p_watch == 1 and not t.probe_seq and not k.live,
          "done: the watching probe ended")
    t.after(tc)
    check(t.watch_seq and len(resets) == 2 and resets[1] == 0,
          "after: reset with nothing running, then the next watch")

    # no "started": released at go + wake_ns + margin, no successor
    t, k, words, _ = timer()
    t.wake_ns, t.margin = 3e6, 2e6
    tc = call(t, words, 1)
    waited = tc.t_rel - tc.t_go
    check(t.hold_timeouts == 1 and 4.5e6 <= waited < 50e6,
          "no started: released by the wake limit (%.1f ms)" % (waited / 1e6))
    check(not t.probe_seq and all(m != 2 for _, m in k.launches),
          "wake limit: no successor probe (the host path)")
    t.end_probe(tc)
    check(k.launches[-1][1] == 0 and tc.t_probe and tc.probe_dev,
          "end probe launched at done where none watched")

    # "started" but never "launched": launch_ns after started
    t, k, words, _ = timer()
    t.wake_ns, t.launch_ns = 200e6, 4e6
    tc = call(t, words, 1, set_words=(0,))
    waited = tc.t_rel - tc.t_start
    check(tc.t_start and t.hold_timeouts == 1 and 4e6 <= waited < 50e6,
          "started, never launched: released launch_ns after started "
          "(%.1f ms)" % (waited / 1e6))

    # a stale word of an earlier call does not release the next one
    t, k, words, _ = timer()
    t.wake_ns = 3e6
    words[2] = 6
    tc = call(t, words, 7)
    check(t.hold_timeouts == 1, "launched of another call: not a release")

    # the reply (or the child's death) ends the hold at once
    t, k, words, _ = timer()
    tc = call(t, words, 1, poll=lambda: True)
    check(t.hold_timeouts == 0 and tc.t_rel - tc.t_go < 50e6,
          "poll: the hold ends on the reply")

    # an early successor probe is tried again, then given up
    t, k, words, _ = timer()
    t.cal.dev_ns = 10e9        # turn_ns far away: every probe is early
    tc = call(t, words, 1, set_words=(0, 2))
    check(t.early_probes == S.PROBE_TRIES and not t.probe_seq,
          "early probes: %d tries, none watching" % t.early_probes)

    # a watch older than renew_ns is renewed before go
    t, k, words, _ = timer()
    t.renew_ns = 1
    t.ensure_watch()
    old = t.watch_seq
    time.sleep(0.001)
    t.before_go()
    check(t.watch_seq != old and old not in k.live,
          "renewed: a new watch, the old one released")

    # the armed handshake: arm() returns once the child says "armed",
    # and the child's spin ends at go_word()
    t, k, words, _ = timer()
    seen = []

    def child():
        time.sleep(0.002)
        words[S.W_ARMED] = 3
        t0 = time.monotonic_ns()
        while words[S.W_GO] != 3 and time.monotonic_ns() - t0 < 2e9:
            pass
        seen.append(words[S.W_GO])
    th = threading.Thread(target=child)
    th.start()
    ok = t.arm(3, lambda: False)
    t.go_word(3)
    th.join()
    check(ok and seen == [3] and t.arm_timeouts == 0,
          "armed: arm() saw 'armed', the child saw 'go'")
    # a child that never arms: poll() ends the wait (its reply or death),
    # else ARM_MAX_NS, counted
    t, k, words, _ = timer()
    words[S.W_ARMED] = 2
    check(not t.arm(3, lambda: True) and t.arm_timeouts == 0,
          "not armed, the child replied: no wait")
    saved, S.ARM_MAX_NS = S.ARM_MAX_NS, 1e6
    try:
        ok = t.arm(3, lambda: False)
    finally:
        S.ARM_MAX_NS = saved
    check(not ok and t.arm_timeouts == 1,
          "not armed in ARM_MAX_NS: a timeout, counted")

    print("%d failed" % len(FAILS))
    return 1 if FAILS else 0


if __name__ == "__main__":
    sys.exit(main())
