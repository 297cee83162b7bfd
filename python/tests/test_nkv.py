# SPDX-License-Identifier: MIT
"""The nkv package against spawned nkv-targets (mem, rocksdb, rados):
the synchronous API, errors, List, regions as numpy / torch buffers,
registered buffers, batches in place with per-key outcomes, futures, the
GIL released while a batch waits, the KV-cache helper, the selftest."""
from __future__ import annotations

import errno
import os
import subprocess
import sys
import threading
import time

import pytest

import nkv
from nkv import kvcache

np = pytest.importorskip("numpy")

MiB = 1 << 20


def _pre(request) -> bytes:
    return ("t-" + request.node.name[:40] + "-").encode()


def test_connect_and_namespaces(conn):
    spaces = conn.namespaces()
    used = [s for s in spaces if s.in_use]
    assert len(used) == 1 and used[0].kind == "kv"
    assert used[0].max_key == 255 and used[0].max_value >= MiB
    with pytest.raises(nkv.NkvError) as e:
        conn.namespace(nsid=used[0].nsid + 7)
    assert e.value.errno == errno.EOPNOTSUPP


def test_store_retrieve_exist_delete(ns, request):
    p = _pre(request)
    ns.store(p + b"a", b"hello")
    assert ns.retrieve(p + b"a") == b"hello"
    assert ns.exist(p + b"a")
    big = os.urandom(300 * 1024)
    ns.store(p + b"big", big)
    assert ns.retrieve(p + b"big") == big, "a value over the first 64 KiB guess"
    out = bytearray(16)
    assert ns.retrieve(p + b"big", out) == len(big), "the true length, a prefix landed"
    assert bytes(out) == big[:16]
    ns.delete(p + b"a")
    assert not ns.exist(p + b"a")
    with pytest.raises(nkv.KeyNotFound) as e:
        ns.retrieve(p + b"a")
    assert e.value.status == 0x87 and isinstance(e.value, KeyError)
    with pytest.raises(nkv.KeyNotFound):
        ns.delete(p + b"a")
    ns.delete(p + b"big")


def test_store_options(ns, conn, request):
    p = _pre(request)
    with pytest.raises(nkv.KeyNotFound):
        ns.store(p + b"x", b"1", must_exist=True)
    ns.store(p + b"x", b"1", must_not_exist=True)
    with pytest.raises(nkv.KeyExists) as e:
        ns.store(p + b"x", b"2", must_not_exist=True)
    assert e.value.status == 0x89
    ns.store(p + b"x", b"3", must_exist=True)
    assert ns.retrieve(p + b"x") == b"3"
    info = [s for s in conn.namespaces() if s.in_use][0]
    if info.ttl:
        ns.store(p + b"ttl", b"v", ttl=60)
        assert ns.retrieve(p + b"ttl") == b"v"
    else:
        with pytest.raises(nkv.NkvError) as e:
            ns.store(p + b"ttl", b"v", ttl=60)
        assert e.value.errno == errno.EOPNOTSUPP and e.value.lines


def test_errors_carry_the_library_message(ns):
    with pytest.raises(nkv.NkvError) as e:
        ns.store(b"k" * 300, b"v")
    assert e.value.errno == errno.EINVAL and e.value.status == 0
    assert "255" in str(e.value) and "KML" in str(e.value)


def test_list_iterates_and_resumes(ns, request):
    p = _pre(request)
    keys = sorted(p + b"%03d" % i for i in range(50))
    for k in keys:
        ns.store(k, b"v")
    # From the beginning: rados lists in its hash order, so a start key
    # in the middle is not where the test's keys begin (docs/host.md, "List").
    got = [k for k in ns.list(page=256) if k.startswith(p)]
    assert sorted(got) == keys, "every key once, over many small pages"
    assert len(set(got)) == len(got)
    for k in keys:
        ns.delete(k)


