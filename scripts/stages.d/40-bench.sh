# nkv-bench, the examples and the install test (issue #6). Sourced by
# scripts/test.sh after the build stage (build/bin has nkv-bench and
# nkv-target). Each check the scripts print counts on its own; the HIP and
# CUDA compiles of the examples and of nkv-bench's kernel run in the hip /
# cuda stages (HIP_SRCS / CUDA_SRCS), skipped there by name without a compiler.

stage examples-build quiet examples-build make examples-cpu bench-tools bench-rados bench-rocks
stage bench run_counted NKV-BENCH timeout 300 python3 tests/bench/test_bench.py build
stage examples run_counted NKV-EX timeout 300 tests/examples/run.sh build
stage bench-smoke timeout 120 python3 bench/run-bench.py --smoke --out build/bench-smoke

# bench/compare.py --quick (issue 20): nkv beside its references with tiny
# counts, one run, the rados part on a throwaway cluster (skipped by name
# without Ceph). A check that it runs and writes its JSON, never a speed;
# test_compare.py then checks that JSON's fields (and never a stale one).
compare_quick() {
	rm -rf build/bench-compare
	quiet bench-compare-quick timeout 180 python3 bench/compare.py --quick --out build/bench-compare
}
stage bench-compare-quick compare_quick
stage bench-compare run_counted NKV-COMPARE timeout 300 python3 tests/bench/test_compare.py build build/bench-compare
