"""kbh_report: the harness's protocol with the worker (trusted parent only).

What the worker and the harness agree on (docs: ../../../../shared/DESIGN.md,
"Harness protocol"; the C twin is ../harness.c):

  exit codes       EXIT_* below;
  the report       "key: value" lines on the descriptor POPCORN_FD names,
                   written by Report, which refuses (ReportError) anything
                   the worker's parser (services/kb_popcorn.h) would reject:
                   counts before indices, indices in order and below the
                   count, no key twice, keys [A-Za-z0-9_.-]+, one line per
                   value (newlines become spaces);
  the cases file   one case per line, "k: v; k: v" (parse_cases);
  seeds            the secret seed b of a ranked run turns each case seed a
                   into a + (a+b)(a+b+1)/2 mod 2^64 (combine_seed), and the
                   harness derives per-call seeds of its own (seed_derive).

Pure except Report, which writes to its descriptor. No torch, no user code.
"""

import os
import re

# ---- exit codes (upstream's, plus 115 of our split harnesses) -------------

EXIT_OK = 0
EXIT_USAGE = 2        # wrong arguments, unknown mode
EXIT_DEVICE = 110     # device or harness error before user code ran (ours)
EXIT_NO_FD = 111      # POPCORN_FD unset, invalid or unwritable
EXIT_FAILED = 112     # a test or a re-check failed
EXIT_BAD_SPEC = 113   # cases file missing or malformed
EXIT_TIMEOUT = 114    # the harness's own watchdog fired
EXIT_CRASHED = 115    # the submission's process died or exited in a request

MODES = ("test", "benchmark", "profile", "leaderboard")

U64 = (1 << 64) - 1

# ---- the report -----------------------------------------------------------

VALUE_MAX = 1024  # bytes of one value unless the caller allows more

_KEY = re.compile(r"[A-Za-z0-9_.-]+\Z")
_INDEXED = re.compile(r"(test|benchmark)\.(\d+)\.(.+)\Z")


class ReportError(Exception):
    """A line the protocol forbids (a harness bug), or a failed write."""


class Report:
    """Writes report lines to fd, one os.write per line (a watchdog exit
    never tears a line), enforcing the protocol's order. Not thread-safe:
    the main thread alone writes."""

    def __init__(self, fd):
        self.fd = fd
        self.broken = False
        self._seen = set()
        self._count = {"test": None, "benchmark": None}
        self._last = {"test": -1, "benchmark": -1}

    @classmethod
    def from_env(cls, environ=None):
        """The descriptor named by POPCORN_FD: decimal, open for writing.
        Marks it close-on-exec and removes the variable. Raises ReportError
        with the reason (the caller exits 111)."""
        env = os.environ if environ is None else environ
        s = env.get("POPCORN_FD", "")
        if not s:
            raise ReportError("POPCORN_FD is not set")
        if not s.isdigit() or int(s) > 65535:
            raise ReportError("POPCORN_FD=%r is not a descriptor" % s)
        fd = int(s)
        try:
            import fcntl
            fl = fcntl.fcntl(fd, fcntl.F_GETFL)
        except OSError:
            raise ReportError("POPCORN_FD=%d is not open" % fd)
        if fl & os.O_ACCMODE == os.O_RDONLY:
            raise ReportError("POPCORN_FD=%d is not open for writing" % fd)
        os.set_inheritable(fd, False)
        env.pop("POPCORN_FD", None)
        return cls(fd)

    def _check(self, key):
        if not _KEY.match(key):
            raise ReportError("bad report key %r" % key)
        if key in self._seen:
            raise ReportError("report key %r written twice" % key)
        if key in ("test-count", "benchmark-count"):
            kind = key.split("-")[0]
            if self._count[kind] is not None:
                raise ReportError("%s written twice" % key)
            return
        m = _INDEXED.match(key)
        if not m:
            return
        kind, i = m.group(1), int(m.group(2))
        if m.group(2) != str(i):
            raise ReportError("index with leading zeros: %r" % key)
        if self._count[kind] is None:
            raise ReportError("%r before %s-count" % (key, kind))
        if i >= self._count[kind] or i < self._last[kind] or \
                i > self._last[kind] + 1:
            raise ReportError("%r out of order" % key)

    def kv(self, key, value, max_len=VALUE_MAX):
        """Writes "key: value". value is formatted with str(); newlines and
        carriage returns become spaces; at most max_len bytes of UTF-8."""
        if self.broken:
            raise ReportError("the report is broken")
        self._check(key)
        v = str(value).replace("\r", " ").replace("\n", " ")
        b = v.encode("utf-8", "replace")
        if len(b) > max_len:
            b = b[:max_len].decode("utf-8", "ignore").encode("utf-8")
        line = key.encode("ascii") + b": " + b + b"\n"
        try:
            while line:
                n = os.write(self.fd, line)
                line = line[n:]
        except OSError as e:
            self.broken = True
            raise ReportError("report write failed: %s" % e.strerror)
        self._seen.add(key)
        if key in ("test-count", "benchmark-count"):
            self._count[key.split("-")[0]] = int(value)
        m = _INDEXED.match(key)
        if m:
            self._last[m.group(1)] = int(m.group(2))

    def test(self, i, sub, value, max_len=VALUE_MAX):
        self.kv("test.%d.%s" % (i, sub), value, max_len)

    def bench(self, i, sub, value, max_len=VALUE_MAX):
        self.kv("benchmark.%d.%s" % (i, sub), value, max_len)


