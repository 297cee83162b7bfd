#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Write structure-aware seed corpora for the nkv fuzz targets.

    tests/fuzz/seeds.py OUTDIR   ->  OUTDIR/<target>/seed-*

Each seed is a valid conversation (vfio-user bring-up, an enabled
controller with queues and KV/NVM commands, List payloads, server
replies), so the fuzzers start past the first checks and mutate from
there. The formats are the ones each fuzz_*.c documents at its top.
"""
import os
import struct
import sys

# ---------------------------------------------------------------- vfio-user
VERSION, DMA_MAP, DMA_UNMAP, DEV_INFO, REGION_INFO = 1, 2, 3, 4, 5
IRQ_INFO, SET_IRQS, REGION_READ, REGION_WRITE, RESET = 7, 8, 9, 10, 13
FZ_SHRINK, FZ_POKE = 0xFF00, 0xFF01
BAR0, CONFIG = 0, 7
IOVA = 0x10000000
CC_EN = 1 | (6 << 4) | (6 << 16) | (4 << 20)


def msg(cmd, payload=b"", mid=0, flags=0, error=0):
    return struct.pack("<HHIII", mid, cmd, 16 + len(payload), flags, error) + payload


def version(js=b'{"capabilities":{"max_data_xfer_size":65536}}\0'):
    return msg(VERSION, struct.pack("<HH", 0, 1) + js)


def rw(region, off, count, data=b""):
    return struct.pack("<QII", off, region, count) + data


def reg_write(off, val, size=4):
    return msg(REGION_WRITE, rw(BAR0, off, size, val.to_bytes(size, "little")))


def dma_map(addr, size, fdsel=0, offset=0, flags=3):
    return msg(DMA_MAP, struct.pack("<IIQQQ", 32, flags, offset, addr, size), error=fdsel)


def sqe(opc, nsid=0, cdw10=0, cdw11=0, prp1=0, prp2=0, key=b"", cdw12=0, cdw13=0):
    k = key.ljust(16, b"\0")
    w = struct.unpack("<4I", k)
    return struct.pack("<IIIIQQQIIIIII", opc, nsid, w[0], w[1], 0, prp1, prp2,
                       cdw10, cdw11, cdw12, cdw13, w[2], w[3])


def poke(off, data):
    return msg(FZ_POKE, struct.pack("<I", off) + data)


def vfu_server_seeds():
    hello = (version() + msg(DEV_INFO, struct.pack("<4I", 16, 0, 0, 0)) +
             msg(REGION_INFO, struct.pack("<IIIIQQ", 64, 0, BAR0, 0, 0, 0)) +
             msg(REGION_INFO, struct.pack("<IIIIQQ", 32, 0, CONFIG, 0, 0, 0)) +
             msg(REGION_READ, rw(CONFIG, 0, 64)) +
             msg(REGION_WRITE, rw(CONFIG, 4, 2, b"\x06\x00")) +
             msg(REGION_READ, rw(BAR0, 0, 8)) +
             msg(IRQ_INFO, struct.pack("<4I", 16, 0, 0, 0)) +
             msg(SET_IRQS, struct.pack("<5I", 20, 0, 0, 0, 0)))
    enable = (dma_map(IOVA, 0x10000) +
              reg_write(0x24, 15 | (15 << 16)) + reg_write(0x28, IOVA, 8) +
              reg_write(0x30, IOVA + 0x1000, 8) + reg_write(0x14, CC_EN) +
              msg(REGION_READ, rw(BAR0, 0x1c, 4)))
    ident = (poke(0, sqe(0x06, cdw10=1, prp1=IOVA + 0x2000)) + reg_write(0x1000, 1) +
             msg(REGION_READ, rw(BAR0, 0x1c, 4)))
    store = (poke(0x40, sqe(0x05, cdw10=(15 << 16) | 1, cdw11=1, prp1=IOVA + 0x4000)) +
             poke(0x80, sqe(0x01, cdw10=(15 << 16) | 1, cdw11=1 | (1 << 16), prp1=IOVA + 0x8000)) +
             reg_write(0x1000, 3) +
             poke(0x3000, sqe(0x01, nsid=1, cdw10=100, cdw11=4, prp1=IOVA + 0x5000, key=b"key1")) +
             reg_write(0x1008, 1))
    return {
        "hello": b"\0" + hello,
        "hello_nosparse": b"\1" + hello,
        "dma": b"\0" + version() + dma_map(IOVA, 0x4000) + dma_map(IOVA + 0x4000, 0x4000, 1) +
               dma_map(IOVA + 0x8000, 0x4000, 2) + dma_map(IOVA + 0xc000, 0x4000, 5) +
               msg(DMA_UNMAP, struct.pack("<IIQQ", 24, 0, IOVA, 0x4000)) +
               msg(DMA_UNMAP, struct.pack("<IIQQ", 24, 2, 0, 0)),
        "enable_identify": b"\0" + version() + enable + ident,
        "enable_store": b"\0" + version() + enable + ident + store,
        "shrink_then_doorbell": b"\0" + version() + enable + msg(FZ_SHRINK) + ident,
        "reset": b"\0" + version() + enable + msg(RESET) + msg(REGION_READ, rw(BAR0, 0x1c, 4)),
    }


# ---------------------------------------------------------------- controller
R0 = 0x10000000


def op_enable(n=14):
    return bytes([6, n])


def op_pair(q=0):
    return bytes([7, q])


def op_sqe(q, s, prps=None):
    if prps is None:
        return bytes([0, q]) + s + b"\0"
    (sel1, o1), (sel2, o2) = prps
    return bytes([0, q]) + s + bytes([1 | 2]) + bytes([sel1]) + struct.pack("<I", o1) + \
        bytes([sel2]) + struct.pack("<I", o2)


def op_sqe_sgl(q, s, addr, length, sgl_id):
    """SGL1 = {R0 + addr, length, id} (mode 1|4: address by region 0)."""
    return bytes([0, q]) + s + bytes([1 | 4]) + bytes([0]) + struct.pack("<I", addr) + \
        bytes([sgl_id]) + struct.pack("<I", length)


def sgl_desc(addr, length, typ):
    return struct.pack("<QI3xB", addr, length, typ << 4)


def key_head(key):
    return struct.pack("<H", len(key)) + key


def op_mem(r, off, data):
    return bytes([1, r]) + struct.pack("<I", off) + bytes([len(data)]) + data


def ctrl_seeds():
    base = op_enable() + op_pair(0)
    store = op_sqe(1, sqe(0x01, 1, 100, 4, R0 + 0x10000, key=b"abcd"))
    big = op_sqe(1, sqe(0x01, 1, 3 * 4096, 4, R0 + 0x10000, R0 + 0x1f000, key=b"abcd"))
    plist = op_mem(0, 0x1f000, struct.pack("<QQ", R0 + 0x11000, R0 + 0x12000))
    ret = op_sqe(1, sqe(0x02, 1, 100, 4, R0 + 0x14000, key=b"abcd"))
    lst = op_sqe(1, sqe(0x06, 1, 4096, 0, R0 + 0x15000))
    nvm = op_pair(1) + op_sqe(2, sqe(0x01, 2, cdw10=0, cdw12=7, prp1=R0 + 0x10000)) + \
        op_sqe(2, sqe(0x02, 2, cdw10=0, cdw12=15, prp1=0x20000000, prp2=0x20004000))
    cross = op_sqe(1, sqe(0x02, 1, 8192, 4, 0x20003000, 0x20004000, key=b"abcd"))
    admin = op_sqe(0, sqe(0x06, 0, 1, 0, R0 + 0x16000)) + \
        op_sqe(0, sqe(0x02, 0, 2 | (127 << 16), 0, R0 + 0x16000)) + \
        op_sqe(0, sqe(0x09, 0, 7, 0x00030003))
    unmap = bytes([8, 1, 8, 2]) + cross + bytes([9, 1, 9, 2]) + cross
    # Keys in head form (KL = 0) and SGLs: a 32-byte key's head and value
    # in one Data Block; Retrieve of it through a Segment chain whose
    # first Data Block splits the head; a head at a page's tail by PRP.
    k32 = bytes(range(0x41, 0x61))
    head_store = op_mem(0, 0x10000, key_head(k32) + b"v" * 100) + \
        op_sqe_sgl(1, sqe(0x01, 1, 100, 0), 0x10000, 134 + 16, 0x00)
    chain = op_mem(0, 0x1e000, sgl_desc(R0 + 0x10000, 3, 0) + sgl_desc(R0 + 0x10003, 31, 0) +
                   sgl_desc(R0 + 0x1e100, 32, 3)) + \
        op_mem(0, 0x1e100, sgl_desc(R0 + 0x12001, 50, 0) + sgl_desc(R0 + 0x13000, 100, 0))
    head_ret = chain + op_sqe_sgl(1, sqe(0x02, 1, 150, 0), 0x1e000, 48, 0x20)
    head_exist = op_sqe_sgl(1, sqe(0x14, 1, 0, 0), 0x10000, 34, 0x00) + \
        op_sqe_sgl(1, sqe(0x10, 1, 0, 0), 0x1e100, 32, 0x30)
    tail = op_mem(0, 0x14000 - 34, key_head(k32)) + \
        op_sqe(1, sqe(0x02, 1, 4096, 0, R0 + 0x14000 - 34, R0 + 0x14000))
    list_head = op_mem(0, 0x15000, key_head(k32[:20])) + \
        op_sqe(1, sqe(0x06, 1, 4000, 1 << 8, R0 + 0x15000))
    bad_heads = op_mem(0, 0x16000, struct.pack("<H", 256) + b"x" * 40) + \
        op_sqe_sgl(1, sqe(0x14, 1, 0, 0), 0x16000, 300, 0x00) + \
        op_sqe_sgl(1, sqe(0x14, 1, 0, 0), 0x16000, 1, 0x00) + \
        op_sqe_sgl(1, sqe(0x14, 1, 0, 0), 0x16000, 16, 0x10) + \
        op_mem(0, 0x17000, sgl_desc(R0 + 0x17000, 16, 2)) + \
        op_sqe_sgl(1, sqe(0x14, 1, 0, 0), 0x17000, 16, 0x20)
    # Exec (83h): the module fuzz_ctrl_cmds allowlists as op 0 of nsid 1
    # (key "fzmod") and a value, stored; then [u16][key][input] by SGL1,
    # the output over it; a head claiming more than the buffer; CDW12 past it.
    exec_mod = b"return function(v, i) return i .. v:sub(1, 8) end"
    exec_run = op_mem(0, 0x10000, exec_mod) + \
        op_sqe(1, sqe(0x01, 1, len(exec_mod), 5, R0 + 0x10000, key=b"fzmod")) + \
        op_mem(0, 0x11000, b"0123456789") + \
        op_sqe(1, sqe(0x01, 1, 10, 4, R0 + 0x11000, key=b"abcd")) + \
        op_mem(0, 0x18000, key_head(b"abcd") + b"in") + \
        op_sqe_sgl(1, sqe(0x83, 1, cdw10=2, cdw12=64), 0x18000, 64, 0x00) + \
        op_mem(0, 0x19000, struct.pack("<H", 200) + b"abcd") + \
        op_sqe_sgl(1, sqe(0x83, 1, cdw10=2, cdw12=8), 0x19000, 16, 0x00) + \
        op_sqe_sgl(1, sqe(0x83, 1, cdw10=2, cdw12=1 << 20), 0x18000, 64, 0x00)
    return {
        "exec": base + exec_run + bytes([5, 9]),
        "sgl_head_store_retrieve": base + head_store + head_ret + head_exist + bytes([5, 9]),
        "prp_head_tail_list_head": base + head_store + tail + list_head,
        "sgl_bad": base + bad_heads,
        "store_retrieve": base + store + ret + bytes([5, 9]),
        "prp_list": base + plist + big + ret,
        "list": base + store + lst,
        "nvm": base + nvm,
        "cross_region": base + cross,
        "admin": base + admin,
        "unmap_remap": base + unmap,
        "doorbells": base + bytes([2, 2]) + struct.pack("<I", 0xffff) + bytes([2, 3]) +
                     struct.pack("<I", 7) + bytes([3, 0x14, 0x10, 0]) + struct.pack("<Q", 0x4000 | CC_EN) +
                     bytes([5, 9]),
    }


# ---------------------------------------------------------------- list / client
def list_payload(keys):
    out = struct.pack("<I", len(keys))
    for k in keys:
        e = struct.pack("<H", len(k)) + k
        out += e + b"\0" * (-len(e) % 4)
    return out


def list_seeds():
    return {
        "dec_two": b"\0" + list_payload([b"a", b"0123456789abcdef"]),
        "dec_empty": b"\0" + list_payload([]),
        "dec_liar": b"\0" + struct.pack("<I", 1000) + list_payload([b"xy"])[4:],
        "roundtrip": b"\1" + bytes([40, 3]) + b"abc" + bytes([16]) + b"k" * 16 + bytes([0, 17]),
    }


def rec(ctl, data):
    return bytes([ctl]) + struct.pack("<H", len(data)) + data


def client_seeds():
    ver = rec(1, struct.pack("<HH", 0, 1) + b'{"capabilities":{"max_msg_fds":8}}\0')
    info = rec(1, struct.pack("<4I", 16, 3, 9, 5))
    caps = struct.pack("<HHIII", 1, 1, 0, 1, 0) + struct.pack("<QQ", 0x1000, 0x1000)
    bar0 = rec(3, bytes([2]) + struct.pack("<IIIIQQ", 64, 0xF, 0, 32, 0x2000, 0)[1:] + caps)
    bar0_big = rec(3, bytes([1]) + struct.pack("<IIIIQQ", 64, 0xF, 0, 32, 0x4000, 0)[1:] + caps)
    other = rec(1, struct.pack("<IIIIQQ", 32, 3, 1, 0, 256, 0))
    # Connected (Command register already 0x406), DMA_MAP without an fd
    # answered, then the server's DMA_READ / DMA_WRITE requests.
    up = ver + info + bar0 + other * 8 + rec(1, struct.pack("<QII", 4, 7, 2) + struct.pack("<H", 0x406))
    dma = (rec(1, b"") + rec(1, struct.pack("<QQ", 0x1000, 64)) +
           rec(3, struct.pack("<QQ", 0x1000, 4) + b"abcd") + rec(1, struct.pack("<QQ", 0, 1 << 21)) +
           rec(0, struct.pack("<HHIII", 7, 11, 32, 0, 0) + struct.pack("<QQ", 0, 8)))
    return {
        "dma": up + dma,
        "good": ver + info + bar0 + other * 8,
        "small_fd": ver + info + bar0_big + other * 8,
        "error": ver + rec(1 | 4 | (22 << 3), b""),
        "torn": ver + rec(0, struct.pack("<HHIII", 1, 4, 64, 1, 0)),
    }


def rpc_seeds():
    req = b'{"jsonrpc":"2.0","id":%d,"method":"%s"%s}'
    return {
        "list": req % (1, b"rpc_list", b"") + b"\n",
        "echo": req % (2, b"fz_echo", b',"params":{"a":5,"b":"x","c":true,"d":{},"e":[1]}'),
        "pipelined": req % (3, b"rpc_list", b"") + req % (4, b"nope", b"") +
        b'{"jsonrpc":"2.0","method":"rpc_list"}\n',
        "bad_params": req % (5, b"fz_echo", b',"params":{"a":"x","z":1}'),
        "batch": b'[' + req % (6, b"rpc_list", b"") + b']',
        "too_large": req % (7, b"fz_echo", b',"params":{"a":1,"b":"' + b"x" * 600 + b'"}'),
        "broken": b'{"jsonrpc":"2.0","id":8,"method":',
    }


# ---------------------------------------------------------------- NVMe/TCP
def tcp_ch(typ, flags, hlen, pdo, plen):
    return struct.pack("<BBBBI", typ, flags, hlen, pdo, plen)


def tcp_seeds():
    """Byte 0: negotiation (bit 0 HDGST, bit 1 DDGST, bit 2 host side),
    byte 1: data limit; then PDUs (fuzz_tcp_pdu.c)."""
    icreq = tcp_ch(0, 0, 128, 0, 128) + struct.pack("<HBBI", 0, 0, 0, 0) + bytes(112)
    cmd = tcp_ch(4, 0, 72, 72, 72 + 1024) + sqe(0x7F, nsid=1) + bytes(1024)
    cmd_dg = tcp_ch(4, 3, 72, 76, 76 + 16 + 4) + sqe(0x01, nsid=1) + bytes(4 + 16 + 4)
    h2c = tcp_ch(6, 4, 24, 24, 24 + 64) + struct.pack("<HHII", 1, 1, 0, 64) + bytes(4 + 64)
    c2h = tcp_ch(7, 12, 24, 24, 24 + 9) + struct.pack("<HHII", 1, 0, 0, 9) + bytes(4) + b"123456789"
    r2t = tcp_ch(9, 0, 24, 0, 24) + struct.pack("<HHII", 1, 1, 0, 4096) + bytes(4)
    return {"ctrl": b"\x00\x00" + icreq + cmd + h2c, "digests": b"\x03\x00" + cmd_dg,
            "host": b"\x04\x00" + c2h + r2t}


def crc32c(data):
    crc = 0xFFFFFFFF
    for b in data:
        crc ^= b
        for _ in range(8):
            crc = (crc >> 1) ^ (0x82F63B78 if crc & 1 else 0)
    return crc ^ 0xFFFFFFFF


def tcp_sgl(sqe_bytes, length, sgl_id):
    """SGL1 (bytes 24-39) of an SQE: address 0, length, identifier."""
    return sqe_bytes[:24] + struct.pack("<QI3xB", 0, length, sgl_id) + sqe_bytes[40:]


def tcp_capsule(s, icd=b"", digests=False):
    hd = 4 if digests else 0
    dd = 4 if digests and icd else 0
    flags = (1 if digests else 0) | (2 if dd else 0)
    pdo = 72 + hd if icd else 0
    hdr = tcp_ch(4, flags, 72, pdo, 72 + hd + len(icd) + dd) + s
    out = hdr + (struct.pack("<I", crc32c(hdr)) if hd else b"") + icd
    return out + (struct.pack("<I", crc32c(icd)) if dd else b"")


def tcp_conn_seeds():
    """Byte 0: how far the harness connects (fuzz_tcp_conn.c); then PDUs."""
    icreq = tcp_ch(0, 0, 128, 0, 128) + struct.pack("<HBBI", 0, 0, 0, 0) + bytes(112)
    ident = tcp_sgl(sqe(0x06 | (1 << 14) | (1 << 16), cdw10=1), 4096, 0x5A)
    logp = tcp_sgl(sqe(0x02 | (1 << 14) | (2 << 16), cdw10=0x70 | (1023 << 16)), 4096, 0x5A)
    kv = b"fuzzkey1"
    store = tcp_sgl(sqe(0x01 | (1 << 14) | (3 << 16), nsid=1, cdw10=64, cdw11=8, key=kv), 64, 0x01)
    big = tcp_sgl(sqe(0x01 | (1 << 14) | (4 << 16), nsid=1, cdw10=8192, cdw11=8, key=kv),
                  8192, 0x5A)
    h2c = tcp_ch(6, 4, 24, 24, 24 + 8192) + struct.pack("<HHII", 4, 0, 0, 8192) + bytes(4)
    get = tcp_sgl(sqe(0x02 | (1 << 14) | (5 << 16), nsid=1, cdw10=8192, cdw11=8, key=kv),
                  8192, 0x5A)
    head = struct.pack("<H", 20) + b"a-key-of-twenty-byte"
    gethead = tcp_sgl(sqe(0x02 | (1 << 14) | (6 << 16), nsid=1, cdw10=100), 100, 0x5A)
    return {
        "raw": b"\x00" + icreq + tcp_capsule(ident),
        "admin": b"\x01" + tcp_capsule(ident) + tcp_capsule(logp),
        "io": b"\x03" + tcp_capsule(store, bytes(64)) + tcp_capsule(big) + h2c + bytes(8192) +
              tcp_capsule(get),
        "io_head": b"\x03" + tcp_capsule(gethead, head),
        "digests": b"\x07" + tcp_capsule(store, bytes(64), True) + tcp_capsule(get, b"", True),
    }


def nvmf_host_seeds():
    """Byte 0: ICResp digests (bits 0-1) and CPDA; then what a remote sends
    the initiator with Identify (CID 0, 4 KiB C2H) and Store (CID 1,
    8 KiB by R2T) in flight (fuzz_nvmf_host.c)."""
    r2t = tcp_ch(9, 0, 24, 0, 24) + struct.pack("<HHII", 1, 7, 0, 8192) + bytes(4)
    c2h = tcp_ch(7, 4, 24, 24, 24 + 4096) + struct.pack("<HHII", 0, 0, 0, 4096) + bytes(4)
    c2h_ok = tcp_ch(7, 4 | 8, 24, 24, 24 + 4096) + struct.pack("<HHII", 0, 0, 0, 4096) + bytes(4)

    def rsp(cid):
        return tcp_ch(5, 0, 24, 0, 24) + struct.pack("<IIII", 0, 0, 0, cid)
    return {
        "all": b"\x00" + r2t + c2h + bytes(4096) + rsp(0) + rsp(1),
        "success": b"\x00" + c2h_ok + bytes(4096) + rsp(1),
        "bad_cid": b"\x00" + rsp(9),
    }


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: seeds.py OUTDIR")
    sets = {"fuzz_vfu_server": vfu_server_seeds(), "fuzz_ctrl_cmds": ctrl_seeds(),
            "fuzz_list_decode": list_seeds(), "fuzz_vfu_client": client_seeds(),
            "fuzz_rpc": rpc_seeds(), "fuzz_tcp_pdu": tcp_seeds(),
            "fuzz_tcp_conn": tcp_conn_seeds(), "fuzz_nvmf_host": nvmf_host_seeds()}
    for target, seeds in sets.items():
        d = os.path.join(sys.argv[1], target)
        os.makedirs(d, exist_ok=True)
        for name, data in seeds.items():
            with open(os.path.join(d, "seed-" + name), "wb") as f:
                f.write(data)


if __name__ == "__main__":
    main()
