"""kbh_peak: the device's generous physical ceilings and the floor they put
under a call's time (trusted parent only; pure).

GPU: the CUDA harness's model (cuda/kbg_model.c, numbers and sources
there), ported as it is:
  bandwidth  memory clock x 2 x bus width from the device's attributes, or
             a datasheet table by name when larger or when the attributes
             are missing; x 1.10;
  flops      SMs x max SM clock x dense rate per SM and clock of the
             operation class (H100: fp16 tensor 4096, fp32 256; A100
             2048/128; ...; unknown architectures above any shipping
             part); x 1.10; divided by min_work (the fraction of the
             nominal flops the cleverest known algorithm must still do).
CPU: the CPU harness's model (harness_cpu.c kbh_cpu_peak): every logical
CPU at the highest clock we can learn, 64 fp32 flops and 128 loaded bytes
per cycle (L1 hits on two 512-bit ports). The C harness also measures a
streaming read and takes the larger of the two; the L1 bound is above that
measurement on every machine (it takes over 32 B/cycle of one thread), so
the measurement is left out here.

A time below the floor cannot have done the declared work (cached or
skipped work, a lying clock): the case is suspect.
"""

import os

MARGIN = 1.10

OPS = ("none", "fp32", "fp16_tc", "tf32_tc")


def flops_per_clk_sm(major, minor, ops):
    """Dense flops per clock per SM (FMA = 2) of an operation class."""
    if (major, minor) == (7, 5):
        fp32, fp16, tf32 = 128, 1024, 0
    elif (major, minor) == (8, 0):
        fp32, fp16, tf32 = 128, 2048, 1024
    elif major == 8:
        fp32, fp16, tf32 = 256, 1024, 512
    elif major == 9:
        fp32, fp16, tf32 = 256, 4096, 2048
    elif major in (10, 12):
        fp32, fp16, tf32 = 256, 8192, 4096
    else:
        fp32, fp16, tf32 = 512, 16384, 8192
    if ops == "fp32":
        return fp32
    if ops == "fp16_tc":
        return fp16
    if ops == "tf32_tc":
        return tf32 if tf32 > 0 else fp32
    return 0


# Datasheet peak DRAM bandwidth (bytes/s), most specific names first,
# matched as substrings of the device's name.
BW_TABLE = (
    ("GH200", 4.9e12), ("H200", 4.8e12), ("H100 NVL", 3.9e12),
    ("H100 PCIe", 2.0e12), ("H100", 3.35e12), ("H800", 3.35e12),
    ("B200", 8.0e12), ("A100 80GB PCIe", 1.935e12),
    ("A100-PCIE-40GB", 1.555e12), ("A100-SXM4-40GB", 1.555e12),
    ("A100", 2.039e12), ("A800", 2.039e12), ("L40S", 0.864e12),
    ("L40", 0.864e12), ("A10G", 0.6e12), ("A10", 0.6e12), ("L4", 0.3e12),
    ("T4", 0.32e12), ("V100", 0.9e12),
)


def bw_from_table(name):
    for match, bw in BW_TABLE:
        if match in (name or ""):
            return bw
    return 0.0


def bw_from_attrs(mem_clock_khz, bus_bits):
    if mem_clock_khz <= 0 or bus_bits <= 0:
        return 0.0
    return mem_clock_khz * 1e3 * 2.0 * bus_bits / 8.0


class Peak:
    """Ceilings (0 = unknown: that bound is skipped)."""

    def __init__(self, bytes_per_s=0.0, flops_per_s=0.0, source="none"):
        self.bytes_per_s = bytes_per_s
        self.flops_per_s = flops_per_s
        self.source = source


def gpu_peak(dev, ops="none", min_work=1.0):
    """dev: dict with name, cc (major, minor), sms, clock_khz,
    mem_clock_khz, bus_bits (0 when unknown)."""
    attr = bw_from_attrs(dev.get("mem_clock_khz", 0), dev.get("bus_bits", 0))
    table = bw_from_table(dev.get("name", ""))
    if attr < 1e10 or attr > 1e14:   # not a real device's
        attr = 0.0
    if attr > 0 and attr >= table:
        bw, src = attr, "attributes"
    elif table > 0:
        bw, src = table, "table"
    else:
        bw, src = 0.0, "none"
    flops = 0.0
    sms = dev.get("sms", 0)
    if ops != "none" and min_work > 0 and sms > 0:
        # An unknown clock is taken as 3 GHz: above any data-centre part.
        clk = dev["clock_khz"] * 1e3 if dev.get("clock_khz", 0) > 0 else 3e9
        major, minor = dev.get("cc", (0, 0))
        flops = sms * clk * flops_per_clk_sm(major, minor, ops) * MARGIN \
            / min_work
    return Peak(bw * MARGIN, flops, src)