def test_exec(ns, conn, request):
    from conftest import EXEC_MODULE
    key = f"{request.node.name}-v".encode()
    ns.store(b"pyexec", EXEC_MODULE)
    ns.store(key, b"abcdefgh")
    assert [i.exec for i in conn.namespaces() if i.in_use] == [True]
    assert ns.exec(key, 1, b"in:") == b"in:abcd"
    assert ns.exec(key, 1, b"in:", cap=2) == b"in", "cut to cap, not failed"
    with pytest.raises(nkv.NkvError) as e:
        ns.exec(key, 2)
    assert e.value.status == 0x1c0, "op-ID 2 is not allowlisted"
    with pytest.raises(nkv.KeyNotFound):
        ns.exec(f"{request.node.name}-absent", 1)
    ns.delete(key)


def test_region_is_a_buffer(conn):
    r = conn.alloc(3 * 4096)
    mv = memoryview(r)
    assert mv.nbytes == 3 * 4096 and not mv.readonly
    a = r.numpy("uint32")
    a[:] = 0xabcd
    assert bytes(mv[:4]) == (0xabcd).to_bytes(4, "little"), "the same memory, no copy"
    assert a.ctypes.data == r.address
    r.close()


def test_slices_of_a_region_move_in_place(ns, conn, request):
    p = _pre(request)
    r = conn.alloc(64 * 1024)
    a = r.numpy()
    a[:] = np.arange(a.size, dtype=np.uint8)
    ns.store(p + b"s", a[1001:1001 + 5000])
    ns.store(p + b"whole", r)
    b = conn.alloc(64 * 1024).numpy()
    assert ns.retrieve(p + b"s", b[3:3 + 5000]) == 5000
    assert (b[3:5003] == a[1001:6001]).all() and b[2] == 0 and b[5003] == 0
    assert ns.retrieve(p + b"whole", b) == 64 * 1024 and (b == a).all()
    ns.delete_many([p + b"s", p + b"whole"])


def test_batch_64_values_in_place(ns, conn, request):
    p = _pre(request)
    n, sz = 64, 256 * 1024
    src, dst = conn.alloc(n * sz), conn.alloc(n * sz)
    a = src.numpy()
    a[:] = np.random.default_rng(1).integers(0, 255, a.size, dtype=np.uint8)
    keys = [p + b"%d" % i for i in range(n)]
    out = ns.store_many(keys, src, None, sz)
    assert [o.ok for o in out] == [True] * n
    offs = [(n - 1 - i) * sz for i in range(n)]
    out = ns.retrieve_many(keys + [p + b"absent"], dst, offs + [0], sz)
    assert all(o.ok and o.length == sz for o in out[:n])
    assert out[n].status == 0x87 and not out[n].ok
    assert isinstance(out[n].error(), nkv.KeyNotFound)
    b = dst.numpy().reshape(n, sz)
    assert (b[::-1] == a.reshape(n, sz)).all()
    ex = ns.exist_many(keys[:4] + [p + b"absent"])
    assert [o.ok for o in ex] == [True] * 4 + [False]
    assert all(o.ok for o in ns.delete_many(keys))


def test_batch_outcomes_per_key(ns, conn, request):
    p = _pre(request)
    r = conn.alloc(MiB)
    out = ns.store_many([p + b"a", b"x" * 300, p + b"b"], r, [0, 4096, 8192], 4096)
    assert out[0].ok and out[2].ok
    assert out[1].errno == errno.EINVAL, "a key over KML refused alone"
    with pytest.raises(ValueError):
        ns.retrieve_many([p + b"a"], r, [MiB], 4096)
    ns.delete_many([p + b"a", p + b"b"])