# ---- cases ----------------------------------------------------------------

SPEC_MAX = 511
KEY_MAX = 31
VALUE_MAX_CASE = 63
CASE_KEYS = 16
_CASE_KEY = re.compile(r"[A-Za-z0-9_]+\Z")


class CaseError(Exception):
    """A malformed case or cases file (exit 113)."""


class Case:
    """One line of the cases file: spec (the trimmed line, reported as
    *.spec) and the keys in order (str -> str)."""

    def __init__(self, spec, kv):
        self.spec = spec
        self.kv = kv

    def u64(self, key, lo=0, hi=U64, required=True):
        """Strict unsigned decimal value of key in [lo, hi]; None when
        absent and not required. Raises CaseError."""
        v = self.kv.get(key)
        if v is None:
            if required:
                raise CaseError("missing key '%s'" % key)
            return None
        if not v.isdigit() or not v.isascii():
            raise CaseError("'%s: %s' is not an unsigned integer" % (key, v))
        x = int(v)
        if x > U64:
            raise CaseError("'%s: %s' overflows 64 bits" % (key, v))
        if x < lo or x > hi:
            raise CaseError("'%s: %s' is outside [%d, %d]" % (key, v, lo, hi))
        return x


def parse_case(line):
    """'k: v; k: v' -> Case. Blanks around keys and values are trimmed; a
    trailing ';' is fine; keys are [A-Za-z0-9_]+ and unique; values are
    non-empty and hold no ':' or ';'. Raises CaseError."""
    spec = line.strip(" \t\r\n")
    if len(spec.encode("utf-8")) > SPEC_MAX:
        raise CaseError("case line longer than %d bytes" % SPEC_MAX)
    if not spec:
        raise CaseError("empty case")
    kv = {}
    parts = spec.split(";")
    if len(parts) > 1 and not parts[-1].strip(" \t\r\n"):
        parts = parts[:-1]
    for part in parts:
        if ":" not in part:
            raise CaseError("'%s' is not 'key: value'" % part.strip())
        k, v = part.split(":", 1)
        k, v = k.strip(" \t\r\n"), v.strip(" \t\r\n")
        if not _CASE_KEY.match(k) or len(k) > KEY_MAX:
            raise CaseError("bad key '%s'" % k)
        if not v or ":" in v or len(v.encode("utf-8")) > VALUE_MAX_CASE:
            raise CaseError("bad value for '%s'" % k)
        if k in kv:
            raise CaseError("key '%s' given twice" % k)
        if len(kv) == CASE_KEYS:
            raise CaseError("more than %d keys" % CASE_KEYS)
        kv[k] = v
    return Case(spec, kv)


def parse_cases(text, name="cases"):
    """The cases file's text -> [Case]. Blank lines and lines starting with
    '#' are skipped; CRLF is fine. No case at all is an error."""
    cases = []
    for n, line in enumerate(text.split("\n"), 1):
        s = line.strip(" \t\r")
        if not s or s.startswith("#"):
            continue
        try:
            cases.append(parse_case(line))
        except CaseError as e:
            raise CaseError("%s:%d: %s" % (name, n, e))
    if not cases:
        raise CaseError("%s: no cases" % name)
    return cases


def load_cases(path):
    """Reads and parses the cases file; CaseError when it cannot be read."""
    try:
        with open(path, "rb") as f:
            raw = f.read(1 << 20)
    except OSError as e:
        raise CaseError("%s: %s" % (path, e.strerror))
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise CaseError("%s: not UTF-8" % path)
    return parse_cases(text, path)


# ---- seeds ----------------------------------------------------------------

def combine_seed(a, b):
    """Upstream's secret-seed rule, a + (a+b)(a+b+1)/2, modulo 2^64."""
    return (a + (a + b) * (a + b + 1) // 2) & U64


def hash_u64(key, ctr):
    """Counter-based 64-bit mix (harness.h kbh_hash_u64)."""
    z = (key + (ctr + 1) * 0x9E3779B97F4A7C15) & U64
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & U64
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & U64
    z ^= z >> 31
    z = ((z ^ (z >> 32)) * 0xD6E8FEB86659FD93) & U64
    return z ^ (z >> 32)


def _splitmix64(state):
    state = (state + 0x9E3779B97F4A7C15) & U64
    z = state
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & U64
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & U64
    return state, z ^ (z >> 31)


def seed_derive(seed, stream, index):
    """An independent seed for (stream, index) from seed (harness.h
    kbh_seed_derive; same values)."""
    st = (seed ^ hash_u64(stream, 0x5EED)) & U64
    _, a = _splitmix64(st)
    return hash_u64(a, index)


STREAM_CALL = 2  # per-call inputs (harness_cpu.c KBH__STREAM_CALL)


def call_seed(case_seed, run_key, call):
    """The inputs' seed of a case's call: the case seed alone for call 0
    (so a failure replays from the cases file), else derived from the case
    seed, the run's random key and the call's index (so neither the cases
    file nor the call count predicts a timed call's inputs)."""
    if call == 0:
        return case_seed
    return seed_derive(case_seed ^ run_key, STREAM_CALL, call)
