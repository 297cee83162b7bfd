# libFuzzer targets (tests/fuzz, docs/fuzzing.md): built with clang into
# build/fuzz, each run from the seed corpus for a bounded time and run
# count (all five well under two minutes). Any crash, leak, hang or
# sanitizer report fails the stage and prints the reproducer's path.
# Sourced by scripts/test.sh.

NKV_FUZZ_SECS=${NKV_FUZZ_SECS:-20}
NKV_FUZZ_RUNS=${NKV_FUZZ_RUNS:-200000}
NKV_FUZZ_BUILD=${NKV_FUZZ_BUILD:-build}

nkv_fuzz_has_runtime() {
	command -v clang >/dev/null &&
		echo 'int LLVMFuzzerTestOneInput(const char *d, long n){(void)d;(void)n;return 0;}' |
		clang -x c -fsanitize=fuzzer -o /dev/null - 2>/dev/null
}

nkv_fuzz_run() {
	local b=$NKV_FUZZ_BUILD/fuzz t rc=0 log out=$NKV_FUZZ_BUILD/fuzz/run
	rm -rf "$out" && mkdir -p "$out"
	python3 tests/fuzz/seeds.py "$out/seeds" || return 1
	for t in fuzz_list_decode fuzz_ctrl_cmds fuzz_vfu_server fuzz_vfu_client fuzz_rpc \
		fuzz_tcp_pdu fuzz_tcp_conn fuzz_nvmf_host; do
		mkdir -p "$out/corpus-$t"
		log=$out/$t.log
		# -timeout: one input taking over 10 s is a hang.
		if ! timeout $((NKV_FUZZ_SECS + 60)) "$b/$t" -max_total_time="$NKV_FUZZ_SECS" \
			-runs="$NKV_FUZZ_RUNS" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
			-artifact_prefix="$out/$t-" "$out/corpus-$t" "$out/seeds/$t" >"$log" 2>&1; then
			rc=1
			echo "fuzz: $t FAILED (log: $log)"
			grep -E 'ERROR|SUMMARY|Test unit written' "$log" | head -20
			ls "$out/$t-"* 2>/dev/null | sed 's/^/fuzz: reproducer: /'
		else
			echo "fuzz: $t ok: $(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" | grep -o '[0-9]*$') runs"
		fi
	done
	return $rc
}

if nkv_fuzz_has_runtime; then
	stage fuzz-build quiet fuzz-build make BUILD="$NKV_FUZZ_BUILD" fuzz
	stage fuzz nkv_fuzz_run
else
	skip fuzz "clang with the libFuzzer runtime (libclang-rt-dev) not installed"
fi
