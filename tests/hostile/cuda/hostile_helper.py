#!/usr/bin/env python3
"""Helper of scripts/gpu-hostile.sh (kept out of the shell for robustness).

    hostile_helper.py summary RESULT.json EXIT_CODE
        One tab-separated line: verdict, ranked (yes/no), score (seconds,
        "-" when none: the ranked score, else the geometric mean of the
        benchmark means of the benchmark/leaderboard run, in brackets),
        number of "ACHIEVED" lines in the runs' stdout, the first such line
        (or "-"), the result file's size in bytes, and the error line.
        Never fails: a missing or broken result gives verdict "no-json".

    hostile_helper.py procs [WORKDIR]
        Processes that belong to sandboxed runs, one "pid uid comm" a line:
        uid in the sandbox range (>= 60000, except nobody 65534 and -1), a
        hostile program's name ("kbh-..."), or an environment naming
        WORKDIR (every run gets HOME=<its job directory>): the harness
        eval.out of someone else's worker on a shared host is not ours.
        Reads /proc (no ps needed).

    hostile_helper.py listen PORT LOGFILE SECONDS
        A canary TCP listener on 127.0.0.1 and ::1: every connection is
        logged (peer and the first bytes) to LOGFILE. Exits after SECONDS.
"""
import json
import math
import os
import re
import select
import socket
import sys
import time


def flat_result(res):
    if isinstance(res, list):  # [{"key":..,"value":..}] form
        return {kv.get("key"): kv.get("value") for kv in res if isinstance(kv, dict)}
    return res if isinstance(res, dict) else {}


def summary(path, rc):
    try:
        size = os.path.getsize(path)
    except OSError:
        size = 0
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            r = json.load(f)
    except Exception as e:  # noqa: BLE001 - anything means "no usable result"
        why = "worker exit %s, no JSON result (%s)" % (rc, str(e)[:60])
        print("\t".join(["no-json", "no", "-", "0", "-", str(size), why]))
        return
    verdict = str(r.get("verdict", "?")).replace("VERDICT_", "").lower()
    ranked = bool(r.get("has_score"))
    runs = r.get("runs") or []
    achieved = []
    for run in runs:
        for line in str(run.get("stdout") or "").splitlines():
            if line.startswith("ACHIEVED"):
                achieved.append(line.strip())
    score = "-"
    if ranked:
        score = "%.6g" % float(r.get("score") or 0)
    else:
        for key in ("leaderboard", "benchmark"):
            run = next((x for x in runs if x.get("key") == key), None)
            if not run:
                continue
            res = flat_result(run.get("result"))
            means = []
            for k, v in res.items():
                if re.fullmatch(r"benchmark\.\d+\.mean", str(k)):
                    try:
                        means.append(float(v))
                    except ValueError:
                        pass
            if means and all(m > 0 for m in means):
                g = math.exp(sum(math.log(m / 1e9) for m in means) / len(means))
                score = "(%.6g)" % g
            break
    err = str(r.get("error") or "-").replace("\t", " ").replace("\n", " ")[:160]
    first = achieved[0][:120].replace("\t", " ") if achieved else "-"
    print("\t".join([verdict, "yes" if ranked else "no", score, str(len(achieved)),
                     first, str(size), err]))


def procs(workdir):
    me = os.getpid()
    mark = ("=" + workdir.rstrip("/") + "/").encode() if workdir else None
    for d in os.listdir("/proc"):
        if not d.isdigit() or int(d) == me:
            continue
        try:
            with open("/proc/%s/status" % d) as f:
                status = f.read()
            with open("/proc/%s/comm" % d) as f:
                comm = f.read().strip()
        except OSError:
            continue
        m = re.search(r"^Uid:\s+(\d+)", status, re.M)
        uid = int(m.group(1)) if m else -1
        if "\nState:\tZ" in status and uid < 60000:
            continue
        sandbox_uid = uid >= 60000 and uid not in (65534, 4294967295)
        ours = False
        if mark and not sandbox_uid and not comm.startswith("kbh-"):
            try:
                with open("/proc/%s/environ" % d, "rb") as f:
                    ours = mark in f.read()
            except OSError:
                pass
        if sandbox_uid or ours or comm.startswith("kbh-"):
            print(d, uid, comm.replace(" ", "_"))


def listen(port, logfile, seconds):
    socks = []
    for fam, addr in ((socket.AF_INET, "127.0.0.1"), (socket.AF_INET6, "::1")):
        try:
            s = socket.socket(fam, socket.SOCK_STREAM)
            s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            s.bind((addr, port))
            s.listen(16)
            socks.append(s)
        except OSError:
            pass
    with open(logfile, "a") as log:
        log.write("# listening on %d socket(s), port %d\n" % (len(socks), port))
        log.flush()
        end = time.time() + seconds
        while socks and time.time() < end:
            ready, _, _ = select.select(socks, [], [], 1.0)
            for s in ready:
                try:
                    c, peer = s.accept()
                    c.settimeout(0.5)
                    try:
                        data = c.recv(200)
                    except OSError:
                        data = b""
                    c.close()
                    log.write("CONNECTION from %s: %r\n" % (peer, data))
                    log.flush()
                except OSError:
                    pass


def main(argv):
    if len(argv) >= 4 and argv[1] == "summary":
        summary(argv[2], argv[3])
    elif len(argv) >= 2 and argv[1] == "procs":
        procs(argv[2] if len(argv) >= 3 else "")
    elif len(argv) >= 5 and argv[1] == "listen":
        listen(int(argv[2]), argv[3], float(argv[4]))
    else:
        sys.stderr.write(__doc__)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
