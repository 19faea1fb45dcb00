#!/bin/sh
# bench/gpu/timing.sh: whether a submission can choose its own time
# (issue 29), on a GPU host. Every PMPP example is built into eval.out
# variants (kbg_build.sh with $KBG_DEFS) and run in leaderboard mode; the
# score is the geometric mean of the cases' means, as `ranking_by: geom`.
#
#   bench/gpu/timing.sh [-a ARCH] [-o OUTDIR] [-r RUNS] PHASE [PROBLEM...]
#
#   spread   RUNS (default 3) ranked runs of each example with the
#            sentinel (the default build: "sent") and with the child's
#            event time, the timing before it (-DKBG_NO_SENTINEL:
#            "claim"): spread (max/min - 1) of each
#   hostile  one ranked run of each example per attack, each with the
#            sentinel and with -DKBG_NO_SENTINEL (the ablation): the score
#            against the honest one of the same timing, as a gain
#            (1 - attacked/honest; > 0 means the attack paid). Attacks
#            are a tampered child's driver (kbg_child.cpp, test-only
#            flags): claim  the reply's time x 0.6 (-DKBG_HOSTILE_CLAIM);
#            early  "done" before the work ended (-DKBG_HOSTILE_EARLY_DONE);
#            after  200 us of GPU work left after "done", as a head start
#            would (-DKBG_HOSTILE_AFTER)
#            launched  "launched" said before custom_kernel is called, so
#            the parent releases its hold at once (-DKBG_HOSTILE_LAUNCHED;
#            pays only for calls with host time between GPU work, e.g.
#            vectorsum:tests/honest/cuda/thrust_sum.cu; not in the
#            default list: VARIANTS="sent sent-launched claim old-launched")
#   PROBLEM  problem directories under problems/pmpp (default: all 8),
#            each with its submission_ok.cu, or NAME:FILE for another
#            submission (a path from the repository's root: e.g.
#            vectoradd:tests/honest/cuda/own_stream.cu, shown as
#            vectoradd_own_stream)
# $VARIANTS, when set, runs only those builds (names as in defs() below;
# a gain whose builds did not run prints as "-").
# One line per run on stdout, a table at the end; raw reports in OUTDIR
# (default /tmp/kb-timing; with $OUT set the table is copied there).
set -u
here=$(cd "$(dirname "$0")/../.." && pwd)
arch=90a
out=/tmp/kb-timing
runs=3
while getopts a:o:r: opt; do
	case $opt in
	a) arch=$OPTARG ;;
	o) out=$OPTARG ;;
	r) runs=$OPTARG ;;
	*) exit 2 ;;
	esac
done
shift $((OPTIND - 1))
phase=${1:?usage: timing.sh [-a ARCH] [-o OUTDIR] [-r RUNS] spread|hostile [PROBLEM...]}
shift
probs=${*:-vectoradd vectorsum grayscale histogram prefixsum sort matmul conv2d}
case ":$PATH:" in *:/usr/local/cuda/bin:*) ;; *) PATH=$PATH:/usr/local/cuda/bin ;; esac
export PATH
mkdir -p "$out"
build=$here/problems/harness/cuda/kbg_build.sh

# variant name -> defines
defs() {
	case $1 in
	sent) echo "" ;;
	claim) echo "-DKBG_NO_SENTINEL" ;;
	sent-claim) echo "-DKBG_HOSTILE_CLAIM=0.6" ;;
	old-claim) echo "-DKBG_NO_SENTINEL -DKBG_HOSTILE_CLAIM=0.6" ;;
	sent-early) echo "-DKBG_HOSTILE_EARLY_DONE" ;;
	old-early) echo "-DKBG_NO_SENTINEL -DKBG_HOSTILE_EARLY_DONE" ;;
	sent-after) echo "-DKBG_HOSTILE_AFTER=200000" ;;
	old-after) echo "-DKBG_NO_SENTINEL -DKBG_HOSTILE_AFTER=200000" ;;
	sent-launched) echo "-DKBG_HOSTILE_LAUNCHED" ;;
	old-launched) echo "-DKBG_NO_SENTINEL -DKBG_HOSTILE_LAUNCHED" ;;
	esac
}
case $phase in
spread) variants=${VARIANTS:-"sent claim"} ;;
hostile) variants=${VARIANTS:-"sent claim sent-claim old-claim sent-early old-early sent-after old-after"} ;;
*) echo "timing.sh: unknown phase $phase" >&2; exit 2 ;;
esac

