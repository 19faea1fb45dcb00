"""pyh_lib: stage and run a Python problem the way the worker does, and
check reports as its parser does (tests of problems/harness/python).

  stage(problem, submission)  copies the task.yml `files` flat into a fresh
                              task directory (the submission under its
                              @SUBMISSION@ name), read-only afterwards
  Task.cases(section)         the task's tests/benchmarks as case lines
  run(task, mode, cases)      $KB_PYTHON <task>/kbh_eval.py <mode> cases.txt
                              in a fresh scratch directory, POPCORN_FD=3,
                              KBH_CASES_UNLINK=1, private HOME and caches;
                              secret=<u64> adds POPCORN_SEED
  validate(report)            the protocol rules of services/kb_popcorn.h

KB_PYTHON names the interpreter (default /usr/bin/python3: Debian's, with
python3-torch); KBH_TEST_WORK a directory to keep the runs in;
KBH_TEST_HELD=1 runs the harness as a held run (worker/run/ready.h): started
as worker/run/ready.py with the go socket on fd 4, told the harness's
arguments once it has imported torch, as the worker does for a Python
job's first run (runs with a seed or a report on another descriptor than
3, which the worker never holds, run as usual).
"""

import os
import shutil
import socket
import stat
import subprocess
import sys
import tempfile

import yaml

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", ".."))
PROBLEMS = os.path.join(ROOT, "problems")
HARNESS = os.path.join(PROBLEMS, "harness", "python")
PYTHON = os.environ.get("KB_PYTHON", "/usr/bin/python3")
SECRET = 12345

_work = None


def work_dir():
    global _work
    if _work is None:
        base = os.environ.get("KBH_TEST_WORK")
        if base:
            os.makedirs(base, exist_ok=True)
            _work = tempfile.mkdtemp(prefix="pyh.", dir=base)
        else:
            _work = tempfile.mkdtemp(prefix="pyh.")
    return _work


class Task:
    def __init__(self, problem, dir, yml):
        self.problem = problem
        self.dir = dir
        self.yml = yml

    def cases(self, section, extra=""):
        """The section's cases as the worker renders them: "k: v; k: v" in
        the map's order, plus extra ("k: v")."""
        out = []
        for c in self.yml[section]:
            line = "; ".join("%s: %s" % (k, v) for k, v in c.items())
            out.append(line + ("; " + extra if extra else ""))
        return out


def _files(pdir, entries):
    """task.yml's files entries, each {"include": manifest} replaced by
    the manifest's entries (sources made relative to pdir), as the
    platform's loader does (services/kb_task.h)."""
    for e in entries:
        if "include" not in e:
            yield e
            continue
        with open(os.path.join(pdir, e["include"])) as f:
            m = yaml.safe_load(f)
        base = os.path.dirname(e["include"])
        for x in m["files"]:
            yield {"name": x["name"],
                   "source": os.path.join(base, x["source"])}


def stage(problem, submission, harness=None, name=None):
    """A task directory for problems/<problem> (or an absolute problem
    directory) with submission (a path).
    harness: another directory to take the harness files from (ablation
    copies)."""
    pdir = problem if os.path.isabs(problem) else \
        os.path.join(PROBLEMS, problem)
    with open(os.path.join(pdir, "task.yml")) as f:
        yml = yaml.safe_load(f)
    d = tempfile.mkdtemp(prefix=(name or os.path.basename(problem)) + ".",
                         dir=work_dir())
    task = os.path.join(d, "task")
    os.mkdir(task)
    for e in _files(pdir, yml["files"]):
        src = e["source"]
        if src == "@SUBMISSION@":
            shutil.copy(submission, os.path.join(task, e["name"]))
            continue
        path = os.path.normpath(os.path.join(pdir, src))
        if harness and os.path.dirname(path) == HARNESS:
            path = os.path.join(harness, os.path.basename(path))
        shutil.copy(path, os.path.join(task, e["name"]))
    for f in os.listdir(task):
        os.chmod(os.path.join(task, f), 0o444)
    os.chmod(task, 0o555)
    return Task(problem, task, yml)


class Result:
    def __init__(self, rc, report, stderr, scratch):
        self.rc = rc
        self.text = report
        self.stderr = stderr
        self.scratch = scratch
        self.kv = {}
        for line in report.splitlines():
            if ": " in line:
                k, v = line.split(": ", 1)
                self.kv.setdefault(k, v)

    def get(self, key, default=None):
        return self.kv.get(key, default)

    def __str__(self):
        return "rc=%s\n--- report\n%s\n--- stderr\n%s" % (
            self.rc, self.text, self.stderr[-6000:])


def job_env(home, cache):
    """The environment of a job: a private HOME and caches (cache: the
    directory shared by a job's compile step and its runs)."""
    e = {k: v for k, v in os.environ.items()
         if not k.startswith(("POPCORN_", "KBH_"))}
    e.update(HOME=home, XDG_CACHE_HOME=os.path.join(cache, "xdg"),
             TORCH_EXTENSIONS_DIR=os.path.join(cache, "ext"),
             TRITON_CACHE_DIR=os.path.join(cache, "triton"),
             PYTHONDONTWRITEBYTECODE="1")
    return e


def compile_step(task, cache, timeout=120):
    """Upstream's compile step: `python submission.py` once (builds
    load_inline extensions and Triton kernels into the cache). (rc, out)"""
    os.makedirs(cache, exist_ok=True)
    p = subprocess.run([PYTHON, os.path.join(task.dir, "submission.py")],
                       cwd=cache, env=job_env(cache, cache), timeout=timeout,
                       stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                       stderr=subprocess.STDOUT)
    return p.returncode, p.stdout.decode("utf-8", "replace")


