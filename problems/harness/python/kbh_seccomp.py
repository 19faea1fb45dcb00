"""kbh_seccomp: the child's confinement: no capabilities, and a seccomp
filter of its own, assembled by hand.

The child (kbh_child.py) calls confine() first thing, before it imports
torch or anything of the user's. Capabilities go first (all of them, from
the bounding set too): a child running as root would otherwise keep
CAP_SYS_PTRACE, which opens a non-dumpable parent's /proc/<pid>/{fd,mem,
environ} all the same; with NO_NEW_PRIVS, programs the child executes gain
none back. The filter cannot be lifted (NO_NEW_PRIVS), every thread and
process the child makes inherits it, and it stacks on whatever filter the
worker's sandbox installed. What it refuses, and why:

  ptrace, process_vm_readv/writev, kcmp, pidfd_open, pidfd_getfd,
  pidfd_send_signal, io_uring_setup
      reaching into other processes (the parent is also non-dumpable) or
      doing work the parent cannot stop with SIGSTOP (io_uring's kernel
      threads): EPERM;
  kill, tgkill, tkill, rt_sigqueueinfo, rt_tgsigqueueinfo
      allowed only towards the child's own world, judged on the target
      argument's low 32 bits (what the kernel reads as pid_t): 0 (its own
      process group), minus its own process group, or a pid at least the
      child's own (the child, its threads and its descendants: pids grow,
      and every process of the parent's exists before the child is
      started) that is not one of the parent's threads (tighten() adds
      those made after the child started). So the parent
      (any of its threads, since kill() of a thread's id hits its whole
      process), -1, the parent's process group and every other process
      are refused: EPERM;
  setsid, setpgid
      answered 0 without doing anything: every descendant stays in the
      child's process group, which the parent stops and continues as one
      (killpg). Not refused, because posix_spawn() and ninja put compilers
      in process groups of their own (load_inline builds in the child) and
      would fail on EPERM;
  other architectures' system calls (x32 on x86-64): EPERM; a foreign
  audit architecture: the process is killed.

Process creation and exec stay allowed: Triton and load_inline run ptxas,
cc, nvcc and ninja from the child during warm-up.

The child calls confine() first thing, with the parent's threads of that
moment, and tighten() when the parent says hello, with all of them (the
parent makes threads while both start in parallel); both before any user
code. Pure except those two (prctl and seccomp through ctypes).
"""

import ctypes
import os
import platform
import struct

# struct sock_filter { u16 code; u8 jt; u8 jf; u32 k; }
_INSN = struct.Struct("=HBBI")

BPF_LD, BPF_JMP, BPF_RET = 0x00, 0x05, 0x06
BPF_W, BPF_ABS, BPF_K = 0x00, 0x20, 0x00
BPF_JEQ, BPF_JGT, BPF_JGE = 0x10, 0x20, 0x30

SECCOMP_RET_KILL_PROCESS = 0x80000000
SECCOMP_RET_ERRNO = 0x00050000
SECCOMP_RET_ALLOW = 0x7FFF0000
EPERM = 1

RET_EPERM = SECCOMP_RET_ERRNO | EPERM
RET_FAKE_OK = SECCOMP_RET_ERRNO | 0   # the call returns 0, does nothing

# struct seccomp_data { int nr; u32 arch; u64 ip; u64 args[6]; }
OFF_NR, OFF_ARCH = 0, 4


def _off_arg_lo(i):
    return 16 + 8 * i   # little-endian: the low half comes first


# System call numbers (the kernel's tables; Python has no header access).
SYSCALLS = {
    "x86_64": dict(
        audit=0xC000003E, x32_bit=0x40000000,
        ptrace=101, process_vm_readv=310, process_vm_writev=311, kcmp=312,
        pidfd_open=434, pidfd_getfd=438, pidfd_send_signal=424,
        io_uring_setup=425, setsid=112, setpgid=109, kill=62, tkill=200,
        tgkill=234, rt_sigqueueinfo=129, rt_tgsigqueueinfo=297),
    "aarch64": dict(
        audit=0xC00000B7, x32_bit=None,
        ptrace=117, process_vm_readv=270, process_vm_writev=271, kcmp=272,
        pidfd_open=434, pidfd_getfd=438, pidfd_send_signal=424,
        io_uring_setup=425, setsid=157, setpgid=154, kill=129, tkill=130,
        tgkill=131, rt_sigqueueinfo=138, rt_tgsigqueueinfo=240),
}

