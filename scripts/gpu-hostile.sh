#!/bin/sh
# gpu-hostile.sh: runs the hostile CUDA submissions of tests/hostile/cuda/
# through the worker (`kb-worker eval ... --json`) on this machine's GPU,
# each followed by an honest control run, and prints one table.
#
#   sh scripts/gpu-hostile.sh -w KB_WORKER [-o OUTDIR] [-p "PROGRAMS"]
#                             [-b BUDGET_S] [-c CONTROL_MODE] [-t TOL_PCT]
#                             [-g GPU]
#
#   KB_WORKER     the kb-worker binary (a lib/ next to it is put on
#                 LD_LIBRARY_PATH, as scripts/gpu-smoke.sh -B bundles it)
#   OUTDIR        results, logs and the worker's KB_WORKDIR (default
#                 /tmp/kb-gpu-hostile; its work/cache is kept between
#                 invocations). With $OUT set (the device tool) table.txt
#                 (rewritten after every row) and hostile-results.tgz are
#                 copied there.
#   PROGRAMS      subset of the programs below, by name (default: all)
#   BUDGET_S      start no program after this many seconds (default 470);
#                 every command is also cut at 575 s, under the device
#                 tool's 600 s
#   CONTROL_MODE  mode of the control runs (default benchmark: one build
#                 and one harness run, giving the benchmark means;
#                 leaderboard gives the ranked score but costs twice as much)
#   TOL_PCT       how far a control's score may be from the baseline
#                 (default 5)
#
# Theory: the worker runs with KB_SANDBOX_ISOLATE as given (default 1),
# KB_MEMORY_LIMIT_MB=16384 unless set (if the first honest baseline fails
# with it, the baselines are retried without a limit and that is
# reported), and KB_RUN_TIMEOUT_CAP_S capping every run: 10 s for the
# programs that must time out, 60 s otherwise (the tasks' own limits are
# 120/300/600 s). Before the programs, one honest baseline per problem
# (problems/pmpp/<p>/submission_ok.cu in CONTROL_MODE) gives the
# reference score; the GPU's idle memory, the sandbox processes present
# and the harness object cache's checksums are recorded.
#
# After each hostile program: (1) its verdict must be one the program's
# header comment allows, and it must not be ranked (the "nobetter"
# programs may also pass, but never with a score more than TOL_PCT better
# than the honest baseline), and no run's stdout may hold an "ACHIEVED"
# line; (2) checks: no process of the sandbox uids (>= 60000) or named
# eval.out / kbh-* is left (any found are killed by pid), GPU memory is
# back within 256 MiB of idle, no kbh-marker-* file appeared outside the
# job directories (/, /etc, /usr/local/cuda, /tmp, /var/tmp, /dev/shm, the
# worker's work and cache directories), no job directory was left behind,
# the cached harness objects are unchanged, and the canary listener on
# 127.0.0.1/::1 port 47311 saw no connection; (3) the control run
# (submission_ok.cu of the same problem) passes with a score within
# TOL_PCT of the baseline. A row is OK only if all three hold. The last
# line reads "N passed, M failed" (skipped programs count as failed).
# Exit 0 when every row is OK.
#
# The worker is also given KBH_CANARY_ENV in its environment and the work
# directory holds a canary job (job-999999-kbhcanary), as does
# /tmp/kb-worker-kbhcanary: fs_escape.cu looks for "KBH_CANARY".
set -u

here=$(cd "$(dirname "$0")/.." && pwd)
hostile=$here/tests/hostile/cuda
helper=$hostile/hostile_helper.py
worker=${KB_WORKER:-}
out=/tmp/kb-gpu-hostile
only=
budget=470
hard=575
control_mode=benchmark
tol=5
gpu=H100
while getopts b:c:g:o:p:t:w: opt; do
	case $opt in
	b) budget=$OPTARG ;;
	c) control_mode=$OPTARG ;;
	g) gpu=$OPTARG ;;
	o) out=$OPTARG ;;
	p) only=$OPTARG ;;
	t) tol=$OPTARG ;;
	w) worker=$OPTARG ;;
	*) exit 2 ;;
	esac
