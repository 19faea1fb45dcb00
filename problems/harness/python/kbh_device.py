"""kbh_device: what the trusted parent does on its device, CPU or CUDA.

One class per kind, same methods:

  setup()          the flush buffer and whatever else must exist before the
                   child is started (every thread of the parent must exist
                   by then: the child's seccomp filter lists them);
  system()         the system.* report keys;
  peak(ops, w)     the physical ceilings (kbh_peak);
  slots(n, specs)  a case's work slots (kbh_slots);
  flush()          evict the caches before a timed call;
  sync()           wait for the parent's own device work;
  probe()          run inside every request's window, after the reply: on
                   CUDA a tiny op of the parent's own, synchronised. The
                   GPU runs one context at a time, so it completes only
                   once the work the child left on the device has ended or
                   been preempted: the window then covers that work too;
  copy_ns(dst)     the parent's own measurement of copying a result into
                   the output array dst (cold caches), the copy-out the
                   window must allow for (kbh_timing).

copy_ns is the median of COPY_RUNS copies, each after a flush (the
child's copy reads a result it has just written, often from cache, so a
cold copy is the generous side).

The parent's torch runs with one CPU thread: an idle OpenMP pool spins on
the cores the child's timed call is about to use.
"""

import os
import platform
import statistics
import time

import kbh_cuda
import kbh_peak
import kbh_slots


COPY_RUNS = 5


def _version(pkg):
    try:
        from importlib import metadata
        return metadata.version(pkg)
    except Exception:
        return None


def _common_system(torch):
    keys = [("system.python", platform.python_version()),
            ("system.torch", torch.__version__)]
    tv = _version("triton")
    if tv:
        keys.append(("system.triton", tv))
    return keys


class CpuDevice:
    kind = "cpu"

    def __init__(self, torch):
        self.torch = torch
        self.device = torch.device("cpu")
        self.llc = kbh_peak.cpu_llc_bytes()
        self.flush_buf = None

    def setup(self):
        torch = self.torch
        # 2 x the last-level cache, faulted in now, read before each timed
        # call: evicts the shared cache and this core's.
        n = 2 * self.llc // 8
        self.flush_buf = torch.arange(n, dtype=torch.int64)

    def name(self):
        try:
            with open("/proc/cpuinfo") as f:
                for line in f:
                    if line.startswith("model name"):
                        return line.split(":", 1)[1].strip()
        except OSError:
            pass
        return platform.processor() or "CPU"

    def system(self):
        p = kbh_peak.cpu_peak()
        return [("system.device", self.name()),
                ("system.cpus", kbh_peak.cpu_count()),
                ("system.llc", self.llc)] + _common_system(self.torch) + \
            [("system.peak_gbps", "%.0f (%s)" % (p.bytes_per_s / 1e9,
                                                 p.source))]

    def peak(self, ops, min_work):
        return kbh_peak.cpu_peak(ops, min_work)

    def slots(self, nslots, specs):
        return kbh_slots.CpuSlots(self.torch, nslots, specs)

    def flush(self):
        self.flush_buf.max()

    def sync(self):
        pass

    def probe(self):
        pass

    def copy_ns(self, dst):
        src = self.torch.zeros_like(dst)
        dst.copy_(src)
        t = []
        for _ in range(COPY_RUNS):
            self.flush()
            t0 = time.monotonic_ns()
            dst.copy_(src)
            t.append(time.monotonic_ns() - t0)
        return statistics.median(t)

    def describe(self):
        return "llc=%d flush=%d" % (self.llc, self.flush_buf.numel() * 8)


