#!/bin/bash
# What the README and make run's banner tell a newcomer (issue 35): no
# command that overwrites popcorn-cli's ~/.popcorn.yaml, no path outside
# the clone, the ranking's wait said and how to follow the job, kb given
# the API address rather than assuming port 8000; docs/deploy.md does not
# deny the /metrics port it documents.
. "$(dirname "$0")/common.sh"
R=$SRC/README.md

grep -nE '>>? *~/\.popcorn\.yaml' "$R" "$SRC/scripts/run.sh" &&
	fail "a command overwrites ~/.popcorn.yaml"
grep -n '\.\./shared/' "$R" && fail "README points outside the clone"
# The block that submits with kb sets the API address.
python3 - "$R" <<'PY' || FAIL=1
import re, sys
text = open(sys.argv[1]).read()
blocks = re.findall(r"```sh\n(.*?)```", text, re.S)
bad = [b for b in blocks if "client/kb submit" in b and "POPCORN_API_URL" not in b]
if bad:
    print("FAIL: a kb block without POPCORN_API_URL:\n" + bad[0])
    sys.exit(1)
# The ranking curl comes with how to follow the job it waits for.
rank = [b for b in blocks if re.search(r"curl [^\n]*/submissions/vectorsum_cpu/CPU", b)]
if not rank or not any("/user/submissions/" in b for b in rank):
    print("FAIL: the ranking curl without a way to follow the job")
    sys.exit(1)
if "once the\njob has finished" not in text and "once the job has finished" not in text:
    print("FAIL: no word that the ranking shows a job once it has finished")
    sys.exit(1)
PY
grep -q 'POPCORN_API_URL=\$API' "$SRC/scripts/run.sh" ||
	fail "make run's banner does not give kb the API address"
grep -n 'serve no port' "$SRC/docs/deploy.md" &&
	fail "docs/deploy.md says a service serves no port, then gives it /metrics"
finish "docs"
