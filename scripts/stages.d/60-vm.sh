# The kernel module in a real kernel: tests/vm/run.sh boots Debian's kernel
# under QEMU (TCG) with an emulated NVMe disk, once without and once with an
# emulated IOMMU, and prints one "NKV-VM <boot>-<case> PASS|FAIL|SKIP" line
# per case. Sourced by scripts/test.sh; each case counts on its own.
nkv_vm_stage() {
	local out rc line name res
	out=$(tests/vm/run.sh 2>&1)
	rc=$?
	echo "$out" | grep -v '^[0-9]* passed, '
	NKV_STAGE_COUNTED=1
	while read -r line; do
		set -- $line
		name=$2 res=$3
		case $res in
		PASS) NKV_PASSED=$((NKV_PASSED + 1)) ;;
		SKIP) NKV_SKIPPED=$((NKV_SKIPPED + 1)) ;;
		*) NKV_FAILED=$((NKV_FAILED + 1)) ;;
		esac
	done < <(echo "$out" | grep '^NKV-VM ')
	if ! echo "$out" | grep -q '^NKV-VM '; then
		NKV_FAILED=$((NKV_FAILED + 1))	# the script died before any case
		rc=1
	fi
	return $rc
}

if ! command -v qemu-system-x86_64 >/dev/null; then
	skip vm "qemu-system-x86_64 not installed"
elif ! ls /boot/vmlinuz-*-amd64 >/dev/null 2>&1; then
	skip vm "no Debian kernel image (/boot/vmlinuz-*-amd64)"
else
	stage vm nkv_vm_stage
fi