done
t0=$(date +%s)

# ---- the programs: name problem mode cap expectation allowed-verdicts ----
# expectation: notranked -- verdict in the list, no score;
#              nobetter  -- verdict in the list, or passed with a score not
#                           more than TOL_PCT better than the baseline.
programs='
spin_kernel     vectoradd test        10 notranked timeout
daemon          vectoradd test        60 notranked failed,crashed
fork_bomb       vectoradd test        10 notranked failed,timeout,crashed
sleeper         vectoradd test        10 notranked timeout
host_loop       vectoradd test        10 notranked timeout
memhog          vectoradd test        60 notranked crashed,failed
flood           vectoradd test        60 notranked failed
net             vectoradd test        60 notranked failed
fs_escape       vectoradd test        60 notranked failed
forge_smart     vectoradd leaderboard 60 notranked crashed,failed
forge_atexit    vectoradd leaderboard 60 notranked failed,crashed
early_operator  vectoradd test        60 notranked passed
forge_naive     vectoradd leaderboard 60 notranked crashed
exit_infra      vectoradd leaderboard 60 notranked crashed
steal_expected  vectorsum leaderboard 60 nobetter  failed,suspect,crashed
precompute      vectorsum leaderboard 60 nobetter  failed,suspect,crashed
estimate_sum    vectorsum leaderboard 60 notranked failed,suspect
hardcode_seed   vectorsum leaderboard 60 notranked failed,suspect
side_stream     vectoradd leaderboard 60 nobetter  suspect,failed
return_early    vectoradd leaderboard 60 nobetter  suspect,failed
fake_timing     vectoradd leaderboard 60 nobetter  suspect,failed
harness_symbols vectoradd leaderboard 60 notranked failed
replay          vectoradd leaderboard 60 notranked failed
mutate_input    vectoradd leaderboard 60 notranked failed
unwritten       vectoradd leaderboard 60 notranked failed
'

# ---- environment ----
if [ -z "$worker" ] || [ ! -x "$worker" ]; then
	echo "gpu-hostile: kb-worker not found: give -w PATH (or KB_WORKER)" >&2
	exit 2
fi
command -v python3 >/dev/null || { echo "gpu-hostile: python3 is needed" >&2; exit 2; }
command -v timeout >/dev/null || { echo "gpu-hostile: timeout(1) is needed" >&2; exit 2; }
worker=$(cd "$(dirname "$worker")" && pwd)/$(basename "$worker")
if [ -d "$(dirname "$worker")/lib" ]; then
	LD_LIBRARY_PATH=$(dirname "$worker")/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
	export LD_LIBRARY_PATH
fi
case ":$PATH:" in
*:/usr/local/cuda/bin:*) ;;
*) PATH=$PATH:/usr/local/cuda/bin ;;
esac
export PATH
mkdir -p "$out" || exit 2
out=$(cd "$out" && pwd)
work=$out/work
runs=$out/runs
rm -rf "$runs" "$out/table.txt" "$out/hostile-results.tgz"
mkdir -p "$runs"
# Keep the harness object cache between invocations; everything else in
# the worker's directory starts fresh.
if [ -d "$work" ]; then
	find "$work" -mindepth 1 -maxdepth 1 ! -name cache -exec rm -rf {} + 2>/dev/null
fi
mkdir -p "$work"
chmod 700 "$work"
KB_WORKDIR=$work
KB_MEMORY_LIMIT_MB=${KB_MEMORY_LIMIT_MB:-16384}
KB_SANDBOX_ISOLATE=${KB_SANDBOX_ISOLATE:-1}
KBH_CANARY_ENV=KBH_CANARY_ENVIRON_$$
export KB_WORKDIR KB_MEMORY_LIMIT_MB KB_SANDBOX_ISOLATE KBH_CANARY_ENV
unset KB_RUN_TIMEOUT_CAP_S KB_KEEP_WORKDIR
log=$out/hostile.log
: >"$log"
say() { echo "$*" | tee -a "$log"; }

