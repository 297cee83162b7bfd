# nkv-bench, the examples and the install test (issue #6). Sourced by
# scripts/test.sh after the build stage (build/bin has nkv-bench and
# nkv-target). Each check the scripts print counts on its own; the HIP and
# CUDA compiles of the examples and of nkv-bench's kernel run in the hip /
# cuda stages (HIP_SRCS / CUDA_SRCS), skipped there by name without a compiler.

# count_lines TAG CMD...: run CMD, count its "TAG name PASS|FAIL|SKIP" lines.
nkv_count_lines() {
	local tag=$1 out rc res
	shift
	out=$("$@" 2>&1)
	rc=$?
	echo "$out" | grep -v " PASS$"
	NKV_STAGE_COUNTED=1
	while read -r _ _ res _; do
		case $res in
		PASS) NKV_PASSED=$((NKV_PASSED + 1)) ;;
		SKIP) NKV_SKIPPED=$((NKV_SKIPPED + 1)) ;;
		*) NKV_FAILED=$((NKV_FAILED + 1)) ;;
		esac
	done < <(echo "$out" | grep "^$tag ")
	if ! echo "$out" | grep -q "^$tag "; then
		NKV_FAILED=$((NKV_FAILED + 1))	# died before any check
		rc=1
	fi
	return $rc
}

stage examples-build quiet examples-build make examples-cpu bench-tools
stage bench nkv_count_lines NKV-BENCH timeout 300 python3 tests/bench/test_bench.py build
stage examples nkv_count_lines NKV-EX timeout 300 tests/examples/run.sh build
stage bench-smoke timeout 120 python3 bench/run-bench.py --smoke --out build/bench-smoke