class CudaDevice:
    kind = "cuda"

    def __init__(self, torch):
        self.torch = torch
        self.ordinal = torch.cuda.current_device()
        self.device = torch.device("cuda", self.ordinal)
        self.drv = kbh_cuda.Driver(self.ordinal)
        props = torch.cuda.get_device_properties(self.ordinal)
        a = self.drv.attribute
        self.info = {
            "name": props.name,
            "cc": (props.major, props.minor),
            "sms": props.multi_processor_count,
            "clock_khz": a(kbh_cuda.ATTR_CLOCK_RATE),
            "mem_clock_khz": a(kbh_cuda.ATTR_MEMORY_CLOCK_RATE),
            "bus_bits": a(kbh_cuda.ATTR_GLOBAL_MEMORY_BUS_WIDTH),
            "l2_bytes": a(kbh_cuda.ATTR_L2_CACHE_SIZE) or
            getattr(props, "L2_cache_size", 0),
        }
        self.pool = None
        self.flush_buf = None
        # kbh_sentinel.Timer of a timed run: while its kernels run, nothing
        # here may wait for the whole context (they wait for the release)
        self.timer = None

    def setup(self):
        torch = self.torch
        self.pool = kbh_slots.CudaPool(torch, self.drv)
        n = kbh_peak.gpu_flush_bytes(self.info["l2_bytes"])
        self.flush_buf = torch.ones(n // 4, dtype=torch.int32,
                                    device=self.device)
        self.probe_buf = torch.zeros(1, dtype=torch.int32, device=self.device)
        self.ev = (torch.cuda.Event(enable_timing=True),
                   torch.cuda.Event(enable_timing=True))
        self.flush()
        self.probe()
        # The driver's helper threads exist once the context has run work
        # and synchronised with events.
        self.copy_ns(torch.empty(1 << 20, dtype=torch.uint8,
                                 device=self.device))

    def system(self):
        torch = self.torch
        p = self.peak("none", 1.0)
        dv = self.drv.version()
        i = self.info
        return [("system.device", i["name"]),
                ("system.cc", "%d.%d" % i["cc"]),
                ("system.driver",
                 "CUDA %d.%d" % (dv // 1000, dv % 1000 // 10)),
                ("system.runtime", "CUDA %s" % torch.version.cuda)] + \
            _common_system(torch) + \
            [("system.peak_gbps", "%.0f (%s, %d SMs, L2 %d)"
              % (p.bytes_per_s / 1e9, p.source, i["sms"], i["l2_bytes"]))]

    def peak(self, ops, min_work):
        return kbh_peak.gpu_peak(self.info, ops, min_work)

    def slots(self, nslots, specs):
        return self.pool.slots(nslots, specs)

    def flush(self):
        # Lines a submission marked persisting (an access-policy window on
        # its stream) would survive the streaming read in L2's set-aside:
        # made normal first, they are flushed like the rest. Then
        # L2-allocating loads of 4 x L2; L2 is physical, so what this
        # evicts is evicted for the child's context too. Synchronised by
        # the caller (sync) before the request. (The reset waits for the
        # whole context: while the sentinel watches, the timer made it
        # before the watch started.)
        if self.timer is None or not self.timer.watching():
            self.drv.reset_persisting_l2()
        self.flush_buf.max()

    def sync(self):
        # The parent's own work is on the current stream; a device-wide
        # synchronize would wait for the sentinel too.
        self.torch.cuda.current_stream().synchronize()

    def probe(self):
        self.probe_buf.add_(1)
        self.sync()

    def copy_ns(self, dst):
        torch = self.torch
        src = torch.zeros_like(dst)
        t = []
        for _ in range(COPY_RUNS):
            self.flush()
            self.ev[0].record()
            dst.copy_(src)
            self.ev[1].record()
            self.sync()
            t.append(self.ev[0].elapsed_time(self.ev[1]) * 1e6)
        return statistics.median(t)

    def sleep_cycles(self, ns):
        """Clock cycles that keep an SM busy for about ns (calibration)."""
        return int(ns * (self.info["clock_khz"] or 2000000) / 1e6)

    def describe(self):
        return "l2=%d flush=%d" % (self.info["l2_bytes"],
                                   self.flush_buf.numel() * 4)


def open_device(torch):
    """CUDA when torch sees a device (or KBH_DEVICE=cuda), else the CPU
    (or KBH_DEVICE=cpu). Raises on a broken device (the caller exits
    110)."""
    want = os.environ.get("KBH_DEVICE", "")
    if want not in ("", "cpu", "cuda"):
        raise ValueError("KBH_DEVICE=%r is not cpu or cuda" % want)
    if want == "cuda" or (want == "" and torch.cuda.is_available()):
        if not torch.cuda.is_available():
            raise RuntimeError("KBH_DEVICE=cuda but torch sees no GPU")
        torch.cuda.init()
        return CudaDevice(torch)
    return CpuDevice(torch)


def threads():
    """Every thread id of this process."""
    return [int(t) for t in os.listdir("/proc/self/task")]

