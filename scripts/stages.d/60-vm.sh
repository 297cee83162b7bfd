# The kernel module in a real kernel: tests/vm/run.sh boots Debian's kernel
# under QEMU (TCG) with an emulated NVMe disk, once without and once with an
# emulated IOMMU, and prints one "NKV-VM <boot>-<case> PASS|FAIL|SKIP" line
# per case. Sourced by scripts/test.sh; each case counts on its own.
if ! command -v qemu-system-x86_64 >/dev/null; then
	skip vm "qemu-system-x86_64 not installed"
elif ! ls /boot/vmlinuz-*-amd64 >/dev/null 2>&1; then
	skip vm "no Debian kernel image (/boot/vmlinuz-*-amd64)"
else
	stage vm run_counted NKV-VM tests/vm/run.sh
fi
