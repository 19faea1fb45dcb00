# Sourced by bench/sandbox/score_ratio.sh and bench/sandbox/sample_ratio.sh.
#
# cap_problem PROBLEM_C CAP_MS
#   Edits a copy of a CPU problem's problem.c so that its leaderboard mode
#   stops each case's timed phase after CAP_MS instead of the harness
#   default (300 ms), so that a ranked run averages more calls. The line
#   goes right after the problem's `.cost = ...,` initialiser. Returns 2
#   (with a message) for a bad CAP_MS or a problem.c without that line.
cap_problem() {
	local file=$1 cap=$2 line
	case $cap in *[!0-9]* | '') echo "cap_problem: bad CAP_MS '$cap'" >&2; return 2 ;; esac
	line="	.limits = {.stop = {[KBH_MODE_LEADERBOARD] = {0, 0, 1000000, ${cap}000000ull}}},"
	sed -i "s|^\t\.cost = .*,\$|&\n$line|" "$file"
	grep -q 'KBH_MODE_LEADERBOARD\] = {0, 0' "$file" ||
		{ echo "cap_problem: no '.cost = ...,' line in $file" >&2; return 2; }
}
