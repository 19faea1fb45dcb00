"""kbh_guard: the trusted parent's side of the process split.

Guard starts the child (kbh_child.py) and runs requests in it:

  spawn    subprocess with a new session (its own process group, which
           the child cannot leave: its filter makes setsid/setpgid no-ops),
           every descriptor closed but its end of the socket pair, stdin
           /dev/null, stdout/stderr inherited (a report descriptor 1 or 2
           becomes /dev/null there), and an environment without
           POPCORN_FD, POPCORN_SEED or KBH_CASES_UNLINK. The parent is
           non-dumpable by then (kbh_eval), so the child cannot ptrace it
           or open its /proc/<pid>/{mem,fd,environ}; the child's filter
           gets the parent's thread ids (kbh_seccomp). kbh_eval spawns
           first thing, so that the child imports torch while the parent
           does.
  hello    the first request, once the parent has its device and has read
           its cases: the device the child must have picked too, and every
           thread id of the parent's by then, which the child's filter
           adds (kbh_seccomp.tighten) before it answers.
  request  post the request while the child is stopped, read the clock
           (t_go), continue the child's whole process group (SIGCONT),
           wait for the reply, run the device probe, read the clock again
           (t_seen), stop the group (SIGSTOP) and wait until every process
           of it is stopped. So no thread or process of the child runs
           while the parent stages inputs, checks outputs or writes the
           report, and whatever the child does before its t0 or after its
           t2 is inside the parent's window. The kernel's run-queue waits
           (schedstat) of the parent and of every thread of the child
           around the request are recorded (kbh_timing.unexplained).
  death    a child that dies or exits during a request raises ChildDied
           with how it ended ("killed by signal 11 (SIGSEGV)", "exited
           with status 0"); a reply that does not follow kbh_wire's format
           raises kbh_wire.Malformed.
  kill     SIGKILL to the whole group, then reap the child.
"""

import array
import os
import select
import signal
import socket
import subprocess
import sys
import time

import kbh_timing
import kbh_wire

_POLL_S = 0.05


class ChildDied(Exception):
    """The child died or exited; str() says how."""


def describe_status(st):
    if os.WIFSIGNALED(st):
        n = os.WTERMSIG(st)
        try:
            name = signal.Signals(n).name
        except ValueError:
            name = "?"
        return "killed by signal %d (%s)" % (n, name)
    if os.WIFEXITED(st):
        return "exited with status %d" % os.WEXITSTATUS(st)
    return "ended (wait status %#x)" % st


def _read(path):
    try:
        with open(path, "rb") as f:
            return f.read()
    except OSError:
        return None


def _state(stat):
    """The state letter of a /proc/<pid>/stat line."""
    r = stat.rpartition(b")")[2].split()
    return r[0].decode() if r else "?"


