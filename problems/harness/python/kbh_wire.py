"""kbh_wire: the messages between the trusted parent and the child.

One AF_UNIX SOCK_SEQPACKET socket pair (message boundaries kept; the
parent's requests can carry a descriptor, a CPU case's memfd):

  parent -> child   a request: a pickled dict {"op", "seq", ...}. The
                    child is the untrusted side, so it may unpickle what
                    the trusted side sends; never the other way round.
  child -> parent   a reply: exactly REPLY.size bytes in the fixed layout
                    below, which the parent unpacks with struct and
                    validates field by field (parse_reply); the one text
                    field is cut to its declared length and reduced to
                    printable ASCII. Anything else is a malformed reply.

A reply carries claims only: the parent believes none of them beyond what
its own clock and checks allow (kbh_timing).
"""

import math
import pickle
import struct

# Operations (parent -> child).
HELLO = 1     # ready? (the child says whether its seccomp filter is on)
CAL = 2       # an empty timed call, no user code (slack calibration)
LOAD = 3      # import the submission, find custom_kernel
OPEN = 4      # map a case's work slots (and learn its constants)
CALL = 5      # the timed call
CLOSE = 6     # drop the case's slot views
PROFILE = 7   # start / stop the torch profiler around the next calls
OP_NAMES = {HELLO: "hello", CAL: "calibrate", LOAD: "load", OPEN: "open",
            CALL: "call", CLOSE: "close", PROFILE: "profile"}

# Reply status.
ST_OK = 0
ST_USER = 1      # the user's code raised, or its result is unusable
ST_HARNESS = 2   # the child's own code failed (before user code: ours)
ST_LOAD = 3      # the submission did not import or has no custom_kernel
STATUSES = (ST_OK, ST_USER, ST_HARNESS, ST_LOAD)

# Reply flags.
F_CONFINED = 1   # HELLO: the seccomp filter is installed
F_STICKY = 2     # the child's CUDA context is broken for good
F_CUDA = 4       # HELLO: the child runs on CUDA
FLAGS_ALL = F_CONFINED | F_STICKY | F_CUDA

MAGIC = 0x5248424B   # "KBHR"
VERSION = 1
MSG_MAX = 1024
REQ_MAX = 65536

# magic, version, op, seq, status, flags, t0, t1, t2 (ns, CLOCK_MONOTONIC),
# claim_ns (float), aux (u64: a pid, a count), msg_len, msg
REPLY = struct.Struct("<IHHQiIQQQdQH%ds" % MSG_MAX)


class Malformed(Exception):
    """A reply that does not follow the format (only a child whose harness
    code was changed sends one)."""


class Reply:
    __slots__ = ("op", "seq", "status", "flags", "t0", "t1", "t2", "claim",
                 "aux", "msg")

    def __init__(self, op, seq, status=ST_OK, flags=0, t0=0, t1=0, t2=0,
                 claim=0.0, aux=0, msg=""):
        self.op, self.seq, self.status, self.flags = op, seq, status, flags
        self.t0, self.t1, self.t2, self.claim = t0, t1, t2, claim
        self.aux, self.msg = aux, msg


def pack_request(req):
    raw = pickle.dumps(req, protocol=4)
    if len(raw) > REQ_MAX:
        raise ValueError("request of %d bytes" % len(raw))
    return raw


def unpack_request(raw):
    return pickle.loads(raw)


def pack_reply(r):
    """The child's side: a Reply -> bytes (text cut to MSG_MAX bytes)."""
    msg = r.msg.encode("ascii", "replace")[:MSG_MAX]
    return REPLY.pack(MAGIC, VERSION, r.op, r.seq, r.status, r.flags,
                      r.t0, r.t1, r.t2, float(r.claim), r.aux, len(msg), msg)


def printable(b):
    """Bytes -> str of printable ASCII (anything else becomes '?')."""
    return "".join(chr(c) if 32 <= c < 127 else "?" for c in b)


def parse_reply(buf, op, seq):
    """The parent's side: validates buf as the reply to request (op, seq).
    Raises Malformed saying what is wrong."""
    if len(buf) != REPLY.size:
        raise Malformed("a reply of %d bytes, not %d" % (len(buf), REPLY.size))
    (magic, version, rop, rseq, status, flags, t0, t1, t2, claim, aux,
     mlen, msg) = REPLY.unpack(buf)
    if magic != MAGIC or version != VERSION:
        raise Malformed("bad magic or version")
    if rop != op or rseq != seq:
        raise Malformed("a reply to request %d/%d, not %d/%d"
                        % (rop, rseq, op, seq))
    if status not in STATUSES:
        raise Malformed("unknown status %d" % status)
    if flags & ~FLAGS_ALL:
        raise Malformed("unknown flags %#x" % flags)
    if not math.isfinite(claim) or claim < 0 or claim > 1e15:
        raise Malformed("claimed time %r" % claim)
    if mlen > MSG_MAX:
        raise Malformed("message length %d" % mlen)
    return Reply(rop, rseq, status, flags, t0, t1, t2, claim, aux,
                 printable(msg[:mlen]))
