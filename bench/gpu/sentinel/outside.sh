#!/bin/sh
# bench/gpu/sentinel/outside.sh: where an honest child's "outside" GPU
# work (README.md, "The sentinel") falls among the parent's phases. Builds
# each PMPP example with -DKBG_SAMPLE_LOG (the sentinel is the default), runs one
# leaderboard pass and classifies every watch that saw a gap by where its
# first gap lies: before the last check ended, before staging was
# complete, or after.
#   bench/gpu/sentinel/outside.sh [-o OUTDIR] [PROBLEM...]
set -u
here=$(cd "$(dirname "$0")/../../.." && pwd)
out=/tmp/kb-outside
while getopts o: opt; do
	case $opt in o) out=$OPTARG ;; *) exit 2 ;; esac
done
shift $((OPTIND - 1))
probs=${*:-prefixsum histogram vectorsum grayscale}
case ":$PATH:" in *:/usr/local/cuda/bin:*) ;; *) PATH=$PATH:/usr/local/cuda/bin ;; esac
mkdir -p "$out"
for p in $probs; do
	( KBG_DEFS="-DKBG_SAMPLE_LOG ${EXTRA_DEFS:-}" sh "$here/problems/harness/cuda/kbg_build.sh" \
		-a 90a -c "$out/cache" -w "$out/w-$p" "$here/problems/pmpp/$p" \
		"$here/problems/pmpp/$p/submission_ok.cu" >"$out/build-$p.log" 2>&1 ||
		echo "BUILD FAILED $p" ) &
done
wait
for p in $probs; do
	d=$out/w-$p
	(cd "$d" && KBH_SUBMISSION=$d/submission.so POPCORN_FD=3 timeout "${KBG_TIMEOUT:-120}" \
		./eval.out leaderboard benchmarks.txt 3>"$out/rep-$p" 2>"$out/err-$p")
	echo "== $p rc=$? $(grep -c '^G watch' "$out/err-$p") watches"
	grep -E 'sentinel|outside|mean:|error|claim_ns|measured_ns|low_claims|host_path|status' "$out/rep-$p" | head -30
	awk '/^G watch/ {
		n++
		gaps = $5 + 0; if (gaps == 0) next
		g++; first = $11 + 0; chk = $20 + 0; stg = $24 + 0; go = $28 + 0
		if (first < chk) a++; else if (first < stg) b++; else c++
		sum += $7
		if (g <= 12) print
	} END { printf "watches %d with gaps %d: first gap before check end %d, before staged %d, after %d; gap total %.1f us\n", n, g, a, b, c, sum }' "$out/err-$p"
done
# Per path, the parent's windows against the child's event-time claim
# (the claim is exact for an honest child): how far each window's
# overhead varies from call to call (p10/p50/p90 of window - claim, us).
for p in $probs; do
	python3 - "$out/err-$p" "$p" <<'PY'
import sys
rows = [l.split() for l in open(sys.argv[1]) if l.startswith("E ")]
def q(v):
	v = sorted(v)
	if not v: return "-"
	f = lambda x: v[min(len(v) - 1, int(x * (len(v) - 1)))] / 1e3
	return "p10 %.1f p50 %.1f p90 %.1f (n %d)" % (f(.1), f(.5), f(.9), len(v))
for path in ("0", "1", "2"):
	r = [x for x in rows if x[1] == path]
	if not r: continue
	c = [float(x[2]) for x in r]
	print(sys.argv[2], "path", path, "claim med %.1f us" % (sorted(c)[len(c)//2] / 1e3))
	print("  sample-claim  ", q([float(x[3]) - float(x[2]) for x in r]))
	print("  seen-rel-claim", q([float(x[4]) - float(x[2]) for x in r]))
	print("  enddev-claim  ", q([float(x[5]) - float(x[2]) for x in r if float(x[5]) >= 0]))
	print("  backdev-claim ", q([float(x[6]) - float(x[2]) for x in r if float(x[6]) >= 0]))
	print("  enddev-backdev", q([float(x[5]) - float(x[6]) for x in r if float(x[5]) >= 0 and float(x[6]) >= 0]))
	if len(r[0]) > 8:
		print("  watch-enddev  ", q([float(x[7]) for x in r if float(x[7]) >= 0]))
		print("  score-claim   ", q([float(x[8]) - float(x[2]) for x in r]))
PY
done
