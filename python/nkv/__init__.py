# SPDX-License-Identifier: MIT
"""nkv: GPU-initiated NVMe Key-Value from Python, over libnkv (ctypes).

    import nkv
    with nkv.connect("vfio-user:/run/nkv.sock") as c:
        ns = c.namespace()
        ns.store(b"k", b"value", ttl=60)
        assert ns.retrieve(b"k") == b"value"
        r = c.alloc(64 << 21)                     # a region: r.numpy(), memoryview(r)
        out = ns.retrieve_many(keys, r, None, 2 << 20)   # in place, one doorbell

Errors are NkvError (KeyNotFound for status 0x87, KeyExists for 0x89)
with .status (NVMe), .errno and .lines (what libnkv logged). The GIL is
released while libnkv waits (ctypes.CDLL calls). docs/python.md.
"""
from ._core import (Connection, KeyExists, KeyNotFound, Namespace, NamespaceInfo, NkvError,
                    Outcome, Region, connect)

__all__ = ["Connection", "KeyExists", "KeyNotFound", "Namespace", "NamespaceInfo", "NkvError",
           "Outcome", "Region", "connect"]
__version__ = "0.6.0"
