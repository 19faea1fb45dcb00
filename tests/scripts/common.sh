# Sourced by the tests here: $SRC (the source tree, $1), a private $T
# removed at exit, and fail/finish to report.
set -uo pipefail
SRC=$1
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
FAIL=0
fail() { echo "FAIL: $*"; FAIL=1; }
# finish WHAT: prints ok when nothing failed; exits with the verdict.
finish() {
	[ "$FAIL" = 0 ] && echo "ok: $1"
	exit "$FAIL"
}
