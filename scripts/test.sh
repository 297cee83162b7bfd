#!/usr/bin/env bash
# The whole nkv test suite: what the README's test command and .ci/run run.
# Installs the Debian packages it needs (unless NKV_SKIP_DEPS=1), builds,
# then runs every stage, printing each stage's wall time. A stage whose
# prerequisite is absent (a compiler, a kernel, a cluster) is reported as
# skipped by name, never as passed. Ends with "N passed, N failed, N skipped".
set -uo pipefail
cd "$(dirname "$0")/.."
export MAKEFLAGS="${MAKEFLAGS:--j$(nproc)}"
export LSAN_OPTIONS="suppressions=$PWD/scripts/lsan.supp:print_suppressions=0"
. scripts/lib/stages.sh

[ "${NKV_SKIP_DEPS:-0}" = 1 ] || stage deps scripts/install-deps.sh
stage build quiet build make all
stage unit run_criterion build/tests
# The wave and block suites again with the cpu engine's NKV_CPU_CHECK
# mode: random lane order, random yields and sleeps in poll loops, every
# collective's mask and call site checked (docs/architecture.md). The
# seed is printed; NKV_CHECK_SEED=N reruns one.
check_seed=${NKV_CHECK_SEED:-1}
echo "collectives-check: NKV_CPU_CHECK=$check_seed"
NKV_CPU_CHECK=$check_seed stage collectives-check run_criterion build/tests \
	"test_wave_submit test_block_submit test_tgt_cpu_waves test_host_waves test_host_block \
	test_host_threads test_vfu_e2e"
stage asan-build quiet asan-build make SAN=asan tests
stage asan run_criterion build/asan/tests
stage tsan-build quiet tsan-build make SAN=tsan tsan-tests
stage tsan run_criterion build/tsan/tests "$(make -s print-tsan-tests 2>/dev/null)"
if command -v hipcc >/dev/null; then
	stage hip quiet hip make hip
else
	skip hip "hipcc not installed"
fi
if [ -x "$(make -s print-nvcc)" ]; then
	stage cuda quiet cuda make cuda
else
	skip cuda "no CUDA toolkit (nvcc) on this machine"
fi
for s in scripts/stages.d/*.sh; do
	[ -e "$s" ] && . "$s"
done
finish