def run(task, mode, cases, secret=None, env=None, timeout=280, fd=3,
        cases_text=None, args=None, cache=None):
    """Runs the harness like the worker: returns a Result."""
    scratch = tempfile.mkdtemp(prefix="run.", dir=os.path.dirname(task.dir))
    if cases_text is None:
        cases_text = "".join(c + "\n" for c in cases)
    with open(os.path.join(scratch, "cases.txt"), "w") as f:
        f.write(cases_text)
    home = os.path.join(scratch, "home")
    os.mkdir(home)
    e = job_env(home, cache or home)
    e.update(TMPDIR=scratch, KBH_CASES_UNLINK="1")
    if fd is not None:
        e["POPCORN_FD"] = str(fd)
    if secret is not None:
        e["POPCORN_SEED"] = str(secret)
    e.update(env or {})
    rfd, wfd = os.pipe()
    argv = [PYTHON, os.path.join(task.dir, "kbh_eval.py")]
    argv += [mode, "cases.txt"] if args is None else args
    held = os.environ.get("KBH_TEST_HELD") == "1" and secret is None \
        and fd == 3
    if held:
        ours, theirs = socket.socketpair()
        e["KB_READY_FD"] = "4"
        go = "".join("arg %s\n" % a for a in argv[1:]) + "go\n"
        argv = [PYTHON, os.path.join(ROOT, "worker", "run", "ready.py")]

    def child_fds():
        # the report's descriptor at its number (dup2 clears close-on-
        # exec; every other descriptor of ours is close-on-exec)
        if fd is not None:
            os.dup2(wfd, fd)
            os.set_inheritable(fd, True)   # dup2(n, n) would keep it
        if held:
            os.dup2(theirs.fileno(), 4)
            os.set_inheritable(4, True)

    p = subprocess.Popen(argv, cwd=scratch, env=e, stdin=subprocess.DEVNULL,
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                         preexec_fn=child_fds, close_fds=False,
                         start_new_session=True)
    os.close(wfd)
    if held:
        theirs.close()
        ours.settimeout(120)
        try:
            ready = ours.recv(6)
        except OSError:
            ready = b""
        held = ready == b"ready\n"   # else the run's output says why
        if held:
            ours.sendall(go.encode())
        ours.close()
    chunks = []
    import threading

    def reader():
        while True:
            b = os.read(rfd, 65536)
            if not b:
                break
            chunks.append(b)

    t = threading.Thread(target=reader)
    t.start()
    try:
        out, _ = p.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, 9)
        out, _ = p.communicate()
        out += b"\n[pyh_lib: timed out]\n"
    t.join(5)
    os.close(rfd)
    r = Result(p.returncode, b"".join(chunks).decode("utf-8", "replace"),
               out.decode("utf-8", "replace"), scratch)
    r.held = held
    return r


def validate(report):
    """The protocol errors of a report (services/kb_popcorn.h), [] if none:
    "key: value" lines, no key twice, counts before indices, indices in
    order and below the count, check last and pass/fail."""
    errs = []
    seen, count = set(), {"test": None, "benchmark": None}
    last = {"test": -1, "benchmark": -1}
    saw_check = False
    for line in report.split("\n")[:-1] if report.endswith("\n") \
            else report.split("\n"):
        if ": " not in line:
            errs.append("bad line %r" % line)
            continue
        k, v = line.split(": ", 1)
        if not k or any(not (c.isalnum() or c in "_.-") for c in k):
            errs.append("bad key %r" % k)
        if k in seen:
            errs.append("duplicate key %s" % k)
        seen.add(k)
        if saw_check:
            errs.append("key after check: %s" % k)
        if k == "check":
            saw_check = True
            if v not in ("pass", "fail"):
                errs.append("check: %r" % v)
        if k in ("test-count", "benchmark-count"):
            count[k.split("-")[0]] = int(v)
        parts = k.split(".")
        if len(parts) >= 3 and parts[0] in count:
            kind, i = parts[0], int(parts[1])
            if count[kind] is None:
                errs.append("%s before %s-count" % (k, kind))
            elif i >= count[kind] or i < last[kind] or i > last[kind] + 1:
                errs.append("%s out of order" % k)
            last[kind] = i
    if not saw_check:
        errs.append("no check key")
    return errs


def read_only_tree(path):
    """Makes a staged tree removable again (tests clean up after
    themselves only on success)."""
    for d, dirs, files in os.walk(path):
        os.chmod(d, 0o755)
        for f in files:
            try:
                os.chmod(os.path.join(d, f), stat.S_IRUSR | stat.S_IWUSR)
            except OSError:
                pass


def cleanup():
    if _work and not os.environ.get("KBH_TEST_WORK"):
        read_only_tree(_work)
        shutil.rmtree(_work, ignore_errors=True)


class Checker:
    """Counts checks and failures; prints FAIL lines."""

    def __init__(self):
        self.checks = 0
        self.failures = 0

    def ok(self, cond, what, detail=None):
        self.checks += 1
        if not cond:
            self.failures += 1
            print("FAIL: %s" % what)
            if detail is not None:
                print(detail)
        return cond

    def eq(self, got, want, what, detail=None):
        return self.ok(got == want, "%s: got %r, want %r" % (what, got, want),
                       detail)

    def done(self, name):
        print("%s: %d checks, %d failures" % (name, self.checks,
                                              self.failures))
        if self.failures == 0:
            cleanup()
        else:
            print("work directory kept: %s" % work_dir())
        sys.exit(1 if self.failures else 0)
