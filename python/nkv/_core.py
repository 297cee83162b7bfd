# SPDX-License-Identifier: MIT
"""Connections, namespaces, regions and batches over libnkv (see nkv/__init__.py)."""
from __future__ import annotations

import concurrent.futures
import ctypes
import errno as _errno
import threading
from dataclasses import dataclass
from typing import Any, Iterator, List, NamedTuple, Optional, Sequence, Union

from . import _lib
from ._lib import lib

KeyLike = Union[bytes, bytearray, memoryview, str]


class NkvError(Exception):
    """A command or call that failed.

    ``status``: the NVMe status as the controller sent it (SCT << 8 | SC;
    0x87 Key Does Not Exist, 0x89 Key Exists; 0 when the call failed
    before or without one). ``errno``: the library's negative errno made
    positive (errno.ETIMEDOUT, errno.EINVAL, ...; 0 when the controller
    answered). ``lines``: what the library logged during the call (why a
    key or a run was refused, with the limit)."""

    def __init__(self, what: str, status: int = 0, errno: int = 0,
                 lines: Optional[List[str]] = None) -> None:
        self.what = what
        self.status = status
        self.errno = errno
        self.lines = list(lines or [])
        if status:
            why = f"{_lib.status_str(status)} (status {status:#x})"
        else:
            why = f"{_lib.errno_str(errno)} (errno {errno})"
        msg = f"{what}: {why}"
        if self.lines:
            msg += ": " + "; ".join(self.lines)
        super().__init__(msg)


class KeyNotFound(NkvError, KeyError):
    """Key Does Not Exist (status 0x87)."""

    def __str__(self) -> str:  # KeyError quotes its argument otherwise
        return Exception.__str__(self)


class KeyExists(NkvError):
    """Key Exists (status 0x89): a Store with must_not_exist."""


def _error(what: str, status: int = 0, err: int = 0, lines: Optional[List[str]] = None) -> NkvError:
    cls = KeyNotFound if status == 0x87 else KeyExists if status == 0x89 else NkvError
    return cls(what, status=status, errno=err, lines=lines)


def _key(key: KeyLike) -> bytes:
    if isinstance(key, str):
        return key.encode("utf-8")
    return bytes(key)


def _show(key: bytes) -> str:
    return repr(key if len(key) <= 40 else key[:37] + b"...")


@dataclass(frozen=True)
class NamespaceInfo:
    """One active namespace and its limits (Identify, and the KV
    namespace's vendor bytes where it has them)."""
    nsid: int
    kind: str               # "kv", "nvm" or "csi N"
    max_key: int            # KV: longest key, bytes
    max_value: int          # KV: largest value, bytes
    max_keys: int           # KV: 0 = not reported
    capacity: int           # KV: bytes; NVM: blocks
    block_size: int         # NVM: bytes per block
    in_use: bool            # the namespace this connection drives
    ttl: bool = False       # KV: Store with a TTL honoured
    max_ttl: int = 0        # seconds; 0: any
    read_only: bool = False
    exec: bool = False      # KV: Exec (83h) served (docs/exec.md)


class Outcome(NamedTuple):
    """What became of one command of a batch. ``err``: 0, the NVMe status
    (> 0) or a negative errno, as libnkv's struct nkv_batch_cmd says;
    ``length``: Retrieve's stored size (DW0)."""
    key: bytes
    err: int
    length: int

    @property
    def ok(self) -> bool:
        return self.err == 0

    @property
    def status(self) -> int:
        return self.err if self.err > 0 else 0

    @property
    def errno(self) -> int:
        return -self.err if self.err < 0 else 0

    def error(self, what: str = "command") -> Optional[NkvError]:
        """The exception this outcome stands for, or None when ok."""
        if self.ok:
            return None
        return _error(f"{what} {_show(self.key)}", self.status, self.errno)


