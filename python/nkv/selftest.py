# SPDX-License-Identifier: MIT
"""python3 -m nkv.selftest URI: a short check of a controller through the
package: the synchronous API, a List, a batch in place through a region,
and the KV-cache helper. Keys under "nkv-selftest-", deleted after.
Exit 0 when every step passed, 1 when one failed, 2 on usage."""
from __future__ import annotations

import sys
from typing import Callable, List

import nkv
from nkv import kvcache


def _steps(c: "nkv.Connection") -> List[tuple]:
    ns = c.namespace()
    pre = b"nkv-selftest-"
    r = c.alloc(8 * 65536 * 2)

    def sync() -> str:
        ns.store(pre + b"a", b"hello", must_not_exist=False)
        assert ns.retrieve(pre + b"a") == b"hello"
        assert ns.exist(pre + b"a") and not ns.exist(pre + b"absent")
        try:
            ns.retrieve(pre + b"absent")
            raise AssertionError("an absent key was retrieved")
        except nkv.KeyNotFound:
            pass
        return "store, retrieve, exist, an absent key (KeyNotFound)"

    def listing() -> str:
        keys = list(ns.list(start=pre))
        assert pre + b"a" in keys, keys[:4]
        return f"List from {pre!r}: {len(keys)} keys"

    def batch() -> str:
        a = r.numpy()
        a[:8 * 65536] = 7
        keys = [pre + b"b%d" % i for i in range(8)]
        assert all(o.ok for o in ns.store_many(keys, r, None, 65536))
        out = ns.retrieve_many(keys, r, [8 * 65536 + i * 65536 for i in range(8)], 65536)
        assert all(o.ok and o.length == 65536 for o in out)
        assert (a[8 * 65536:] == 7).all()
        ns.delete_many(keys)
        return "8 x 64 KiB stored and retrieved in place, one batch each"

    def cache() -> str:
        lay = kvcache.CacheLayout(layers=2, num_blocks=4, block_size=16, num_kv_heads=2,
                                  head_size=64)
        cr = c.alloc(lay.layers * lay.layer_bytes)
        kv = kvcache.KVCache(ns, lay, cr)
        try:
            import xxhash  # noqa: F401  (XXH3-128 keys where python3-xxhash is)
            klen = 16
        except ImportError:
            klen = 32
        root = kvcache.root_hash(klen, 16, lay.layers, lay.block_bytes) + pre
        hs = kvcache.block_hashes(list(range(64)), 16, root, klen=klen)
        assert all(o.ok for o in kv.store(hs[:2], [0, 1]))
        assert kv.lookup(hs) == 2
        assert all(o.ok for o in kv.load(hs[:2], [2, 3]))
        return "KV cache: 2 of 4 blocks stored, found by prefix, loaded"

    def cleanup() -> str:
        ns.delete(pre + b"a")
        return "cleaned up"

    return [("sync", sync), ("list", listing), ("batch", batch), ("kvcache", cache),
            ("cleanup", cleanup)]


def main(argv: List[str]) -> int:
    if len(argv) != 2 or argv[1] in ("-h", "--help"):
        print("usage: python3 -m nkv.selftest URI   (e.g. vfio-user:/run/nkv.sock)",
              file=sys.stderr)
        return 2
    fails = 0
    try:
        with nkv.connect(argv[1]) as c:
            for name, fn in _steps(c):
                step: Callable[[], str] = fn
                try:
                    print(f"nkv selftest {name}: ok: {step()}")
                except Exception as e:  # a step's failure, named
                    fails += 1
                    print(f"nkv selftest {name}: FAILED: {type(e).__name__}: {e}")
    except nkv.NkvError as e:
        print(f"nkv selftest: cannot connect: {e}", file=sys.stderr)
        return 1
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