# Canaries: another job's submission, where the worker keeps jobs and where
# a default worker would.
canary_src='// KBH_CANARY_SUBMISSION: another user'"'"'s code; must stay unreadable'
for d in "$work/job-999999-kbhcanary" /tmp/kb-worker-kbhcanary/job-1-kbhcanary; do
	mkdir -p "$d" && chmod 755 "$d" && echo "$canary_src" >"$d/submission.cu" &&
		chmod 644 "$d/submission.cu"
done
netlog=$out/canary-net.log
: >"$netlog"
python3 "$helper" listen 47311 "$netlog" $((hard + 60)) &
listener=$!
cleanup() {
	kill "$listener" 2>/dev/null
	rm -rf /tmp/kb-worker-kbhcanary
}
trap cleanup EXIT
trap 'exit 130' INT TERM

say "== gpu-hostile: worker $worker, gpu $gpu, out $out"
say "   KB_SANDBOX_ISOLATE=$KB_SANDBOX_ISOLATE KB_MEMORY_LIMIT_MB=$KB_MEMORY_LIMIT_MB control=$control_mode tol=${tol}% budget=${budget}s"
if command -v nvidia-smi >/dev/null; then
	nvidia-smi --query-gpu=name,driver_version,memory.used,memory.total,temperature.gpu \
		--format=csv 2>&1 | tee -a "$log"
else
	say "   (no nvidia-smi: the GPU memory check is skipped)"
fi

elapsed() { echo $(($(date +%s) - t0)); }

gpu_mem() {
	command -v nvidia-smi >/dev/null || return 0
	nvidia-smi --query-gpu=memory.used --format=csv,noheader,nounits 2>/dev/null |
		head -n 1 | tr -dc '0-9'
}

# run_eval TAG PROBLEM FILE MODE CAP: one worker evaluation; sets
# $verdict $ranked $score $nach $ach $jsize $err $wall (and writes
# $runs/TAG.json, .err).
run_eval() {
	re_tag=$1 re_problem=$2 re_file=$3 re_mode=$4 re_cap=$5
	case $re_mode in
	leaderboard) natural=$((90 + 3 * re_cap)) ;;
	*) natural=$((90 + re_cap)) ;;
	esac
	re_left=$((t0 + hard - $(date +%s) - 5))
	lim=$natural
	[ "$re_left" -lt "$lim" ] && lim=$re_left
	if [ "$lim" -lt 15 ]; then
		verdict=skipped ranked=no score=- nach=0 ach=- jsize=0 wall=0
		err="not run: the script's time limit"
		return
	fi
	s=$(date +%s)
	KB_RUN_TIMEOUT_CAP_S=$re_cap timeout -k 10 "$lim" "$worker" eval \
		"$here/problems/pmpp/$re_problem" "$re_file" --mode "$re_mode" --gpu "$gpu" --json \
		>"$runs/$re_tag.json" 2>"$runs/$re_tag.err"
	rc=$?
	wall=$(($(date +%s) - s))
	[ "$rc" = 124 ] || [ "$rc" = 137 ] && echo "gpu-hostile: worker killed after ${lim}s" >>"$runs/$re_tag.err"
	tabs=$(python3 "$helper" summary "$runs/$re_tag.json" "$rc")
	verdict=$(printf '%s' "$tabs" | cut -f1)
	ranked=$(printf '%s' "$tabs" | cut -f2)
	score=$(printf '%s' "$tabs" | cut -f3)
	nach=$(printf '%s' "$tabs" | cut -f4)
	ach=$(printf '%s' "$tabs" | cut -f5)
	jsize=$(printf '%s' "$tabs" | cut -f6)
	err=$(printf '%s' "$tabs" | cut -f7)
	[ -n "$verdict" ] || verdict=no-json
	if [ "$verdict" = no-json ]; then
		err="$err: $(grep -v '^\[' "$runs/$re_tag.err" 2>/dev/null | tail -n 1 | cut -c1-150)"
	fi
	echo "   [$re_tag] rc=$rc ${wall}s verdict=$verdict ranked=$ranked score=$score achieved=$nach err=$err" >>"$log"
}

