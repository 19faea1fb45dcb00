#!/usr/bin/env python3
"""Platform overhead of the submission pipeline, end to end.

Pushes N submissions one at a time through a running platform (make run)
and measures, for each, the time from just before the POST until
GET /user/submissions/{id} reports it done, minus the worker's own measured
build and harness time (Result.build_s + Result.harness_s,
read from the stored Result in Redis). What remains is
what the platform adds: HTTP, Redis writes, Kafka hops (gateway -> worker
-> ranker), job setup and teardown in the worker, the fold, and the poll.

Submissions go one at a time so queueing behind earlier jobs is not counted
as overhead. The status is polled every 1 ms, so the figure includes up to
1 ms of polling delay.

Usage: bench/pipeline.py --api URL --cli-id ID --redis-port P [-n 200] [--lb vectorsum_cpu]
                         [--mode test] [--file problems/vectorsum_cpu/submission_ok.c]
"""
import argparse
import json
import statistics
import struct
import subprocess
import sys
import time
import urllib.request
import uuid


def post_file(api, cli_id, lb, gpu, mode, path):
    boundary = uuid.uuid4().hex
    with open(path, "rb") as f:
        data = f.read()
    body = (f"--{boundary}\r\nContent-Disposition: form-data; name=\"file\"; "
            f"filename=\"{path.rsplit('/', 1)[-1]}\"\r\n"
            "Content-Type: text/plain\r\n\r\n").encode() + data + \
        f"\r\n--{boundary}--\r\n".encode()
    req = urllib.request.Request(
        f"{api}/submission/{lb}/{gpu}/{mode}", data=body, method="POST",
        headers={"X-Popcorn-Cli-Id": cli_id,
                 "Content-Type": f"multipart/form-data; boundary={boundary}"})
    with urllib.request.urlopen(req) as r:
        return json.load(r)["details"]["id"]


def get_json(url, cli_id):
    req = urllib.request.Request(url, headers={"X-Popcorn-Cli-Id": cli_id})
    with urllib.request.urlopen(req) as r:
        return json.load(r)


def result_work_s(redis_port, sid, gpu):
    """build_s + harness_s of the stored Result (kb:res:<id>:<gpu>), read
    from the protobuf (fields 17 and 18, doubles) with redis-cli."""
    # Piped, redis-cli prints the raw value and a newline; nil is empty.
    data = subprocess.run(["redis-cli", "-p", str(redis_port), "GET",
                           f"kb:res:{sid}:{gpu}"], capture_output=True).stdout[:-1]
    if not data:
        return 0.0
    work, i = 0.0, 0
    while i < len(data):
        key, i = varint(data, i)
        field, wire = key >> 3, key & 7
        if wire == 0:
            _, i = varint(data, i)
        elif wire == 1:
            if field in (17, 18):
                work += struct.unpack_from("<d", data, i)[0]
            i += 8
        elif wire == 2:
            n, i = varint(data, i)
            i += n
        elif wire == 5:
            i += 4
        else:
            raise ValueError(f"unexpected wire type {wire}")
    return work


def varint(b, i):
    v = shift = 0
    while True:
        c = b[i]
        i += 1
        v |= (c & 0x7F) << shift
        shift += 7
        if c < 0x80:
            return v, i


def pct(xs, p):
    xs = sorted(xs)
    k = (len(xs) - 1) * p / 100
    lo, hi = int(k), min(int(k) + 1, len(xs) - 1)
    return xs[lo] + (xs[hi] - xs[lo]) * (k - lo)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--api", default="http://127.0.0.1:8000")
    ap.add_argument("--cli-id", required=True)
    ap.add_argument("-n", type=int, default=200)
    ap.add_argument("--lb", default="vectorsum_cpu")
    ap.add_argument("--gpu", default="CPU")
    ap.add_argument("--mode", default="test")
    ap.add_argument("--file", default="problems/vectorsum_cpu/submission_ok.c")
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--redis-port", type=int, required=True,
                    help="the platform's Redis (make run prints it)")
    a = ap.parse_args()

    overheads, totals, works = [], [], []
    for i in range(a.warmup + a.n):
        t0 = time.monotonic()
        sid = post_file(a.api, a.cli_id, a.lb, a.gpu, a.mode, a.file)
        deadline = t0 + 120
        while True:
            s = get_json(f"{a.api}/user/submissions/{sid}", a.cli_id)
            if s.get("status") in ("done", "failed"):
                break
            if time.monotonic() > deadline:
                sys.exit(f"submission {sid} not done after 120 s")
            time.sleep(0.001)
        t1 = time.monotonic()
        work = result_work_s(a.redis_port, sid, a.gpu)
        if s.get("verdict") != "passed" or work <= 0:
            sys.exit(f"submission {sid}: verdict {s.get('verdict')}, work {work}: "
                     "the benchmark needs a passing submission and worker timings")
        if i < a.warmup:
            continue
        totals.append((t1 - t0) * 1e3)
        works.append(work * 1e3)
        overheads.append((t1 - t0 - work) * 1e3)

    print(f"submissions: {a.n} ({a.lb}/{a.gpu}/{a.mode}, one at a time)")
    print(f"end to end  ms: p50 {pct(totals, 50):7.1f}  p99 {pct(totals, 99):7.1f}")
    print(f"worker work ms: p50 {pct(works, 50):7.1f}  p99 {pct(works, 99):7.1f}  (build_s + harness_s)")
    print(f"overhead    ms: p50 {pct(overheads, 50):7.1f}  p99 {pct(overheads, 99):7.1f}"
          f"  mean {statistics.mean(overheads):.1f}  max {max(overheads):.1f}")


if __name__ == "__main__":
    main()
