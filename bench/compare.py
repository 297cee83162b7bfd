#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""nkv beside its references, side by side in one run (make bench-compare).

  cpu part    the cpu engine (nkv-bench, embedded nkv-target) against
              bench/pingpong: a batch-1 Exist and a batch-1 4 KiB Retrieve
              round trip against a cache-line ping-pong round trip (the
              Retrieve also against 3 ping-pongs + one 4 KiB memcpy), and
              batch-32 4 KiB Retrieve IOPS against a single-core memcpy of
              4 KiB blocks, its target CPU time per command against one
              4 KiB memcpy on the target's CPU. Threads pinned (--cpus
              A,B): device code and ping-pong thread 1 on A, the target
              and ping-pong thread 2 on B, memcpy on A and on B.
  rados part  nkv-target --backend rados (nkv-bench --no-verify, so both
              sides do the same work; --poll-sched idle, so its busy
              polling yields to the OSD) against bench/rados/rados_loop
              --batch (librados aio, batches of N), at depths 1, 8, 32, 64
              and two queue pairs of 32 (two rados_loop processes), 4 KiB
              and 1 MiB, Store and Retrieve; a verifying Retrieve beside
              each, and nkv-target's RADOS backend alone (rados_loop --via
              backend: no NVMe-KV hop), which splits the gap into the
              backend's share and the hop's. On a throwaway cluster
              (scripts/ceph-dev-cluster.sh) in a temp dir, stopped at the
              end, on error and on Ctrl-C; skipped by name when Ceph is
              not installed.
  rocksdb     nkv-target --backend rocksdb (--sync always and none, one
  part        target each, nkv-bench --no-verify over vfio-user) against
              bench/rocksdb/rocks_loop (one process, the backend's
              options, a batch of N Puts as one WriteBatch written with
              the same sync: the backend's group commit of a batch of
              Stores; Gets one by one) on a database of its own in the
              same temp dir (same disk), against the backend alone
              (rocks_loop --via backend: no NVMe-KV hop), which splits
              the gap into the backend's share and the hop's, and
              against nkv-target --backend mem the same way: 4 KiB at
              batch 32, 2 MiB at batch 8, Store and Retrieve.

Every figure is measured --runs times (interleaved, so drift hits nkv and
its reference alike); the report gives the median and the spread
(min-max) of each figure and of each ratio nkv / reference, the ratio
taken within each run. Output: a table on stdout and in OUT/compare.md,
OUT/compare.json, and a plot OUT/compare.png (gnuplot). --quick: tiny
counts and one run, for CI (a check that it runs; never a speed).
Progress: one line per measurement on stderr. Python 3 stdlib only.
"""
import argparse
import json
import os
import platform
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time

SCHEMA = "nkv-bench-compare/1"
CEPH_TOOLS = ("ceph-mon", "ceph-osd", "ceph", "rados", "monmaptool")
SIZES = (4096, 1 << 20)
DEPTHS = ((1, 1), (8, 1), (32, 1), (64, 1), (32, 2))   # (batch, queue pairs)
# Issue 30's value-size sweep, LLM KV-cache block sizes: a layer of a
# 16-token block, the block (Llama-3.1-8B, bf16), a 256-token chunk. The
# cpu part runs every one; the rados part the two large ones at depth 8.
SWEEP = (64 << 10, 2 << 20, 32 << 20)
SWEEP_DEPTH = (8, 1)
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# A ping-pong round trip below this: the two CPUs are hyperthreads of one
# physical core. A virtual machine's guest topology does not say (its
# vCPUs land on siblings or not from run to run); the round trip does:
# 100-140 ns on siblings, 400-450 ns across cores on the machine of
# docs/bench.md. The issue-21 goals assume separate cores.
SHARED_CORE_NS = 250
# The cpu part's goal ratios, shown per run beside the placement.
CPU_GOALS = ("cpu.exist_b1.p50_vs_pingpong", "cpu.retrieve_b1.p50_vs_goal",
             "cpu.retrieve_b32.target_vs_memcpy")


class CompareError(Exception):
    """A measurement or the setup failed: the message says which and why."""


def say(msg):
    print("compare: " + msg, file=sys.stderr, flush=True)


# ---- statistics ---------------------------------------------------------

def summarize(values):
    """Median and spread of one figure's per-run values (None = missing)."""
    v = [x for x in values if x is not None]
    if not v:
        return {"median": None, "min": None, "max": None}
    return {"median": statistics.median(v), "min": min(v), "max": max(v)}


def ratio_runs(nkv, ref):
    """Per-run ratios nkv / reference, paired by run (same run, same load)."""
    if len(nkv) != len(ref):
        raise ValueError("ratio of %d runs to %d runs" % (len(nkv), len(ref)))
    return [a / b if a is not None and b else None for a, b in zip(nkv, ref)]


def size_key(size):
    """4k, 1m: a size as figure names spell it."""
    return "%dk" % (size >> 10) if size < 1 << 20 else "%dm" % (size >> 20)


def point_key(size, batch, queues):
    """rados.4k.32, rados.1m.2x32: the prefix of a rados point's figures."""
    return "rados.%s.%s" % (size_key(size), depth_name(batch, queues))


def size_name(n):
    return "%d MiB" % (n >> 20) if n >= 1 << 20 else "%d KiB" % (n >> 10)


def depth_name(batch, queues):
    return "%dx%d" % (queues, batch) if queues > 1 else str(batch)


def fmt(v, unit):
    """A value for the table: 3 significant digits, a unit a person reads."""
    if v is None:
        return "-"
    if unit == "ns":
        return "%.3g us" % (v / 1e3) if v >= 1000 else "%.0f ns" % v
    if unit == "us":
        return "%.3g ms" % (v / 1e3) if v >= 10000 else "%.0f us" % v
    if unit == "x":
        return "%.2fx" % v
    for div, pre in ((1e6, " M"), (1e3, " k")):
        if v >= div:
            return "%.3g%s%s" % (v / div, pre, "" if unit == "IOPS" else "/s")
    return "%.0f%s" % (v, "" if unit == "IOPS" else "/s")


def spread(s, unit):
    if s["median"] is None:
        return "-"
    if s["min"] == s["max"]:
        return fmt(s["median"], unit)
    return "%s (%s-%s)" % (fmt(s["median"], unit), fmt(s["min"], unit), fmt(s["max"], unit))


# ---- the figures of one comparison --------------------------------------

class Book:
    """Per-run values of every figure, and the ratios between them."""

    def __init__(self, runs):
        self.runs = runs
        self.fig = {}       # name -> {"unit", "label", "runs": [...]}
        self.ratios = []    # (name, label, nkv figure, reference figure, unit)

    def add(self, name, run, value, unit, label):
        f = self.fig.setdefault(name, {"unit": unit, "label": label, "runs": [None] * self.runs})
        f["runs"][run] = value

    def ratio(self, name, label, nkv, ref, part):
        self.ratios.append((name, label, nkv, ref, part))

    def figures_json(self):
        out = {}
        for name, f in self.fig.items():
            out[name] = dict(unit=f["unit"], label=f["label"], runs=f["runs"], **summarize(f["runs"]))
        return out

    def ratios_json(self):
        out = {}
        for name, label, nkv, ref, part in self.ratios:
            if nkv not in self.fig or ref not in self.fig:
                continue
            r = ratio_runs(self.fig[nkv]["runs"], self.fig[ref]["runs"])
            out[name] = dict(part=part, label=label, nkv=nkv, reference=ref, runs=r, **summarize(r))
        return out


