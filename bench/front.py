#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""bench/front.py - issue 45's goals, side by side in one run: what a front
(the library's tcp: URI: a local controller whose backend forwards over
NVMe/TCP) adds to a remote nkv-target's own figures as a direct NVMe/TCP
host sees them.

  direct  bench/nvmf/nvmf_loop: nkv's initiator in one thread, straight to
          the remote (NVMe/TCP, no front);
  front   nkv-bench --engine cpu --target tcp:HOST:PORT: device code's
          rings and doorbells in local memory, the local controller, the
          nvmf backend's worker, NVMe/TCP to the same remote; --no-verify,
          as nvmf_loop checks only its last batch's bytes (the suites
          check every byte over tcp:, tests/host/test_host_tcp.c).

One remote nkv-target (mem, --listen tcp:127.0.0.1:0) serves both. The
points alternate within each round (direct, front), rounds repeat; the
ratios are taken within a round, then their median and range reported.
Goals: front 4 KiB Retrieve p50 <= 1.2x direct; 32 MiB Retrieve
throughput >= 0.9x direct.

usage: bench/front.py [--build build] [--rounds 5] [--out bench/results/front]
"""
import json
import os
import re
import signal
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import sidebyside  # noqa: E402

POINTS = [  # (name, size, batch, keys, iterations)
    ("4 KiB batch 1", 4096, 1, 256, 8),
    ("4 KiB batch 32", 4096, 32, 1024, 8),
    ("32 MiB batch 1", 32 << 20, 1, 4, 4),
]


def run_json(cmd, timeout=300):
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                       timeout=timeout)
    if p.returncode:
        sys.exit("front.py: %s failed (exit %d): %s" % (cmd[0], p.returncode,
                                                         p.stderr.strip()[-600:]))
    return json.loads(p.stdout.strip().splitlines()[-1])


def start_remote(build, tmp):
    log = open(os.path.join(tmp, "remote.log"), "w+")
    p = subprocess.Popen([os.path.join(build, "bin/nkv-target"), "--listen", "tcp:127.0.0.1:0",
                          "--socket", os.path.join(tmp, "r.sock"), "--backend", "mem",
                          "--capacity", "2G", "--max-value", "64M", "--poll-interval-ns", "1000"],
                         stdout=log, stderr=subprocess.STDOUT)
    for _ in range(100):
        log.seek(0)
        m = re.search(r"event=tcp_listening addr=127\.0\.0\.1 port=(\d+)", log.read())
        if m:
            return p, int(m.group(1))
        if p.poll() is not None:
            break
        time.sleep(0.1)
    p.kill()
    log.seek(0)
    sys.exit("front.py: the remote nkv-target did not listen:\n" + log.read()[-800:])


def direct(build, port, size, batch, keys, iters):
    j = run_json([os.path.join(build, "bench/nvmf_loop"), "--remote", "tcp:127.0.0.1:%d" % port,
                  "--op", "get", "--size", str(size), "--batch", str(batch), "--keys", str(keys),
                  "--iters", str(iters)])
    return {"p50_ns": j["latency_ns"]["p50"], "p99_ns": j["latency_ns"]["p99"],
            "iops": j["iops"], "mb_per_s": j["mb_per_s"]}


def front(build, port, size, batch, keys, iters):
    j = run_json([os.path.join(build, "bin/nkv-bench"), "--json", "--quiet", "--engine", "cpu",
                  "--target", "tcp:127.0.0.1:%d" % port, "--kv-op", "retrieve",
                  "--value-size", str(size), "--num-keys", str(keys), "--batch-size", str(batch),
                  "--iterations", str(iters), "--no-verify"])
    if j["unexpected"]:
        sys.exit("front.py: nkv-bench: %d unexpected outcomes" % j["unexpected"])
    return {"p50_ns": j["latency_ns"]["p50"], "p99_ns": j["latency_ns"]["p99"],
            "iops": j["iops_wall"], "mb_per_s": j["iops_wall"] * size / 1e6}


def main():
    ap = sidebyside.parser(__doc__, "bench/results/front")
    a = ap.parse_args()
    tmp = tempfile.mkdtemp(prefix="nkv-front-")
    remote, port = start_remote(a.build, tmp)
    rows = {name: {"direct": [], "front": []} for name, *_ in POINTS}
    load = [os.getloadavg()[0]]
    try:
        for r in range(a.rounds):
            for name, size, batch, keys, iters in POINTS:
                for side, fn in (("direct", direct), ("front", front)):
                    rows[name][side].append(fn(a.build, port, size, batch, keys, iters))
                print("round %d %s: direct p50 %.1f us %.0f MB/s, front p50 %.1f us %.0f MB/s" %
                      (r + 1, name, rows[name]["direct"][-1]["p50_ns"] / 1e3,
                       rows[name]["direct"][-1]["mb_per_s"], rows[name]["front"][-1]["p50_ns"] / 1e3,
                       rows[name]["front"][-1]["mb_per_s"]), flush=True)
    finally:
        remote.send_signal(signal.SIGTERM)
        remote.wait(timeout=30)
    load.append(os.getloadavg()[0])
    lines = ["# The front (tcp: URI) beside a direct NVMe/TCP host (bench/front.py)", "",
             "%s UTC, %d rounds, load average %.2f at start, %.2f at end; medians, ranges over "
             "the rounds; ratios taken within each round." %
             (time.strftime("%Y-%m-%d %H:%M", time.gmtime()), a.rounds, load[0], load[1]), "",
             "| Retrieve | direct p50 | front p50 | front / direct p50 (goal <= 1.2 at 4 KiB b1) "
             "| direct MB/s | front MB/s | front / direct throughput (goal >= 0.9 at 32 MiB) |",
             "|---|---|---|---|---|---|---|"]
    out = {"rounds": a.rounds, "load": load, "points": {}}
    for name, *_ in POINTS:
        d, f = rows[name]["direct"], rows[name]["front"]
        lat = [y["p50_ns"] / x["p50_ns"] for x, y in zip(d, f)]
        thr = [y["mb_per_s"] / x["mb_per_s"] for x, y in zip(d, f)]
        med = lambda s, k: statistics.median(v[k] for v in s)
        lines.append("| %s | %.1f us | %.1f us | %s | %.0f | %.0f | %s |" %
                     (name, med(d, "p50_ns") / 1e3, med(f, "p50_ns") / 1e3, sidebyside.span(lat),
                      med(d, "mb_per_s"), med(f, "mb_per_s"), sidebyside.span(thr)))
        out["points"][name] = {"direct": d, "front": f, "p50_ratio": lat, "throughput_ratio": thr}
    sidebyside.write(a.out, lines, out)
    print("\n".join(lines))


if __name__ == "__main__":
    main()
