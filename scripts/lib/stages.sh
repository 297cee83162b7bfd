# Stage helpers for scripts/test.sh: timing, Criterion result counting and
# the final summary line. Sourced, not run.
NKV_PASSED=0
NKV_FAILED=0
NKV_SKIPPED=0
NKV_FAILED_STAGES=()
NKV_FAILED_TESTS=()	# "binary: [FAIL] suite::test" lines, repeated at the end
NKV_FAILED_WHY=()	# their assertion messages, repeated after them (capped)
NKV_T0=$(date +%s)

# stage NAME CMD...: run CMD, time it, count it as one passed or failed
# check unless it is a Criterion run (those count their own tests).
stage() {
	local name=$1 t0 rc
	shift
	echo "=== stage $name: start"
	t0=$(date +%s.%N)
	NKV_STAGE_COUNTED=0
	"$@"
	rc=$?
	printf '=== stage %s: %s in %.1f s\n' "$name" \
		"$([ $rc -eq 0 ] && echo ok || echo "FAILED (exit $rc)")" \
		"$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN{print b-a}')"
	if [ "$NKV_STAGE_COUNTED" = 0 ]; then
		[ $rc -eq 0 ] && NKV_PASSED=$((NKV_PASSED + 1)) || NKV_FAILED=$((NKV_FAILED + 1))
	fi
	[ $rc -eq 0 ] || NKV_FAILED_STAGES+=("$name")
	return 0
}

# skip NAME REASON: a check that could not run here.
skip() {
	echo "=== stage $1: SKIPPED ($2)"
	NKV_SKIPPED=$((NKV_SKIPPED + 1))
}

# run_criterion DIR [NAMES]: run each Criterion binary in DIR (or only
# NAMES), adding its tested/passing/failing counts to the totals.
run_criterion() {
	local dir=$1 only=${2:-} t out rc=0 ran=0 tested passing failing crashing skipped
	NKV_STAGE_COUNTED=1
	for t in "$dir"/*; do
		[ -x "$t" ] || continue
		if [ -n "$only" ] && ! grep -qw "$(basename "$t")" <<<"$only"; then
			continue
		fi
		ran=$((ran + 1))
		# --verbose=1: without it Criterion prints no [SKIP] line at all,
		# and a skipped test would vanish from the counts.
		out=$("$t" --jobs 2 --short-filename --verbose=1 2>&1)
		[ $? -eq 0 ] || rc=1
		grep -vE '^\[RUN |^\[PASS\]|^\[----\] Criterion v|^\[====\] Running ' <<<"$out" |
			sed "s|^|$(basename "$t"): |"
		# The failures again at the end: a CI log is often read from its tail.
		mapfile -t -O ${#NKV_FAILED_TESTS[@]} NKV_FAILED_TESTS < <(grep -E '^\[FAIL\]' <<<"$out" |
			sed "s|^|$(basename "$t") ($dir): |")
		# And why: each "Assertion Failed" line with its message lines
		# (the diagnostics a flaky CI-only failure prints), 80 a binary.
		mapfile -t -O ${#NKV_FAILED_WHY[@]} NKV_FAILED_WHY < <(awk -v b="$(basename "$t")" '
			/^\[----\] .*(Assertion Failed|Test Crashed|Timed out)/ { on = 1; print b ": " $0; next }
			on && /^\[----\]   / { if ($0 !~ /^\[----\] +$/) print b ": " $0; next }
			{ on = 0 }' <<<"$out" | head -n 80)
		read -r tested passing failing crashing skipped < <(echo "$out" |
			sed -n 's/.*Tested: \([0-9]*\) | Passing: \([0-9]*\) | Failing: \([0-9]*\) | Crashing: \([0-9]*\).*/\1 \2 \3 \4/p' | tail -1)
		if [ -z "${tested:-}" ]; then
			echo "$(basename "$t"): no Criterion summary (crashed?)"
			NKV_FAILED_TESTS+=("$(basename "$t") ($dir): no Criterion summary (crashed?)")
			NKV_FAILED=$((NKV_FAILED + 1))
			rc=1
			continue
		fi
		# Criterion leaves skipped tests out of "Tested": count their lines.
		skipped=$(grep -c '^\[SKIP\]' <<<"$out")
		NKV_PASSED=$((NKV_PASSED + passing))
		NKV_FAILED=$((NKV_FAILED + failing))
		NKV_SKIPPED=$((NKV_SKIPPED + skipped))
	done
	if [ $ran -eq 0 ]; then
		echo "no test binary found in $dir${only:+ (wanted: $only)}"
		NKV_FAILED=$((NKV_FAILED + 1))
		return 1
	fi
	return $rc
}

# quiet NAME CMD...: run CMD with its output in build/logs/NAME.log,
# showing the last lines only when it fails (builds are long and noisy).
quiet() {
	local name=$1 log rc
	shift
	mkdir -p build/logs
	log=build/logs/$name.log
	"$@" >"$log" 2>&1
	rc=$?
	if [ $rc -ne 0 ]; then
		tail -n 60 "$log"
		echo "(full output: $log)"
	fi
	return $rc
}

# run_counted TAG CMD...: run CMD, print its output without the passing
# lines, and count each "TAG name... PASS|FAIL|SKIP [reason]" line it
# prints (names may hold spaces). A CMD that prints no such line failed.
run_counted() {
	local tag=$1 out rc line res
	shift
	out=$("$@" 2>&1)
	rc=$?
	# Passing lines are counted, not shown; a sub-runner's own "N passed"
	# line is dropped so that only the suite's last line reads like one.
	echo "$out" | grep -vE "^$tag .* PASS( |$)|^[0-9]+ passed, [0-9]+ failed"
	NKV_STAGE_COUNTED=1
	while read -r line; do
		res=$(awk '{ for (i = 2; i <= NF; i++)
			if ($i == "PASS" || $i == "FAIL" || $i == "SKIP") { print $i; exit } }' <<<"$line")
		case $res in
		PASS) NKV_PASSED=$((NKV_PASSED + 1)) ;;
		SKIP) NKV_SKIPPED=$((NKV_SKIPPED + 1)) ;;
		*) NKV_FAILED=$((NKV_FAILED + 1)) ;;
		esac
	done < <(grep "^$tag " <<<"$out")
	# A here-string, not a pipe: under pipefail grep -q's early exit could
	# kill echo with SIGPIPE on a long output and read as "no lines".
	if ! grep -q "^$tag " <<<"$out"; then
		echo "no '$tag' result lines: the command died before any check"
		NKV_FAILED=$((NKV_FAILED + 1))
		rc=1
	fi
	return $rc
}

finish() {
	printf '=== total wall time %d s\n' $(( $(date +%s) - NKV_T0 ))
	if [ ${#NKV_FAILED_STAGES[@]} -gt 0 ]; then
		echo "=== failed stages: ${NKV_FAILED_STAGES[*]}"
	fi
	if [ ${#NKV_FAILED_TESTS[@]} -gt 0 ]; then
		echo "=== failed tests:"
		printf '  %s\n' "${NKV_FAILED_TESTS[@]}"
	fi
	if [ ${#NKV_FAILED_WHY[@]} -gt 0 ]; then
		echo "=== why they failed (their assertion messages):"
		printf '  %s\n' "${NKV_FAILED_WHY[@]}"
	fi
	echo "$NKV_PASSED passed, $NKV_FAILED failed, $NKV_SKIPPED skipped"
	[ "$NKV_FAILED" -eq 0 ] && [ ${#NKV_FAILED_STAGES[@]} -eq 0 ]
}