# ---- running the tools ---------------------------------------------------

def spawn(cmd, **kw):
    """Popen with Ctrl-C / SIGTERM held off until the child is ours: an
    interrupt inside Popen() would leave a child nobody stops. (Caught
    signals are reset to their defaults in the child by exec.)"""
    got = []
    old = {s: signal.signal(s, lambda n, f: got.append(n)) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        p = subprocess.Popen(cmd, **kw)
    finally:
        for s, h in old.items():
            signal.signal(s, h)
    if got:
        p.kill()
        p.wait()
        raise KeyboardInterrupt
    return p


def call(cmd, timeout, what, **kw):
    """Run cmd to its end: (exit status, stdout, stderr). Killed on timeout
    (CompareError) and on any exception, Ctrl-C included."""
    p = spawn(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, **kw)
    try:
        out, err = p.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        raise CompareError("%s: no answer within %d s: %s" % (what, timeout, " ".join(cmd)))
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
    return p.returncode, out, err


def run_json(cmd, timeout, what):
    """Run cmd; its last stdout line parsed as JSON, or CompareError."""
    rc, out, err = call(cmd, timeout, what)
    if rc != 0:
        raise CompareError("%s failed (exit %d): %s\n%s" % (what, rc, " ".join(cmd),
                                                            err.strip()[-800:]))
    try:
        return json.loads(out.strip().splitlines()[-1])
    except (ValueError, IndexError):
        raise CompareError("%s printed no JSON: %r" % (what, out[-300:]))


def nkv_bench(tools, what, args, want_cmds, timeout=300):
    j = run_json([tools["nkv-bench"], "--json", "--quiet", "--engine", "cpu"] + args, timeout, what)
    if j["unexpected"] or j["commands"] != want_cmds:
        raise CompareError("%s: %d commands (want %d), %d unexpected outcomes: %r" %
                           (what, j["commands"], want_cmds, j["unexpected"], j["errors"]))
    if abs(j["sq_doorbells_per_cmd"] * j["batch_size"] - 1.0) > 1e-9 and \
            j["keys"] % (j["batch_size"] * j["num_queues"]) == 0:
        raise CompareError("%s: %.6f SQ doorbells per command, want 1/%d" %
                           (what, j["sq_doorbells_per_cmd"], j["batch_size"]))
    return j


# ---- cpu part ------------------------------------------------------------

def cpu_plan(quick):
    return {"rtt_rounds": 2000 if quick else 500000, "b1_keys": 256 if quick else 4096,
            "b32_keys": 512 if quick else 8192, "iters": 1 if quick else 8,
            "sweep": {size_name(s): list(sweep_plan(s, quick)) for s in SWEEP}}


def sweep_plan(size, quick):
    """(keys, iterations, batch) of one sweep size: batches of 8 (one
    of 2 for 32 MiB in a quick run), ~0.2-1 s, at most 512 MiB stored."""
    if quick:
        return (8, 1, 8) if size <= 2 << 20 else (2, 1, 2)
    if size <= 64 << 10:
        return 1024, 4, 8
    return (128, 2, 8) if size <= 2 << 20 else (16, 2, 8)


def cpu_part(book, run, tools, cpus, plan, mode):
    a, b = cpus
    pin = ["--cpus", "%d,%d" % (a, b), "--memory-mode", mode]
    t = time.time()
    rtt = run_json([tools["pingpong"], "rtt", str(plan["rtt_rounds"]), str(a), str(b)], 120,
                   "pingpong rtt")
    book.add("cpu.pingpong.p50_ns", run, rtt["p50_ns"], "ns", "cache-line ping-pong round trip p50")
    book.add("cpu.pingpong.p99_ns", run, rtt["p99_ns"], "ns", "cache-line ping-pong round trip p99")
    say("run %d cpu pingpong rtt CPUs %d<->%d: p50 %d ns, p99 %d ns (%.1f s)" %
        (run + 1, a, b, rtt["p50_ns"], rtt["p99_ns"], time.time() - t))
    for cpu, key, where in ((a, "cpu.memcpy_4k", ""), (b, "cpu.memcpy_4k_target", " (target's CPU)")):
        t = time.time()
        mc = run_json([tools["pingpong"], "memcpy", "4096", str(cpu)], 120, "pingpong memcpy")
        book.add(key + ".blocks_per_s", run, mc["blocks_per_s"], "blocks/s",
                 "single-core memcpy of 4 KiB blocks" + where)
        book.add(key + ".ns", run, 1e9 / mc["blocks_per_s"], "ns",
                 "one 4 KiB memcpy" + where)
        say("run %d cpu memcpy 4 KiB on CPU %d: %.0f blocks/s (%.1f s)" %
            (run + 1, cpu, mc["blocks_per_s"], time.time() - t))
    # Issue 21's yardstick for a batch-1 Retrieve: three cache-line round
    # trips (doorbell + SQE there, CQE back) plus the value's copy.
    book.add("cpu.goal_retrieve_b1.ns", run,
             3 * rtt["p50_ns"] + book.fig["cpu.memcpy_4k_target.ns"]["runs"][run], "ns",
             "3 x ping-pong p50 + one 4 KiB memcpy (target's CPU)")
    for op, batch, keys in (("exist", 1, plan["b1_keys"]), ("retrieve", 1, plan["b1_keys"]),
                            ("retrieve", 32, plan["b32_keys"])):
        t = time.time()
        j = nkv_bench(tools, "nkv-bench %s batch %d" % (op, batch),
                      pin + ["--kv-op", op, "--batch-size", str(batch), "--num-keys", str(keys),
                             "--iterations", str(plan["iters"]), "--value-size", "4096",
                             "--no-verify"], keys * plan["iters"])
        key = "cpu.%s_b%d" % (op, batch)
        name = "%s batch %d%s" % (op.capitalize(), batch, " 4 KiB" if op == "retrieve" else "")
        if batch == 1:
            book.add(key + ".p50_ns", run, j["latency_ns"]["p50"], "ns", name + " round trip p50")
            book.add(key + ".p99_ns", run, j["latency_ns"]["p99"], "ns", name + " round trip p99")
        else:
            book.add(key + ".iops", run, j["iops"], "IOPS", name + " IOPS")
            book.add(key + ".target_ns", run, j["target_busy_ns_per_cmd"], "ns",
                     name + ": target poll thread's busy time per command")
        say("run %d cpu nkv-bench %s batch %d (device CPU %s, target CPU %s): %.0f IOPS, "
            "p50 %.0f ns, p99 %.0f ns (%.1f s)" % (run + 1, op, batch, j["cpus"]["device"],
                                                   j["cpus"]["target"], j["iops"],
                                                   j["latency_ns"]["p50"], j["latency_ns"]["p99"],
                                                   time.time() - t))


def cpu_sweep(book, run, tools, cpus, plan, mode):
    """Large values: the target's CPU time per command (the mem backend)
    beside one core's memcpy of the same size into a faulted-in
    destination, both on the target's CPU; one pass of each op first, not
    measured (--warmup 1), so a Store too lands in memory touched before."""
    a, b = cpus
    for size in SWEEP:
        n = size_name(size)
        keys, iters, batch = plan["sweep"][n]
        t = time.time()
        mc = run_json([tools["pingpong"], "memcpy", str(size), str(b)], 120, "pingpong memcpy")
        book.add("cpu.memcpy_%s_target.ns" % size_key(size), run, 1e9 / mc["blocks_per_s"], "ns",
                 "one %s memcpy (target's CPU)" % n)
        for op in ("store", "retrieve"):
            j = nkv_bench(tools, "nkv-bench %s %s" % (op, n),
                          ["--cpus", "%d,%d" % (a, b), "--memory-mode", mode, "--kv-op", op,
                           "--batch-size", str(batch), "--num-keys", str(keys), "--iterations",
                           str(iters), "--warmup", "1", "--value-size", str(size), "--no-verify"],
                          keys * iters)
            key = "cpu.sweep_%s.%s" % (size_key(size), op)
            book.add(key + ".target_ns", run, j["target_busy_ns_per_cmd"], "ns",
                     "%s %s batch %d: target poll thread's busy time per command" %
                     (op.capitalize(), n, batch))
            book.add(key + ".gbps", run, j["iops"] * size / 1e9, "GB/s",
                     "%s %s batch %d: values per second x size" % (op.capitalize(), n, batch))
        say("run %d cpu sweep %s: memcpy %.0f us, store and retrieve done (%.1f s)" %
            (run + 1, n, 1e6 / mc["blocks_per_s"], time.time() - t))


def cpu_ratios(book):
    for op in ("exist", "retrieve"):
        for p in ("p50", "p99"):
            book.ratio("cpu.%s_b1.%s_vs_pingpong" % (op, p),
                       "%s batch 1%s round trip %s / ping-pong %s" %
                       (op.capitalize(), " 4 KiB" if op == "retrieve" else "", p, p),
                       "cpu.%s_b1.%s_ns" % (op, p), "cpu.pingpong.%s_ns" % p, "cpu")
    book.ratio("cpu.retrieve_b1.p50_vs_goal",
               "Retrieve batch 1 4 KiB round trip p50 / (3 x ping-pong p50 + one 4 KiB memcpy)",
               "cpu.retrieve_b1.p50_ns", "cpu.goal_retrieve_b1.ns", "cpu")
    book.ratio("cpu.retrieve_b32.iops_vs_memcpy",
               "Retrieve batch 32 4 KiB IOPS / memcpy 4 KiB blocks/s",
               "cpu.retrieve_b32.iops", "cpu.memcpy_4k.blocks_per_s", "cpu")
    book.ratio("cpu.retrieve_b32.target_vs_memcpy",
               "Retrieve batch 32 4 KiB: target CPU time per command / one 4 KiB memcpy "
               "(target's CPU)",
               "cpu.retrieve_b32.target_ns", "cpu.memcpy_4k_target.ns", "cpu")
    for size in SWEEP:
        n = size_name(size)
        for op in ("store", "retrieve"):
            book.ratio("cpu.sweep_%s.%s.target_vs_memcpy" % (size_key(size), op),
                       "%s %s: target CPU time per command / one %s memcpy (target's CPU; "
                       "goal <= 1.43)" % (op.capitalize(), n, n),
                       "cpu.sweep_%s.%s.target_ns" % (size_key(size), op),
                       "cpu.memcpy_%s_target.ns" % size_key(size), "cpu")


def cpu_runs(book):
    """Each run's placement as the ping-pong shows it, and its goal ratios."""
    out, rat = [], book.ratios_json()
    for i, ns in enumerate(book.fig["cpu.pingpong.p50_ns"]["runs"]):
        r = {"run": i + 1, "pingpong_p50_ns": ns,
             "cores": "shared" if ns is not None and ns < SHARED_CORE_NS else "separate"}
        for name in CPU_GOALS:
            v = rat[name]["runs"][i] if name in rat else None
            r[name] = round(v, 3) if v is not None else None
        out.append(r)
    return out


# ---- rados part ----------------------------------------------------------

def rados_points(quick):
    """(size, batch, queue pairs) of the rados part: every depth at 4 KiB
    and 1 MiB, the sweep's large sizes at depth 8 (a quick run: 2 MiB)."""
    big = [s for s in SWEEP if s > 1 << 20 and (not quick or s <= 2 << 20)]
    return [(s, b, q) for s in SIZES for b, q in DEPTHS] + \
        [(s,) + SWEEP_DEPTH for s in big]


def rados_plan(size, batch, queues, quick):
    """(keys, iterations) of one point: ~0.3-1 s of work, bounded memory
    (the large sizes: 128 MiB, or one batch, per tool in the cluster's store)."""
    depth = batch * queues
    if size > 1 << 20:
        return (depth, 1) if quick else (max(depth, (128 << 20) // size), 2)
    if quick:
        return max(16, depth), 1
    if size >= 1 << 20:
        return (64, 2) if depth == 1 else (128, 2) if depth <= 8 else (256, 2)
    return (1024, 2) if depth == 1 else (2048, 3)


class Cluster:
    """A throwaway Ceph cluster and one nkv-target --backend rados on it."""

    def __init__(self, tools, memstore_mb):
        self.tools = tools
        self.dir = tempfile.mkdtemp(prefix="nkv-compare-")
        self.memstore_mb = memstore_mb
        self.started = False
        self.target = None
        self.sock = os.path.join(self.dir, "nkv.sock")
        self.conf = os.path.join(self.dir, "ceph", "ceph.conf")

    def start(self):
        t = time.time()
        env = dict(os.environ, NKV_CEPH_MEMSTORE_MB=str(self.memstore_mb))
        self.started = True
        rc, out, err = call([os.path.join(ROOT, "scripts", "ceph-dev-cluster.sh"), "start",
                             os.path.join(self.dir, "ceph")], 120, "ceph-dev-cluster.sh start",
                            env=env)
        if rc != 0:
            raise CompareError("the dev cluster did not start:\n" + (err + out)[-1500:])
        say("rados cluster up in %s (%.1f s)" % (self.dir, time.time() - t))
        log = open(os.path.join(self.dir, "nkv-target.log"), "w")
        self.target = spawn(
            [self.tools["nkv-target"], "--socket", self.sock, "--backend", "rados",
             "--conf", self.conf, "--pool", "kvpool", "--ns-map", "1=cmp_nkv",
             "--log-level", "warn"], stdout=log, stderr=subprocess.STDOUT)
        log.close()
        for _ in range(200):
            if os.path.exists(self.sock):
                return
            if self.target.poll() is not None:
                raise CompareError("nkv-target exited (%d): %s" % (self.target.returncode,
                                                                   self.log_tail()))
            time.sleep(0.05)
        raise CompareError("nkv-target did not create its socket in 10 s: " + self.log_tail())

    def log_tail(self):
        try:
            with open(os.path.join(self.dir, "nkv-target.log")) as f:
                return f.read()[-600:]
        except OSError:
            return ""

    def alive(self):
        if self.target.poll() is not None:
            raise CompareError("nkv-target died during the run (%d): %s" %
                               (self.target.returncode, self.log_tail()))

    def stop(self):
        """Everything this object started, by its own handles; then the dir."""
        if self.target and self.target.poll() is None:
            self.target.terminate()
            try:
                self.target.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.target.kill()
                self.target.wait()
        if self.started:
            subprocess.run([os.path.join(ROOT, "scripts", "ceph-dev-cluster.sh"), "stop",
                            os.path.join(self.dir, "ceph")], capture_output=True, timeout=60)
            say("rados cluster in %s stopped" % self.dir)
        shutil.rmtree(self.dir, ignore_errors=True)


def loop_point(tools, cl, op, size, batch, queues, keys, iters, via="librados"):
    """rados_loop --batch; two queue pairs = two processes at once, each
    in its own RADOS namespace (nkv's waves take disjoint keys too).
    via="backend": through nkv-target's RADOS backend, in namespaces of
    its own. Writes --prefill: every object written once first, untimed,
    as nkv-bench's --fill once stores its keys, so both time overwrites."""
    ops = keys * iters // queues
    procs = []
    for q in range(queues):
        ns = "cmp_%s%d_%d" % ("loop" if via == "librados" else "be", queues, q)
        cmd = [tools["rados_loop"], "-c", cl.conf, "-p", "kvpool", "-N", ns, "--op", op,
               "--size", str(size), "--inflight", str(batch), "--ops", str(ops),
               "--objects", str(keys // queues), "--batch", "--via", via, "--json"] + \
            (["--prefill"] if op == "write" else [])
        procs.append((cmd, spawn(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)))
    res = []
    try:
        for cmd, p in procs:
            out, err = p.communicate(timeout=300)
            if p.returncode != 0:
                raise CompareError("rados_loop failed (exit %d): %s\n%s" %
                                   (p.returncode, " ".join(cmd), err.strip()[-600:]))
            res.append(json.loads(out.strip().splitlines()[-1]))
    finally:
        for _, p in procs:
            if p.poll() is None:
                p.kill()
                p.wait()
    total = sum(r["ops"] for r in res)
    wall = max(r["wall_ns"] for r in res)
    return total * 1e9 / wall, statistics.mean(r["latency_ns"]["p50"] for r in res) / 1e3


def rados_part(book, run, tools, cl, quick):
    for size, batch, queues in rados_points(quick):
        keys, iters = rados_plan(size, batch, queues, quick)
        d = depth_name(batch, queues)
        base = point_key(size, batch, queues)
        common = ["--target", "vfio-user:" + cl.sock, "--value-size", str(size),
                  "--batch-size", str(batch), "--num-queues", str(queues), "--num-keys",
                  str(keys), "--iterations", str(iters),
                  "--timeout-ms", "60000", "--poll-sched", "idle"]
        where = "%s depth %s" % (size_name(size), d)
        for op, lop in (("store", "write"), ("retrieve", "read")):
            for tool, verify in (("nkv", False), ("loop", False), ("backend", False)) + \
                    ((("nkv_verify", True),) if op == "retrieve" else ()):
                t = time.time()
                if tool in ("loop", "backend"):
                    via = "librados" if tool == "loop" else "backend"
                    iops, p50 = loop_point(tools, cl, lop, size, batch, queues, keys, iters,
                                           via)
                    name = "rados_loop --batch %s%s" % (lop, " --via backend"
                                                        if tool == "backend" else "")
                else:
                    # --fill once: a Store sends its slot as rados_loop sends
                    # its buffer, filled once, not a pattern written per command;
                    # its keys may then hold other keys' patterns, so the
                    # Retrieves (--verify too) read keys of their own.
                    fill = ["--fill", "once", "--key-prefix", "c%ds-" % size] \
                        if op == "store" else ["--key-prefix", "c%d-" % size]
                    j = nkv_bench(tools, "nkv-bench %s %s" % (op, where),
                                  common + fill + ["--kv-op", op,
                                                   "--verify" if verify else "--no-verify"],
                                  keys * iters)
                    iops, p50 = j["iops"], j["latency_ns"]["p50"] / 1e3
                    name = "nkv %s%s" % (op, " --verify" if verify else " --no-verify")
                cl.alive()
                label = "%s %s, %s" % (op.capitalize(), where, name)
                book.add("%s.%s.%s.iops" % (base, op, tool), run, iops, "IOPS", label + " IOPS")
                book.add("%s.%s.%s.p50_us" % (base, op, tool), run, p50, "us", label + " p50")
                say("run %d rados %s: %.0f IOPS, p50 %.0f us (%d ops, %.1f s)" %
                    (run + 1, label, iops, p50, keys * iters, time.time() - t))


def rados_ratios(book, quick):
    for size, batch, queues in rados_points(quick):
        d = depth_name(batch, queues)
        base = point_key(size, batch, queues)
        for op in ("store", "retrieve"):
            where = "%s %s depth %s" % (op.capitalize(), size_name(size), d)
            for tool, what in (("nkv", "nkv --no-verify"), ("nkv_verify", "nkv --verify")):
                if tool == "nkv_verify" and op == "store":
                    continue
                book.ratio("%s.%s.%s.iops_vs_loop" % (base, op, tool),
                           "%s IOPS, %s / rados_loop --batch" % (where, what),
                           "%s.%s.%s.iops" % (base, op, tool), "%s.%s.loop.iops" % (base, op),
                           "rados")
            # The gap in two: nkv-target's backend alone against
            # librados, and nkv against that backend alone (the hop).
            book.ratio("%s.%s.backend.iops_vs_loop" % (base, op),
                       "%s IOPS, the backend alone / rados_loop --batch" % where,
                       "%s.%s.backend.iops" % (base, op), "%s.%s.loop.iops" % (base, op),
                       "rados")
            book.ratio("%s.%s.nkv.iops_vs_backend" % (base, op),
                       "%s IOPS, nkv --no-verify / the backend alone" % where,
                       "%s.%s.nkv.iops" % (base, op), "%s.%s.backend.iops" % (base, op),
                       "rados")
            book.ratio("%s.%s.nkv.p50_vs_loop" % (base, op),
                       "%s p50 latency, nkv --no-verify / rados_loop --batch" % where,
                       "%s.%s.nkv.p50_us" % (base, op), "%s.%s.loop.p50_us" % (base, op),
                       "rados")


# ---- rocksdb part --------------------------------------------------------

# (size, batch): the 4 KiB and 2 MiB, and the KV-cache block
# range's ends (64 KiB, 32 MiB)
ROCKS_POINTS = ((4096, 32), (64 << 10, 32), (2 << 20, 8), (32 << 20, 2))
ROCKS_SYNCS = ("always", "none")


def rocks_plan(size, quick):
    """(keys, iterations) of one rocksdb point: ~0.2-1 s at sync always."""
    if quick:
        return (64, 1) if size < 1 << 20 else (8, 1) if size < 16 << 20 else (2, 1)
    return (2048, 2) if size < 1 << 20 else (64, 1) if size < 16 << 20 else (16, 1)


class RocksTargets:
    """nkv-target --backend rocksdb per sync policy and --backend mem, each
    on its own socket, databases in one temp dir (the same disk as
    rocks_loop's). One runs at a time, started afresh for each
    measurement, as rocks_loop opens its database afresh for each: a
    RocksDB opened again has replayed and flushed its log, so both read
    from the same places (a long-lived target's memtable held other
    points' values, and 2 MiB Retrieves met blob files the loop's did not).
    """

    def __init__(self, tools):
        self.tools = tools
        self.dir = tempfile.mkdtemp(prefix="nkv-compare-rocks-")
        self.cur = None     # (name, Popen) of the one running

    def fresh(self, name):
        """Stop the running target, start target name; its socket."""
        self.stop_one()
        sock = os.path.join(self.dir, name + ".sock")
        if os.path.exists(sock):
            os.unlink(sock)
        be = ["--backend", "mem"] if name == "mem" else \
            ["--backend", "rocksdb", "--db", os.path.join(self.dir, "nkv-" + name),
             "--sync", name]
        with open(os.path.join(self.dir, name + ".log"), "a") as log:
            # 8 GiB: the rocksdb databases keep every point's keys
            # (Retrieves take fresh ones each run), ~1.2 GiB a run
            p = spawn([self.tools["nkv-target"], "--socket", sock, "--capacity", str(8 << 30),
                       "--log-level", "warn"] + be, stdout=log, stderr=subprocess.STDOUT)
        self.cur = (name, p)
        for _ in range(600):
            if os.path.exists(sock):
                return sock
            if p.poll() is not None:
                raise CompareError("nkv-target %s exited (%d): %s" %
                                   (name, p.returncode, self.log_tail(name)))
            time.sleep(0.05)
        raise CompareError("nkv-target %s made no socket in 30 s" % name)

    def log_tail(self, name):
        try:
            with open(os.path.join(self.dir, name + ".log")) as f:
                return f.read()[-600:]
        except OSError:
            return ""

    def check(self):
        """The running target survived its measurement."""
        name, p = self.cur
        if p.poll() is not None:
            raise CompareError("nkv-target %s died during the run (%d): %s" %
                               (name, p.returncode, self.log_tail(name)))

    def stop_one(self):
        if self.cur and self.cur[1].poll() is None:
            self.cur[1].terminate()
            try:
                self.cur[1].wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.cur[1].kill()
                self.cur[1].wait()
        self.cur = None

    def stop(self):
        self.stop_one()
        shutil.rmtree(self.dir, ignore_errors=True)


def rocks_key(size, sync, op, tool):
    return "rocksdb.%s.%s.%s.%s" % (size_key(size), sync, op, tool)


def rocks_part(book, run, tools, rt, quick):
    """Per point, the tools one after another (interleaved across runs)."""
    for size, batch in ROCKS_POINTS:
        keys, iters = rocks_plan(size, quick)
        where = "%s batch %d" % (size_name(size), batch)
        for op, lop in (("store", "put"), ("retrieve", "get")):
            for sync in ROCKS_SYNCS:
                for tool in ("nkv", "loop", "backend") + (("mem",) if sync == "always" else ()):
                    t = time.time()
                    if tool in ("loop", "backend"):
                        via = "rocksdb" if tool == "loop" else "backend"
                        j = run_json([tools["rocks_loop"], "--db",
                                      os.path.join(rt.dir, "%s-%s" % (tool, sync)),
                                      "--op", lop, "--size", str(size), "--batch", str(batch),
                                      "--keys", str(keys), "--iters", str(iters), "--sync", sync,
                                      "--via", via] + (["--prefill"] if lop == "put" else []),
                                     300, "rocks_loop %s %s --via %s" % (lop, where, via))
                        name = "rocks_loop %s --sync %s%s" % (lop, sync, " --via backend"
                                                             if tool == "backend" else "")
                    else:
                        # Retrieves: keys new to the run, so nkv-bench stores
                        # them first as rocks_loop stores its own (a key left
                        # by a run before sits in an SST file of the reopened
                        # database, where the loop's are in its memtable).
                        fill = ["--fill", "once", "--key-prefix", "r%ds-" % size] \
                            if op == "store" else ["--key-prefix", "r%d-%d-" % (size, run)]
                        sock = rt.fresh(sync if tool == "nkv" else "mem")
                        j = nkv_bench(tools, "nkv-bench %s %s" % (op, where),
                                      ["--target", "vfio-user:" + sock,
                                       "--value-size", str(size), "--batch-size", str(batch),
                                       "--num-keys", str(keys), "--iterations", str(iters),
                                       "--timeout-ms", "60000", "--poll-sched", "idle",
                                       "--kv-op", op, "--no-verify"] + fill, keys * iters)
                        rt.check()
                        name = "nkv %s, backend %s" % (op, "rocksdb --sync " + sync
                                                       if tool == "nkv" else "mem")
                    k = rocks_key(size, sync if tool != "mem" else "-", op, tool)
                    label = "%s %s, %s" % (op.capitalize(), where, name)
                    book.add(k + ".iops", run, j["iops"], "IOPS", label + " IOPS")
                    book.add(k + ".p50_us", run, j["latency_ns"]["p50"] / 1e3, "us", label + " p50")
                    say("run %d rocksdb %s: %.0f IOPS (%.1f s)" % (run + 1, label, j["iops"],
                                                                   time.time() - t))


def rocks_ratios(book):
    for size, batch in ROCKS_POINTS:
        for op in ("store", "retrieve"):
            where = "%s %s batch %d" % (op.capitalize(), size_name(size), batch)
            for sync in ROCKS_SYNCS:
                book.ratio(rocks_key(size, sync, op, "nkv") + ".iops_vs_loop",
                           "%s IOPS --sync %s, nkv / rocks_loop (goal >= 0.9)" % (where, sync),
                           rocks_key(size, sync, op, "nkv") + ".iops",
                           rocks_key(size, sync, op, "loop") + ".iops", "rocksdb")
                # The gap in two: the backend alone against RocksDB, and
                # nkv against the backend alone (the NVMe-KV hop).
                book.ratio(rocks_key(size, sync, op, "backend") + ".iops_vs_loop",
                           "%s IOPS --sync %s, the backend alone / rocks_loop" % (where, sync),
                           rocks_key(size, sync, op, "backend") + ".iops",
                           rocks_key(size, sync, op, "loop") + ".iops", "rocksdb")
                book.ratio(rocks_key(size, sync, op, "nkv") + ".iops_vs_backend",
                           "%s IOPS --sync %s, nkv / the backend alone" % (where, sync),
                           rocks_key(size, sync, op, "nkv") + ".iops",
                           rocks_key(size, sync, op, "backend") + ".iops", "rocksdb")
                book.ratio(rocks_key(size, sync, op, "nkv") + ".iops_vs_mem",
                           "%s IOPS --sync %s, nkv rocksdb / nkv mem" % (where, sync),
                           rocks_key(size, sync, op, "nkv") + ".iops",
                           rocks_key(size, "-", op, "mem") + ".iops", "rocksdb")


# ---- the machine ---------------------------------------------------------

def machine(note, load_start):
    model, hyper = "unknown", False
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name") and model == "unknown":
                    model = line.split(":", 1)[1].strip()
                if line.startswith("flags") and " hypervisor" in line:
                    hyper = True
    except OSError:
        pass
    mem = None
    try:
        with open("/proc/meminfo") as f:
            mem = int(f.readline().split()[1]) >> 20
    except (OSError, ValueError, IndexError):
        pass
    return {"cpu_model": model, "cores": os.cpu_count(),
            "cpus_allowed": sorted(os.sched_getaffinity(0)), "virtual_machine": hyper,
            "memory_gib": mem, "kernel": platform.release(), "python": platform.python_version(),
            "load_avg_start": load_start, "load_avg_end": list(os.getloadavg()), "note": note}


def ceph_version():
    try:
        p = subprocess.run(["ceph-osd", "--version"], capture_output=True, text=True, timeout=10)
        return p.stdout.strip().split(" (")[0].replace("ceph version ", "")
    except (OSError, subprocess.TimeoutExpired):
        return None


def missing_ceph():
    return [t for t in CEPH_TOOLS if not shutil.which(t)]


# ---- output --------------------------------------------------------------

def dump_json(res, path):
    """Indented at the top, one line per figure and per ratio: compact."""
    lines = ["{"]
    keys = list(res)
    for i, k in enumerate(keys):
        end = "," if i < len(keys) - 1 else ""
        v = res[k]
        if k in ("figures", "ratios") and v:
            lines.append(" %s: {" % json.dumps(k))
            sub = list(v.items())
            for n, (k2, v2) in enumerate(sub):
                lines.append("  %s: %s%s" % (json.dumps(k2), json.dumps(v2, separators=(",", ":")),
                                             "," if n < len(sub) - 1 else ""))
            lines.append(" }" + end)
        else:
            lines.append(" %s: %s%s" % (json.dumps(k), json.dumps(v), end))
    lines.append("}")
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n")


READING = {
    "cpu": "Latency ratios: nkv's round trip over the ping-pong's (how many cache-line round "
           "trips one command costs). IOPS ratio: commands per second over 4 KiB memcpy blocks "
           "per second of one core (1 = as fast as copying the value). The value-size sweep "
           "(64 KiB, 2 MiB, 32 MiB; mem backend; after one pass not measured, --warmup 1): "
           "the target's CPU time per command over one memcpy of the value on the target's "
           "CPU into memory touched before (1 = the target costs one copy; issue 30's goal "
           "is <= 1.43, 70 %% of the copy bound).",
    "rados": "Ratios nkv / rados_loop --batch: IOPS above 1 and latency below 1 favour nkv. "
             "nkv-bench and rados_loop both issue a batch of N, wait for all N, then the next; "
             "a batch's time is each of its commands' latency. nkv-bench polls at SCHED_IDLE "
             "(--poll-sched idle): a busy poller that gives way to the OSD at once, as a GPU's "
             "polling would not take the OSD's cores at all. Two queue pairs of 32: nkv-bench "
             "--num-queues 2, and two rados_loop processes at once (IOPS summed over the longer "
             "wall time, p50 the mean of the two). Stores send buffers filled once on both sides "
             "(nkv-bench --fill once, as rados_loop fills its buffers at start). The backend alone: rados_loop --via backend "
             "drives nkv-target's RADOS backend in its own process, with no queue pair, "
             "transport or polling thread: the backend / rados_loop row is what the backend's "
             "own librados calls cost, the nkv / backend row what the NVMe-KV hop costs.",
    "rocksdb": "Ratios nkv / rocks_loop: IOPS above 1 favour nkv (issue 34's goal: >= 0.9). "
               "nkv-bench (cpu engine, --poll-sched idle, --no-verify, Stores --fill once) "
               "sends a batch of N to nkv-target over vfio-user and waits for all N; "
               "rocks_loop writes N Puts as one WriteBatch with the same sync (the backend's "
               "group commit at its best: one sync per batch) and reads N Gets one by one. "
               "Both put every key once before the timed Stores (nkv-bench --fill once, "
               "rocks_loop --prefill), so both time overwrites after the same untimed writes. "
               "The backend also puts a 16-byte meta record in front of each value, and "
               "beside it in its meta family for a TTL'd key or a value of 64 KiB or more "
               "(format 2: it reads nothing before a Store, its key index knows the old "
               "size), which the loop does not. It serves Retrieves of 64 KiB or more on "
               "its 2 read threads (a batch's large reads side by side), where the loop "
               "reads on one. The backend alone: rocks_loop --via backend drives "
               "nkv-target's rocksdb backend in its own process, with no queue pair, "
               "transport or poll thread: the backend / rocks_loop row is what the backend "
               "adds to RocksDB, the nkv / backend row what the NVMe-KV hop costs. All "
               "databases in one temp dir (one disk), compression none, BlobDB from 64 KiB. "
               "The mem rows: the same nkv-bench against --backend mem (sync does not "
               "apply)."}


def rados_matrix(res):
    """IOPS and p50 ratios, op x size down, depth across: the summary."""
    out = []
    for what, tool, unit in (("IOPS, nkv --no-verify / rados_loop --batch", "nkv", "iops_vs_loop"),
                             ("IOPS, nkv --verify / rados_loop --batch", "nkv_verify",
                              "iops_vs_loop"),
                             ("IOPS, the backend alone / rados_loop --batch", "backend",
                              "iops_vs_loop"),
                             ("IOPS, nkv --no-verify / the backend alone", "nkv",
                              "iops_vs_backend"),
                             ("p50 latency, nkv --no-verify / rados_loop --batch", "nkv",
                              "p50_vs_loop")):
        out += ["", "| %s | %s |" % (what, " | ".join("depth " + depth_name(b, q) for b, q in DEPTHS)),
                "|---|" + "---|" * len(DEPTHS)]
        for size in sorted({p[0] for p in rados_points(res["quick"])}):
            for op in ("store", "retrieve"):
                if tool == "nkv_verify" and op == "store":
                    continue
                cells = []
                for b, q in DEPTHS:
                    r = res["ratios"].get("%s.%s.%s.%s" % (point_key(size, b, q), op, tool, unit))
                    cells.append(spread(r, "x") if r else "-")
                out.append("| %s %s | %s |" % (op.capitalize(), size_name(size), " | ".join(cells)))
    return out


def cpu_runs_line(runs):
    """One sentence: each run's placement and its goal ratios."""
    each = []
    for r in runs:
        ratios = ", ".join("%.2fx" % r[n] if r.get(n) is not None else "-" for n in CPU_GOALS)
        where = "one core" if r["cores"] == "shared" else "separate cores"
        each.append("run %d %s (%s ns): %s" % (r["run"], where, r["pingpong_p50_ns"], ratios))
    return ("Placement by run, from the ping-pong (below %d ns the two CPUs are hyperthreads "
            "of one core, which a virtual machine's topology does not show; issue 21's goals "
            "assume separate cores), with the goal ratios Exist / ping-pong, Retrieve / "
            "(3 ping-pongs + memcpy), batch-32 target time / memcpy: %s." %
            (SHARED_CORE_NS, "; ".join(each)))


def table(res):
    figs, m = res["figures"], res["machine"]
    out = ["# nkv beside its references (bench/compare.py)", "",
           "Machine: %s, %d cores (%s), kernel %s%s. %s" %
           (m["cpu_model"], m["cores"], "a virtual machine" if m["virtual_machine"] else "bare metal",
            m["kernel"], ", Ceph " + res["ceph_version"] if res.get("ceph_version") else "",
            m["note"]),
           "Load average at start %.2f, at end %.2f. %s, %d run%s; each figure is the median "
           "of the runs with the spread (min-max) in brackets; ratios are taken within each "
           "run, then summarized." % (m["load_avg_start"][0], m["load_avg_end"][0], res["when"],
                                      res["runs"], "s" if res["runs"] > 1 else ""), ""]
    for part in ("cpu", "rados", "rocksdb"):
        st = res["parts"].get(part)
        if st is None:
            continue
        out.append("## %s part: %s" % (part, st["status"] if st["status"] != "ran" else
                                       st["placement"]))
        if st["status"] != "ran":
            out.append("")
            out.append("SKIPPED: " + st["why"])
            out.append("")
            continue
        out.append("")
        out.append(READING[part])
        if part == "cpu":
            out += ["", cpu_runs_line(st["runs"])]
        if part == "rados":
            out += ["", "The cluster: one OSD on a memstore of %d MiB (--memstore-mb); the "
                    "large values at depth %s." % (res["memstore_mb"],
                                                   depth_name(*SWEEP_DEPTH))]
            out += rados_matrix(res)
        out += ["", "| figure | nkv | reference | nkv / reference |", "|---|---|---|---|"]
        for name, r in res["ratios"].items():
            if r["part"] != part:
                continue
            a, b = figs[r["nkv"]], figs[r["reference"]]
            out.append("| %s | %s | %s | %s |" % (r["label"], spread(a, a["unit"]),
                                                  spread(b, b["unit"]), spread(r, "x")))
        out.append("")
    return "\n".join(out) + "\n"


def plot(res, out_dir):
    """Ratios nkv / reference with their spread: cpu part left, rados right."""
    gp = shutil.which("gnuplot")
    if not gp:
        say("SKIP plot: gnuplot not found (scripts/install-deps.sh installs gnuplot-nox)")
        return None
    tmp = tempfile.mkdtemp(prefix="nkv-compare-plot-")
    try:
        return plot_in(res, gp, os.path.join(tmp, "compare.dat"), os.path.join(out_dir, "compare.png"))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def plot_in(res, gp, dat, png):
    rat = res["ratios"]
    with open(dat, "w") as f:
        f.write("# cpu ratios: index label median min max\n")
        cpu = [r for r in rat.values() if r["part"] == "cpu" and r["median"] is not None]
        for i, r in enumerate(cpu):
            short = r["label"].split(" / ")[0].replace(" round trip", "").replace("Retrieve", "Retr")
            f.write('%d "%s" %g %g %g\n' % (i, short, r["median"], r["min"], r["max"]))
        f.write("\n\n# rados IOPS ratios: depth-index median min max, one block per op/size\n")
        blocks = []
        for size in sorted({p[0] for p in rados_points(res["quick"])}):
            for op in ("store", "retrieve"):
                rows = []
                for i, (b, q) in enumerate(DEPTHS):
                    key = "%s.%s.nkv.iops_vs_loop" % (point_key(size, b, q), op)
                    r = rat.get(key)
                    if r and r["median"] is not None:
                        rows.append("%d %g %g %g" % (i, r["median"], r["min"], r["max"]))
                if rows:
                    blocks.append("%s %s" % (op.capitalize(), size_name(size)))
                    f.write("\n".join(rows) + "\n\n\n")
    head = """set terminal pngcairo size 1200,560 font ",10" noenhanced
set output '%s'
set multiplot layout 1,2 title "nkv / reference, median and min-max of %d run(s): %s, %d cores"
set style fill solid 0.5
set grid ytics
set ylabel 'ratio nkv / reference (log scale)'
set logscale y
set yrange [*:*]
set xtics rotate by -30
set xrange [-0.5:%g]
set bmargin 7
set title 'cpu engine: round trip / ping-pong, IOPS / memcpy'
plot '%s' index 0 using 1:3:4:5:xtic(2) with yerrorbars lw 2 pt 7 ps 1.5 notitle, 1 with lines dt 2 lc rgb 'gray' title 'parity'
unset logscale y
set yrange [0:*]
set ylabel 'ratio nkv / reference'
""" % (png, res["runs"], res["machine"]["cpu_model"][:40], res["machine"]["cores"],
       max(len(cpu), 1) - 0.5, dat)
    if blocks:
        xt = ", ".join('"%s" %d' % (depth_name(b, q), i) for i, (b, q) in enumerate(DEPTHS))
        curves = ", ".join("'%s' index %d using ($1+%.2f):2:3:4 with yerrorlines lw 2 title '%s'" %
                           (dat, n + 1, 0.06 * n, t) for n, t in enumerate(blocks))
        head += """set title 'rados backend: IOPS, nkv --no-verify / rados_loop --batch'
set xtics norotate (%s)
set xlabel 'batch depth (queue pairs x batch)'
set xrange [-0.5:%d]
set bmargin 4
set key top right
plot %s, 1 with lines dt 2 lc rgb 'gray' title 'parity'
""" % (xt, len(DEPTHS), curves)
    else:
        head += "set title 'rados part skipped'\nunset xtics\nplot [0:1] [0:1] 0 notitle\n"
    head += "unset multiplot\n"
    p = subprocess.run([gp], input=head, text=True, capture_output=True, timeout=60)
    if p.returncode != 0:
        p = subprocess.run([gp], input=head.replace("pngcairo", "png"), text=True,
                           capture_output=True, timeout=60)
    if p.returncode != 0:
        say("plot failed: " + p.stderr.strip()[-400:])
        return None
    return png


# ---- main ----------------------------------------------------------------

def parse_cpus(text, allowed):
    try:
        cpus = [int(x) for x in text.split(",")]
    except ValueError:
        cpus = []
    if len(cpus) != 2:
        raise argparse.ArgumentTypeError("--cpus %s: expected A,B (two CPU numbers)" % text)
    bad = [c for c in cpus if c not in allowed]
    if bad:
        raise argparse.ArgumentTypeError("--cpus %s: CPU %d is not one this process may run on "
                                         "(allowed: %s)" % (text, bad[0], allowed))
    return cpus


def args_parse(argv):
    ap = argparse.ArgumentParser(prog="bench/compare.py",
                                 description=__doc__.splitlines()[0],
                                 epilog="Writes OUT/compare.{json,md,png}; exit 0 done, "
                                        "1 a measurement failed, 2 bad arguments, "
                                        "130 interrupted.")
    ap.add_argument("--build", default="build", help="build root (default build)")
    ap.add_argument("--out", help="results directory (default bench/results; --quick needs one)")
    ap.add_argument("--runs", type=int, default=3, help="runs per figure (default 3)")
    ap.add_argument("--quick", action="store_true",
                    help="CI: tiny counts, one run; a check that it runs, never a speed")
    ap.add_argument("--cpus", default=None,
                    help="A,B: device code / ping-pong thread 1 / memcpy on A, target / "
                         "ping-pong thread 2 / memcpy on B (default: the first two allowed CPUs)")
    ap.add_argument("--memory-mode", default="8", help="nkv-bench memory mode, cpu part (default 8)")
    ap.add_argument("--parts", default="cpu,rados,rocksdb",
                    help="the parts to run, comma-separated (default cpu,rados,rocksdb)")
    ap.add_argument("--memstore-mb", type=int, default=4096,
                    help="the dev cluster's memstore size (default 4096)")
    ap.add_argument("--note", default="A shared machine: other work may have run beside "
                                      "the measurement (see the load averages).",
                    help="what to say about the machine")
    a = ap.parse_args(argv)
    if a.quick:
        if a.out is None:
            ap.error("--quick writes to --out DIR; give one (not bench/results)")
        a.runs = 1
    if a.runs < 1 or a.runs > 50:
        ap.error("--runs %d: expected 1..50" % a.runs)
    if not re.fullmatch(r"(0[xX])?[0-9a-fA-F]", a.memory_mode):
        ap.error("--memory-mode %s: expected a hex mask 0-f, 0x optional (nkv-bench --help)" %
                 a.memory_mode)
    a.parts = a.parts.split(",")
    if not a.parts or any(x not in ("cpu", "rados", "rocksdb") for x in a.parts):
        ap.error("--parts %s: expected some of cpu,rados,rocksdb" % ",".join(a.parts))
    if a.memstore_mb < 256:
        ap.error("--memstore-mb %d: expected 256 or more" % a.memstore_mb)
    allowed = sorted(os.sched_getaffinity(0))
    try:
        a.cpus = parse_cpus(a.cpus, allowed) if a.cpus else (allowed[:2] * 2)[:2]
    except argparse.ArgumentTypeError as e:
        ap.error(str(e))
    a.out = a.out or os.path.join(ROOT, "bench", "results")
    return a


def tools_of(build):
    t = {"nkv-bench": os.path.join(build, "bin", "nkv-bench"),
         "nkv-target": os.path.join(build, "bin", "nkv-target"),
         "pingpong": os.path.join(build, "bench", "pingpong"),
         "rados_loop": os.path.join(build, "bench", "rados_loop"),
         "rocks_loop": os.path.join(build, "bench", "rocks_loop")}
    gone = [p for p in t.values() if not os.access(p, os.X_OK)]
    if gone:
        raise CompareError("%s missing: make BUILD=%s bench-compare builds them" %
                           (", ".join(gone), build))
    return t


def on_term(signum, frame):
    raise KeyboardInterrupt


def main(argv):
    a = args_parse(argv)
    signal.signal(signal.SIGTERM, on_term)
    t0, load0 = time.time(), list(os.getloadavg())
    cl = rt = None
    try:
        tools = tools_of(a.build)
        os.makedirs(a.out, exist_ok=True)
        book = Book(a.runs)
        gone = missing_ceph()
        parts = {"cpu": {"status": "ran", "placement":
                         "device code, ping-pong thread 1 and memcpy on CPU %d; embedded target, "
                         "ping-pong thread 2 and memcpy on CPU %d" % tuple(a.cpus)}}
        if "rados" not in a.parts:
            gone = ["(not asked)"]
            parts["rados"] = {"status": "skipped", "why": "not in --parts"}
        elif gone:
            why = "%s not found in PATH (scripts/install-deps.sh installs Ceph)" % ", ".join(gone)
            parts["rados"] = {"status": "skipped", "why": why}
            say("SKIP rados part: " + why)
        else:
            parts["rados"] = {"status": "ran", "placement":
                              "unpinned: nkv-bench, nkv-target, rados_loop, the monitor and "
                              "the OSD share every core"}
        say("machine %s, %d cores; %s" % (machine("", load0)["cpu_model"], os.cpu_count(),
                                          parts["cpu"]["placement"]))
        if "cpu" not in a.parts:
            parts["cpu"] = {"status": "skipped", "why": "not in --parts"}
        parts["rocksdb"] = {"status": "skipped", "why": "not in --parts"} \
            if "rocksdb" not in a.parts else {"status": "ran", "placement":
                            "unpinned: nkv-bench, nkv-target (rocksdb, mem) and rocks_loop "
                            "share every core; databases in %s" % tempfile.gettempdir()}
        cplan = cpu_plan(a.quick)
        if not gone:
            cl = Cluster(tools, a.memstore_mb)
            cl.start()
        if "rocksdb" in a.parts:
            rt = RocksTargets(tools)
        for run in range(a.runs):
            if "cpu" in a.parts:
                cpu_part(book, run, tools, a.cpus, cplan, a.memory_mode)
                cpu_sweep(book, run, tools, a.cpus, cplan, a.memory_mode)
            if cl:
                rados_part(book, run, tools, cl, a.quick)
            if rt:
                rocks_part(book, run, tools, rt, a.quick)
        if "cpu" in a.parts:
            cpu_ratios(book)
            parts["cpu"]["runs"] = cpu_runs(book)
        if cl:
            rados_ratios(book, a.quick)
        if rt:
            rocks_ratios(book)
    except CompareError as e:
        say("FAILED: %s" % e)
        return 1
    except KeyboardInterrupt:
        say("interrupted")
        return 130
    finally:
        if cl:
            # A second Ctrl-C must not cut the cleanup short.
            signal.signal(signal.SIGINT, signal.SIG_IGN)
            signal.signal(signal.SIGTERM, signal.SIG_IGN)
            cl.stop()
        if rt:
            rt.stop()
    m = machine(a.note, load0)
    res = {"schema": SCHEMA, "when": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
           "quick": a.quick, "runs": a.runs, "seconds": round(time.time() - t0, 1),
           "machine": m, "ceph_version": ceph_version() if not gone else None,
           "cpus": a.cpus, "memory_mode": a.memory_mode, "memstore_mb": a.memstore_mb,
           "parts": parts,
           "plan": {"cpu": cplan, "rados": {"%s %s" % (size_name(s), depth_name(b, q)):
                                            list(rados_plan(s, b, q, a.quick))
                                            for s, b, q in rados_points(a.quick)},
                    "rocksdb": {"%s batch %d" % (size_name(s), b): list(rocks_plan(s, a.quick))
                                for s, b in ROCKS_POINTS}},
           "figures": book.figures_json(), "ratios": book.ratios_json()}
    dump_json(res, os.path.join(a.out, "compare.json"))
    md = table(res)
    png = plot(res, a.out)
    if png:
        md += "\n![nkv / reference ratios](compare.png)\n"
    with open(os.path.join(a.out, "compare.md"), "w") as f:
        f.write(md)
    print(md, end="")
    say("wrote %s/compare.{json,md%s} in %.0f s" % (a.out, ",png" if png else "", time.time() - t0))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