class Region:
    """Memory the controller reads and writes in place: from
    Connection.alloc() (nkv_mem_alloc: a sealed memfd the controller
    maps) or Connection.register() (any writable buffer-protocol object).

    A Region is itself a buffer (a ctypes array of unsigned bytes over the
    memory): memoryview(r), numpy.frombuffer(r), torch.frombuffer(r) make
    no copy; r.numpy() and r.torch() say so. Views must not be used after
    r.close() (or the connection's close), which frees alloc()'s memory."""

    _mr: Any
    _conn: "Connection"
    _delta: int
    _keep: Any
    nbytes: int
    by_messages: bool

    @classmethod
    def _make(cls, conn: "Connection", mr: Any, addr: int, nbytes: int, delta: int,
              keep: Any = None) -> "Region":
        typ = _region_type(nbytes)
        r = typ.from_address(addr)
        r._mr = mr
        r._conn = conn
        r._delta = delta
        r._keep = keep
        r.nbytes = nbytes
        info = _lib.MrInfo(size=ctypes.sizeof(_lib.MrInfo))
        lib.nkv_mem_info(mr, ctypes.byref(info))
        r.by_messages = bool(info.by_messages)
        conn._regions.append(r)
        return r

    @property
    def address(self) -> int:
        return ctypes.addressof(self)

    def numpy(self, dtype: Any = "uint8", shape: Any = None) -> Any:
        """A numpy array over the region (no copy)."""
        import numpy as np
        a = np.frombuffer(self, dtype=dtype)
        return a if shape is None else a.reshape(shape)

    def torch(self, dtype: Any = None, shape: Any = None) -> Any:
        """A CPU torch tensor over the region (no copy)."""
        import torch
        t = torch.frombuffer(self, dtype=dtype or torch.uint8)
        return t if shape is None else t.reshape(shape)

    def close(self) -> None:
        """Deregister (and free what alloc() allocated). NkvError EBUSY
        while a command uses it."""
        if self._mr is None:
            return
        _lib.begin()
        rc = lib.nkv_mem_deregister(self._mr)
        if rc < 0:
            raise _error("deregister region", err=-rc, lines=_lib.lines())
        _lib.lines()
        self._mr = None
        if self in self._conn._regions:
            self._conn._regions.remove(self)

    def __enter__(self) -> "Region":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


_region_types: dict = {}


def _region_type(nbytes: int) -> type:
    t = _region_types.get(nbytes)
    if t is None:
        t = type("Region", (Region, ctypes.c_ubyte * nbytes), {})
        _region_types[nbytes] = t
    return t


