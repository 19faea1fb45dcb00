# Sourced by tests/problems/split_cost.sh, bench/cpu/omp_wait.sh,
# bench/cpu/reproducibility.sh, bench/cpu/timing_rule.sh and
# bench/sandbox/sample_ratio.sh.
#
# harness_pair ROOT REV PROBLEM DIR VERSION [SUBMISSION]
#   Builds PROBLEM's submission_ok.c (or the C file SUBMISSION) into
#   DIR/eval.out with the harness of VERSION: "old" = the one-process
#   harness at git revision REV, "new" = the working tree's split harness. Both are patched (in DIR, not in the
#   repository) to print every timed sample to stderr as
#   "sample <call index> <us>", and DIR/cases.txt gets the task's
#   benchmarks in the harness's cases format. It is harness_pair_stage
#   then harness_pair_build; a caller that edits the sources in between
#   (bench/sandbox/cap.sh) calls the two itself.
harness_pair() {
	harness_pair_stage "$@" && harness_pair_build "$4"
}

# harness_pair_stage ROOT REV PROBLEM DIR VERSION [SUBMISSION]: all of
# the above but the build.
harness_pair_stage() {
	local root=$1 rev=$2 p=$3 d=$4 v=$5 f
	local sub=${6:-$root/problems/$p/submission_ok.c}
	mkdir -p "$d"
	cp "$root/problems/$p/problem.c" "$d/"
	cp "$sub" "$d/submission.c"
	if [ "$v" = old ]; then
		for f in harness.h harness.c harness_cpu.h harness_cpu.c; do
			git -C "$root" show "$rev:problems/harness/$f" > "$d/$f"
		done
	else
		cp "$root"/problems/harness/{harness,harness_cpu,guard}.[ch] "$d/"
	fi
	grep -q 'kbh_stats_add(&st, (double)ns);' "$d/harness_cpu.c"
	sed -i 's|^\(\t*\)kbh_stats_add(&st, (double)ns);|&\n\1fprintf(stderr, "sample %zu %.1f\\n", i, (double)ns / 1e3);|' \
		"$d/harness_cpu.c"
	harness_pair_cases "$root/problems/$p/task.yml" > "$d/cases.txt"
}

# harness_pair_cases TASK_YML: the task's benchmarks in the harness's
# cases format, one per line.
harness_pair_cases() {
	awk '/^benchmarks:/ { on = 1; next } /^[a-z_]+:/ { on = 0 }
		on && /^ *- *\{/ { l = $0; sub(/^ *- *\{ */, "", l);
			sub(/ *\} *$/, "", l); gsub(/"/, "", l);
			gsub(/ *, */, "; ", l); print l }' "$1"
}

# harness_pair_build DIR [CFLAGS...]: compiles DIR's sources into
# DIR/eval.out as the worker compiles a C problem.
harness_pair_build() {
	local d=$1
	shift
	(cd "$d" && cc -O3 -march=native -fopenmp "$@" ./*.c -o eval.out -lm)
}