DENIED = ("ptrace", "process_vm_readv", "process_vm_writev", "kcmp",
          "pidfd_open", "pidfd_getfd", "pidfd_send_signal", "io_uring_setup")
FAKED = ("setsid", "setpgid")
SIGNALS = ("kill", "tkill", "tgkill", "rt_sigqueueinfo", "rt_tgsigqueueinfo")


class _Asm:
    """A straight-line BPF program with forward jumps to labels."""

    def __init__(self):
        self.code = []     # [op, jt, jf, k]; jt/jf may be label names

    def stmt(self, code, k):
        self.code.append([code, 0, 0, k])

    def jump(self, cond, k, jt, jf):
        self.code.append([BPF_JMP | cond | BPF_K, jt, jf, k])

    def label(self, name):
        self.code.append(name)

    def assemble(self):
        pos, n = {}, 0
        for ins in self.code:
            if isinstance(ins, str):
                pos[ins] = n
            else:
                n += 1
        out, n = [], 0
        for ins in self.code:
            if isinstance(ins, str):
                continue
            code, jt, jf, k = ins
            jt = pos[jt] - n - 1 if isinstance(jt, str) else jt
            jf = pos[jf] - n - 1 if isinstance(jf, str) else jf
            if not (0 <= jt <= 255 and 0 <= jf <= 255):
                raise ValueError("jump out of range")
            out.append((code, jt, jf, k))
            n += 1
        return out


def build(arch, child_pid, child_pgrp, parent_tids):
    """The filter as [(code, jt, jf, k)]. child_pid, child_pgrp: the
    child's pid and process group (the same: it is a session leader);
    parent_tids: every thread id of the parent (its pid included)."""
    sc = SYSCALLS[arch]
    a = _Asm()
    a.stmt(BPF_LD | BPF_W | BPF_ABS, OFF_ARCH)
    a.jump(BPF_JEQ, sc["audit"], 1, 0)
    a.stmt(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS)
    a.stmt(BPF_LD | BPF_W | BPF_ABS, OFF_NR)
    if sc["x32_bit"]:
        a.jump(BPF_JGE, sc["x32_bit"], "eperm", 0)
    for name in DENIED:
        a.jump(BPF_JEQ, sc[name], "eperm", 0)
    for name in FAKED:
        a.jump(BPF_JEQ, sc[name], "fake", 0)
    for name in SIGNALS:
        a.jump(BPF_JEQ, sc[name], "signal", 0)
    a.stmt(BPF_RET | BPF_K, SECCOMP_RET_ALLOW)
    # The target (first argument) of every signal call, as the kernel
    # reads it: a 32-bit pid_t. Unsigned comparisons: values >= 2^31 are
    # negative pids (process groups; 0xffffffff is -1, everyone). BPF jumps
    # only forward: the verdicts come last.
    a.label("signal")
    a.stmt(BPF_LD | BPF_W | BPF_ABS, _off_arg_lo(0))
    a.jump(BPF_JEQ, 0, "allow", 0)                           # own group
    a.jump(BPF_JEQ, (-child_pgrp) & 0xFFFFFFFF, "allow", 0)  # own group
    a.jump(BPF_JGE, 0x80000000, "eperm", 0)                  # other groups
    for tid in sorted(set(parent_tids)):
        a.jump(BPF_JEQ, tid & 0xFFFFFFFF, "eperm", 0)
    a.jump(BPF_JGE, child_pid & 0xFFFFFFFF, "allow", "eperm")
    a.label("allow")
    a.stmt(BPF_RET | BPF_K, SECCOMP_RET_ALLOW)
    a.label("eperm")
    a.stmt(BPF_RET | BPF_K, RET_EPERM)
    a.label("fake")
    a.stmt(BPF_RET | BPF_K, RET_FAKE_OK)
    return a.assemble()


def pack(prog):
    return b"".join(_INSN.pack(*ins) for ins in prog)


def run(prog, arch_audit, nr, args=(0, 0, 0, 0, 0, 0)):
    """Interprets prog for one system call (tests): the return value."""
    data = struct.pack("<iIQ6Q", nr, arch_audit, 0,
                       *[x & 0xFFFFFFFFFFFFFFFF for x in args])
    acc, pc = 0, 0
    while True:
        code, jt, jf, k = prog[pc]
        if code == BPF_LD | BPF_W | BPF_ABS:
            acc = struct.unpack_from("<I", data, k)[0]
            pc += 1
        elif code & 0x07 == BPF_JMP:
            op = code & 0xF0
            hit = {BPF_JEQ: acc == k, BPF_JGT: acc > k, BPF_JGE: acc >= k}[op]
            pc += 1 + (jt if hit else jf)
        elif code == BPF_RET | BPF_K:
            return k
        else:
            raise ValueError("unknown instruction %#x" % code)