# pct SCORE BASE: signed percent difference, or "".
pct() {
	python3 -c '
import sys
try:
    s = float(sys.argv[1].strip("()")); b = float(sys.argv[2].strip("()"))
    print("%+.1f" % ((s - b) / b * 100.0))
except Exception:
    print("")' "$1" "$2"
}

# ---- checks after a run ----
procs_base=$out/procs.base
python3 "$helper" procs "$work" >"$procs_base"
cache_sums=$out/cache.sha256

snapshot_cache() {
	if [ -d "$work/cache" ]; then
		(cd "$work/cache" && find . -type f ! -name '.*' -print0 2>/dev/null |
			xargs -0 -r sha256sum) >"$cache_sums" 2>/dev/null
	else
		: >"$cache_sums"
	fi
}

# post_checks: sets $checks ("clean" or what was found).
post_checks() {
	checks=
	# leftover processes (given a few seconds to go: a killed CUDA
	# process takes a moment to release its context)
	i=0
	while :; do
		python3 "$helper" procs "$work" | while read -r pid uid comm; do
			grep -q "^$pid " "$procs_base" || echo "$pid $uid $comm"
		done >"$out/procs.now"
		[ -s "$out/procs.now" ] || break
		[ "$i" = 0 ] && sed 's/^/   still exiting: /' "$out/procs.now" >>"$log"
		i=$((i + 1))
		[ "$i" -ge 8 ] && break
		sleep 1
	done
	if [ -s "$out/procs.now" ]; then
		n=$(wc -l <"$out/procs.now" | tr -d ' ')
		first=$(head -n 3 "$out/procs.now" | awk '{ printf "%s%s(uid %s)", (NR > 1 ? "," : ""), $3, $2 }')
		checks="$checks procs:${n}[${first}]"
		cat "$out/procs.now" >>"$log"
		awk '{ print $1 }' "$out/procs.now" | while read -r pid; do
			kill -9 "$pid" 2>/dev/null
		done
	fi
	# GPU memory back to idle
	if [ -n "$gpu_base" ]; then
		i=0
		while :; do
			m=$(gpu_mem)
			[ -z "$m" ] && break
			[ "$m" -le $((gpu_base + 256)) ] && break
			i=$((i + 1))
			[ "$i" -ge 15 ] && break
			sleep 1
		done
		[ -n "$m" ] && [ "$m" -gt $((gpu_base + 256)) ] &&
			checks="$checks gpu-mem:+$((m - gpu_base))MiB"
	fi
	# marker files outside the job directories
	found=$(for d in / /etc /usr /usr/local /usr/local/cuda /usr/local/cuda/bin /bin /lib \
		/tmp /var/tmp /dev/shm "$work" "$work/cache" "$(dirname "$work")"; do
		[ -d "$d" ] && find "$d" -maxdepth 1 -name 'kbh-marker-*' 2>/dev/null
	done; [ -d "$work/cache" ] && find "$work/cache" -mindepth 2 -maxdepth 2 -name 'kbh-marker-*' 2>/dev/null)
	if [ -n "$found" ]; then
		checks="$checks files:$(echo "$found" | tr '\n' ',' | sed 's/,$//')"
		echo "$found" | while read -r f; do rm -f "$f"; done
	fi
	# job directories left behind
	left=$(find "$work" -mindepth 1 -maxdepth 1 -name 'job-*' ! -name 'job-999999-kbhcanary' 2>/dev/null)
	if [ -n "$left" ]; then
		checks="$checks jobdir:$(echo "$left" | wc -l | tr -d ' ')"
		echo "$left" | while read -r d; do rm -rf "$d"; done
	fi
	# the harness object cache
	if [ -s "$cache_sums" ] && ! (cd "$work/cache" && sha256sum -c --quiet "$cache_sums" >/dev/null 2>&1); then
		checks="$checks cache-modified"
		snapshot_cache
	fi
	# the canary listener
	if grep -q '^CONNECTION' "$netlog" 2>/dev/null; then
		checks="$checks net-canary:$(grep -c '^CONNECTION' "$netlog")"
		grep '^CONNECTION' "$netlog" >>"$log"
		sed -i '/^CONNECTION/d' "$netlog"
	fi
	[ -z "$checks" ] && checks=clean
	checks=${checks# }
}

# ---- the table ----
table=$out/table.txt
header=$(printf '%-15s %-9s %-11s %-13s %-6s %-6s %-26s %s' program problem mode verdict ranked expect \
	control notes)
echo "$header" >"$table"
publish() {
	if [ -n "${OUT:-}" ] && [ -d "${OUT:-}" ]; then
		cp "$table" "$OUT/table.txt" 2>/dev/null
	fi
}
row() { # program problem mode verdict ranked expect control notes
	line=$(printf '%-15s %-9s %-11s %-13s %-6s %-6s %-26s %s' "$1" "$2" "$3" "$4" "$5" "$6" "$7" "$8")
	echo "$line" >>"$table"
	say "$line"
	publish
}

# ---- baselines ----
say "== baselines ($control_mode mode, submission_ok.cu); $(elapsed) s"
base_vectoradd='' base_vectorsum=''
: "$base_vectoradd$base_vectorsum" # set through eval below
for p in vectoradd vectorsum; do
	run_eval "baseline-$p" "$p" "$here/problems/pmpp/$p/submission_ok.cu" "$control_mode" 60
	if [ "$verdict" != passed ] && [ "$p" = vectoradd ]; then
		say "   baseline $p: $verdict ($err); retrying once"
		run_eval "baseline-$p-2" "$p" "$here/problems/pmpp/$p/submission_ok.cu" "$control_mode" 60
		if [ "$verdict" != passed ] && [ "$KB_MEMORY_LIMIT_MB" != 0 ]; then
			say "   baseline $p still $verdict: retrying with KB_MEMORY_LIMIT_MB=0 (no memory limit)"
			KB_MEMORY_LIMIT_MB=0
			run_eval "baseline-$p-3" "$p" "$here/problems/pmpp/$p/submission_ok.cu" "$control_mode" 60
		fi
	fi
	eval "base_$p=\$score"
	row "(baseline)" "$p" "$control_mode" "$verdict" "$ranked" "$([ "$verdict" = passed ] && echo OK || echo BAD)" \
		"score $score" "${wall}s; KB_MEMORY_LIMIT_MB=$KB_MEMORY_LIMIT_MB$([ "$verdict" = passed ] || echo "; $err")"
done
snapshot_cache
sleep 2
gpu_base=$(gpu_mem)
say "   idle GPU memory: ${gpu_base:-n/a} MiB; sandbox processes before: $(wc -l <"$procs_base" | tr -d ' ')"

# ---- the programs ----
met=0
missed=0
echo "$programs" | while read -r name problem mode cap kind allowed; do
	[ -n "$name" ] || continue
	echo "$name"
done >"$out/order.txt"
# shellcheck disable=SC2086 # a list of names
[ -n "$only" ] && printf '%s\n' $only >"$out/order.txt"
while read -r name; do
	spec=$(echo "$programs" | awk -v n="$name" '$1 == n')
	if [ -z "$spec" ] || [ ! -f "$hostile/$name.cu" ]; then
		row "$name" - - - - BAD - "unknown program"
		missed=$((missed + 1))
		continue
	fi
	# shellcheck disable=SC2086 # fields of the table
	set -- $spec
	problem=$2 mode=$3 cap=$4 kind=$5 allowed=$6
	if [ "$(elapsed)" -ge "$budget" ]; then
		row "$name" "$problem" "$mode" skipped - BAD - "SKIP: time budget (${budget}s) spent"
		missed=$((missed + 1))
		continue
	fi
	say "-- $name ($problem, $mode, cap ${cap}s); $(elapsed) s"
	run_eval "$name" "$problem" "$hostile/$name.cu" "$mode" "$cap"
	h_verdict=$verdict h_ranked=$ranked h_score=$score h_nach=$nach h_ach=$ach h_err=$err
	h_wall=$wall h_jsize=$jsize
	# (1) the expectation
	notes=
	expect=OK
	base=$(eval "echo \${base_$problem:-}")
	case ",$allowed," in
	*",$h_verdict,"*) ok_verdict=1 ;;
	*) ok_verdict=0 ;;
	esac
	if [ "$kind" = nobetter ] && [ "$ok_verdict" = 0 ] && [ "$h_verdict" = passed ]; then
		d=$(pct "$h_score" "$base")
		if [ -n "$d" ] && python3 -c "import sys; sys.exit(0 if float(sys.argv[1]) >= -float(sys.argv[2]) else 1)" "$d" "$tol"; then
			ok_verdict=1
			notes="$notes passed, no gain ($d% vs baseline)"
		else
			notes="$notes passed FASTER than honest (${d:-?}% vs baseline)"
		fi
	fi
	if [ "$ok_verdict" = 0 ]; then
		expect=BAD
		notes="$notes want $allowed"
	fi
	if [ "$h_ranked" = yes ] && [ "$kind" != nobetter ]; then
		expect=BAD
		notes="$notes RANKED score $h_score"
	fi
	if [ "$h_nach" != 0 ]; then
		expect=BAD
		notes="$notes $h_nach ACHIEVED: $h_ach"
	fi
	[ "$h_jsize" -gt 1048576 ] 2>/dev/null && { expect=BAD; notes="$notes result JSON ${h_jsize} bytes"; }
	# (2) traces
	post_checks
	[ "$checks" = clean ] || { expect=BAD; notes="$notes TRACE $checks"; }
	# (3) the control
	run_eval "control-after-$name" "$problem" "$here/problems/pmpp/$problem/submission_ok.cu" \
		"$control_mode" 60
	d=$(pct "$score" "$base")
	control="$verdict $score${d:+ ($d%)}"
	control_ok=0
	if [ "$verdict" = passed ] && [ -n "$d" ] &&
		python3 -c "import sys; sys.exit(0 if abs(float(sys.argv[1])) <= float(sys.argv[2]) else 1)" "$d" "$tol"; then
		control_ok=1
	fi
	if [ "$control_ok" = 0 ]; then
		expect=BAD
		notes="$notes CONTROL $verdict${d:+ off by $d%} ($err)"
	fi
	post_checks
	[ "$checks" = clean ] || { expect=BAD; notes="$notes TRACE-after-control $checks"; }
	[ "$h_err" != - ] && notes="$notes | $h_err"
	notes="${h_wall}s;${notes}"
	row "$name" "$problem" "$mode" "$h_verdict" "$h_ranked" "$expect" "$control" "$notes"
	if [ "$expect" = OK ]; then met=$((met + 1)); else missed=$((missed + 1)); fi
done <"$out/order.txt"

say ""
say "== table ($table), total $(elapsed) s"
cat "$table"
echo "$met passed, $missed failed" | tee -a "$table" "$log"
publish
if [ -n "${OUT:-}" ] && [ -d "${OUT:-}" ]; then
	(cd "$out" && tar czf "$OUT/hostile-results.tgz" table.txt hostile.log canary-net.log runs \
		2>/dev/null)
fi
[ "$missed" = 0 ]
