"""kbh_child: the untrusted half of the harness, the only process that
imports the submission and calls custom_kernel.

Started by the parent (kbh_guard) as

    python kbh_child.py --sock FD --parent PID --tids T,T,...

as the parent's first act, so that both interpreters import torch at the
same time. It does, in this order:
  1. dies with the parent (PR_SET_PDEATHSIG), drops every capability and
     installs its seccomp filter (kbh_seccomp: no ptrace or process_vm_*,
     no signals to the parent or anyone outside its own process group and
     descendants, setsid/setpgid made no-ops); if it cannot, it says so in
     its HELLO reply (system.guard) and goes on;
  2. imports torch, picks the device by the parent's rule (KBH_DEVICE, else
     CUDA when torch sees it; the current device) and takes the references
     the timed region uses (monotonic clock, CUDA events, synchronize,
     Tensor.copy_) before any user code runs;
  3. serves the parent's requests (kbh_wire) until the parent goes away:
     HELLO (the parent's device, which must be the child's, and every
     thread of the parent's, which the filter then refuses signals to as
     well: kbh_seccomp.tighten), CAL (an empty timed call), LOAD (imports
     `submission` from its own directory and finds custom_kernel), OPEN
     (maps a case's slots), CALL, CLOSE, PROFILE.

The timed region of CALL, on CUDA:

    t0 = clock; start.record(); out = custom_kernel(data);
    [non-contiguous results made contiguous]; end.record();
    torch.cuda.synchronize(); t1 = clock;
    copy out into the output slot (shape and dtype checked), synchronize;
    t2 = clock; claim = start.elapsed_time(end)

(on the CPU the claim is t1 - t0). There is no "hold" kernel: the host's
launch overhead is inside the event interval, as in upstream's eval.py;
synchronize() waits for every stream of this process, so work left on
another stream delays t1.

None of this is trusted: user code runs in this process and may patch any
of it, this file's functions and captured references included. The parent
believes a claim only within its own measurement of the request
(kbh_timing) and checks every result in its own memory.
"""

import ctypes
import importlib
import mmap
import os
import signal
import socket
import sys
import time
import traceback

import kbh_seccomp
import kbh_sentinel as sent
import kbh_slots
import kbh_wire

_now = time.monotonic_ns
PR_SET_PDEATHSIG = 1


def _args(argv):
    a = {"tids": ""}
    it = iter(argv)
    for k in it:
        if not k.startswith("--"):
            raise SystemExit("kbh_child: bad argument %r" % k)
        a[k[2:]] = next(it)
    return a


def _die_with_parent(parent):
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    if os.getppid() != parent:   # it went before the prctl took effect
        os._exit(1)


class UserError(Exception):
    """A result the parent cannot use (the case fails with this text)."""


def _device(torch):
    """(kind, ordinal) by the parent's rule (kbh_device.open_device)."""
    want = os.environ.get("KBH_DEVICE", "")
    if want == "cuda" or (want == "" and torch.cuda.is_available()):
        return "cuda", torch.cuda.current_device()
    return "cpu", 0


