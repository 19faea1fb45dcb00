#!/usr/bin/env python3
"""bench/web/seed.py USERS [BOARD] [GPU]: prints Redis commands (one per
line, for redis-cli) that make USERS ranked users on BOARD/GPU with a
score history: each user improves four times over the last 30 days, as
the ranker would have written it (kb:user, kb:rank, kb:rankinfo, kb:sub,
kb:hist, kb:uhist; docs/internals.md). Deterministic (seeded)."""
import random
import sys

users = int(sys.argv[1]) if len(sys.argv) > 1 else 100
lb = sys.argv[2] if len(sys.argv) > 2 else "vectorsum_cpu"
gpu = sys.argv[3] if len(sys.argv) > 3 else "CPU"
rng = random.Random(18)
now = 1795000000000
day = 86400000
sub = 100000
names = ["ada", "bo", "chen", "dana", "eli", "fay", "gus", "hana", "ivo", "jun"]
for u in range(users):
    uid = "bench%04d" % u
    name = "%s-%d" % (names[u % len(names)], u)
    print("HSET kb:user:%s name %s created_ms %d banned 0" % (uid, name, now - 40 * day))
    best = rng.uniform(2e-4, 4e-3)
    t = now - rng.randint(20, 30) * day
    for k in range(4):
        sub += 1
        score = best * (1 + (3 - k) * rng.uniform(0.05, 0.4))
        s = repr(score)
        t += rng.randint(1, 5) * day // 2
        print("HSET kb:sub:%d user_id %s user_name %s lb %s gpu %s mode leaderboard "
              "file_name submission.c status done verdict passed score %s submitted_ms %d done_ms %d"
              % (sub, uid, name, lb, gpu, s, t - 20000, t))
        print("ZADD kb:hist:%s:%s %d %d:%s:%s" % (lb, gpu, t, sub, s, uid))
        print("ZADD kb:uhist:%s %d %d:%s:%s:%s" % (uid, t, sub, s, lb, gpu))
    print("ZADD kb:rank:%s:%s %s %s" % (lb, gpu, s, uid))
    print("HSET kb:rankinfo:%s:%s %s %d:%d" % (lb, gpu, uid, sub, t - 20000))