class Connection:
    """A controller, connected by URI ("vfio-user:/run/nkv.sock",
    "pcie:/dev/nkv0", "tcp:127.0.0.1:4420[/NQN]": a remote NVMe/TCP one
    through a local controller, docs/tcp.md): a context manager; close()
    ends it."""

    def __init__(self, uri: str, *, io_queues: int = 4, timeout_ms: int = 0,
                 key_head: bool = False) -> None:
        self._c = None
        self._regions: List[Region] = []
        self._namespaces: List[Namespace] = []
        self._lock = threading.Lock()
        err = ctypes.create_string_buffer(256)
        o = _lib.CtrlOpts(size=ctypes.sizeof(_lib.CtrlOpts), io_queues=io_queues,
                          timeout_ms=timeout_ms, err=ctypes.cast(err, ctypes.c_char_p),
                          errlen=256, flags=0x2 if key_head else 0)
        c = ctypes.c_void_p()
        _lib.begin()
        rc = lib.nkv_ctrl_connect(uri.encode(), ctypes.byref(o), ctypes.byref(c))
        lines = _lib.lines()
        if rc < 0:
            reason = err.value.decode("utf-8", "replace")
            raise _error(f"connect {uri}", err=-rc, lines=([reason] if reason else []) + lines)
        self._c = c
        self.uri = uri
        self.info = _lib.CtrlInfo()
        lib.nkv_ctrl_get_info(c, ctypes.byref(self.info))

    def __enter__(self) -> "Connection":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def __del__(self) -> None:
        try:
            self.close()
        except Exception:
            pass

    def close(self) -> None:
        """Close every namespace handle and region of it, then the controller."""
        if self._c is None:
            return
        for ns in list(self._namespaces):
            ns.close()
        for r in list(self._regions):
            try:
                r.close()
            except NkvError:
                pass
        lib.nkv_ctrl_close(self._c)
        self._c = None

    def _handle(self) -> Any:
        if self._c is None:
            raise _error("connection", err=_errno.ENOTCONN)
        return self._c

    def _region_of(self, addr: int, n: int) -> Optional[Region]:
        """The region of this connection that holds [addr, addr + n), if any."""
        for r in self._regions:
            if r._mr is not None and r.address <= addr and addr + n <= r.address + r.nbytes:
                return r
        return None

    def namespaces(self) -> List[NamespaceInfo]:
        """Every active namespace, with its command set and limits."""
        arr = (_lib.NsInfo * 64)()
        n = lib.nkv_ctrl_namespaces(self._handle(), arr, 64)
        if n < 0:
            raise _error("namespaces", err=-n)
        out = []
        for i in range(min(n, 64)):
            a = arr[i]
            kind = {1: "kv", 0: "nvm"}.get(a.csi, f"csi {a.csi}")
            ext = _lib.NsExt(size=ctypes.sizeof(_lib.NsExt))
            has = kind == "kv" and lib.nkv_ctrl_ns_ext(self._c, a.nsid, ctypes.byref(ext)) == 0
            out.append(NamespaceInfo(
                nsid=a.nsid, kind=kind, max_key=a.max_key, max_value=a.max_value,
                max_keys=a.max_keys, capacity=a.capacity, block_size=a.block_size,
                in_use=a.nsid == self.info.nsid,
                ttl=bool(has and ext.store_opts & _lib.STORE_TTL),
                max_ttl=ext.max_ttl if has else 0, read_only=bool(has and ext.read_only),
                exec=bool(has and ext.advertised and ext.exec)))
        return out

    def namespace(self, nsid: Optional[int] = None, *, depth: int = 0, timeout_ms: int = 0,
                  report_short: bool = False) -> "Namespace":
        """A handle on namespace @nsid (None: the one in use) with a queue
        pair of its own: one thread at a time per handle (each holds a
        lock); open one per thread for parallel work. libnkv drives the
        namespace it found at connect (the first KV one): another nsid is
        NkvError EOPNOTSUPP."""
        if nsid is not None and nsid != self.info.nsid:
            raise _error(f"namespace {nsid}", err=_errno.EOPNOTSUPP,
                         lines=[f"libnkv drives namespace {self.info.nsid} on this "
                                f"connection (the first KV namespace it found)"])
        return Namespace(self, depth=depth, timeout_ms=timeout_ms, report_short=report_short)

    def alloc(self, nbytes: int, *, read: bool = True, write: bool = True) -> Region:
        """nkv_mem_alloc: @nbytes (rounded up to pages, zeroed) of host
        memory the controller maps, registered: a Region."""
        flags = (_lib.MEM_READ if read else 0) | (_lib.MEM_WRITE if write else 0)
        mr, addr = ctypes.c_void_p(), ctypes.c_void_p()
        _lib.begin()
        rc = lib.nkv_mem_alloc(self._handle(), nbytes, flags, ctypes.byref(mr), ctypes.byref(addr))
        if rc < 0:
            raise _error(f"alloc {nbytes} bytes", err=-rc, lines=_lib.lines())
        _lib.lines()
        return Region._make(self, mr, addr.value, nbytes, 0)

    def register(self, obj: Any, *, allow_messages: bool = False, read: bool = True,
                 write: bool = True) -> Region:
        """Register a writable, C-contiguous buffer-protocol object
        (bytearray, numpy array, CPU torch tensor via .numpy(), mmap, ...)
        without a copy. The whole pages around it are registered; commands
        touch only its bytes. Memory without an fd reaches a vfio-user
        controller only by messages (a copy each way in the library's
        socket thread): allowed only with allow_messages=True, else
        NkvError EOPNOTSUPP with the library's reason; Region.by_messages
        says which way it went."""
        mv = memoryview(obj)
        if not mv.contiguous or mv.readonly:
            raise TypeError("nkv: register needs a writable C-contiguous buffer")
        mv = mv.cast("B")
        view = (ctypes.c_ubyte * mv.nbytes).from_buffer(mv)
        addr = ctypes.addressof(view)
        base = addr & ~(_lib.PAGE - 1)
        end = (addr + mv.nbytes + _lib.PAGE - 1) & ~(_lib.PAGE - 1)
        flags = (_lib.MEM_READ if read else 0) | (_lib.MEM_WRITE if write else 0)
        flags |= _lib.MEM_MESSAGES if allow_messages else 0
        mr = ctypes.c_void_p()
        _lib.begin()
        rc = lib.nkv_mem_register(self._handle(), base, end - base, flags, ctypes.byref(mr))
        if rc < 0:
            raise _error(f"register {mv.nbytes} bytes", err=-rc, lines=_lib.lines())
        _lib.lines()
        return Region._make(self, mr, addr, mv.nbytes, addr - base, keep=(obj, mv, view))


