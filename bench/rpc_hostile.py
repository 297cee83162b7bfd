#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""bench/rpc_hostile.py - issue 46's "the data path's figures within the
machine's spread" while a hostile client works the control socket, side
by side in one run.

One nkv-target (mem, --rpc-socket) serves nkv-bench (cpu engine, 4 KiB
Retrieve, batch 32, over vfio-user). Rounds alternate: nkv-bench alone
(quiet), then nkv-bench while a hostile process works the control socket
(hostile): 1000 connections opened at once, malformed JSON, 10 MiB
requests, slow senders dribbling a byte at a time, and a stream of valid
calls (stats_get, namespace_list, connection_list). The hostile process
is paced (--pace-ms between rounds of abuse) so it does not simply take a
core from the 2-core machine: the figure is what the target's RPC server
costs the data path, not what the abuser's CPU does. Ratios hostile /
quiet are taken within each round; median and range reported.

usage: bench/rpc_hostile.py [--build build] [--rounds 5] [--out bench/results/rpc_hostile]
"""
import json
import multiprocessing
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import sidebyside  # noqa: E402


def abuse(path, stop, pace_ms, counts):
    """The hostile client: until stop is set."""
    def conn():
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.settimeout(2)
        s.connect(path)
        return s

    big = b'{"jsonrpc":"2.0","id":1,"method":"stats_get","params":{"x":"' + b"a" * (10 << 20) + b'"}}\n'
    valid = [b'{"jsonrpc":"2.0","id":%d,"method":"%s"}\n' % (i, m.encode()) for i, m in
             enumerate(["stats_get", "namespace_list", "connection_list", "rpc_list"])]
    while not stop.is_set():
        held = []
        try:
            for _ in range(1000):          # the connection cap, and past it
                counts["conns"] += 1
                try:
                    held.append(conn())
                except OSError:
                    pass
            for s in held[:8]:             # a byte at a time, then gone
                try:
                    s.sendall(b'{"jsonrpc"')
                except OSError:
                    pass
        finally:
            for s in held:
                s.close()
        for payload in (b"{not json\n", b"\x00\xff" * 64 + b"\n", big):
            try:
                s = conn()
                s.sendall(payload)
                s.recv(4096)
                s.close()
                counts["bad"] += 1
            except OSError:
                counts["bad"] += 1
        try:
            s = conn()
            for v in valid * 25:
                s.sendall(v)
                s.recv(1 << 16)
                counts["valid"] += 1
            s.close()
        except OSError:
            pass
        stop.wait(pace_ms / 1000.0)


def bench(build, sock):
    p = subprocess.run([os.path.join(build, "bin/nkv-bench"), "--json", "--quiet", "--engine", "cpu",
                        "--target", "vfio-user:" + sock, "--kv-op", "retrieve", "--value-size", "4096",
                        "--num-keys", "4096", "--batch-size", "32", "--iterations", "48"],
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=300)
    if p.returncode:
        sys.exit("rpc_hostile.py: nkv-bench failed: " + p.stderr[-600:])
    j = json.loads(p.stdout.strip().splitlines()[-1])
    if j["unexpected"]:
        sys.exit("rpc_hostile.py: nkv-bench: %d unexpected outcomes" % j["unexpected"])
    return {"iops": j["iops_wall"], "p50_ns": j["latency_ns"]["p50"], "p99_ns": j["latency_ns"]["p99"]}


def main():
    ap = sidebyside.parser(__doc__, "bench/results/rpc_hostile")
    ap.add_argument("--pace-ms", type=int, default=200)
    a = ap.parse_args()
    tmp = tempfile.mkdtemp(prefix="nkv-rpch-")
    sock, rsock = os.path.join(tmp, "v.sock"), os.path.join(tmp, "r.sock")
    log = open(os.path.join(tmp, "target.log"), "w")
    tgt = subprocess.Popen([os.path.join(a.build, "bin/nkv-target"), "--socket", sock, "--rpc-socket",
                            rsock, "--capacity", "1G", "--log-level", "error"], stdout=log,
                           stderr=subprocess.STDOUT)
    for _ in range(100):
        if os.path.exists(rsock) and os.path.exists(sock):
            break
        time.sleep(0.1)
    rows = {"quiet": [], "hostile": []}
    counts = multiprocessing.Manager().dict(conns=0, bad=0, valid=0)
    load = [os.getloadavg()[0]]
    try:
        for r in range(a.rounds):
            rows["quiet"].append(bench(a.build, sock))
            stop = multiprocessing.Event()
            h = multiprocessing.Process(target=abuse, args=(rsock, stop, a.pace_ms, counts))
            h.start()
            time.sleep(0.5)
            rows["hostile"].append(bench(a.build, sock))
            stop.set()
            h.join(30)
            if h.is_alive():
                h.kill()
            print("round %d: quiet %.0f IOPS p50 %.1f us, hostile %.0f IOPS p50 %.1f us" %
                  (r + 1, rows["quiet"][-1]["iops"], rows["quiet"][-1]["p50_ns"] / 1e3,
                   rows["hostile"][-1]["iops"], rows["hostile"][-1]["p50_ns"] / 1e3), flush=True)
        alive = tgt.poll() is None
    finally:
        tgt.terminate()
        tgt.wait(timeout=30)
    load.append(os.getloadavg()[0])
    if not alive:
        sys.exit("rpc_hostile.py: the target died: see " + log.name)
    q, h = rows["quiet"], rows["hostile"]
    iops = [y["iops"] / x["iops"] for x, y in zip(q, h)]
    p50 = [y["p50_ns"] / x["p50_ns"] for x, y in zip(q, h)]
    qq = [q[i + 1]["iops"] / q[i]["iops"] for i in range(len(q) - 1)]
    lines = ["# The data path while a hostile client works the control socket (bench/rpc_hostile.py)", "",
             "%s UTC, %d rounds, load average %.2f at start, %.2f at end; 4 KiB Retrieve batch 32, "
             "nkv-bench cpu engine over vfio-user; abuse paced %d ms; the hostile client's calls: %d "
             "valid, %d malformed or oversized, %d connections opened at once 1000 at a time (the cap is 64)." %
             (time.strftime("%Y-%m-%d %H:%M", time.gmtime()), a.rounds, load[0], load[1], a.pace_ms,
              counts["valid"], counts["bad"], counts["conns"]), "",
             "| figure | quiet (median) | hostile (median) | hostile / quiet, within a round |",
             "|---|---|---|---|",
             "| IOPS | %.0f | %.0f | %s |" % (statistics.median(x["iops"] for x in q),
                                            statistics.median(x["iops"] for x in h), sidebyside.span(iops)),
             "| p50 latency | %.1f us | %.1f us | %s |" % (statistics.median(x["p50_ns"] for x in q) / 1e3,
                                                       statistics.median(x["p50_ns"] for x in h) / 1e3,
                                                       sidebyside.span(p50)),
             "", "The machine's spread, for scale: quiet IOPS of one round over the last, %s." %
             (sidebyside.span(qq) if qq else "n/a")]
    sidebyside.write(a.out, lines, {"rows": rows, "iops_ratio": iops, "p50_ratio": p50, "load": load,
                   "hostile_calls": dict(counts)})
    print("\n".join(lines))


if __name__ == "__main__":
    main()