class Child:
    def __init__(self, sock, parent, confined, confine_msg):
        import torch
        self.torch = torch
        self.sock = sock
        self.parent = parent
        kind, ordinal = _device(torch)
        self.kind, self.ordinal = kind, ordinal
        self.confined = confined
        self.confine_msg = confine_msg
        self.fn = None
        self.case = None          # (slot views, output specs, data tree)
        self.promote = False      # OPEN's OUTPUTS_PROMOTE
        self.bufs = {}            # CUDA: buffer id -> (ptr, uint8 tensor)
        self.sticky = False
        self.prof = None
        self.page = None          # the sentinel's page (HELLO)
        self.words = [0] * sent.N_WORDS
        # References taken before any user code runs.
        self.Tensor = torch.Tensor
        self.copy_ = torch.Tensor.copy_
        self.contiguous = torch.Tensor.contiguous
        self.is_contiguous = torch.Tensor.is_contiguous
        if kind == "cuda":
            import kbh_cuda
            torch.cuda.init()
            torch.cuda.set_device(ordinal)
            self.drv = kbh_cuda.Driver(ordinal)
            self.sync = torch.cuda.synchronize
            self.ev = (torch.cuda.Event(enable_timing=True),
                       torch.cuda.Event(enable_timing=True))
            self.record = torch.cuda.Event.record
            self.elapsed = torch.cuda.Event.elapsed_time
            self.sleep = torch.cuda._sleep
            dev = torch.device("cuda", ordinal)
        else:
            self.sync = lambda: None
            dev = torch.device("cpu")
        self.scratch = (torch.zeros(16, device=dev),
                        torch.ones(16, device=dev))
        self.copy_(*self.scratch)
        self.sync()

    # ---- the loop -----------------------------------------------------

    def serve(self):
        handlers = {kbh_wire.HELLO: self.hello, kbh_wire.CAL: self.cal,
                    kbh_wire.LOAD: self.load, kbh_wire.OPEN: self.open,
                    kbh_wire.CALL: self.call, kbh_wire.CLOSE: self.close,
                    kbh_wire.PROFILE: self.profile}
        cmsg = socket.CMSG_SPACE(4 * 4)
        while True:
            try:
                raw, anc, _, _ = self.sock.recvmsg(kbh_wire.REQ_MAX, cmsg)
            except InterruptedError:
                continue
            if not raw:
                os._exit(0)      # the parent is gone
            fds = []
            for level, typ, data in anc:
                if level == socket.SOL_SOCKET and typ == socket.SCM_RIGHTS:
                    n = len(data) - len(data) % 4
                    fds += list(memoryview(data[:n]).cast("i"))
            req = kbh_wire.unpack_request(raw)
            op, seq = req["op"], req["seq"]
            r = kbh_wire.Reply(op, seq)
            try:
                handlers[op](req, fds, r)
            except UserError as e:
                r.status, r.msg = kbh_wire.ST_USER, str(e)
            except BaseException as e:   # SystemExit of the user's too
                traceback.print_exc()
                r.status = kbh_wire.ST_USER if self.fn else \
                    kbh_wire.ST_HARNESS
                r.msg = "%s%s: %s" % (
                    "custom_kernel raised " if op == kbh_wire.CALL else "",
                    type(e).__name__, e)
                self._check_sticky()
            finally:
                for fd in fds:
                    os.close(fd)
            if self.sticky:
                r.flags |= kbh_wire.F_STICKY
            self.sock.send(kbh_wire.pack_reply(r))

    def _check_sticky(self):
        """After an error on CUDA: is the context still usable?"""
        if self.kind != "cuda":
            return
        try:
            self.sync()
        except BaseException:
            self.sticky = True

    # ---- requests -----------------------------------------------------

    def hello(self, req, fds, r):
        if req.get("page"):
            # The sentinel's page (kbh_sentinel): "started", "done",
            # "launched" and "armed", the words call() writes, and "go",
            # the parent's (_armed()).
            if len(fds) != 1:
                raise RuntimeError("HELLO without the sentinel's page")
            self.page = mmap.mmap(fds[0], mmap.PAGESIZE, mmap.MAP_SHARED,
                                  mmap.PROT_READ | mmap.PROT_WRITE)
            self.words = (ctypes.c_uint32 * sent.N_WORDS).from_buffer(
                self.page)
        if (req["device"], req["ordinal"]) != (self.kind, self.ordinal):
            raise RuntimeError("the child chose device %s:%d, the parent "
                               "%s:%d" % (self.kind, self.ordinal,
                                          req["device"], req["ordinal"]))
        if self.confined:
            why = kbh_seccomp.tighten(list(req["tids"]) + [self.parent])
            if why is not None:
                self.confined, self.confine_msg = False, why
        r.flags = (kbh_wire.F_CONFINED if self.confined else 0) | \
            (kbh_wire.F_CUDA if self.kind == "cuda" else 0)
        r.aux = os.getpid()
        r.msg = self.confine_msg

    def cal(self, req, fds, r):
        """What a timed call looks like from outside, without user code:
        stamps and events around a wait of busy_ns (a sleeping kernel on
        CUDA, a spinning loop on the CPU), then a small copy-out."""
        busy = int(req["busy_ns"])
        if req.get("sent"):
            # as call() below, with a sleeping kernel for the call
            self._armed(req)
            t0 = _now()
            self.words[sent.W_STARTED] = req["seq"]
            self.record(self.ev[0])
            if req["cycles"]:
                self.sleep(int(req["cycles"]))
            self.record(self.ev[1])
            self.copy_(*self.scratch)
            self.words[sent.W_LAUNCHED] = req["seq"]
            self.sync()
            r.t0 = t0
            r.t1 = r.t2 = _now()
            r.claim = self.elapsed(*self.ev) * 1e6
            self.words[sent.W_DONE] = req["seq"]
            return
        if self.kind == "cuda":
            t0 = _now()
            self.record(self.ev[0])
            self.sleep(int(req["cycles"]))
            self.record(self.ev[1])
            self.sync()
            t1 = _now()
        else:
            t0 = _now()
            while _now() - t0 < busy:
                pass
            t1 = _now()
        self.copy_(*self.scratch)
        self.sync()
        r.t2 = _now()
        r.t0, r.t1 = t0, t1
        r.claim = self.elapsed(*self.ev) * 1e6 if self.kind == "cuda" \
            else t1 - t0

    def load(self, req, fds, r):
        try:
            mod = importlib.import_module("submission")
        except BaseException as e:
            traceback.print_exc()
            r.status = kbh_wire.ST_LOAD
            r.msg = "importing submission.py raised %s: %s" % (
                type(e).__name__, e)
            return
        fn = getattr(mod, "custom_kernel", None)
        if not callable(fn):
            r.status = kbh_wire.ST_LOAD
            r.msg = "submission.py defines no function custom_kernel"
            return
        self.fn = fn

    def open(self, req, fds, r):
        torch = self.torch
        where = req["where"]
        if where["kind"] == "cpu":
            if len(fds) != 1:
                raise RuntimeError("OPEN without its memfd")
            mm = mmap.mmap(fds[0], where["size"], mmap.MAP_SHARED,
                           mmap.PROT_READ | mmap.PROT_WRITE)
            bases = {0: torch.frombuffer(mm, dtype=torch.uint8)}
        else:
            import kbh_cuda
            for bid, (handle, size) in where["new"].items():
                ptr = self.drv.ipc_open(handle)
                self.bufs[bid] = (ptr, kbh_cuda.tensor(torch, ptr, size))
            bases = {bid: t for bid, (_, t) in self.bufs.items()}
        slots = []
        for row in req["arrays"]:
            views = [kbh_slots.view(torch, bases[a["buf"]], a["off"],
                                    a["nbytes"],
                                    kbh_slots.dtype_of(torch, a["dtype"]),
                                    a["shape"], a.get("stride"))
                     for a in row]
            slots.append((views[:req["n_in"]], views[req["n_in"]:]))
        specs = [(tuple(s), kbh_slots.dtype_of(torch, d))
                 for s, d in req["outputs"]]
        self.case = (slots, specs, req["data"])
        self.promote = bool(req.get("promote"))

    def close(self, req, fds, r):
        # The views go; the mappings stay (CUDA: for the run; CPU: until
        # the last view of this case's memfd is gone).
        self.case = None

    def call(self, req, fds, r):
        slots, specs, tree = self.case
        ins, outs = slots[req["slot"]]
        # data is built afresh for every call (as upstream's eval.py makes
        # it): lists and dicts a call changed are not the next call's.
        data = kbh_slots.build(tree, ins)
        fn, now = self.fn, _now
        if req.get("sent"):
            # Timed by the parent's sentinel (kbh_sentinel): "started"
            # (word 0) as the call begins, "launched" (word 2) once its
            # work is queued whole, the copy-out included (the parent
            # subtracts its own time for that), "done" (word 1) once it
            # ran. The parent holds the GPU until "launched", or a
            # calibrated while after "started" (then the launches are in
            # the sample, as in the claim's events).
            self._armed(req)
            t0 = now()
            self.words[sent.W_STARTED] = req["seq"]
            self.record(self.ev[0])
            out = fn(data)
            out = self._contiguous(out)
            self.record(self.ev[1])
            self._copy_out(out, outs, specs)
            self.words[sent.W_LAUNCHED] = req["seq"]
            self.sync()
            r.t0, r.t1 = t0, now()
            r.t2 = r.t1
            r.claim = self.elapsed(*self.ev) * 1e6
            self.words[sent.W_DONE] = req["seq"]
            return
        if self.kind == "cuda":
            t0 = now()
            self.record(self.ev[0])
            out = fn(data)
            out = self._contiguous(out)
            self.record(self.ev[1])
            self.sync()
            t1 = now()
        else:
            t0 = now()
            out = fn(data)
            out = self._contiguous(out)
            t1 = now()
        self._copy_out(out, outs, specs)
        self.sync()
        r.t2 = now()
        r.t0, r.t1 = t0, t1
        r.claim = self.elapsed(*self.ev) * 1e6 if self.kind == "cuda" \
            else t1 - t0

    def _armed(self, req):
        """The armed handshake (kbh_sentinel.Timer.arm): "armed", then a
        spin until the parent's "go", so that the call starts as "go" is
        given rather than when this process wakes from SIGCONT."""
        if not req.get("spin"):
            return
        seq, words = req["seq"], self.words
        words[sent.W_ARMED] = seq
        t = _now()
        while words[sent.W_GO] != seq:
            if _now() - t > sent.ARM_MAX_NS:
                break

    def _contiguous(self, out):
        """A plain tensor result in another layout is made contiguous inside
        the timed region: producing the result counts, and the copy-out
        after it is then a plain copy."""
        if type(out) is self.Tensor and not self.is_contiguous(out):
            return self.contiguous(out)
        if type(out) in (tuple, list):
            return type(out)(self._contiguous(o) for o in out)
        return out

    def _copy_out(self, out, outs, specs):
        if len(specs) == 1:
            out = (out,)
        elif type(out) not in (tuple, list) or len(out) != len(specs):
            raise UserError("custom_kernel must return a tuple of %d tensors"
                            % len(specs))
        for k, (o, dst, (shape, dtype)) in enumerate(zip(out, outs, specs)):
            what = "custom_kernel's result" if len(specs) == 1 else \
                "custom_kernel's result %d" % k
            if not isinstance(o, self.Tensor):
                raise UserError("%s is a %s, not a torch.Tensor"
                                % (what, type(o).__name__))
            if tuple(o.shape) != shape:
                raise UserError("%s has shape %s, expected %s"
                                % (what, tuple(o.shape), shape))
            # OUTPUTS_PROMOTE (upstream's tasks, whose checks compare
            # across dtypes): a result the expected dtype holds exactly
            # (float32 for float64) is copied in converted.
            if o.dtype != dtype and not (
                    self.promote and
                    self.torch.promote_types(o.dtype, dtype) == dtype):
                raise UserError("%s has dtype %s, expected %s"
                                % (what, o.dtype, dtype))
            if o.device.type != self.kind:
                raise UserError("%s is on %s, expected %s"
                                % (what, o.device, self.kind))
            self.copy_(dst, o)

    def profile(self, req, fds, r):
        torch = self.torch
        if req["on"]:
            acts = [torch.profiler.ProfilerActivity.CPU]
            if self.kind == "cuda":
                acts.append(torch.profiler.ProfilerActivity.CUDA)
            self.prof = torch.profiler.profile(activities=acts)
            self.prof.__enter__()
            return
        if self.prof is None:
            return
        self.prof.__exit__(None, None, None)
        key = "self_cuda_time_total" if self.kind == "cuda" \
            else "self_cpu_time_total"
        table = self.prof.key_averages().table(sort_by=key, row_limit=20)
        prof, self.prof = self.prof, None
        with open(req["path"], "w") as f:
            f.write(table)
        # The Chrome trace of the profiled calls, for the worker's trace
        # archive (it reads the file as data: the submission could have
        # written it too, and only its own profile would show it).
        if req.get("trace"):
            prof.export_chrome_trace(req["trace"])


def main(argv):
    a = _args(argv)
    parent = int(a["parent"])
    _die_with_parent(parent)
    sock = socket.socket(fileno=int(a["sock"]))
    sock.set_inheritable(False)
    tids = [int(t) for t in a["tids"].split(",") if t]
    why = kbh_seccomp.confine(tids + [parent])
    try:
        child = Child(sock, parent, why is None, "" if why is None else why)
    except BaseException as e:
        traceback.print_exc()
        # Answer the HELLO with the failure: before user code, ours (110).
        raw = sock.recv(kbh_wire.REQ_MAX)
        req = kbh_wire.unpack_request(raw) if raw else {"op": 1, "seq": 1}
        sock.send(kbh_wire.pack_reply(kbh_wire.Reply(
            req["op"], req["seq"], kbh_wire.ST_HARNESS,
            msg="the child could not start: %s: %s" % (type(e).__name__, e))))
        os._exit(1)
    child.serve()


if __name__ == "__main__":
    main(sys.argv[1:])
