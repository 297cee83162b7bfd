#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Decode the NVMe/TCP streams tests/vm/tcp.sh's guestfwd recorded (socat
-r/-R: one host-to-controller and one controller-to-host file per guest
connection) into one line per command: what the Linux kernel's host (and
nvme-cli through it) sent nkv-target, and the status it got back.

usage: tcp_pdus.py DIR     (DIR/h2c.ID and DIR/c2h.ID, ID sortable by time)
"""
import glob
import os
import struct
import sys

ADMIN = {0x02: "GetLogPage", 0x06: "Identify", 0x09: "SetFeatures",
         0x0a: "GetFeatures", 0x0c: "AsyncEventRequest", 0x18: "KeepAlive"}
FABRICS = {0x00: "PropertySet", 0x01: "Connect", 0x04: "PropertyGet",
           0x08: "Disconnect"}


def pdus(data):
    """(type, header+payload bytes) for each whole PDU in a stream."""
    off = 0
    while off + 8 <= len(data):
        ptype, _flags, _hlen, _pdo, plen = struct.unpack_from("<BBBBI", data, off)
        if plen < 8 or off + plen > len(data):
            break
        yield ptype, data[off:off + plen]
        off += plen


def describe(sqe, qid):
    opc = sqe[0]
    nsid, = struct.unpack_from("<I", sqe, 4)
    cdw10, cdw11 = struct.unpack_from("<II", sqe, 40)
    if opc == 0x7f:
        fct = sqe[4]
        name = FABRICS.get(fct, "Fabrics(%#x)" % fct)
        if fct == 0x01:
            q, sqsize = struct.unpack_from("<HH", sqe, 42)
            return "%s qid %d sqsize %d" % (name, q, sqsize)
        if fct in (0x00, 0x04):
            return "%s offset %#x%s" % (name, struct.unpack_from("<I", sqe, 44)[0],
                " value %#x" % struct.unpack_from("<Q", sqe, 48)[0] if fct == 0 else "")
        return name
    if qid != 0:
        return "I/O opc %#x nsid %d" % (opc, nsid)
    name = ADMIN.get(opc, "Admin(%#x)" % opc)
    if opc == 0x06:
        return "%s CNS %02xh CSI %d nsid %d" % (name, cdw10 & 0xff, cdw11 >> 24, nsid)
    if opc == 0x02:
        cdw14, = struct.unpack_from("<I", sqe, 56)
        return "%s LID %02xh CSI %d nsid %#x" % (name, cdw10 & 0xff, cdw14 >> 24, nsid)
    if opc in (0x09, 0x0a):
        return "%s FID %02xh" % (name, cdw10 & 0xff)
    return name


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    for h2c in sorted(glob.glob(os.path.join(sys.argv[1], "h2c.*"))):
        cid_cmd, qid = {}, None
        with open(h2c, "rb") as f:
            for ptype, pdu in pdus(f.read()):
                if ptype == 0x04:	# CapsuleCmd: the SQE after the 8-byte header
                    sqe = pdu[8:72]
                    if sqe[0] == 0x7f and sqe[4] == 0x01:
                        qid = struct.unpack_from("<H", sqe, 42)[0]
                    cid_cmd[struct.unpack_from("<H", sqe, 2)[0]] = describe(sqe, qid)
        conn = os.path.basename(h2c)[4:]
        try:
            with open(os.path.join(sys.argv[1], "c2h." + conn), "rb") as f:
                c2h = f.read()
        except OSError:
            c2h = b""
        answered = set()
        for ptype, pdu in pdus(c2h):
            if ptype != 0x05:	# CapsuleResp: the CQE after the header
                continue
            dw0, = struct.unpack_from("<I", pdu, 8)
            cid, status = struct.unpack_from("<HH", pdu, 20)
            sct, sc = (status >> 9) & 7, (status >> 1) & 0xff
            what = cid_cmd.get(cid, "cid %d (not seen)" % cid)
            answered.add(cid)
            print("conn %s qid %s: %s -> %s dw0 %#x" % (conn, qid, what,
                  "ok" if not (sct or sc) else "SCT %d SC %02xh" % (sct, sc), dw0))
        for cid, what in cid_cmd.items():
            if cid not in answered:
                print("conn %s qid %s: %s -> no response" % (conn, qid, what))


if __name__ == "__main__":
    main()
