#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Issue 50's goal, measured: 64 x 2 MiB retrieved into a numpy array over
an nkv_mem_alloc region through the Python package (one retrieve_many per
batch), beside nkv-bench's figure for the same batch (--kv-op retrieve
--value-size 2M --batch-size 64 --num-keys 64 --dest region --no-verify),
against the same controller, alternating round by round; medians.

usage: bench/python_batch.py URI [--rounds N] [--iterations N] [--nkv-bench PATH]
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import time

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
sys.path.insert(0, os.path.join(ROOT, "python"))
os.environ.setdefault("NKV_LIB", os.path.join(ROOT, "build", "lib", "libnkv.so"))
import nkv  # noqa: E402

N, SZ = 64, 2 << 20


def bench_c(path, uri, iters):
    out = subprocess.run([path, "--target", uri, "--kv-op", "retrieve", "--value-size", "2M",
                          "--batch-size", "64", "--num-keys", "64", "--dest", "region",
                          "--no-verify", "--warmup", "2", "--iterations", str(iters),
                          "--json"],
                         capture_output=True, text=True, timeout=300, check=True)
    return json.loads(out.stdout)["bytes_per_s"]


def bench_py(ns, r, keys, iters):
    a = r.numpy()
    for _ in range(2):  # as nkv-bench --warmup 2: first touches not measured
        ns.retrieve_many(keys, r, None, SZ)
    t = time.perf_counter()
    for _ in range(iters):
        out = ns.retrieve_many(keys, r, None, SZ)
    dt = time.perf_counter() - t
    assert all(o.ok and o.length == SZ for o in out), out[:2]
    assert a[0] == 1
    return iters * N * SZ / dt


def bench_raw(ns, r, keys, iters):
    """nkv_batch_run alone on commands built once: the library's figure
    for the same batch, without the package's per-call work."""
    import ctypes
    from nkv import _lib
    blob = ctypes.create_string_buffer(b"".join(keys))
    cmds = (_lib.BatchCmd * N)()
    for i, k in enumerate(keys):
        c = cmds[i]
        c.opc, c.key, c.klen = _lib.KV_RETRIEVE, ctypes.addressof(blob) + i * len(k), len(k)
        c.mr, c.off, c.len = r._mr, i * SZ, SZ
    for _ in range(2):
        _lib.lib.nkv_batch_run(ns._q, cmds, N)
    t = time.perf_counter()
    for _ in range(iters):
        _lib.lib.nkv_batch_run(ns._q, cmds, N)
    dt = time.perf_counter() - t
    assert all(c.err == 0 and c.dw0 == SZ for c in cmds)
    return iters * N * SZ / dt


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("uri")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--iterations", type=int, default=20)
    ap.add_argument("--nkv-bench", default=os.path.join(ROOT, "build", "bin", "nkv-bench"))
    o = ap.parse_args()
    with nkv.connect(o.uri) as c, c.namespace() as ns:
        src = c.alloc(N * SZ)
        src.numpy()[:] = 1
        keys = [b"pybatch-%02d" % i for i in range(N)]
        assert all(x.ok for x in ns.store_many(keys, src, None, SZ))
        dst = c.alloc(N * SZ)
        py, cb, raw = [], [], []
        for i in range(o.rounds):
            cb.append(bench_c(o.nkv_bench, o.uri, o.iterations))
            py.append(bench_py(ns, dst, keys, o.iterations))
            raw.append(bench_raw(ns, dst, keys, o.iterations))
            print(f"round {i + 1}: nkv-bench {cb[-1] / 1e9:.2f} GB/s, "
                  f"python {py[-1] / 1e9:.2f} GB/s, nkv_batch_run alone {raw[-1] / 1e9:.2f} GB/s")
        mc, mp, mr = statistics.median(cb), statistics.median(py), statistics.median(raw)
        print(f"median of {o.rounds}: nkv-bench {mc / 1e9:.2f} GB/s, python {mp / 1e9:.2f} GB/s "
              f"({100 * (mp - mc) / mc:+.1f} %), nkv_batch_run alone {mr / 1e9:.2f} GB/s "
              f"(python {100 * (mp - mr) / mr:+.1f} %)")


if __name__ == "__main__":
    main()
