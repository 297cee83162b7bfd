# SPDX-License-Identifier: MIT
"""libnkv through ctypes: where the library is found, its structures and
the prototypes of the functions the package calls.

No compiler is involved at install or at import: the structures are
declared here with the offsets nkv_host.h gives them (test_host_batch
asserts struct nkv_batch_cmd's). The functions are called through
ctypes.CDLL, which releases the GIL around every foreign call, so a
thread waiting in nkv_batch_run() or nkv_retrieve() lets the others run.
"""
from __future__ import annotations

import ctypes
import ctypes.util
import logging
import os
import sys
import threading
from typing import List, Optional

c_size_t = ctypes.c_size_t
u8, u16, u32, u64 = ctypes.c_uint8, ctypes.c_uint16, ctypes.c_uint32, ctypes.c_uint64
vp, cp = ctypes.c_void_p, ctypes.c_char_p

# nkv_wire.h / nkv_host.h constants the package uses.
KV_STORE, KV_RETRIEVE, KV_DELETE, KV_EXIST = 0x01, 0x02, 0x10, 0x14
STORE_MUST_EXIST = 1 << 8
STORE_MUST_NOT_EXIST = 1 << 9
STORE_TTL = 1 << 11
STORE_EPHEMERAL = 1 << 12
MEM_READ, MEM_WRITE, MEM_MESSAGES = 0x10, 0x20, 0x40
QPAIR_NO_SLOTS, QPAIR_REPORT_SHORT = 0x4, 0x8
BATCH_IDLE, BATCH_INFLIGHT, BATCH_DONE = 0, 1, 2
IOV_MAX = 1020
PAGE = 4096


class CtrlOpts(ctypes.Structure):
    _fields_ = [("size", c_size_t), ("memory_mode", u32), ("io_queues", u32),
                ("admin_depth", u32), ("timeout_ms", u32), ("trace", ctypes.c_int),
                ("err", ctypes.c_char_p), ("errlen", c_size_t), ("flags", u32)]


class CtrlInfo(ctypes.Structure):
    _fields_ = [("cap", u64), ("vs", u32), ("mqes", u32), ("max_xfer", u32),
                ("io_queues", u32), ("nsid", u32), ("csi", u8), ("max_key", u32),
                ("max_value", u32), ("max_keys", u32), ("block_size", u32),
                ("capacity", u64), ("memory_mode", u32), ("doorbells_mapped", ctypes.c_int),
                ("vram_is_emulated", ctypes.c_int), ("gpu", ctypes.c_char * 16),
                ("gpu_error", ctypes.c_int), ("transport", ctypes.c_char * 16),
                ("model", ctypes.c_char * 41), ("serial", ctypes.c_char * 21), ("sgls", u32)]


class NsInfo(ctypes.Structure):
    _fields_ = [("nsid", u32), ("csi", ctypes.c_int32), ("max_key", u32), ("max_value", u32),
                ("max_keys", u32), ("block_size", u32), ("capacity", u64)]


class NsExt(ctypes.Structure):
    _fields_ = [("size", c_size_t), ("nsid", u32), ("advertised", u32), ("store_opts", u32),
                ("max_ttl", u32), ("read_only", u32), ("size_query", u32),
                ("cmd_timeout_ms", u32), ("exec", u32)]


class QpairOpts(ctypes.Structure):
    _fields_ = [("size", c_size_t), ("depth", u32), ("slots", u32), ("slot_size", u32),
                ("poll_budget", u64), ("timeout_ms", u32), ("flags", u32),
                ("memory_mode", u32)]


class Result(ctypes.Structure):
    _fields_ = [("status", u16), ("dw0", u32)]


class MrInfo(ctypes.Structure):
    _fields_ = [("size", c_size_t), ("addr", vp), ("len", c_size_t), ("flags", u32),
                ("by_messages", u32), ("contiguous", u32), ("prp_table", u32),
                ("device", u32)]


class Iov(ctypes.Structure):
    _fields_ = [("mr", vp), ("off", c_size_t), ("len", u32)]


class BatchCmd(ctypes.Structure):
    """struct nkv_batch_cmd (72 bytes, offsets asserted by test_host_batch)."""
    _fields_ = [("opc", u8), ("rsvd0", u8 * 3), ("opts", u32), ("ttl_s", u32), ("klen", u32),
                ("key", vp), ("iov", ctypes.POINTER(Iov)), ("n_iov", u32), ("len", u32),
                ("mr", vp), ("off", u64), ("err", ctypes.c_int32), ("dw0", u32),
                ("state", u32), ("cid", u16), ("cmd", u16)]


assert ctypes.sizeof(BatchCmd) == 72 and BatchCmd.err.offset == 56
assert ctypes.sizeof(Iov) == 24

LOG_FN = ctypes.CFUNCTYPE(None, vp, ctypes.c_char_p)