class Guard:
    def __init__(self, script, report_fd):
        self.script = script
        self.report_fd = report_fd
        self.parent_tids = []     # every thread of the parent at HELLO
        self.proc = None
        self.pid = 0
        self.sock = None
        self.seq = 0
        self.dead = None          # how the child ended, once it has
        self.stopped = False
        self.confined = False
        self.confine_msg = ""
        self._sched_self = None
        self._have_children = os.path.exists(
            "/proc/self/task/%d/children" % os.getpid())

    # ---- start and stop -----------------------------------------------

    def spawn(self, parent_tids):
        """Starts the child (it confines itself, imports torch and picks
        its device meanwhile). parent_tids: every thread of the parent
        now. Raises OSError."""
        self._sched_self = os.open("/proc/thread-self/schedstat",
                                   os.O_RDONLY | os.O_CLOEXEC)
        # A held run (worker/run/ready.py) started our child before the job,
        # with torch imported: it gets the same arguments.
        ready = sys.modules.get("kb_ready")
        pre = ready.take_child() if ready is not None else None
        if pre is not None:
            self.proc, self.sock, fd = pre
            self.pid = self.proc.pid
            ready.start_child(self.sock, self._argv(fd, parent_tids)[1:])
            return
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        env = {k: v for k, v in os.environ.items()
               if k not in ("POPCORN_FD", "POPCORN_SEED", "KBH_CASES_UNLINK")}
        # the user's prints reach the worker even when the child is killed
        env["PYTHONUNBUFFERED"] = "1"
        argv = self._argv(theirs.fileno(), parent_tids)
        out = subprocess.DEVNULL if self.report_fd == 1 else None
        err = subprocess.DEVNULL if self.report_fd == 2 else None
        try:
            self.proc = subprocess.Popen(
                argv, stdin=subprocess.DEVNULL, stdout=out, stderr=err,
                close_fds=True, pass_fds=(theirs.fileno(),),
                start_new_session=True, env=env)
        finally:
            theirs.close()
        self.pid = self.proc.pid
        self.sock = ours

    def _argv(self, fd, parent_tids):
        return [sys.executable, self.script,
                "--sock", str(fd),
                "--parent", str(os.getpid()),
                "--tids", ",".join(str(t) for t in parent_tids)]

    def hello(self, parent_tids, device, ordinal, page_fd=None):
        """Waits for the child's HELLO. parent_tids: every thread of the
        parent now (the child's filter adds those made since the spawn);
        device, ordinal: the parent's device, which the child must have;
        page_fd: the sentinel's shared page (kbh_sentinel.open_timer).
        Raises ChildDied or Malformed (before any user code: the caller
        exits 110)."""
        self.parent_tids = list(parent_tids)
        _, r = self.request(kbh_wire.HELLO, {
            "tids": self.parent_tids, "device": device, "ordinal": ordinal,
            "page": page_fd is not None},
            fds=() if page_fd is None else (page_fd,), probe=None)
        self.confined = bool(r.flags & kbh_wire.F_CONFINED)
        self.confine_msg = r.msg
        return r

    def kill(self):
        """Kills every process of the child's group and reaps the child."""
        if self.pid <= 0:
            return
        try:
            os.killpg(self.pid, signal.SIGKILL)
        except OSError:
            pass
        if self.dead is None:
            try:
                _, st = os.waitpid(self.pid, 0)
                self.dead = describe_status(st)
            except ChildProcessError:
                self.dead = "vanished"
        if self.proc is not None:
            self.proc.returncode = -9   # reaped here, not by Popen
        if self.sock is not None:
            self.sock.close()
            self.sock = None

    # ---- liveness -----------------------------------------------------

    def _reap(self, block=False):
        """True when the child has ended (and is reaped now)."""
        if self.dead is not None:
            return True
        try:
            pid, st = os.waitpid(self.pid, 0 if block else os.WNOHANG)
        except ChildProcessError:
            self.dead = "vanished"
            return True
        if pid == self.pid and (os.WIFEXITED(st) or os.WIFSIGNALED(st)):
            self.dead = describe_status(st)
            if self.proc is not None:
                self.proc.returncode = st
            return True
        return False

    def _died(self):
        try:   # its descendants go with it
            os.killpg(self.pid, signal.SIGKILL)
        except OSError:
            pass
        return ChildDied(self.dead or "vanished")

    # ---- stopping and continuing the group ----------------------------

    def _tasks(self, pid):
        try:
            return os.listdir("/proc/%d/task" % pid)
        except OSError:
            return []

    def _descendants(self):
        """Every process below the child (children files of each thread;
        a scan of /proc for the group where the kernel lacks them)."""
        if not self._have_children:
            out = []
            for e in os.listdir("/proc"):
                if e.isdigit() and int(e) != self.pid:
                    st = _read("/proc/%s/stat" % e)
                    if st and int(st.rpartition(b")")[2].split()[2]) == \
                            self.pid:
                        out.append(int(e))
            return out
        out, todo = [], [self.pid]
        while todo:
            p = todo.pop()
            for t in self._tasks(p):
                kids = _read("/proc/%d/task/%s/children" % (p, t)) or b""
                for k in kids.split():
                    out.append(int(k))
                    todo.append(int(k))
        return out

    def _all_stopped(self, pids):
        for p in pids:
            for t in self._tasks(p):
                st = _read("/proc/%d/task/%s/stat" % (p, t))
                if st and _state(st) not in "TtZXD":
                    return False
        return True

    def _stop(self):
        """SIGSTOP to the group; returns once the child (every thread: the
        kernel reports a group stop when it is complete) and every process
        below it are stopped. Raises ChildDied."""
        try:
            os.killpg(self.pid, signal.SIGSTOP)
        except ProcessLookupError:
            pass
        while True:
            try:
                pid, st = os.waitpid(self.pid, os.WUNTRACED)
            except ChildProcessError:
                self.dead = "vanished"
                raise self._died()
            if pid != self.pid:
                continue
            if os.WIFSTOPPED(st):
                break
            self.dead = describe_status(st)
            raise self._died()
        self.stopped = True
        # A process in uninterruptible sleep (D) runs no user code until it
        # has stopped; anything else gets 2 s.
        deadline = time.monotonic() + 2.0
        while not self._all_stopped(self._descendants()):
            if time.monotonic() > deadline:
                self.dead = "a process of the submission's would not stop"
                raise self._died()
            time.sleep(0.0002)

    def _cont(self):
        if self.stopped:
            try:
                os.killpg(self.pid, signal.SIGCONT)
            except ProcessLookupError:
                pass
            self.stopped = False

    # ---- run-queue waits ----------------------------------------------

    def _run_delay(self):
        """Time (ns) the parent's main thread and every thread of the child
        spent runnable but not running (schedstat's second field)."""
        total = 0
        try:
            b = os.pread(self._sched_self, 96, 0).split()
            total += int(b[1])
        except (OSError, IndexError, ValueError):
            pass
        for t in self._tasks(self.pid):
            b = _read("/proc/%d/task/%s/schedstat" % (self.pid, t))
            if b:
                try:
                    total += int(b.split()[1])
                except (IndexError, ValueError):
                    pass
        return total

    # ---- requests -----------------------------------------------------

    def request(self, op, args, fds=(), probe=None, timed=False,
                timer=None):
        """Runs one request: (kbh_timing.Window, kbh_wire.Reply). The child
        is stopped again when this returns. probe: the device's probe, run
        after the reply and before t_seen. timer: a kbh_sentinel.Timer
        that times this request instead (the hold, the probes, "done" on
        the shared page; the Window's tcall is its TCall). Raises
        ChildDied, Malformed, kbh_sentinel.SentinelStuck."""
        if self.dead is not None:
            raise ChildDied(self.dead)
        self.seq += 1
        req = dict(args, op=op, seq=self.seq)
        raw = kbh_wire.pack_request(req)
        # stale bytes of a previous request (a child may send anything)
        while True:
            try:
                if not self.sock.recv(kbh_wire.REPLY.size + 1,
                                      socket.MSG_DONTWAIT):
                    break
            except OSError:
                break
        anc = [(socket.SOL_SOCKET, socket.SCM_RIGHTS,
                array.array("i", fds).tobytes())] if fds else []
        try:
            self.sock.sendmsg([raw], anc)
        except OSError as e:
            # the child closed its end: it cannot take requests any more
            self._gone("its channel to the harness is closed (%s)"
                       % e.strerror)
        rd0 = self._run_delay() if timed else 0
        armed = timer is not None and timer.spin
        if armed:
            # the armed handshake (kbh_sentinel.Timer.arm): continued
            # first, "go" on the page once it spins
            self._cont()
            timer.arm(self.seq, self._replied)
        tc = timer.before_go() if timer is not None else None
        t_go = time.monotonic_ns()
        if armed:
            timer.go_word(self.seq)
        else:
            self._cont()
        if tc is not None:
            tc.t_go = t_go
            try:
                timer.hold(tc, self.seq, self._replied)
                t_seen = timer.until_done(self.seq, self._replied)
            finally:
                timer.end_probe(tc)
            tc.t_seen = t_seen
            buf = self._wait_reply()
        else:
            buf = self._wait_reply()
            if probe is not None:
                probe()
            t_seen = time.monotonic_ns()
        self._stop()
        rd1 = self._run_delay() if timed else 0
        reply = kbh_wire.parse_reply(buf, op, self.seq)
        if tc is not None:
            timer.after(tc)
        w = kbh_timing.Window(t_go, t_seen, reply.t0, reply.t1, reply.t2,
                              reply.claim, max(0, rd1 - rd0))
        w.tcall = tc
        return w, reply

    def _replied(self):
        """True once the reply is readable or the child has ended (the
        timer's spins give up then)."""
        r, _, _ = select.select([self.sock.fileno()], [], [], 0)
        return bool(r) or self._reap()

    def _wait_reply(self):
        fd = self.sock.fileno()
        while True:
            r, _, _ = select.select([fd], [], [], _POLL_S)
            if r:
                try:
                    buf = self.sock.recv(kbh_wire.REPLY.size + 1)
                except OSError:
                    buf = b""
                if buf:
                    return buf
                self._gone("it closed its channel to the harness")
            if self._reap():
                raise self._died()

    def _gone(self, why):
        """The channel is closed: the child is dying, or closed it. Either
        way it can take no more requests. Raises ChildDied."""
        deadline = time.monotonic() + 1.0
        while not self._reap() and time.monotonic() < deadline:
            time.sleep(0.001)
        if self.dead is None:
            self.dead = why
        raise self._died()