def test_registered_buffers(ns, conn, request):
    p = _pre(request)
    ba = bytearray(b"q" * 10000)
    with pytest.raises(nkv.NkvError) as e:
        conn.register(ba)
    assert e.value.errno == errno.EOPNOTSUPP and "messages" in str(e.value)
    r = conn.register(ba, allow_messages=True)
    assert r.by_messages, "memory without an fd goes by messages, and says so"
    arr = np.zeros(5000, dtype=np.uint8)
    ra = conn.register(arr, allow_messages=True)
    assert all(o.ok for o in ns.store_many([p + b"1"], r, [100], 3000))
    out = ns.retrieve_many([p + b"1"], ra, [17], 3000)
    assert out[0].ok and out[0].length == 3000
    assert (arr[17:3017] == ord("q")).all() and arr[16] == 0 and arr[3017] == 0
    ns.delete(p + b"1")


def test_torch_tensor_by_content_hash(ns, conn):
    torch = pytest.importorskip("torch", reason="python3-torch is not installed")
    import hashlib
    t = torch.arange(1024, dtype=torch.float32)
    key = hashlib.sha256(t.numpy().tobytes()).digest()
    ns.store(key, t.numpy())
    back = torch.frombuffer(bytearray(ns.retrieve(key)), dtype=torch.float32)
    assert torch.equal(back, t)
    r = conn.alloc(t.numel() * 4)
    rt = r.torch(torch.float32)
    assert ns.retrieve(key, r) == 4096 and torch.equal(rt, t), "into a tensor over a region"
    ns.delete(key)


def test_futures(ns, conn, request):
    p = _pre(request)
    n, sz = 16, MiB
    r = conn.alloc(2 * n * sz)
    keys = [p + b"%d" % i for i in range(n)]
    assert all(o.ok for o in ns.store_many_async(keys, r, None, sz).result(60))
    futs = [ns.retrieve_many_async(keys, r, [n * sz + i * sz for i in range(n)], sz)
            for _ in range(3)]
    for f in futs:
        assert all(o.ok and o.length == sz for o in f.result(60))
    assert (r.numpy()[n * sz:] == r.numpy()[:n * sz]).all()
    ns.delete_many(keys)


def test_the_gil_is_released_while_a_batch_waits(ns, conn, request):
    """With a switch interval of 1 s another thread gets the GIL only if
    the caller gives it up: ticks inside the batch call say ctypes did."""
    p = _pre(request)
    n, sz = 32, 2 * MiB
    r = conn.alloc(n * sz)
    keys = [p + b"%d" % i for i in range(n)]
    assert all(o.ok for o in ns.store_many(keys, r, None, sz))
    ticks = []
    stop = threading.Event()

    def spin():
        while not stop.is_set():
            ticks.append(time.perf_counter())

    old = sys.getswitchinterval()
    th = threading.Thread(target=spin)
    th.start()
    time.sleep(0.05)
    sys.setswitchinterval(1.0)
    try:
        inside = 0
        for _ in range(5):
            t0 = time.perf_counter()
            out = ns.retrieve_many(keys, r, None, sz)
            t1 = time.perf_counter()
            inside += sum(1 for t in ticks[-100000:] if t0 < t < t1)
    finally:
        sys.setswitchinterval(old)
        stop.set()
        th.join()
    assert all(o.ok for o in out)
    assert inside > 0, "no other thread ran during 5 batch calls"
    ns.delete_many(keys)


def test_kvcache_keys_match_pc_keys_h():
    pytest.importorskip("xxhash", reason="python3-xxhash is not installed")
    root = kvcache.root_hash(16, 16, 32, 65536)
    hs = kvcache.block_hashes(list(range(48)), 16, root)
    assert len(hs) == 3 and all(len(h) == 16 for h in hs)
    assert kvcache.block_hashes(list(range(32)), 16, root) == hs[:2], "a chain: prefixes agree"
    assert len(kvcache.layer_key(hs[0], 3)) == 16
    s = kvcache.block_hashes(list(range(32)), 16, kvcache.root_hash(32, 16, 32, 65536), klen=32)
    assert all(len(h) == 32 for h in s)
    long = b"m" * 400
    k = kvcache.make_key(long)
    assert k.startswith(b"nkv-h:") and len(k) == 38 and kvcache.make_key(b"short") == b"short"


