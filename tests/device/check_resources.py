#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Every device kernel keeps its SQE (and everything else) in registers.

Compiles each kernel source with nvcc --resource-usage for every CUDA arch
and with hipcc --save-temps for every HIP arch, and prints one line per
kernel and arch:

    NKV-RES cuda sm_90 nkv_wk_kv_batch_kernel stack=0 PASS
    NKV-RES hip gfx90a nkv_wk_kv_batch_kernel scratch=0 PASS

A kernel with a stack frame (CUDA) or scratch (HIP) of more than 0 bytes
FAILs: on a GPU that is local memory, a round trip per access. So does a
kernel of KERNELS that an arch did not report (a wrapper renamed or
dropped would otherwise pass unseen). A compiler that is absent gives one
SKIP line naming it.

usage: check_resources.py [--nvcc PATH] [--hipcc PATH]
       [--cuda-archs "sm_80 sm_90"] [--hip-archs "gfx908 ..."]
"""
import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
EXAMPLES = ["examples/batch_store_retrieve_gpu.cu", "examples/multi_queue_gpu.cu",
            "examples/cache_lookup_gpu.cu", "examples/first_retrieve_gpu.cu",
            "examples/prefix_cache_gpu.cu"]
CUDA_SRCS = ["src/device/wave_kernels_cuda.cu", "bench/gpu_cuda.cu"] + EXAMPLES
HIP_SRCS = ["src/device/wave_kernels_hip.cpp", "bench/gpu_hip.cpp"] + EXAMPLES
# The library's own kernels: each must be reported for every arch.
KERNELS = ["nkv_wk_kv_batch_kernel", "nkv_wk_kv_block_kernel", "nkv_bk_run_kernel"]
FLAGS = ["-std=c++17", "-I" + os.path.join(ROOT, "include"), "-I" + os.path.join(ROOT, "src")]


def name(mangled):
    """_Z22nkv_wk_kv_batch_kernelP10... -> nkv_wk_kv_batch_kernel"""
    m = re.match(r"_Z(\d+)(\w+)", mangled)
    return m.group(2)[:int(m.group(1))] if m else mangled


def report(compiler, arch, kernel, what, n):
    print(f"NKV-RES {compiler} {arch} {kernel} {what}={n} {'PASS' if n == 0 else 'FAIL'}")
    return n == 0


def missing(compiler, archs, seen):
    """FAIL lines for the KERNELS an arch did not report; True if none."""
    ok = True
    for arch in archs:
        for k in KERNELS:
            if (arch, k) not in seen:
                print(f"NKV-RES {compiler} {arch} {k} missing FAIL")
                ok = False
    return ok


def run(cmd, cwd=None):
    p = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True)
    if p.returncode != 0:
        print(f"NKV-RES {os.path.basename(cmd[0])} {' '.join(cmd[-1:])} build FAIL")
        print(p.stdout + p.stderr)
        return None
    return p.stdout + p.stderr


def check_cuda(nvcc, archs):
    gencode = []
    for a in archs:
        gencode += ["-gencode", f"arch=compute_{a[3:]},code={a}"]
    ok, seen = True, set()
    with tempfile.TemporaryDirectory() as tmp:
        for src in CUDA_SRCS:
            out = run([nvcc] + FLAGS + gencode + ["--resource-usage", "-x", "cu", "-c",
                      "-o", os.path.join(tmp, "k.o"), os.path.join(ROOT, src)])
            if out is None:
                ok = False
                continue
            kernel = arch = None
            for line in out.splitlines():
                m = re.search(r"Compiling entry function '(\w+)' for '(sm_\d+)'", line)
                if m:
                    kernel, arch = name(m.group(1)), m.group(2)
                m = re.search(r"(\d+) bytes stack frame", line)
                if m and kernel:
                    ok &= report("cuda", arch, kernel, "stack", int(m.group(1)))
                    seen.add((arch, kernel))
                    kernel = None
    return missing("cuda", archs, seen) and ok


def check_hip(hipcc, archs):
    ok, seen = True, set()
    for src in HIP_SRCS:
        with tempfile.TemporaryDirectory() as tmp:
            out = run([hipcc] + FLAGS + [f"--offload-arch={a}" for a in archs] +
                      ["--save-temps", "-x", "hip", "-c", "-o", "k.o",
                       os.path.join(ROOT, src)], cwd=tmp)
            if out is None:
                ok = False
                continue
            for f in sorted(os.listdir(tmp)):
                m = re.search(r"-amdgcn-amd-amdhsa-(gfx\w+)\.s$", f)
                if not m:
                    continue
                fn = None
                for line in open(os.path.join(tmp, f)):
                    k = re.match(r"(_Z\w+):", line)
                    if k:
                        fn = name(k.group(1))
                    s = re.search(r"; ScratchSize: (\d+)", line)
                    if s and fn and fn.endswith("_kernel"):
                        ok &= report("hip", m.group(1), fn, "scratch", int(s.group(1)))
                        seen.add((m.group(1), fn))
                        fn = None
    return missing("hip", archs, seen) and ok


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--nvcc", default=shutil.which("nvcc") or "/usr/local/cuda/bin/nvcc")
    ap.add_argument("--hipcc", default=shutil.which("hipcc") or "hipcc")
    ap.add_argument("--cuda-archs", default="sm_80 sm_90")
    ap.add_argument("--hip-archs", default="gfx908 gfx90a gfx940 gfx1030")
    a = ap.parse_args()
    ok = True
    if os.access(a.nvcc, os.X_OK):
        ok &= check_cuda(a.nvcc, a.cuda_archs.split())
    else:
        print(f"NKV-RES cuda SKIP (no CUDA toolkit: {a.nvcc} not found)")
    if shutil.which(a.hipcc):
        ok &= check_hip(a.hipcc, a.hip_archs.split())
    else:
        print("NKV-RES hip SKIP (hipcc not installed)")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
