#!/usr/bin/env bash
# nkv on a real GPU: nkv-bench --engine gpu (a GPU build: make GPU=cuda or
# GPU=hip) runs every KV op with 1 and 4 queue pairs (a wave's batch of
# 32; and block batches of 256 for three of them) against its embedded
# nkv-target, each under `timeout`, and, where compute-sanitizer exists,
# once more under its synccheck and racecheck tools. One line per case:
#   NKV-GPU <case> PASS|FAIL|SKIP [why]
# Without a GPU (or with a build that has no GPU runtime) every case is
# reported SKIP by name, with the reason; never PASS.
# usage: tests/gpu/run.sh BUILD_DIR   (e.g. build/gpu-cuda)
# NKV_GPU_TIMEOUT=S: each case's limit in seconds (default 300; a lent
# machine's minutes are few). NKV_GPU_SANITIZE=0: the compute-sanitizer
# cases are reported SKIP (asked not to run) rather than run.
set -u
build=${1:?usage: tests/gpu/run.sh BUILD_DIR}
bench=$build/bin/nkv-bench
ops="store retrieve exist list delete"
limit=${NKV_GPU_TIMEOUT:-300}
cases=()
for q in 1 4; do
	for op in $ops; do
		cases+=("$op-q$q")
	done
done
# A batch wider than a wave: a block of 8 waves per queue pair, its
# shared-memory hand-offs and barriers (nkv_block.h) under the same tools.
cases+=(store-b256-q1 retrieve-b256-q1 exist-b256-q4)
# Values in GPU memory (memory mode 0x8, reached by DMA messages served
# with the runtime's copies), and Retrieves straight into GPU memory the
# library allocates (tests/gpu/region_check: byte-checked, GB/s beside the
# runtime's host-to-device copy).
mode8=(store-mode8-msgs retrieve-mode8-msgs)
regions=(region-65536 region-2097152 region-33554432)
tools=()
nosan="compute-sanitizer not installed"
if [ "${NKV_GPU_SANITIZE:-1}" = 0 ]; then
	nosan="NKV_GPU_SANITIZE=0"
elif command -v compute-sanitizer >/dev/null; then
	tools=(synccheck racecheck)
fi

skip_all() {
	local c t
	for c in "${cases[@]}"; do
		echo "NKV-GPU $c SKIP ($1)"
		for t in synccheck racecheck; do
			echo "NKV-GPU $c-$t SKIP ($1)"
		done
	done
	for c in "${mode8[@]}" "${regions[@]}"; do
		echo "NKV-GPU $c SKIP ($1)"
	done
}

if [ ! -x "$bench" ]; then
	skip_all "no GPU build at $build (make GPU=cuda or GPU=hip)"
	exit 0
fi
probe=$(timeout 60 "$bench" --engine gpu --kv-op exist --num-keys 1 2>&1)
if [ $? -eq 2 ] && grep -q -- "--engine gpu:" <<<"$probe"; then
	skip_all "$(grep -o -- '--engine gpu: .*' <<<"$probe" | head -1)"
	exit 0
fi

# run NAME CASE PREFIX...: one nkv-bench run of CASE (OP[-bBATCH]-qQUEUES),
# PASS when it exits 0 (every value verified, no device error, no failed
# queue pair).
run() {
	local name=$1 spec=${2%-q*} q=${2##*-q} op b=32 out rc
	shift 2
	op=${spec%-b*}
	[ "$op" = "$spec" ] || b=${spec##*-b}
	out=$(timeout "$limit" "$@" "$bench" --engine gpu --kv-op "$op" --num-queues "$q" \
		--num-keys 1024 --batch-size "$b" --queue-length $((b > 128 ? 2 * b : 256)) \
		--iterations 2 2>&1)
	rc=$?
	if [ $rc -eq 0 ]; then
		echo "NKV-GPU $name PASS"
	else
		echo "NKV-GPU $name FAIL (exit $rc)"
		tail -n 20 <<<"$out" | sed 's/^/  /'
	fi
}

for c in "${cases[@]}"; do
	run "$c" "$c"
	for t in "${tools[@]}"; do
		run "$c-$t" "$c" compute-sanitizer --tool "$t" --error-exitcode 3
	done
	[ ${#tools[@]} -gt 0 ] || echo "NKV-GPU $c-synccheck SKIP ($nosan)"
	[ ${#tools[@]} -gt 0 ] || echo "NKV-GPU $c-racecheck SKIP ($nosan)"
done

for c in "${mode8[@]}"; do
	out=$(timeout "$limit" "$bench" --engine gpu --kv-op "${c%%-*}" --memory-mode 8 \
		--values-by-messages --num-keys 256 --batch-size 32 --iterations 2 --json 2>&1)
	rc=$?
	if [ $rc -eq 0 ]; then
		echo "NKV-GPU $c PASS ($(grep -o '"bytes_per_s":[0-9.]*' <<<"$out"))"
	else
		echo "NKV-GPU $c FAIL (exit $rc)"
		tail -n 20 <<<"$out" | sed 's/^/  /'
	fi
done
check=$build/tests/gpu/region_check
target=$build/bin/nkv-target
if [ ! -x "$check" ] || [ ! -x "$target" ]; then
	for c in "${regions[@]}"; do
		echo "NKV-GPU $c SKIP (no $check or $target: make GPU=... gpu-tests programs)"
	done
	exit 0
fi
tmp=$(mktemp -d)
"$target" --socket "$tmp/t.sock" >"$tmp/target.log" 2>&1 &
tpid=$!
for _ in $(seq 50); do
	[ -S "$tmp/t.sock" ] && break
	sleep 0.1
done
out=$(timeout "$limit" "$check" "vfio-user:$tmp/t.sock" 2>&1)
rc=$?
echo "$out" | grep '^NKV-GPU '
for c in "${regions[@]}"; do
	grep -q "^NKV-GPU $c " <<<"$out" || echo "NKV-GPU $c FAIL (exit $rc: $(tail -n 1 <<<"$out"))"
done
kill "$tpid" 2>/dev/null
wait "$tpid" 2>/dev/null
rm -rf "$tmp"