def cpu_max_hz():
    """The highest clock we can learn (Hz), or 0: cpufreq's maximum, else
    /proc/cpuinfo's current MHz x 1.5 (room for a turbo we cannot see)."""
    try:
        with open("/sys/devices/system/cpu/cpu0/cpufreq/cpuinfo_max_freq") \
                as f:
            khz = float(f.read().strip() or 0)
        if khz > 0:
            return khz * 1e3
    except (OSError, ValueError):
        pass
    mhz = 0.0
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("cpu MHz"):
                    try:
                        mhz = max(mhz, float(line.split(":", 1)[1]))
                    except ValueError:
                        pass
    except OSError:
        pass
    return mhz * 1e6 * 1.5


def cpu_count():
    n = os.cpu_count() or 1
    try:
        n = max(n, len(os.sched_getaffinity(0)))
    except OSError:
        pass
    return n


def cpu_peak(ops="none", min_work=1.0, ncpu=None, hz=None):
    ncpu = ncpu or cpu_count()
    hz = hz or cpu_max_hz() or 6e9
    flops = ncpu * hz * 64.0 if ops != "none" and min_work > 0 else 0.0
    if flops and min_work:
        flops /= min_work
    return Peak(ncpu * hz * 128.0, flops, "cpus x clock x 128 B")


def floor_ns(cost, peak):
    """max(bytes / bandwidth, flops / rate) in ns; 0 when nothing is known.
    cost: dict with bytes and flops."""
    t = 0.0
    if cost.get("bytes", 0) > 0 and peak.bytes_per_s > 0:
        t = max(t, cost["bytes"] / peak.bytes_per_s * 1e9)
    if cost.get("flops", 0) > 0 and peak.flops_per_s > 0:
        t = max(t, cost["flops"] / peak.flops_per_s * 1e9)
    return t


def rates(cost, mean_ns):
    """A case's report keys for its cost and achieved rates, as (key, text)
    pairs: bytes and gbps, flops and gflops, for what the cost names. No
    rate for a mean of 0 (every sample the parent's bound of a forged call
    that fit in the slack: the case is suspect, and a rate would divide by
    zero)."""
    out = []
    for what, rate in (("bytes", "gbps"), ("flops", "gflops")):
        if cost.get(what, 0) > 0:
            out.append((what, "%.0f" % cost[what]))
            if mean_ns > 0:
                out.append((rate, "%.3f" % (cost[what] / mean_ns)))
    return out


def gpu_flush_bytes(l2_bytes):
    """Bytes to stream through L2 before each sample (kbg_flush_bytes):
    4 x L2, at least 64 MiB, rounded up to 1 MiB; 256 MiB if unknown."""
    mib = 1 << 20
    if not l2_bytes:
        return 256 * mib
    n = max(4 * l2_bytes, 64 * mib)
    return (n + mib - 1) // mib * mib


def _parse_size(s):
    s = s.strip()
    mult = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}.get(s[-1:].upper(), 1)
    digits = s[:-1] if mult > 1 else s
    return int(digits) * mult if digits.isdigit() else 0


def cpu_llc_bytes():
    """The last-level cache's size from sysfs (the largest data or unified
    cache level of cpu0); 64 MiB when unknown."""
    best, best_level = 0, 0
    base = "/sys/devices/system/cpu/cpu0/cache"
    for idx in range(16):
        d = "%s/index%d" % (base, idx)
        try:
            with open(d + "/level") as f:
                level = int(f.read().strip())
            with open(d + "/type") as f:
                if f.read().startswith("Instruction"):
                    continue
            with open(d + "/size") as f:
                size = _parse_size(f.read())
        except (OSError, ValueError):
            break
        if size and level >= best_level:
            best, best_level = size, level
    return best if best_level >= 2 and best else 64 << 20