def _candidates() -> List[str]:
    env = os.environ.get("NKV_LIB")
    if env:
        return [env]
    here = os.path.dirname(os.path.abspath(__file__))
    out = []
    # Installed by make install: the LIBDIR it installed libnkv into.
    try:
        from . import _config  # type: ignore[attr-defined]
        out.append(_config.LIBNKV)
    except ImportError:
        pass
    # A source tree: python/nkv/ beside build/lib/.
    out.append(os.path.join(here, "..", "..", "build", "lib", "libnkv.so"))
    # Installed under DESTDIR: PREFIX/lib/python3.X/dist-packages/nkv -> PREFIX/lib.
    out.append(os.path.join(here, "..", "..", "..", "libnkv.so"))
    out.append(os.path.join(here, "..", "..", "..", "..", "lib", "libnkv.so"))
    found = ctypes.util.find_library("nkv")
    if found:
        out.append(found)
    out.append("libnkv.so")
    return out


def _load() -> ctypes.CDLL:
    errs = []
    for path in _candidates():
        try:
            return ctypes.CDLL(os.path.normpath(path) if os.sep in path else path)
        except OSError as e:
            errs.append(f"{path}: {e}")
    raise ImportError("nkv: libnkv.so not found (set NKV_LIB to its path); tried:\n  "
                      + "\n  ".join(errs))


lib = _load()

_PROTOS = {
    "nkv_ctrl_connect": (ctypes.c_int, [cp, ctypes.POINTER(CtrlOpts), ctypes.POINTER(vp)]),
    "nkv_ctrl_close": (None, [vp]),
    "nkv_ctrl_get_info": (ctypes.c_int, [vp, ctypes.POINTER(CtrlInfo)]),
    "nkv_ctrl_namespaces": (ctypes.c_int, [vp, ctypes.POINTER(NsInfo), c_size_t]),
    "nkv_ctrl_ns_ext": (ctypes.c_int, [vp, u32, ctypes.POINTER(NsExt)]),
    "nkv_qpair_create": (ctypes.c_int, [vp, ctypes.POINTER(QpairOpts), ctypes.POINTER(vp)]),
    "nkv_qpair_destroy": (None, [vp]),
    "nkv_qpair_reset": (ctypes.c_int, [vp]),
    "nkv_qpair_failed": (ctypes.c_int, [vp]),
    "nkv_store_ttl": (ctypes.c_int, [vp, vp, u32, vp, u32, u32, u32, ctypes.POINTER(Result)]),
    "nkv_retrieve": (ctypes.c_int, [vp, vp, u32, vp, u32, ctypes.POINTER(Result)]),
    "nkv_delete": (ctypes.c_int, [vp, vp, u32, ctypes.POINTER(Result)]),
    "nkv_exist": (ctypes.c_int, [vp, vp, u32, ctypes.POINTER(Result)]),
    "nkv_list": (ctypes.c_int, [vp, vp, u32, vp, u32, ctypes.POINTER(Result)]),
    "nkv_exec": (ctypes.c_int, [vp, vp, u32, u32, vp, u32, vp, u32, ctypes.POINTER(u32)]),
    "nkv_mem_alloc": (ctypes.c_int, [vp, c_size_t, u32, ctypes.POINTER(vp), ctypes.POINTER(vp)]),
    "nkv_mem_register": (ctypes.c_int, [vp, vp, c_size_t, u32, ctypes.POINTER(vp)]),
    "nkv_mem_deregister": (ctypes.c_int, [vp]),
    "nkv_mem_info": (ctypes.c_int, [vp, ctypes.POINTER(MrInfo)]),
    "nkv_store_mr": (ctypes.c_int, [vp, vp, u32, u32, vp, c_size_t, u32]),
    "nkv_retrieve_mr": (ctypes.c_int, [vp, vp, u32, vp, c_size_t, u32, ctypes.POINTER(u32)]),
    "nkv_batch_submit": (ctypes.c_int, [vp, ctypes.POINTER(BatchCmd), u32]),
    "nkv_batch_wait": (ctypes.c_int, [vp, ctypes.POINTER(BatchCmd), u32, u32]),
    "nkv_batch_run": (ctypes.c_int, [vp, ctypes.POINTER(BatchCmd), u32]),
    "nkv_status_str": (ctypes.c_char_p, [u16]),
    "nkv_set_log": (None, [LOG_FN, vp]),
}
for _name, (_res, _args) in _PROTOS.items():
    _f = getattr(lib, _name)
    _f.restype = _res
    _f.argtypes = _args

# The library's one-line messages: to the "nkv" logger, and kept per
# thread so an exception can carry the lines its call logged.
log = logging.getLogger("nkv")
_tls = threading.local()


def _on_log(_ctx, line: bytes) -> None:
    text = line.decode("utf-8", "replace")
    lines = getattr(_tls, "lines", None)
    if lines is not None:
        lines.append(text)
    log.info("%s", text)


_log_cb = LOG_FN(_on_log)
lib.nkv_set_log(_log_cb, None)


def begin() -> None:
    """Start collecting the library's lines for this thread's next call."""
    _tls.lines = []


def lines() -> List[str]:
    out = getattr(_tls, "lines", None) or []
    _tls.lines = None
    return out


def status_str(status: int) -> str:
    s = lib.nkv_status_str(status)
    return s.decode() if s else f"status {status:#x}"


def errno_str(err: int) -> str:
    return os.strerror(err) if err else ""


def py_version_ok() -> Optional[str]:
    return None if sys.version_info >= (3, 8) else "nkv needs Python 3.8 or later"
