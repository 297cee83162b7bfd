# The kernel module in a real kernel: tests/vm/run.sh boots Debian's kernel
# under QEMU (TCG) with an emulated NVMe disk, without an IOMMU, with an
# emulated translating IOMMU and with swiotlb=force, and prints one
# "NKV-VM <boot>-<case> PASS|FAIL|SKIP" line per case. Sourced by
# scripts/test.sh; each case counts on its own. Stage vm is Debian 12's
# default 6.1 kernel; stage vm-6.12 is the 6.12 kernel from Debian 12's
# security updates (linux-image-6.12-amd64 + linux-headers-6.12-amd64),
# skipped by name where that pair is not installed. Stage vm-power is one
# power-loss round of the rocksdb backend (tests/vm/powerloss.sh 1, about
# 30-60 s; docs/target.md runs 20 by hand). Stage vm-tcp is the kernel's
# NVMe/TCP host (nvme-tcp, nvme-cli) against the guest's own nvmet and
# against nkv-target on this host (tests/vm/tcp.sh, about 20 s); it needs
# neither linux-headers nor the module, and skips by name without
# nvme-cli or socat; its nkv cases skip by name while nkv-target has no
# TCP listener.
nkv_k612=$(cd /lib/modules 2>/dev/null && ls -d 6.12.*-amd64 2>/dev/null | tail -1)
nkv_vm_skip=
if ! command -v qemu-system-x86_64 >/dev/null; then
	nkv_vm_skip="qemu-system-x86_64 not installed"
elif ! ls /boot/vmlinuz-*-amd64 >/dev/null 2>&1; then
	nkv_vm_skip="no Debian kernel image (/boot/vmlinuz-*-amd64)"
fi
if [ -n "$nkv_vm_skip" ]; then
	for nkv_s in vm vm-6.12 vm-power vm-tcp; do
		skip $nkv_s "$nkv_vm_skip"
	done
else
	stage vm run_counted NKV-VM tests/vm/run.sh
	if [ -n "$nkv_k612" ] && [ -e "/boot/vmlinuz-$nkv_k612" ] &&
		[ -e "/lib/modules/$nkv_k612/build/Makefile" ]; then
		stage vm-6.12 run_counted NKV-VM env NKV_KERNEL="$nkv_k612" NKV_VM_TAG=6.12- \
			tests/vm/run.sh
	else
		skip vm-6.12 "linux-image-6.12-amd64 and linux-headers-6.12-amd64 not installed"
	fi
	stage vm-power run_counted NKV-POWER tests/vm/powerloss.sh 1
	if command -v nvme >/dev/null && command -v socat >/dev/null; then
		stage vm-tcp run_counted NKV-VM tests/vm/tcp.sh
	else
		skip vm-tcp "nvme-cli or socat not installed (scripts/install-deps.sh)"
	fi
fi
