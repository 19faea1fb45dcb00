#!/usr/bin/env bash
# End-to-end test of the CPU problems, run by CTest.
#
# usage: cpu_problems.sh PROBLEMS_DIR WORK_DIR [CC]
#
# For each CPU problem it does what the worker does -- copies the task.yml
# `files` flat into a fresh directory (the submission under the name of the
# @SUBMISSION@ entry); links every config.sources entry but the submission
# into eval.out and the submission alone into submission.so, with `cc -O3
# -march=native -fopenmp` (worker/compile/build_c.c); writes the cases file ("k: v;
# k: v" per line) and runs `./eval.out <mode> cases.txt` with POPCORN_FD on
# a file and KBH_SUBMISSION naming the shared object -- and checks exit
# codes and reports for the example submissions and for the hostile ones
# in subs/.
set -u

PROBLEMS=$(cd "$1" && pwd)
CC=${3:-cc}
SUBS=$(cd "$(dirname "$0")/subs" && pwd)
SECRET=12345
# shellcheck source=script_lib.sh
. "$(dirname "$0")/script_lib.sh"
fresh_work "$2" cpu_problems

# expect DESCRIPTION ACTUAL EXPECTED
expect_eq() {
	if [ "$2" = "$3" ]; then ok; else fail "$1: got '$2', want '$3'"; fi
}

# ---- task.yml, the small subset our task files use ----------------------

# "name source" per entry of `files:` (flow maps, one per line).
task_files() {
	sed -n 's/^ *- *{ *"name": *"\([^"]*\)", *"source": *"\([^"]*\)" *} *$/\1 \2/p' "$1"
}

# config.sources, space-separated.
task_sources() {
	sed -n 's/^ *sources: *\[\(.*\)\] *$/\1/p' "$1" | tr -d '",'
}