def _build_dump(tmp) -> str:
    root = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
    exe = os.path.join(str(tmp), "pc_keys_dump")
    r = subprocess.run(["cc", "-O1", "-I", os.path.join(root, "examples"),
                        os.path.join(os.path.dirname(__file__), "pc_keys_dump.c"), "-o", exe,
                        "-lxxhash", "-lcrypto"], capture_output=True, text=True)
    if r.returncode:
        pytest.skip("pc_keys_dump does not build here (cc, libxxhash-dev, libssl-dev): "
                    + r.stderr[-200:])
    return exe


def test_kvcache_matches_the_c_derivation(tmp_path):
    """The first key pc_keys.h derives, computed by a C program from the
    same header, equals the helper's (both hash kinds)."""
    pytest.importorskip("xxhash", reason="python3-xxhash is not installed")
    helper = _build_dump(tmp_path)
    for klen in (16, 32):
        out = subprocess.run([helper, str(klen)], capture_output=True, text=True, check=True)
        want = out.stdout.split()
        layers, blocks, bt, vb, extra = 4, 3, 16, 65536, 0
        root = kvcache.root_hash(klen, bt, layers, vb)
        toks = [_pc_token(1, 1 << 30, i) for i in range(blocks * bt)]
        hs = kvcache.block_hashes(toks, bt, root, extra, klen)
        got = [kvcache.layer_key(h, l).hex() for l in range(layers) for h in hs]
        assert got == want, klen


def _pc_token(seed: int, shared: int, i: int) -> int:
    x = (((1 if i < shared else seed) * 0x85ebca6b) & 0xffffffff) ^ ((i * 0x9e3779b9) & 0xffffffff)
    x ^= x >> 15
    x = (x * 0x2c1b3c6d) & 0xffffffff
    return (x ^ (x >> 12)) % 128256


def test_kvcache_store_lookup_load(ns, conn, request):
    pytest.importorskip("xxhash", reason="python3-xxhash is not installed")
    lay = kvcache.CacheLayout(layers=4, num_blocks=8, block_size=16, num_kv_heads=2,
                              head_size=64)
    r = conn.alloc(lay.layers * lay.layer_bytes)
    cache = r.numpy("uint16", lay.shape())
    cache[:] = np.random.default_rng(5).integers(0, 65535, cache.shape, dtype=np.uint16)
    kv = kvcache.KVCache(ns, lay, r)
    root = kvcache.root_hash(16, 16, lay.layers, lay.block_bytes) + _pre(request)
    hs = kvcache.block_hashes(list(range(16 * 5)), 16, root)
    assert kv.lookup(hs) == 0
    out = kv.store(hs[:3], [4, 1, 6])
    assert len(out) == 3 * lay.layers and all(o.ok for o in out)
    assert kv.lookup(hs) == 3, "three leading blocks"
    want = cache[:, :, [4, 1, 6]].copy()
    out = kv.load(hs[:3] + [hs[4]], [0, 2, 3, 5])
    assert all(o.ok for o in out[:12]) and not any(o.ok for o in out[12:])
    assert all(o.status == 0x87 for o in out[12:]), "per-entry outcomes: the 4th is absent"
    assert (cache[:, :, [0, 2, 3]] == want).all(), "K and V of every layer in place"


def test_selftest_module(target):
    env = dict(os.environ, PYTHONPATH=os.path.join(os.path.dirname(__file__), ".."))
    r = subprocess.run([sys.executable, "-m", "nkv.selftest", target.uri], capture_output=True,
                       text=True, timeout=120, env=env)
    assert r.returncode == 0, r.stdout + r.stderr
    assert r.stdout.count(": ok:") == 5