def machine():
    m = platform.machine()
    return {"amd64": "x86_64", "arm64": "aarch64"}.get(m, m)


class _Fprog(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]


PR_SET_NO_NEW_PRIVS = 38
PR_SET_SECCOMP = 22
SECCOMP_MODE_FILTER = 2
SYS_SECCOMP = {"x86_64": 317, "aarch64": 277}
SECCOMP_SET_MODE_FILTER, SECCOMP_FILTER_FLAG_TSYNC = 1, 1


PR_CAPBSET_DROP = 24
PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL = 47, 4
SYS_CAPSET = {"x86_64": 126, "aarch64": 91}
CAP_VERSION_3 = 0x20080522


def _libc():
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl.argtypes = [ctypes.c_int, ctypes.c_ulong, ctypes.c_ulong,
                           ctypes.c_ulong, ctypes.c_ulong]
    return libc


def _err(what):
    return "%s: %s" % (what, os.strerror(ctypes.get_errno()))


def drop_capabilities(libc, arch):
    """Empties the bounding, ambient, effective, permitted and inheritable
    sets. Returns None, or why not (the effective set is checked)."""
    try:
        with open("/proc/sys/kernel/cap_last_cap") as f:
            last = int(f.read())
    except (OSError, ValueError):
        last = 63
    for cap in range(last + 1):     # needs CAP_SETPCAP; else nothing to drop
        libc.prctl(PR_CAPBSET_DROP, cap, 0, 0, 0)
    libc.prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0)
    hdr = (ctypes.c_uint32 * 2)(CAP_VERSION_3, 0)
    data = (ctypes.c_uint32 * 6)()   # two cap_user_data: all zero
    if libc.syscall(SYS_CAPSET[arch], hdr, data) != 0:
        return _err("capset")
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("CapEff:") and int(line.split()[1], 16):
                return "capabilities left: " + line.split()[1]
    return None


def _program(arch, parent_tids):
    """The filter for this process, packed, or (None, why not)."""
    try:
        prog = build(arch, os.getpid(), os.getpgrp(), parent_tids)
    except ValueError as e:
        return None, None, "filter: %s" % e
    raw = ctypes.create_string_buffer(pack(prog))
    return raw, _Fprog(len(prog), ctypes.cast(raw, ctypes.c_void_p)), None


def confine(parent_tids):
    """Drops the capabilities and installs the filter for this process
    (call it while the process has one thread: threads made later inherit
    it). Returns None, or what could not be done (the child then says so
    and goes on)."""
    arch = machine()
    if arch not in SYSCALLS:
        return "no filter for architecture %s" % arch
    libc = _libc()
    why = drop_capabilities(libc, arch)
    if why:
        return why
    keep, fprog, why = _program(arch, parent_tids)  # keep: the buffer
    if why:
        return why
    if libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
        return _err("prctl(NO_NEW_PRIVS)")
    if libc.prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER,
                  ctypes.addressof(fprog), 0, 0) != 0:
        return _err("prctl(SECCOMP)")
    return None


def tighten(parent_tids):
    """After confine(): the same filter again, with every thread of the
    parent now (the child starts before the parent has made all of its
    threads: torch and CUDA make some after). Stacked on the first (filters
    only ever add refusals) and synchronised to every thread of this
    process (SECCOMP_FILTER_FLAG_TSYNC: torch and CUDA made threads here
    too, and a CUDA host callback runs user code on one of them). Call it
    before any user code. Returns None, or what could not be done."""
    arch = machine()
    if arch not in SYSCALLS:
        return "no filter for architecture %s" % arch
    keep, fprog, why = _program(arch, parent_tids)  # keep: the buffer
    if why:
        return why
    libc = _libc()
    rc = libc.syscall(ctypes.c_long(SYS_SECCOMP[arch]),
                      ctypes.c_long(SECCOMP_SET_MODE_FILTER),
                      ctypes.c_long(SECCOMP_FILTER_FLAG_TSYNC),
                      ctypes.c_void_p(ctypes.addressof(fprog)))
    if rc > 0:
        return "seccomp(TSYNC): thread %d could not take the filter" % rc
    if rc != 0:
        return _err("seccomp(TSYNC)")
    return None