# Case lines of the `tests:` or `benchmarks:` list, rendered as the worker
# renders them: "k: v; k: v" in the map's order.
task_cases() {
	awk -v section="$2" '
		/^[a-z_]+:/ { insec = ($1 == section ":"); next }
		insec && /^ *- *\{/ {
			line = $0
			sub(/^ *- *\{ */, "", line); sub(/ *\} *$/, "", line)
			gsub(/"/, "", line); gsub(/ *, */, "; ", line)
			print line
		}' "$1"
}

# Seeds combined with the secret, as the worker does for the private run:
# a + (a+b)(a+b+1)/2 (our seeds are small: no 64-bit overflow in bash).
secret_cases() {
	while IFS= read -r line; do
		a=$(printf '%s\n' "$line" | sed -n 's/.*seed: *\([0-9]*\).*/\1/p')
		s=$((a + (a + SECRET) * (a + SECRET + 1) / 2))
		printf '%s\n' "$line" | sed "s/seed: *[0-9]*/seed: $s/"
	done < "$1"
}

# ---- staging and running -------------------------------------------------

# stage PROBLEM SUBMISSION DIR: copies files, builds eval.out from the
# harness's sources and submission.so from the submission's. Returns 1
# when a build fails (the log is in DIR/build.log).
stage() {
	local task="$PROBLEMS/$1/task.yml" dir=$3 name src found=0 subname=''
	rm -rf "$dir"
	mkdir -p "$dir"
	while read -r name src; do
		if [ "$src" = "@SUBMISSION@" ]; then
			cp "$2" "$dir/$name"
			subname=$name
			found=1
		else
			cp "$PROBLEMS/$1/$src" "$dir/$name" ||
				{ fail "$1: missing file $src"; return 1; }
		fi
	done < <(task_files "$task")
	[ $found = 1 ] || { fail "$1: no @SUBMISSION@ entry"; return 1; }
	local sources
	sources=$(task_sources "$task" | tr ' ' '\n' | grep -vx "$subname" |
		tr '\n' ' ')
	[ -n "$sources" ] || { fail "$1: no config.sources"; return 1; }
	# shellcheck disable=SC2086
	(cd "$dir" && $CC -O3 -march=native -fopenmp $sources -o eval.out \
		-lm -ldl > build.log 2>&1) || {
		fail "$1: the harness does not build"
		cat "$dir/build.log"
		return 1
	}
	(cd "$dir" && $CC -O3 -march=native -fopenmp -shared -fPIC \
		-Wl,--no-undefined -Wl,--require-defined=custom_kernel \
		"$subname" -o submission.so -lm >> build.log 2>&1) || return 1
	task_cases "$task" tests > "$dir/tests.txt"
	task_cases "$task" benchmarks > "$dir/benchmarks.txt"
	secret_cases "$dir/benchmarks.txt" > "$dir/private.txt"
	ok
}

# run DIR MODE CASES [TAG]: sets RC and REPORT (the report file).
run() {
	local tag=${4:-$2}
	REPORT="$1/report.$tag"
	(cd "$1" && POPCORN_FD=3 KBH_SUBMISSION="$1/submission.so" \
		./eval.out "$2" "$3" 3> "$REPORT" 2> "$1/stderr.$tag")
	RC=$?
}

# value KEY: the value of KEY in the last report.
value() {
	sed -n "s/^$1: //p" "$REPORT" | head -n 1
}

# Protocol checks on the last report: "key: value" lines, no duplicate
# key, counts before indices, indices in order and below the count, check
# last.
validate_report() {
	local err
	err=$(awk '
		BEGIN { lt = -1; lb = -1; tc = ""; bc = "" }
		!/^[A-Za-z0-9_.-]+: / { print "bad line: " $0; exit }
		{
			key = $0; sub(/: .*/, "", key)
			if (key in seen) { print "duplicate key " key; exit }
			seen[key] = 1
			if (saw_check) { print "key after check: " key; exit }
			if (key == "check") saw_check = 1
			if (key == "test-count") tc = $2 + 0
			if (key == "benchmark-count") bc = $2 + 0
			n = split(key, part, ".")
			if (n >= 3 && part[1] == "test") {
				i = part[2] + 0
				if (tc == "") { print key " before test-count"; exit }
				if (i >= tc || i < lt || i > lt + 1) { print key " out of order"; exit }
				lt = i
			}
			if (n >= 3 && part[1] == "benchmark") {
				i = part[2] + 0
				if (bc == "") { print key " before benchmark-count"; exit }
				if (i >= bc || i < lb || i > lb + 1) { print key " out of order"; exit }
				lb = i
			}
		}
		END { if (!saw_check) print "no check key" }
	' "$REPORT")
	if [ -n "$err" ]; then
		fail "$REPORT: $err"
	else
		ok
	fi
}

# Sensible benchmark keys for every index of the last report.
check_bench_keys() {
	local count i runs mean best worst std
	count=$(value benchmark-count)
	expect_eq "$REPORT benchmark-count" "$count" "$1"
	for ((i = 0; i < count; i++)); do
		runs=$(value "benchmark\.$i\.runs")
		mean=$(value "benchmark\.$i\.mean")
		best=$(value "benchmark\.$i\.best")
		worst=$(value "benchmark\.$i\.worst")
		std=$(value "benchmark\.$i\.std")
		if awk -v r="$runs" -v m="$mean" -v b="$best" -v w="$worst" \
			-v s="$std" 'BEGIN { exit !(r >= 2 && m > 0 && b > 0 &&
				b <= m && m <= w && s >= 0) }'; then
			ok
		else
			fail "$REPORT benchmark $i: runs=$runs mean=$mean best=$best worst=$worst std=$std"
		fi
		for k in spec err stop gbps floor_ns; do
			[ -n "$(value "benchmark\.$i\.$k")" ] ||
				fail "$REPORT benchmark $i: no $k"
		done
		local st
		st=$(value "benchmark\.$i\.status")
		[ -z "$st" ] || fail "$REPORT benchmark $i: status $st ($(value "benchmark\.$i\.error"))"
	done
}

# ---- the tests -----------------------------------------------------------

# An honest submission: tests pass, timed runs pass with sensible keys,
# also with the secret seeds.
test_ok() {
	local p=$1 d="$WORK/$1.ok" n
	stage "$p" "$PROBLEMS/$p/submission_ok.c" "$d" || return
	run "$d" test tests.txt
	expect_eq "$p ok test rc" "$RC" 0
	expect_eq "$p ok test check" "$(value check)" pass
	n=$(wc -l < "$d/tests.txt")
	expect_eq "$p ok test-count" "$(value test-count)" "$n"
	expect_eq "$p ok test statuses" "$(grep -c '^test\.[0-9]*\.status: pass$' "$REPORT")" "$n"
	validate_report
	n=$(wc -l < "$d/benchmarks.txt")
	for mode in leaderboard private benchmark profile; do
		local cases=benchmarks.txt m=$mode
		[ $mode = private ] && { cases=private.txt; m=leaderboard; }
		# A loaded machine can make the harness distrust its timings
		# (status suspect): then again, three runs at most.
		for attempt in 1 2 3; do
			run "$d" $m $cases $mode
			[ $attempt -lt 3 ] &&
				grep -q '^benchmark\.[0-9]*\.status: suspect$' "$REPORT" ||
				break
			echo "$p ok $mode: attempt $attempt suspect, again"
		done
		expect_eq "$p ok $mode rc" "$RC" 0
		expect_eq "$p ok $mode check" "$(value check)" pass
		validate_report
		check_bench_keys "$n"
	done
	echo "--- $p: leaderboard report of submission_ok.c"
	cat "$d/report.leaderboard"
	echo "--- $p: harness stderr"
	cat "$d/stderr.leaderboard"
}

# The template is correct too (slow but within tolerance).
test_template() {
	local p=$1 d="$WORK/$1.template"
	stage "$p" "$PROBLEMS/$p/template.c" "$d" || return
	run "$d" test tests.txt
	expect_eq "$p template test rc" "$RC" 0
	expect_eq "$p template check" "$(value check)" pass
}

# expect_fail PROBLEM SUBMISSION MODE CASES PATTERN [RC]: rc 112 (or RC),
# check: fail, some status fail whose error matches PATTERN.
expect_fail() {
	local p=$1 sub=$2 mode=$3 cases=$4 pat=$5 want=${6:-112}
	local d="$WORK/$p.$(basename "$sub" .c)"
	[ -x "$d/eval.out" ] || stage "$p" "$sub" "$d" || return
	run "$d" "$mode" "$cases"
	expect_eq "$p $(basename "$sub") $mode rc" "$RC" "$want"
	expect_eq "$p $(basename "$sub") $mode check" "$(value check)" fail
	validate_report
	if grep -q '\.status: fail$' "$REPORT" &&
		grep '\.error: ' "$REPORT" | grep -q -- "$pat"; then
		ok
	else
		fail "$p $(basename "$sub") $mode: no failure matching '$pat'"
		cat "$REPORT"
	fi
}

test_wrong() {
	local p=$1
	expect_fail "$p" "$PROBLEMS/$p/submission_wrong.c" test tests.txt "expected"
	expect_fail "$p" "$PROBLEMS/$p/submission_wrong.c" leaderboard benchmarks.txt "expected"
}

# Usage, report channel and case-file errors, on any built eval.out.
test_protocol() {
	local d=$1 rc
	(cd "$d" && ./eval.out > /dev/null 2>&1)
	expect_eq "no arguments rc" "$?" 2
	(cd "$d" && POPCORN_FD=1 ./eval.out fast tests.txt > /dev/null 2>&1)
	expect_eq "unknown mode rc" "$?" 2
	(cd "$d" && env -u POPCORN_FD ./eval.out test tests.txt > /dev/null 2>&1)
	expect_eq "no POPCORN_FD rc" "$?" 111
	(cd "$d" && POPCORN_FD=57 ./eval.out test tests.txt 2> /dev/null)
	expect_eq "closed POPCORN_FD rc" "$?" 111
	(cd "$d" && POPCORN_FD=abc ./eval.out test tests.txt 2> /dev/null)
	expect_eq "non-numeric POPCORN_FD rc" "$?" 111
	local bad
	for bad in "size: abc; seed: 1" "size 10; seed: 1" "size: 0; seed: 1" \
		"size: 10" "size: 10; seed: 1; color: red" \
		"size: 10; size: 11; seed: 1" "size: 99999999999; seed: 1" \
		"seed: 18446744073709551616; size: 1"; do
		printf '%s\n' "$bad" > "$d/bad.txt"
		run "$d" test bad.txt bad
		expect_eq "bad case '$bad' rc" "$RC" 113
	done
	: > "$d/bad.txt"
	run "$d" test bad.txt bad
	expect_eq "empty cases file rc" "$RC" 113
	run "$d" test no-such-file.txt bad
	expect_eq "missing cases file rc" "$RC" 113
	# blank lines, comments, CRLF and a trailing ';' are fine
	printf '# comment\n\nsize: 5; seed: 9;\r\n  size: 6 ;seed:10\n' > "$d/odd.txt"
	run "$d" test odd.txt odd
	expect_eq "tolerant cases file rc" "$RC" 0
	expect_eq "tolerant cases test-count" "$(value test-count)" 2
}

test_vectorsum_hostile() {
	local p=vectorsum_cpu
	expect_fail $p "$SUBS/vectorsum_mutate.c" test tests.txt "modified its input 'data'"
	expect_fail $p "$SUBS/vectorsum_mutate.c" leaderboard benchmarks.txt "modified its input"
	# caching per address passes single calls but not rotated fresh data
	expect_fail $p "$SUBS/vectorsum_memo.c" leaderboard benchmarks.txt "expected"

	# its own clock_gettime changes nothing: the shared object is loaded
	# only in the child, RTLD_LOCAL, and the harness's clock is libc's
	local d="$WORK/$p.clock"
	stage $p "$SUBS/vectorsum_clock.c" "$d" || return
	run "$d" leaderboard benchmarks.txt
	expect_eq "$p own clock_gettime rc" "$RC" 0
	# 1M floats cannot be summed in under 10 us; a frozen clock gives 0
	if awk -v m="$(value 'benchmark\.0\.mean')" 'BEGIN { exit !(m > 10000) }'; then
		ok
	else
		fail "$p own clock_gettime: mean $(value 'benchmark\.0\.mean') ns"
	fi

	# a read past the end faults in the submission's process; the
	# harness reports the crash (exit 115) with the signal
	expect_fail $p "$SUBS/vectorsum_oob.c" test tests.txt \
		"killed by signal 11" 115
}

test_matmul_hostile() {
	local p=matmul_cpu
	expect_fail $p "$SUBS/matmul_unwritten.c" test tests.txt "wrong"
	expect_fail $p "$SUBS/matmul_unwritten.c" leaderboard benchmarks.txt "wrong"
	expect_fail $p "$SUBS/matmul_accumulate.c" test tests.txt "wrong"
	expect_fail $p "$SUBS/matmul_mutate.c" test tests.txt "modified its input 'a'"
}

# no_fake_lines: none of the lines the hostile submissions forge reached
# the last report.
no_fake_lines() {
	if grep -q -e '\.mean: 1\.000$' -e '^benchmark\.9\.' "$REPORT" ||
		[ "$(grep -c '^check: ' "$REPORT")" != 1 ]; then
		fail "$REPORT: forged lines got in"
		cat "$REPORT"
	else
		ok
	fi
}

# Issue 4.2: results must be unforgeable by the submission. The harness
# runs custom_kernel only in a child process (problems/harness/guard.h);
# these try every way around that.
test_unforgeable() {
	local p=vectorsum_cpu d
	# fake report lines on every fd, then exit(0): a crash, nothing forged
	expect_fail $p "$SUBS/vectorsum_fdspam.c" test tests.txt \
		"exited with status 0" 115
	no_fake_lines
	expect_fail $p "$SUBS/vectorsum_fdspam.c" leaderboard benchmarks.txt \
		"exited with status 0" 115
	no_fake_lines
	# exit(0) on the second call, after an atexit handler that forges
	expect_fail $p "$SUBS/vectorsum_exit.c" leaderboard benchmarks.txt \
		"warm-up: custom_kernel crashed.*exited with status 0" 115
	no_fake_lines
	# replaying the previous result (by call count) fails the checks
	expect_fail $p "$SUBS/vectorsum_replay.c" leaderboard benchmarks.txt \
		"expected"

	# every way out of the child: none works, and the run passes
	d="$WORK/$p.probe"
	stage $p "$SUBS/vectorsum_probe.c" "$d" || return
	run "$d" test tests.txt
	expect_eq "$p probe rc" "$RC" 0
	expect_eq "$p probe check" "$(value check)" pass
	validate_report
	no_fake_lines
	if grep -q ESCAPE "$d/stderr.test" || ! grep -q "probe: done" "$d/stderr.test"; then
		fail "$p probe: $(grep -e ESCAPE -e probe "$d/stderr.test")"
	else
		ok
	fi

	# the child's clock pointer patched to a frozen clock: every timed
	# call is outside the parent's own measurement, every case suspect
	d="$WORK/$p.timer"
	stage $p "$SUBS/vectorsum_timer.c" "$d" || return
	run "$d" leaderboard benchmarks.txt
	expect_eq "$p timer rc" "$RC" 0
	expect_eq "$p timer check" "$(value check)" pass
	validate_report
	local i n
	n=$(value benchmark-count)
	for ((i = 0; i < n; i++)); do
		expect_eq "$p timer benchmark $i status" \
			"$(value "benchmark\.$i\.status")" suspect
		value "benchmark\.$i\.error" | grep -q "forged" ||
			fail "$p timer benchmark $i: $(value "benchmark\.$i\.error")"
	done

	# lies about the time (a patched clock pointer, claims rewritten in
	# the control page): tests/problems/cpu_timing.sh

	# a thread summing the slots in the background: the child is stopped
	# while the next inputs are staged, so it can only start with the
	# call, and whatever it does before the call proper is inside the
	# parent's window, which is the score's source: its mean never beats
	# the honest submission's best time on the same case by more than the
	# handoff (the p90 of the harness's calibration: a head start can only
	# come out of the handoff, and the best of a run is a low draw).
	# The honest best is taken right before and right after, the smaller
	# of the two: a best is the least load-sensitive figure of a run, and
	# load on the honest runs alone would otherwise make the precompute
	# run look fast (load on the precompute run only slows it).
	d="$WORK/$p.precompute"
	stage $p "$SUBS/vectorsum_precompute.c" "$d" || return
	tail -n 1 "$d/benchmarks.txt" > "$d/one.txt"
	local okd="$WORK/$p.ok" okbest okbest2
	cp "$d/one.txt" "$okd/one.txt"
	run "$okd" leaderboard one.txt honest-before
	okbest=$(value 'benchmark\.0\.best')
	run "$d" leaderboard one.txt
	expect_eq "$p precompute rc" "$RC" 0
	local last hits calls mean handoff
	last=$(grep '^precompute: ' "$d/stderr.leaderboard" | tail -n 1)
	hits=$(printf '%s\n' "$last" | awk '{ print $2 }')
	calls=$(printf '%s\n' "$last" | awk '{ print $5 }')
	mean=$(value 'benchmark\.0\.mean')
	handoff=$(sed -n 's/.*handoff min=.* p90=\([0-9.]*\)us.*/\1/p' \
		"$d/stderr.leaderboard")
	local precompute_report=$REPORT
	run "$okd" leaderboard one.txt honest-after
	okbest2=$(value 'benchmark\.0\.best')
	REPORT=$precompute_report
	okbest=$(awk -v a="$okbest" -v b="$okbest2" \
		'BEGIN { print (b + 0 < a + 0 ? b : a) }')
	# (How many calls there were depends on load: the time cap ends a
	# case after two samples on a busy machine.)
	[ -n "$calls" ] && [ "$calls" -le 4 ] &&
		echo "measure: $p precompute: only $calls calls under this load"
	if [ -n "$calls" ] && [ "$calls" -ge 1 ] &&
		{ [ $((hits * 2)) -le "$calls" ] ||
		awk -v m="$mean" -v b="$okbest" -v s="$handoff" \
			'BEGIN { exit !(m >= b - s * 1000) }'; }; then
		ok
	else
		fail "$p precompute: '$last', mean $mean ns, honest best $okbest ns, handoff p90 $handoff us"
	fi

	# code that runs when the submission is loaded, or at exit, or that
	# redefines library or harness functions: it all runs in the child
	# and reaches nothing. A constructor that forges and exits ends the
	# run as a crash; the others pass with honest reports.
	expect_fail $p "$SUBS/vectorsum_ctor.c" test tests.txt \
		"exited with status 0" 115
	no_fake_lines
	local sub
	for sub in dtor ifunc malloc harness_name; do
		d="$WORK/$p.$sub"
		stage $p "$SUBS/vectorsum_$sub.c" "$d" || {
			fail "$p $sub: does not build"
			continue
		}
		run "$d" leaderboard benchmarks.txt
		expect_eq "$p $sub rc" "$RC" 0
		expect_eq "$p $sub check" "$(value check)" pass
		validate_report
		no_fake_lines
	done

	# the submission is mapped by the child alone: its constructor reports
	# the process it runs in, and the dynamic loader every object each
	# process loads (LD_DEBUG=files, "PID: file=... dynamically loaded")
	d="$WORK/$p.where"
	stage $p "$SUBS/vectorsum_where.c" "$d" || return
	(cd "$d" && exec env POPCORN_FD=3 KBH_SUBMISSION="$d/submission.so" \
		LD_DEBUG=files ./eval.out test tests.txt 3> "$d/report.where" \
		2> "$d/stderr.where") &
	local harness=$!
	wait $harness
	expect_eq "$p where rc" "$?" 0
	local ctor loaders
	ctor=$(sed -n 's/^where: pid=\([0-9]*\) ppid=\([0-9]*\)$/\1 \2/p' \
		"$d/stderr.where")
	loaders=$(grep 'file=.*submission\.so .*dynamically loaded' \
		"$d/stderr.where" | sed 's/^ *\([0-9]*\):.*/\1/' | sort -u)
	if [ -n "$ctor" ] && [ "${ctor% *}" != "$harness" ] &&
		[ "${ctor#* }" = "$harness" ] && [ -n "$loaders" ] &&
		! printf '%s\n' "$loaders" | grep -qx "$harness"; then
		ok
	else
		fail "$p where: harness pid $harness, constructor ran in" \
			"'$ctor' (pid ppid), loaded by pids '$loaders'"
	fi

	# output finished by a background thread after "done": the rows it
	# writes late are still NaN when the stopped child's output is read.
	# (The thread, left running into the next call, may then crash the
	# child on the released buffers: 115 is fine too.) That holds while
	# the parent stops the child before the thread finishes, so the case
	# is one of 1024 x 1024, whose late half takes about 350 ms of a core,
	# several times the parent's slowest wake-up on a loaded machine (50
	# ms seen with a parallel build on 2 cores; the task's largest case,
	# 512, takes about 22 ms).
	p=matmul_cpu
	d="$WORK/$p.late"
	stage $p "$SUBS/matmul_late.c" "$d" || return
	printf 'size: 1024; seed: 6252\n' > "$d/one.txt"
	run "$d" leaderboard one.txt
	validate_report
	if { [ "$RC" = 112 ] || [ "$RC" = 115 ]; } &&
		grep -q '^benchmark\.0\.error: .*wrong' "$REPORT"; then
		ok
	else
		fail "$p late: rc $RC"
		cat "$REPORT"
	fi
}

for p in vectorsum_cpu matmul_cpu; do
	[ -f "$PROBLEMS/$p/task.yml" ] || { fail "$p: no task.yml"; continue; }
	grep -q '^lang: *"c"' "$PROBLEMS/$p/task.yml" || fail "$p: lang is not c"
	grep -q '^gpus: *\["CPU"\]' "$PROBLEMS/$p/task.yml" || fail "$p: gpus is not [CPU]"
	grep -q "name: $p\$" "$PROBLEMS/cpu.yaml" || fail "$p: not in cpu.yaml"
	test_ok $p
	test_template $p
	test_wrong $p
done
test_protocol "$WORK/vectorsum_cpu.ok"
test_vectorsum_hostile
test_matmul_hostile
test_unforgeable

echo "cpu_problems: $checks checks passed, $failures failed"
[ "$failures" = 0 ]
