#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Every public header compiles on its own, as the first and only include,
# under strict language modes with warnings as errors and no feature macro
# (the project builds with -D_GNU_SOURCE; an application need not):
#   host headers (include/*.h but the GPU arch layers): gcc and clang as
#   -std=c11, g++ and clang++ as -std=c++17;
#   nkv_arch_cuda.h, nkv_dev.h, nkv_block.h, nkv_kvcache.h and nkv_mr.h under nvcc,
#   nkv_arch_hip.h, nkv_dev.h, nkv_block.h, nkv_kvcache.h and nkv_mr.h under hipcc,
#   with the Makefile's flags and archs.
# One "NKV-HDR <compiler> <header> PASS|FAIL|SKIP [reason]" line per check;
# a compiler that is absent is one SKIP line per header it would check.
# Ends with "N passed, N failed, N skipped"; exits non-zero on a failure.
# Usage: check_headers.sh [--nvcc PATH] [--cuda-archs "sm_80 ..."]
#                         [--hip-archs "gfx90a ..."]
set -uo pipefail
cd "$(dirname "$0")/../.." || exit

nvcc=$(command -v nvcc || true)
cuda_archs="sm_80"
hip_archs="gfx90a"
while [ $# -gt 0 ]; do
	case $1 in
	--nvcc) nvcc=$2 ;;
	--cuda-archs) cuda_archs=$2 ;;
	--hip-archs) hip_archs=$2 ;;
	*) echo "usage: $0 [--nvcc PATH] [--cuda-archs LIST] [--hip-archs LIST]" >&2; exit 2 ;;
	esac
	shift 2
done

passed=0 failed=0 skipped=0
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
strict=(-Wall -Wextra -Werror -Iinclude)

# report TAG HEADER RC LOG
report() {
	if [ "$3" -eq 0 ]; then
		echo "NKV-HDR $1 $2 PASS"
		passed=$((passed + 1))
	else
		echo "NKV-HDR $1 $2 FAIL"
		sed 's/^/    /' "$4" | head -n 20
		failed=$((failed + 1))
	fi
}

skip_all() {
	local h
	for h in "${@:3}"; do
		echo "NKV-HDR $1 $h SKIP ($2)"
		skipped=$((skipped + 1))
	done
}

# check TAG SUFFIX HEADER CMD...: compile a file that includes only HEADER.
check() {
	local tag=$1 src=$tmp/only.$2 h=$3 rc
	shift 3
	printf '#include "%s"\n' "$h" >"$src"
	"$@" "$src" >"$tmp/log" 2>&1
	rc=$?
	report "$tag" "$h" $rc "$tmp/log"
}

host_headers=()
for f in include/*.h; do
	case ${f##*/} in
	nkv_arch_cuda.h | nkv_arch_hip.h) ;;
	*) host_headers+=("${f##*/}") ;;
	esac
done

for cc in gcc:c11:c clang:c11:c g++:c++17:c++ clang++:c++17:c++; do
	IFS=: read -r bin std lang <<<"$cc"
	tag="$bin-$std"
	if ! command -v "$bin" >/dev/null; then
		skip_all "$tag" "$bin not installed" "${host_headers[@]}"
		continue
	fi
	for h in "${host_headers[@]}"; do
		check "$tag" "$lang" "$h" "$bin" -std="$std" "${strict[@]}" -x "$lang" -fsyntax-only
	done
done

# The device compilers build real objects (they have no syntax-only mode
# that runs the device pass) for every arch the Makefile targets.
if [ -n "$nvcc" ] && [ -x "$nvcc" ]; then
	gencode=()
	for a in $cuda_archs; do
		gencode+=(-gencode "arch=compute_${a#sm_},code=$a")
	done
	for h in nkv_arch_cuda.h nkv_dev.h nkv_block.h nkv_kvcache.h nkv_mr.h; do
		check nvcc cu "$h" "$nvcc" -std=c++17 -Iinclude -Werror all-warnings \
			"${gencode[@]}" -x cu -c -o "$tmp/only.o"
	done
else
	skip_all nvcc "no CUDA toolkit (nvcc)" nkv_arch_cuda.h nkv_dev.h nkv_block.h nkv_kvcache.h nkv_mr.h
fi

if command -v hipcc >/dev/null; then
	offload=()
	for a in $hip_archs; do
		offload+=(--offload-arch="$a")
	done
	for h in nkv_arch_hip.h nkv_dev.h nkv_block.h nkv_kvcache.h nkv_mr.h; do
		check hipcc hip "$h" hipcc -std=c++17 "${strict[@]}" "${offload[@]}" \
			-x hip -c -o "$tmp/only.o"
	done
else
	skip_all hipcc "hipcc not installed" nkv_arch_hip.h nkv_dev.h nkv_block.h nkv_kvcache.h nkv_mr.h
fi

echo "$passed passed, $failed failed, $skipped skipped"
[ "$failed" -eq 0 ]