class Namespace:
    """A namespace through a queue pair of its own (no value slots: the
    synchronous calls copy through the library's buffer; the *_many
    calls and Region values move in place). Methods take the handle's
    lock: one command or batch at a time per handle."""

    def __init__(self, conn: Connection, *, depth: int = 0, timeout_ms: int = 0,
                 report_short: bool = False) -> None:
        self._conn = conn
        self._lock = threading.Lock()
        self._pool: Optional[concurrent.futures.ThreadPoolExecutor] = None
        flags = _lib.QPAIR_NO_SLOTS | (_lib.QPAIR_REPORT_SHORT if report_short else 0)
        o = _lib.QpairOpts(size=ctypes.sizeof(_lib.QpairOpts), depth=depth,
                           timeout_ms=timeout_ms, flags=flags)
        q = ctypes.c_void_p()
        _lib.begin()
        rc = lib.nkv_qpair_create(conn._handle(), ctypes.byref(o), ctypes.byref(q))
        if rc < 0:
            raise _error("queue pair", err=-rc, lines=_lib.lines())
        _lib.lines()
        self._q = q
        self.nsid = conn.info.nsid
        self.max_key = conn.info.max_key
        self.max_value = conn.info.max_value
        conn._namespaces.append(self)

    def close(self) -> None:
        if self._q is None:
            return
        if self._pool:
            self._pool.shutdown(wait=True)
        with self._lock:
            lib.nkv_qpair_destroy(self._q)
            self._q = None
        if self in self._conn._namespaces:
            self._conn._namespaces.remove(self)

    def __enter__(self) -> "Namespace":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def reset(self) -> None:
        """Make a queue pair that failed (a timeout, a bad completion)
        usable again."""
        with self._lock:
            rc = lib.nkv_qpair_reset(self._qp())
        if rc < 0:
            raise _error("reset", err=-rc)

    def _qp(self) -> Any:
        if self._q is None:
            raise _error("namespace handle", err=_errno.EBADF)
        return self._q

    def _sync(self, what: str, fn: Any, *args: Any) -> _lib.Result:
        res = _lib.Result()
        with self._lock:
            _lib.begin()
            rc = fn(self._qp(), *args, ctypes.byref(res))
            lines = _lib.lines()
        if rc < 0 and rc != -_errno.EMSGSIZE:
            raise _error(what, err=-rc, lines=lines)
        if res.status:
            raise _error(what, status=res.status, lines=lines)
        return res

    # ---- the synchronous API ----

    def store(self, key: KeyLike, value: Any, ttl: Optional[int] = None,
              must_exist: bool = False, must_not_exist: bool = False,
              ephemeral: bool = False) -> None:
        """Store @value (any bytes-like object; one whose memory lies in a
        Region of the connection, a numpy slice of r.numpy() say, moves in
        place, others are copied through the library's buffer) under @key. ttl: seconds (where the namespace advertises TTLs, else
        NkvError EOPNOTSUPP); must_exist: KeyNotFound when absent;
        must_not_exist: KeyExists when present."""
        k = _key(key)
        opts = (_lib.STORE_MUST_EXIST if must_exist else 0) | \
               (_lib.STORE_MUST_NOT_EXIST if must_not_exist else 0) | \
               (_lib.STORE_EPHEMERAL if ephemeral else 0) | (_lib.STORE_TTL if ttl else 0)
        what = f"Store {_show(k)}"
        mv = memoryview(value).cast("B")
        buf = (ctypes.c_char * mv.nbytes).from_buffer_copy(mv) if mv.readonly else \
            (ctypes.c_char * mv.nbytes).from_buffer(mv)
        at = self._in_region(ctypes.addressof(buf), mv.nbytes) if not ttl else None
        if at is not None:
            with self._lock:
                _lib.begin()
                rc = lib.nkv_store_mr(self._qp(), k, len(k), opts, at[0]._mr, at[1], mv.nbytes)
                lines = _lib.lines()
            if rc == -_errno.EINVAL:
                # Boundaries this controller's data pointers cannot carry
                # (PRPs, dword SGLs): the copy path takes any.
                self._sync(what, lib.nkv_store_ttl, k, len(k), buf, mv.nbytes, opts, 0)
                return
            if rc:
                raise _error(what, status=max(rc, 0), err=max(-rc, 0), lines=lines)
            return
        self._sync(what, lib.nkv_store_ttl, k, len(k), buf, mv.nbytes, opts, ttl or 0)

    def _in_region(self, addr: int, n: int) -> Optional[tuple]:
        """(region, offset for the library) when [addr, addr + n) lies in a
        region of the connection: then the value moves in place."""
        r = self._conn._region_of(addr, n) if n else None
        return None if r is None else (r, r._delta + addr - r.address)

    def retrieve(self, key: KeyLike, out: Any = None) -> Union[bytes, int]:
        """The value of @key as bytes; or, with @out (a writable buffer:
        in place when its memory lies in a Region of the connection, a
        slice of r.numpy() say), into it, returning the stored length
        (more than len(out) when only a prefix fit). KeyNotFound when
        absent."""
        k = _key(key)
        what = f"Retrieve {_show(k)}"
        if out is not None:
            mv = memoryview(out).cast("B")
            buf = (ctypes.c_char * mv.nbytes).from_buffer(mv)
            at = self._in_region(ctypes.addressof(buf), mv.nbytes)
            if at is None:
                return self._sync(what, lib.nkv_retrieve, k, len(k), buf, mv.nbytes).dw0
            vlen = ctypes.c_uint32()
            with self._lock:
                _lib.begin()
                rc = lib.nkv_retrieve_mr(self._qp(), k, len(k), at[0]._mr, at[1], mv.nbytes,
                                         ctypes.byref(vlen))
                lines = _lib.lines()
            if rc == -_errno.EINVAL:
                return self._sync(what, lib.nkv_retrieve, k, len(k), buf, mv.nbytes).dw0
            if rc and rc != -_errno.EMSGSIZE:
                raise _error(what, status=max(rc, 0), err=max(-rc, 0), lines=lines)
            return vlen.value
        cap = min(self.max_value or (1 << 20), 1 << 16)
        while True:
            buf = ctypes.create_string_buffer(cap)
            n = self._sync(what, lib.nkv_retrieve, k, len(k), buf, cap).dw0
            if n <= cap:
                return buf.raw[:n]
            cap = n

    def exist(self, key: KeyLike) -> bool:
        """Whether @key exists."""
        k = _key(key)
        try:
            self._sync(f"Exist {_show(k)}", lib.nkv_exist, k, len(k))
        except KeyNotFound:
            return False
        return True

    def delete(self, key: KeyLike) -> None:
        """Delete @key; KeyNotFound when absent."""
        k = _key(key)
        self._sync(f"Delete {_show(k)}", lib.nkv_delete, k, len(k))

    def list(self, start: KeyLike = b"", page: int = 65536) -> Iterator[bytes]:
        """The keys >= @start in the backend's order (docs/host.md,
        "List"), fetched a page of @page bytes at a time, resumed from the
        last key of each page."""
        s = _key(start)
        first = True
        buf = ctypes.create_string_buffer(page)
        while True:
            self._sync(f"List from {_show(s)}", lib.nkv_list, s, len(s), buf, page)
            keys = _list_decode(buf.raw)
            if not first and keys and keys[0] == s:
                keys = keys[1:]
            if not keys:
                return
            yield from keys
            s, first = keys[-1], False

    def exec(self, key: KeyLike, op_id: int, input: Any = b"", cap: Optional[int] = None) -> bytes:
        """Run the module the namespace's allowlist binds to @op_id against
        the value of @key on the controller (Exec, docs/exec.md), with
        @input (bytes-like); its result as bytes. @cap: at most that many
        bytes come back (a longer result is cut, as the command has it);
        None: all of it (asked again with the length the first answer
        gave). NkvError with the status for a refusal (SCT 1h C0h not
        allowlisted, C1h digest mismatch, C2h budget exceeded, C3h module
        error), KeyNotFound when @key is absent."""
        k = _key(key)
        data = bytes(memoryview(input).cast("B"))
        what = f"Exec {op_id} on {_show(k)}"
        want = 1 << 16 if cap is None else cap
        while True:
            out = ctypes.create_string_buffer(max(want, 1))
            olen = ctypes.c_uint32()
            with self._lock:
                _lib.begin()
                rc = lib.nkv_exec(self._qp(), k, len(k), op_id, data, len(data), out, want,
                                  ctypes.byref(olen))
                lines = _lib.lines()
            if rc:
                raise _error(what, status=max(rc, 0), err=max(-rc, 0), lines=lines)
            if cap is not None or olen.value <= want:
                return out.raw[:min(olen.value, want)]
            want = olen.value

    # ---- batches: many values in one call, in place ----

    def _batch(self, opc: int, keys: Sequence[KeyLike], region: Optional[Region],
               offsets: Any, sizes: Any, opts: int = 0, ttl: int = 0) -> List[Outcome]:
        ks = [_key(k) for k in keys]
        n = len(ks)
        if not n:
            return []
        if region is not None:
            if isinstance(sizes, int):
                sizes = [sizes] * n
            if offsets is None:
                offsets, o = [], 0
                for sz in sizes:
                    offsets.append(o)
                    o += sz
            if len(offsets) != n or len(sizes) != n:
                raise ValueError("nkv: one offset and one size per key")
            for o, sz in zip(offsets, sizes):
                if o < 0 or sz < 0 or o + sz > region.nbytes:
                    raise ValueError(f"nkv: range {o}+{sz} outside the region of "
                                     f"{region.nbytes} bytes")
        blob = ctypes.create_string_buffer(b"".join(ks), sum(map(len, ks)) or 1)
        base = ctypes.addressof(blob)
        cmds = (_lib.BatchCmd * n)()
        at = 0
        for i, k in enumerate(ks):
            c = cmds[i]
            c.opc = opc
            c.key = base + at
            c.klen = len(k)
            at += len(k)
            if region is not None:
                c.mr = region._mr
                c.off = region._delta + offsets[i]
                c.len = sizes[i]
                c.opts = opts
                c.ttl_s = ttl
        return self._run(cmds, ks)

    def _run(self, cmds: Any, ks: List[bytes]) -> List[Outcome]:
        n = len(ks)
        with self._lock:
            _lib.begin()
            rc = lib.nkv_batch_run(self._qp(), cmds, n)
            lines = _lib.lines()
        if rc < 0 and all(c.state != _lib.BATCH_DONE for c in cmds):
            raise _error("batch", err=-rc, lines=lines)
        return [Outcome(ks[i], cmds[i].err, cmds[i].dw0) for i in range(n)]

    def _batch_runs(self, opc: int, keys: Sequence[KeyLike],
                    runs: Sequence[Sequence[Any]], opts: int = 0) -> List[Outcome]:
        ks = [_key(k) for k in keys]
        n = len(ks)
        if len(runs) != n:
            raise ValueError("nkv: one list of runs per key")
        if not n:
            return []
        blob = ctypes.create_string_buffer(b"".join(ks), sum(map(len, ks)) or 1)
        base = ctypes.addressof(blob)
        total = sum(len(r) for r in runs)
        iov = (_lib.Iov * total)()
        cmds = (_lib.BatchCmd * n)()
        at = j = 0
        for i, k in enumerate(ks):
            c = cmds[i]
            c.opc, c.key, c.klen, c.opts = opc, base + at, len(k), opts
            at += len(k)
            c.iov = ctypes.cast(ctypes.byref(iov, j * ctypes.sizeof(_lib.Iov)),
                                ctypes.POINTER(_lib.Iov))
            c.n_iov = len(runs[i])
            for region, off, ln in runs[i]:
                if off < 0 or ln < 0 or off + ln > region.nbytes:
                    raise ValueError(f"nkv: run {off}+{ln} outside its region of "
                                     f"{region.nbytes} bytes")
                iov[j].mr, iov[j].off, iov[j].len = region._mr, region._delta + off, ln
                j += 1
        return self._run(cmds, ks)

    def store_runs(self, keys: Sequence[KeyLike], runs: Sequence[Sequence[Any]],
                   must_not_exist: bool = False) -> List[Outcome]:
        """Store key i's value gathered from runs[i], a list of (Region,
        offset, length): one command per key, one batch."""
        return self._batch_runs(_lib.KV_STORE, keys, runs,
                                _lib.STORE_MUST_NOT_EXIST if must_not_exist else 0)

    def retrieve_runs(self, keys: Sequence[KeyLike],
                      runs: Sequence[Sequence[Any]]) -> List[Outcome]:
        """Retrieve key i's value scattered into runs[i] (in run order):
        one command per key, one batch."""
        return self._batch_runs(_lib.KV_RETRIEVE, keys, runs)

    def retrieve_many(self, keys: Sequence[KeyLike], region: Region,
                      offsets: Optional[Sequence[int]] = None,
                      size: Union[int, Sequence[int]] = 0) -> List[Outcome]:
        """Retrieve every key into @region, key i into @size bytes (one
        size, or one per key) at offsets[i] (None: back to back), as one
        batch (one doorbell where the queue takes it whole), the GIL
        released while it waits. An Outcome per key: ok, or its status
        (0x87 absent) or errno; length = the stored size."""
        return self._batch(_lib.KV_RETRIEVE, keys, region, offsets, size)

    def store_many(self, keys: Sequence[KeyLike], region: Region,
                   offsets: Optional[Sequence[int]] = None,
                   size: Union[int, Sequence[int]] = 0, ttl: Optional[int] = None,
                   must_exist: bool = False, must_not_exist: bool = False) -> List[Outcome]:
        """Store key i's value from @size bytes at offsets[i] of @region,
        as one batch; options as store(). An Outcome per key."""
        opts = (_lib.STORE_MUST_EXIST if must_exist else 0) | \
               (_lib.STORE_MUST_NOT_EXIST if must_not_exist else 0) | \
               (_lib.STORE_TTL if ttl else 0)
        return self._batch(_lib.KV_STORE, keys, region, offsets, size, opts, ttl or 0)

    def exist_many(self, keys: Sequence[KeyLike]) -> List[Outcome]:
        """Exist for every key as one batch (an absent key: err 0x87)."""
        return self._batch(_lib.KV_EXIST, keys, None, None, None)

    def delete_many(self, keys: Sequence[KeyLike]) -> List[Outcome]:
        """Delete every key as one batch."""
        return self._batch(_lib.KV_DELETE, keys, None, None, None)

    def _executor(self) -> concurrent.futures.ThreadPoolExecutor:
        if self._pool is None:
            self._pool = concurrent.futures.ThreadPoolExecutor(
                max_workers=1, thread_name_prefix=f"nkv-ns{self.nsid}")
        return self._pool

    def retrieve_many_async(self, *args: Any, **kwargs: Any) -> "concurrent.futures.Future[List[Outcome]]":
        """retrieve_many() on the handle's worker thread: a Future of its
        outcomes. Batches of one handle run one after another; open a
        handle per stream for parallel ones (each has its queue pair)."""
        return self._executor().submit(self.retrieve_many, *args, **kwargs)

    def store_many_async(self, *args: Any, **kwargs: Any) -> "concurrent.futures.Future[List[Outcome]]":
        """store_many() on the handle's worker thread: a Future."""
        return self._executor().submit(self.store_many, *args, **kwargs)


def _list_decode(payload: bytes) -> List[bytes]:
    """The keys of a List payload: u32 count, then {u16 length, key, pad to 4}."""
    count = int.from_bytes(payload[0:4], "little")
    keys, off = [], 4
    for _ in range(count):
        if off + 2 > len(payload):
            raise _error("List payload", err=_errno.EBADMSG)
        kl = int.from_bytes(payload[off:off + 2], "little")
        if kl == 0 or off + 2 + kl > len(payload):
            raise _error("List payload", err=_errno.EBADMSG)
        keys.append(payload[off + 2:off + 2 + kl])
        off += (2 + kl + 3) & ~3
    return keys


def connect(uri: str, **kwargs: Any) -> Connection:
    """Connect to the controller at @uri; a context manager."""
    return Connection(uri, **kwargs)