# label ARG: PROBLEM, or PROBLEM_SUBMISSION for NAME:FILE (one word);
# sub ARG: the submission's path
label() {
	case $1 in
	*:*) f=${1#*:}; f=${f##*/}; echo "${1%%:*}_${f%.cu}" ;;
	*) echo "$1" ;;
	esac
}
sub() {
	case $1 in
	*:*) echo "$here/${1#*:}" ;;
	*) echo "$here/problems/pmpp/$1/submission_ok.cu" ;;
	esac
}

# Builds: the problems of one variant side by side.
for v in $variants; do
	for arg in $probs; do
		p=$(label "$arg")
		d=$out/w-$v-$p
		rm -rf "$d"
		( KBG_DEFS=$(defs "$v") sh "$build" -a "$arch" -c "$out/cache-$v" -w "$d" \
			"$here/problems/pmpp/${arg%%:*}" "$(sub "$arg")" \
			>"$out/build-$v-$p.log" 2>&1 || echo "BUILD FAILED $v $p" ) &
	done
	wait
done

# score DIR REPORT: the geometric mean of benchmark.<i>.mean (ns), or FAIL
score() {
	(cd "$1" && KBH_SUBMISSION=$1/submission.so POPCORN_FD=3 timeout "${KBG_TIMEOUT:-300}" \
		./eval.out leaderboard benchmarks.txt 3>"$2" 2>"$2.err")
	rc=$?
	awk -v rc=$rc '
		/^benchmark\.[0-9]+\.mean:/ { s += log($2); n++ }
		/^benchmark\.[0-9]+\.status: suspect/ { sus = 1 }
		END { if (rc != 0 || n == 0) print "FAIL(" rc ")";
		      else printf "%.1f%s\n", exp(s / n), sus ? "S" : "" }' "$2"
}

table=$out/timing-$phase.txt
: >"$table"
for arg in $probs; do
	p=$(label "$arg")
	case $phase in
	spread)
		for v in $variants; do
			vals=
			for i in $(seq "$runs"); do
				s=$(score "$out/w-$v-$p" "$out/rep-$v-$p-$i")
				vals="$vals $s"
				echo "$p $v run $i: $s"
			done
			echo "$p $v$vals" >>"$table"
		done
		;;
	hostile)
		line="$p"
		for v in $variants; do
			s=$(score "$out/w-$v-$p" "$out/rep-$v-$p")
			echo "$p $v: $s"
			line="$line $v=$s"
		done
		echo "$line" >>"$table"
		;;
	esac
done
echo "== $phase (ns; S = suspect)"
awk -v phase="$phase" '
	function num(x) { sub(/S$/, "", x); return x + 0 }
	# gain ATTACKED HONEST: 1 - attacked/honest as a percentage ("-" when
	# either was not run or the honest run failed; "failed" when the
	# attacked run did: its check caught the work still running)
	function gain(x, h) {
		if (x == "" || h == "" || h ~ /^FAIL/) return "-"
		if (x ~ /^FAIL/) return "failed"
		return sprintf("%+.2f%%%s", (1 - num(x) / num(h)) * 100, (x ~ /S$/) ? "(S)" : "")
	}
	phase == "spread" {
		mn = 1e30; mx = 0; k = 0
		for (i = 3; i <= NF; i++) { x = num($i); if (x < mn) mn = x; if (x > mx) mx = x; v[++k] = x }
		for (i = 1; i <= k; i++) for (j = i + 1; j <= k; j++) if (v[j] < v[i]) { t = v[i]; v[i] = v[j]; v[j] = t }
		med = v[int((k + 1) / 2)]
		printf "%-10s %-6s median %12.1f spread %.3f%%  [%s]\n", $1, $2, med, (mx / mn - 1) * 100, substr($0, index($0, $3))
	}
	phase == "hostile" {
		for (i = 2; i <= NF; i++) { split($i, kv, "="); val[kv[1]] = kv[2] }
		printf "%-10s", $1
		n = split("claim early after launched", att, " ")
		for (j = 1; j <= n; j++) {
			a = att[j]
			printf "  %s: sentinel %s, ablation %s", a, gain(val["sent-" a], val["sent"]), gain(val["old-" a], val["claim"])
		}
		printf "   [honest %s / %s]\n", val["sent"], val["claim"]
	}' "$table"
[ -n "${OUT:-}" ] && cp "$table" "$OUT/" 2>/dev/null
exit 0
