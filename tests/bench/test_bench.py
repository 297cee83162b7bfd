#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""nkv-bench end to end: every op and several memory modes against the
embedded target and against a separately started nkv-target (mapped
doorbells and, with --no-sparse-mmap, the forwarder), --verify on, the
--json output parsed and checked (counts, zero errors, SQ doorbells = one
per batch, i.e. 1/B per command); bad flags give exit 2 and a reason;
a wrong value pattern is caught (exit 1); no target, or one that stops
answering, exits 3.

Prints one line per check: "NKV-BENCH <name> PASS|FAIL [why]" and a
summary. Every subprocess has a timeout; the targets it starts are
stopped by PID. usage: tests/bench/test_bench.py [BUILD_DIR]
"""
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

BUILD = sys.argv[1] if len(sys.argv) > 1 else "build"
BENCH = os.path.join(BUILD, "bin", "nkv-bench")
TARGET = os.path.join(BUILD, "bin", "nkv-target")
OPS = ["store", "retrieve", "delete", "exist", "list"]
results = []


def check(name, ok, why=""):
    results.append(ok)
    print("NKV-BENCH %s %s%s" % (name, "PASS" if ok else "FAIL", "" if ok else " " + why), flush=True)


def skip(name, why):
    """Counted as a skip by the stage, never as a pass."""
    print("NKV-BENCH %s SKIP %s" % (name, why), flush=True)


def bench(*args, timeout=60):
    p = subprocess.run([BENCH, "--quiet"] + list(args), capture_output=True, text=True,
                       timeout=timeout)
    return p.returncode, p.stdout, p.stderr


def bench_json(name, *args, keys=96, batch=16, iters=2, expect_rc=0):
    """Run with --json --verify and check the counters; returns the dict."""
    rc, out, err = bench("--json", "--verify", "--num-keys", str(keys), "--batch-size",
                         str(batch), "--iterations", str(iters), *args)
    if rc != expect_rc:
        check(name, False, "exit %d, want %d: %s" % (rc, expect_rc, err.strip()[-300:]))
        return None
    try:
        j = json.loads(out)
    except ValueError:
        check(name, False, "no JSON on stdout: %r" % out[:200])
        return None
    want = keys * iters
    batches = iters * ((keys + batch - 1) // batch)
    why = []
    if j["commands"] != want:
        why.append("commands %d != %d" % (j["commands"], want))
    if j["ok"] != want or j["unexpected"] != 0:
        why.append("ok %d, unexpected %d" % (j["ok"], j["unexpected"]))
    if j["errors"]["verify_failures"] or j["errors"]["device_errors"]:
        why.append("errors %r" % j["errors"])
    if j["sq_doorbells"] != batches or j["batches"] != batches:
        why.append("SQ doorbells %d, batches %d, want %d" % (j["sq_doorbells"], j["batches"], batches))
    if keys % batch == 0 and abs(j["sq_doorbells_per_cmd"] - 1.0 / batch) > 1e-6:
        why.append("doorbells/cmd %f != 1/%d" % (j["sq_doorbells_per_cmd"], batch))
    lat = j["latency_ns"]
    if not (0 < lat["min"] <= lat["p50"] <= lat["p99"] <= lat["max"]):
        why.append("latency order %r" % lat)
    if j["iops"] <= 0:
        why.append("iops %r" % j["iops"])
    check(name, not why, "; ".join(why))
    return j


class Target:
    """A separately started nkv-target on a private socket."""

    def __init__(self, tmp, name, *extra):
        self.sock = os.path.join(tmp, name + ".sock")
        self.uri = "vfio-user:" + self.sock
        self.p = subprocess.Popen([TARGET, "--socket", self.sock, "--log-level", "error",
                                   "--poll-interval-ns", "2000"] + list(extra),
                                  stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        for _ in range(500):
            if os.path.exists(self.sock):
                return
            time.sleep(0.01)
        raise RuntimeError("nkv-target did not create " + self.sock)

    def stop(self):
        self.p.send_signal(signal.SIGTERM)
        try:
            self.p.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.p.kill()
            self.p.wait()


def embedded():
    for op in OPS:
        for mode in ("0", "0x8", "0x5", "f"):
            bench_json("embedded-%s-mode%s" % (op, mode), "--kv-op", op, "--memory-mode", mode)
    # Exec through value slots (issue 49): the slice module allowlisted on
    # the embedded target, a TP rank's heads of each 64 KiB block.
    bench_json("embedded-exec-slice", "--kv-op", "exec", "--op-id", "1", "--exec-module",
               os.path.join(os.path.dirname(os.path.abspath(__file__)), "../../examples/exec/slice.lua"),
               "--exec-input", "1 8 8192 8 3",
               "--value-size", "64K", keys=32, batch=16)
    # Values reached only by DMA_READ/WRITE messages (issue 14), every op.
    for op in OPS:
        for mode in ("8", "f"):
            j = bench_json("embedded-%s-mode%s-by-messages" % (op, mode), "--kv-op", op,
                           "--memory-mode", mode, "--values-by-messages")
            check("embedded-%s-mode%s-by-messages-json" % (op, mode),
                  j is not None and j["values_by_messages"] is True, str(j and j.get("values_by_messages")))
    j = bench_json("embedded-retrieve-3queues-batch1", "--kv-op", "retrieve", "--num-queues", "3",
                   keys=30, batch=1)
    j = bench_json("embedded-store-batch64-partial", "--kv-op", "store", keys=100, batch=64, iters=1)
    # Issue 30: a block batch, one doorbell for 1023 commands (4 KiB values,
    # every one byte-checked), and a partial last block.
    for op in OPS:
        bench_json("embedded-%s-block-1023" % op, "--kv-op", op, "--queue-length", "1024",
                   keys=2046, batch=1023, iters=1)
    # --warmup: passes not measured, not counted in the JSON's commands.
    j = bench_json("embedded-store-warmup", "--kv-op", "store", "--warmup", "2", keys=64,
                   batch=16, iters=2)
    check("embedded-store-warmup-json", j is not None and j["warmup"] == 2,
          str(j and j.get("warmup")))
    # --fill once: the keys stored first (not measured), slots sent as they are.
    j = bench_json("embedded-store-fill-once", "--kv-op", "store", "--fill", "once", keys=64,
                   batch=16, iters=2)
    check("embedded-store-fill-once-json", j is not None and j["fill"] == "once" and
          j["keys_stored"] == 64 and j["commands"] == 128, str(j and (j.get("fill"),
                                                                     j.get("keys_stored"),
                                                                     j.get("commands"))))
    bench_json("embedded-retrieve-block-100-partial", "--kv-op", "retrieve", "--queue-length",
               "128", keys=250, batch=100, iters=1)
    bench_json("embedded-retrieve-2-blocks-of-100", "--kv-op", "retrieve", "--queue-length",
               "128", "--num-queues", "2", keys=400, batch=100, iters=1)
    j = bench_json("embedded-explicit-keys", "--kv-op", "retrieve", "--keys", "gpukey01,gpukey02",
                   "gpukey03", keys=3, batch=3)
    check("embedded-explicit-keys-order", j is not None and j["key_order"] == "explicit",
          str(j and j["key_order"]))
    # Values to 64 MiB with no extra flag (issue 30): the quick start's
    # 2 MiB block, Store and Retrieve, byte for byte.
    for op in ("store", "retrieve"):
        bench_json("embedded-%s-2M" % op, "--kv-op", op, "--value-size", "2M", keys=16, batch=8,
                   iters=1)
    target_busy()
    key_order()


def target_busy():
    """The embedded target's poll-thread time per command: measured (a
    Retrieve moves a value, so it cannot be free), consistent with the
    total, and within the run's wall time."""
    j = bench_json("embedded-target-busy", "--kv-op", "retrieve", "--value-size", "4096")
    ok = j is not None and j["target_busy_ns"] is not None and j["target_busy_ns"] > 0 and \
        abs(j["target_busy_ns_per_cmd"] * j["commands"] - j["target_busy_ns"]) <= \
        0.01 * j["target_busy_ns"] + 1 and j["target_busy_ns"] <= j["wall_ns"]
    check("embedded-target-busy-per-cmd", ok,
          str(j and (j["target_busy_ns"], j["target_busy_ns_per_cmd"], j["wall_ns"])))


def key_order():
    """--key-order hash: 16-byte hashed keys in random order, as an LLM KV
    cache makes them; every op still verifies, and the JSON says which."""
    for op in OPS:
        j = bench_json("key-order-hash-%s" % op, "--kv-op", op, "--key-order", "hash", keys=200)
        check("key-order-hash-%s-json" % op, j is not None and j["key_order"] == "hash",
              str(j and j["key_order"]))
    j = bench_json("key-order-seq-default", "--kv-op", "store", keys=64, iters=1)
    check("key-order-seq-default-json", j is not None and j["key_order"] == "seq",
          str(j and j["key_order"]))
    # A long prefix is fine: it is hashed, not part of the key.
    bench_json("key-order-hash-long-prefix", "--kv-op", "retrieve", "--key-order", "hash",
               "--key-prefix", "model-7b/layer-31/", keys=64, iters=1)
    key_sizes()


def key_sizes():
    """--key-size N and --key-order sha256: every generated key exactly N
    (32) bytes, every op verified. Keys over 16 bytes travel in head form:
    a controller whose KML is 16 refuses them before anything is sent
    (said, and a skip here, never a pass)."""
    j = bench_json("key-size-4-seq", "--kv-op", "retrieve", "--key-size", "4",
                   "--key-prefix", "k", keys=64, iters=1)
    check("key-size-4-seq-json", j is not None and j["key_size"] == 4, str(j and j["key_size"]))
    j = bench_json("key-size-16-hash", "--kv-op", "exist", "--key-order", "hash",
                   "--key-size", "16", keys=64, iters=1)
    check("key-size-16-hash-json", j is not None and j["key_size"] == 16,
          str(j and j["key_size"]))
    long_runs = [("key-size-%d-%s-%s" % (n, order, op), order, n, op)
                 for n in (17, 32, 255) for order in ("seq", "hash") for op in OPS]
    long_runs += [("key-order-sha256-%s" % op, "sha256", 0, op) for op in OPS]
    for name, order, n, op in long_runs:
        args = ["--kv-op", op, "--key-order", order] + (["--key-size", str(n)] if n else [])
        rc, out, err = bench("--num-keys", "8", "--iterations", "1", *args)
        if rc != 0 and "(KML)" in err:
            skip(name, "until the controller takes keys over 16 bytes: " + err.strip().splitlines()[-1])
            continue
        j = bench_json(name, *args, keys=96, iters=1)
        want = n or 32
        check(name + "-json", j is not None and j["key_size"] == want and
              j["key_order"] == order, str(j and (j["key_size"], j["key_order"])))


def external(tmp):
    t = Target(tmp, "mapped", "--max-value", "64K")
    f = Target(tmp, "fwd", "--no-sparse-mmap")
    try:
        for op in OPS:
            for mode in ("0", "8"):
                bench_json("external-%s-mode%s" % (op, mode), "--kv-op", op, "--memory-mode",
                           mode, "--target", t.uri)
        j = bench_json("external-retrieve-fresh-keys", "--kv-op", "retrieve", "--target", t.uri,
                       "--key-prefix", "fresh-", keys=64)
        check("external-stores-when-missing", j is not None and j["keys_present"] == 0 and
              j["keys_stored"] == 64, "keys_present/stored " + str(j and (j["keys_present"], j["keys_stored"])))
        j = bench_json("external-retrieve-again", "--kv-op", "retrieve", "--target", t.uri,
                       "--key-prefix", "fresh-", keys=64)
        check("external-reuses-present-keys", j is not None and j["keys_present"] == 64 and
              j["keys_stored"] == 0, "keys_present/stored " + str(j and (j["keys_present"], j["keys_stored"])))
        rc, out, err = bench("--kv-op", "retrieve", "--target", t.uri, "--key-prefix", "fresh-",
                             "--num-keys", "64", "--batch-size", "16", "--iterations", "1", "--lfsr-seed", "7",
                             "--json")
        j = json.loads(out) if out.strip() else {}
        check("verify-catches-wrong-pattern", rc == 1 and j.get("errors", {}).get("verify_failures") == 64,
              "exit %d, %s" % (rc, j.get("errors")))
        j = bench_json("external-hash-keys-stored", "--kv-op", "store", "--target", t.uri,
                       "--key-order", "hash", "--key-prefix", "hashed-", keys=64, iters=1)
        j = bench_json("external-hash-keys-present", "--kv-op", "exist", "--target", t.uri,
                       "--key-order", "hash", "--key-prefix", "hashed-", keys=64, iters=1)
        check("external-hash-keys-persist", j is not None and j["keys_present"] == 64,
              str(j and j["keys_present"]))
        j = bench_json("external-seq-keys-differ", "--kv-op", "exist", "--target", t.uri,
                       "--key-prefix", "hashed-", keys=64, iters=1)
        check("external-seq-keys-are-other-keys", j is not None and j["keys_present"] == 0,
              str(j and j["keys_present"]))
        # Keys stored with 4 KiB values, retrieved as 1 KiB ones: said up front.
        bench_json("external-sized-store", "--kv-op", "store", "--target", t.uri,
                   "--key-prefix", "sized-", keys=32, iters=1)
        rc, out, err = bench("--kv-op", "retrieve", "--target", t.uri, "--key-prefix", "sized-",
                             "--num-keys", "32", "--value-size", "1024")
        check("prepare-says-stored-size", rc != 0 and "4096-byte value" in err and
              "--value-size is 1024" in err, "exit %d: %s" % (rc, err.strip()))
        # A content mismatch names the key and the byte.
        rc, out, err = bench("--kv-op", "retrieve", "--target", t.uri, "--key-prefix", "fresh-",
                             "--num-keys", "64", "--batch-size", "16", "--iterations", "1",
                             "--lfsr-seed", "7")
        check("verify-names-key-and-offset", rc == 1 and "first key 0 (fresh-" in out and
              "differs at byte 0 of 4096" in out, "exit %d: %s" % (rc, out[-400:]))
        iops_headline(t.uri)
        rc, out, err = bench("--target", t.uri, "--value-size", "128K")
        check("value-larger-than-controller-max", rc == 2 and
              "a value of 131072 bytes is larger than the controller's limit of 65536 bytes "
              "(max value)" in err, "exit %d: %s" % (rc, err.strip()))
        for op in ("retrieve", "store"):
            j = bench_json("forwarder-%s-mode4" % op, "--kv-op", op, "--memory-mode", "4",
                           "--target", f.uri)
            check("forwarder-%s-not-mapped" % op, j is not None and not j["doorbells_mapped"] and
                  j["fwd_sq_doorbells"] >= 1, str(j and (j["doorbells_mapped"], j["fwd_sq_doorbells"])))
    finally:
        t.stop()
        f.stop()


def iops_headline(uri):
    """The headline IOPS is commands over the run's wall time, with any
    number of queue pairs; the per-queue busy rate is only beside it."""
    j = bench_json("iops-4-queues", "--kv-op", "exist", "--num-queues", "4", "--target", uri,
                   "--key-prefix", "fresh-", keys=64, batch=16, iters=4)
    if j is None:
        return
    wall = j["commands"] / (j["wall_ns"] / 1e9)
    check("external-target-busy-null", j["target_busy_ns"] is None and
          j["target_busy_ns_per_cmd"] is None, str((j["target_busy_ns"], j["target_busy_ns_per_cmd"])))
    check("iops-headline-over-wall-time", abs(j["iops"] - wall) <= 0.01 * wall and
          abs(j["iops_busy"] - j["commands"] / (j["busy_ns"] / 1e9)) <= 0.01 * j["iops_busy"],
          "iops %r, wall rate %r, busy %r" % (j["iops"], wall, j["iops_busy"]))


def timeout_is_wall_clock(tmp):
    """--timeout-ms is wall-clock time: a target stopped (SIGSTOP) in the
    middle of a run fails it about that long after the stop, not earlier
    (a poll count fired 3-6x early) and not much later."""
    t = Target(tmp, "stalled")
    try:
        p = subprocess.Popen([BENCH, "--quiet", "--json", "--kv-op", "store", "--target", t.uri,
                              "--num-keys", "64", "--batch-size", "64", "--iterations", "1000000",
                              "--timeout-ms", "700"],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        time.sleep(1.0)
        t0 = time.time()
        t.p.send_signal(signal.SIGSTOP)
        line = p.stdout.readline()      # the report comes before the teardown
        stalled = time.time() - t0
        t.p.send_signal(signal.SIGCONT)
        out, err = p.communicate(timeout=60)
        j = json.loads(line) if line.strip() else {}
        errs = j.get("errors", {})
        check("timeout-ms-is-wall-clock", 0.6 <= stalled <= 4.0 and errs.get("device_error") == -110,
              "reported %.2f s after the stop for --timeout-ms 700; errors %r; %s" %
              (stalled, errs, err.strip()[-300:]))
        # A controller that stops answering is a controller failure (3),
        # said with the wait it was given.
        first = (err.strip().splitlines() or [""])[0]
        check("stalled-target-exits-3", p.returncode == 3 and first.startswith(
              "nkv-bench: FAILED: timed out: no completion within --timeout-ms 700 ms"),
              "exit %d, first line %r" % (p.returncode, first))
    finally:
        t.p.send_signal(signal.SIGCONT)
        t.stop()


def bad_flags():
    cases = [
        (["--memory-mode", "16"], "--memory-mode"), (["--memory-mode", "0x1g"], "--memory-mode"),
        (["--batch-size", "0"], "--batch-size"), (["--batch-size", "1024"], "--batch-size"),
        (["--batch-size", "1000", "--queue-length", "1024", "--num-queues", "5"], "threads"),
        (["--kv-op", "delete", "--warmup", "1"], "--warmup"), (["--warmup", "-1"], "--warmup"),
        (["--value-size", "8192", "--data-buffer-size", "4096"], "--data-buffer-size"),
        (["--key-prefix", "p" * 252], "255 bytes"), (["--keys", "x" * 256], "1..255 bytes"),
        (["--key-size", "0"], "1..255"), (["--key-size", "256"], "1..255"),
        (["--key-size", "8", "--key-prefix", "prefix-"], "--key-size is 8 bytes"),
        (["--key-order", "sha256", "--key-size", "20"], "32-byte"),
        (["--key-order", "hash", "--key-size", "4"], "8..255"),
        (["--key-size", "20", "--keys", "a"], "--keys have"),
        (["--key-order", "sha256", "--keys", "a"], "--keys"),
        (["--kv-op", "fetch"], "--kv-op"), (["--engine", "tpu"], "--engine"),
        (["--queue-length", "8", "--batch-size", "8"], "--queue-length"),
        (["--num-queues", "0"], "--num-queues"), (["--iterations", "-1"], "--iterations"),
        (["stray"], "unexpected argument"),
        (["--key-order", "sha"], "--key-order"), (["--key-order", "hash", "--keys", "a"], "--keys"),
        (["--cpus", "x"], "--cpus"), (["--cpus", "0,"], "--cpus"), (["--cpus", "0,0,0"], "--cpus"),
        (["--cpus", "-1"], "--cpus"), (["--cpus", "%d" % (os.cpu_count() + 64)], "may run on"),
        (["--cpus", "0,0", "--target", "vfio-user:/nonexistent.sock"], "taskset"),
        (["--values-by-messages"], "bit 8"), (["--memory-mode", "7", "--values-by-messages"], "bit 8"),
        (["--poll-sched", "fifo"], "--poll-sched"),
        (["--fill", "twice"], "--fill"), (["--kv-op", "retrieve", "--fill", "once"], "--fill once"),
        (["--value-size", "65M"], "1..64M"), (["--data-buffer-size", "65M"], "1..64M"),
        (["--ttl", "0"], "--ttl"), (["--ttl", "x"], "--ttl"), (["--ttl", "4294967296"], "--ttl"),
        (["--ttl", "60", "--batch-size", "100"], "wave batches only"),
        (["--workload", "llm"], "--workload"), (["--blocks", "8"], "for --workload prefix"),
        (["--hit-ratio", "0.5"], "for --workload prefix"), (["--layers", "2"], "for --workload prefix"),
        (["--workload", "prefix", "--hit-ratio", "1.5"], "--hit-ratio"),
        (["--workload", "prefix", "--hit-ratio", "-0.1"], "--hit-ratio"),
        (["--workload", "prefix", "--hit-ratio", "x"], "--hit-ratio"),
        (["--workload", "prefix", "--blocks", "0"], "--blocks"),
        (["--workload", "prefix", "--blocks", "65537"], "--blocks"),
        (["--workload", "prefix", "--layers", "0"], "--layers"),
        (["--workload", "prefix", "--engine", "gpu"], "cpu engine only"),
        (["--workload", "prefix", "--num-queues", "2"], "--num-queues"),
        (["--workload", "prefix", "--keys", "a"], "--keys"),
        (["--workload", "prefix", "--key-order", "hash"], "SHA-256"),
        (["--workload", "prefix", "--batch-size", "128", "--queue-length", "1024"], "1..64"),
        (["--workload", "prefix", "--value-size", "4095"], "multiple of 4"),
        (["--workload", "prefix", "--ttl", "60"], "--ttl"),
        (["--workload", "prefix", "--batch-size", "64", "--queue-length", "128"], "three batches"),
        (["--workload", "prefix", "--blocks", "65536", "--layers", "32"], "1048576"),
        (["--dest", "pool"], "--dest"), (["--scatter", "4"], "needs --dest region"),
        (["--dest", "region", "--kv-op", "list"], "store, retrieve, exist or delete"),
        (["--dest", "region", "--workload", "prefix", "--scatter", "4"], "2 runs"),
        (["--dest", "region", "--workload", "prefix", "--value-size", "4100"], "multiple of 8"),
        (["--dest", "region", "--engine", "gpu"], "cpu engine"),
        (["--dest", "region", "--memory-mode", "8"], "bit 0x8"),
        (["--dest", "region", "--data-buffer-size", "8192"], "--data-buffer-size"),
        (["--dest", "region", "--scatter", "1021"], "1..1020"),
        (["--dest", "region", "--scatter", "0"], "1..1020"),
        (["--dest", "region", "--value-size", "15", "--scatter", "4"], "4 N bytes"),
    ]
    for args, word in cases:
        rc, out, err = bench(*args)
        check("bad-flag %s" % " ".join(args)[:40], rc == 2 and word in err,
              "exit %d: %s" % (rc, err.strip()))
    rc, out, err = bench("--engine", "gpu")
    check("engine-gpu-not-built", rc == 2 and "built without a GPU runtime" in err,
          "exit %d: %s" % (rc, err.strip()))
    # One exit table for every program: no controller there is setup (3),
    # a URI that is not one is a bad flag (2).
    rc, out, err = bench("--engine", "cpu", "--target", "vfio-user:/nonexistent/nkv-bench.sock")
    check("no-target-exits-3", rc == 3 and err.startswith(
          "nkv-bench: vfio-user: cannot connect to /nonexistent/nkv-bench.sock"),
          "exit %d: %s" % (rc, err.strip()))
    rc, out, err = bench("--engine", "cpu", "--target", "nvme:/dev/nvme0")
    check("bad-target-uri-exits-2", rc == 2 and "unknown transport 'nvme'" in err,
          "exit %d: %s" % (rc, err.strip()))
    # Memory modes are hex, as the field's tools write them.
    rc, out, err = bench("--memory-mode", "10")
    check("memory-mode-10-is-hex-out-of-range", rc == 2 and "hex" in err, "exit %d: %s" % (rc, err))
    j = bench_json("memory-mode-f-is-hex", "--kv-op", "exist", "--memory-mode", "f", keys=16,
                   batch=16, iters=1)
    check("memory-mode-f-is-0xf", j is not None and j["memory_mode"] == 15,
          str(j and j["memory_mode"]))
    rc, out, err = bench("--help")
    check("help", rc == 0 and "examples:" in out and "--memory-mode" in out, "exit %d" % rc)


def prefix_json(name, *args, blocks=64, iters=2):
    """--workload prefix against the embedded target; the dict, or None."""
    rc, out, err = bench("--workload", "prefix", "--json", "--blocks", str(blocks),
                         "--iterations", str(iters), *args)
    if rc != 0:
        check(name, False, "exit %d: %s" % (rc, err.strip()[-300:]))
        return None
    try:
        return json.loads(out)
    except ValueError:
        check(name, False, "no JSON on stdout: %r" % out[:200])
        return None


def prefix_workload():
    """--workload prefix (issue 33): a request of N chained block keys,
    the first R x N stored first; each request looks its prefix up,
    retrieves the hits, stores the misses. The JSON keeps every field of
    the kv workload and adds a prefix object whose counts agree with it."""
    n, iters, width = 64, 2, 32
    for ratio, layers in ((0, 1), (0.5, 1), (1, 1), (0.75, 4)):
        name = "prefix-ratio%s-layers%d" % (ratio, layers)
        j = prefix_json(name, "--hit-ratio", str(ratio), "--layers", str(layers),
                        "--batch-size", str(width), blocks=n, iters=iters)
        if j is None:
            continue
        p, why = j["prefix"], []
        hits = int(ratio * n)
        misses = n - hits
        # The lookup asks a wave's width at a time up to the batch with its first miss.
        asked = n if hits == n else min(n, (hits // width + 1) * width)
        if (j["workload"], j["op"], j["engine"]) != ("prefix", "prefix", "cpu"):
            why.append("workload/op/engine %r" % ((j["workload"], j["op"], j["engine"]),))
        if (p["hits_stored"], p["hits_min"], p["hits_max"]) != (hits, hits, hits):
            why.append("hits %r, want %d" % ((p["hits_stored"], p["hits_min"], p["hits_max"]), hits))
        if p["requests"] != iters or p["lookup_commands"] != iters * asked:
            why.append("requests %d, lookup commands %d" % (p["requests"], p["lookup_commands"]))
        if p["retrieved"]["values"] != iters * hits * layers:
            why.append("retrieved %d" % p["retrieved"]["values"])
        if p["stored"]["values"] != iters * misses * layers or p["stored"]["already_there"]:
            why.append("stored %r" % p["stored"])
        if j["commands"] != iters * (asked + n * layers):
            why.append("commands %d" % j["commands"])
        if j["misses"] != iters * (asked - hits) or p["outcomes"]["absent"] != j["misses"]:
            why.append("misses %d, absent %d" % (j["misses"], p["outcomes"]["absent"]))
        if j["ok"] != j["commands"] - j["misses"] or p["outcomes"]["ok"] != j["ok"]:
            why.append("ok %d of %d" % (j["ok"], j["commands"]))
        if j["bytes"] != iters * n * layers * j["value_size"]:
            why.append("bytes %d" % j["bytes"])
        batches = iters * (-(-asked // width) + layers * (-(-hits // width) + -(-misses // width)))
        if j["batches"] != batches or j["sq_doorbells"] != batches:
            why.append("batches %d, SQ doorbells %d, want %d" % (j["batches"], j["sq_doorbells"], batches))
        if j["unexpected"] or j["errors"]["verify_failures"] or j["errors"]["device_errors"]:
            why.append("unexpected %d, errors %r" % (j["unexpected"], j["errors"]))
        lk = p["lookup_ns"]
        if not (0 < lk["min"] <= lk["p50"] <= lk["p99"] <= lk["max"]):
            why.append("lookup latency order %r" % lk)
        if not (p["blocks_per_s"] > 0 and p["gb_per_s"] > 0 and p["measured_ns"] == j["wall_ns"]):
            why.append("rates %r %r" % (p["blocks_per_s"], p["gb_per_s"]))
        if abs(p["bytes_per_s"] - j["bytes_per_s"]) > 1e-3 * j["bytes_per_s"]:
            why.append("bytes_per_s %r vs %r" % (p["bytes_per_s"], j["bytes_per_s"]))
        if (j["keys"], j["key_size"], j["key_order"]) != (n * layers, 16, "xxh3"):
            why.append("keys %r" % ((j["keys"], j["key_size"], j["key_order"]),))
        check(name, not why, "; ".join(why))
    # 32-byte SHA-256 keys (head form), a warm-up not counted.
    j = prefix_json("prefix-sha256", "--key-order", "sha256", "--warmup", "1", blocks=40, iters=1)
    if j is not None:
        check("prefix-sha256", j["key_size"] == 32 and j["key_order"] == "sha256" and
              j["prefix"]["requests"] == 1 and j["prefix"]["hits_min"] == 30 and
              j["unexpected"] == 0, str(j["prefix"]))
    # The kv workload says so in its JSON, with no prefix object.
    j = bench_json("workload-kv-json", "--kv-op", "exist", keys=16, batch=16, iters=1)
    check("workload-kv-json-field", j is not None and j["workload"] == "kv" and "prefix" not in j,
          str(j and j.get("workload")))
    rc, out, err = bench("--workload", "prefix", "--blocks", "16", "--iterations", "1")
    want = ["blocks/s", "GB/s", "p50", "p99", "12..12 blocks found of 16", "0 pages bad"]
    missing = [w for w in want if w not in out]
    check("prefix-text-report", rc == 0 and not missing, "exit %d, missing %r: %s%s" %
          (rc, missing, out, err))


def placement():
    """--cpus D,T: the waves run pinned to D, the embedded target's
    threads to T, and the report says so; without it both may run on
    every CPU this process may use."""
    allowed = sorted(os.sched_getaffinity(0))
    d, t = allowed[-1], allowed[0]
    j = bench_json("cpus-pinned", "--kv-op", "retrieve", "--cpus", "%d,%d" % (d, t), keys=64,
                   iters=1)
    check("cpus-pinned-json", j is not None and j["cpus"] == {"pinned": True, "sched": "normal",
                                                               "device": str(d), "target": str(t)},
          str(j and j["cpus"]))
    j = bench_json("cpus-unpinned", "--kv-op", "exist", keys=16, batch=16, iters=1)
    check("cpus-unpinned-json", j is not None and not j["cpus"]["pinned"] and
          j["cpus"]["device"] == j["cpus"]["target"] != "", str(j and j["cpus"]))
    rc, out, err = bench("--kv-op", "exist", "--num-keys", "16", "--cpus", str(d))
    check("cpus-text-report", rc == 0 and "device code on CPU %d (--cpus)" % d in out,
          "exit %d: %s" % (rc, out))
    # --poll-sched idle: the waves poll at SCHED_IDLE, every value still checked.
    j = bench_json("poll-sched-idle", "--kv-op", "retrieve", "--poll-sched", "idle", keys=64,
                   iters=1)
    check("poll-sched-idle-json", j is not None and j["cpus"]["sched"] == "idle" and
          j["errors"]["verify_failures"] == 0, str(j and j["cpus"]))
    rc, out, err = bench("--kv-op", "exist", "--num-keys", "16", "--poll-sched", "idle")
    check("poll-sched-idle-text", rc == 0 and " at SCHED_IDLE, target" in out,
          "exit %d: %s" % (rc, out))


def dest_region():
    """--dest region: values stored from and retrieved into one registered
    region (queue pairs without slots), every byte checked; --scatter N
    spreads each value over N runs (SGL segment lists), in wave and block
    batches, inline and head-form keys."""
    for op in ("store", "retrieve", "exist", "delete"):
        j = bench_json("dest-region-" + op, "--kv-op", op, "--dest", "region", keys=64)
        check("dest-region-%s-json" % op, j is not None and j["dest"] == "region" and
              j["scatter"] == 1, str(j and (j["dest"], j["scatter"])))
    for name, args in (("scatter-16", ["--value-size", "64K", "--scatter", "16"]),
                       ("scatter-300-odd", ["--value-size", "10001", "--scatter", "300"]),
                       ("scatter-block", ["--value-size", "8K", "--scatter", "3",
                                          "--queue-length", "256"]),
                       ("scatter-sha256-keys", ["--value-size", "5000", "--scatter", "5",
                                                "--key-order", "sha256"])):
        batch = 100 if name == "scatter-block" else 16
        j = bench_json("dest-region-" + name, "--kv-op", "retrieve", "--dest", "region", *args,
                       keys=200 if batch == 100 else 64, batch=batch)
        check("dest-region-%s-bytes" % name, j is not None and j["bytes"] ==
              j["ok"] * j["value_size"], str(j and (j["bytes"], j["ok"], j["value_size"])))
    # --workload prefix with the engine's own cache in vLLM's layout: every
    # hit retrieved in place and every page checked, the counts as the
    # slot pool's.
    for layers in ("1", "4"):
        j = prefix_json("dest-region-prefix-layers" + layers, "--dest", "region", "--layers",
                        layers, "--value-size", "8K", "--batch-size", "32")
        if j is None:
            continue
        p = j["prefix"]
        check("dest-region-prefix-layers%s-json" % layers, j["dest"] == "region" and
              p["hits_min"] == p["hits_max"] == 48 and j["errors"]["verify_failures"] == 0 and
              j["unexpected"] == 0 and p["retrieved"]["values"] == 2 * 48 * int(layers),
              "dest %s hits %s..%s retrieved %s verify %s unexpected %s" % (
                  j["dest"], p["hits_min"], p["hits_max"], p["retrieved"]["values"],
                  j["errors"]["verify_failures"], j["unexpected"]))
    # Command memory shares the SQ's registration: 64 queue pairs still
    # fit nkv-target's 256 registrations per client.
    bench_json("sixty-four-queue-pairs", "--kv-op", "exist", "--num-queues", "64", keys=256,
               batch=4, iters=1)
    j = bench_json("dest-slots-json", "--kv-op", "exist", keys=16, batch=16, iters=1)
    check("dest-slots-default", j is not None and j["dest"] == "slots" and j["scatter"] == 1,
          str(j and j["dest"]))
    rc, out, err = bench("--kv-op", "exist", "--num-keys", "16", "--dest", "region",
                         "--scatter", "4")
    check("dest-region-text", rc == 0 and "values in one registered region (nkv_mem_alloc), "
          "4 runs spread over it" in out, "exit %d: %s" % (rc, out))


def advertises_ttl(tmp):
    """Does nkv-target advertise TTL Stores (nkv-admin info says)?"""
    t = Target(tmp, "ttl-probe")
    try:
        p = subprocess.run([os.path.join(BUILD, "bin", "nkv-admin"), "info", t.uri],
                           capture_output=True, text=True, timeout=30)
    finally:
        t.stop()
    line = [l for l in p.stdout.splitlines() if l.startswith("vendor options")]
    return bool(line) and "TTL" in line[0], (line or [p.stdout + p.stderr])[0]


def ttl(tmp):
    """--ttl: refused with the usage exit code where the controller does
    not advertise TTL; where it does (ttl_e2e: nkv-target with issue 32's
    target side) every Store carries it and the reports say so."""
    adv, line = advertises_ttl(tmp)
    if adv:
        skip("ttl-refused-not-advertised", "nkv-target advertises TTL (%s): the refusal needs "
             "a controller that does not" % line)
    else:
        rc, out, err = bench("--kv-op", "store", "--num-keys", "16", "--ttl", "60")
        check("ttl-refused-not-advertised", rc == 2 and "does not advertise TTL" in err,
              "exit %d: %s" % (rc, err.strip()))
    for op in ("store", "retrieve"):
        j = bench_json("ttl_e2e-%s" % op, "--kv-op", op, "--ttl", "600", keys=64, iters=1)
        check("ttl_e2e-%s-json" % op, j is not None and j["ttl_s"] == 600,
              str(j and j.get("ttl_s")))
    rc, out, err = bench("--kv-op", "store", "--num-keys", "16", "--ttl", "600")
    check("ttl_e2e-text", rc == 0 and "with a TTL of 600 s" in out, "exit %d: %s %s" %
          (rc, out, err.strip()))
    j = bench_json("no-ttl-json", "--kv-op", "store", keys=16, batch=16, iters=1)
    check("no-ttl-json-zero", j is not None and j["ttl_s"] == 0, str(j and j.get("ttl_s")))


def text_report():
    """The README's command: text for a person, the setup stated."""
    rc, out, err = bench("--kv-op", "retrieve", "--memory-mode", "8", timeout=120)
    want = ["latency", "IOPS", "doorbells", "SQ 0.0156/cmd", "emulated", "stored them all first",
            "4096 ok", "0 verify failures"]
    missing = [w for w in want if w not in out]
    check("readme-command", rc == 0 and not missing, "exit %d, missing %r: %s" % (rc, missing, err))
    check("readme-command-engine-note", "using --engine cpu" in err, err.strip())


def main():
    for exe in (BENCH, TARGET):
        if not os.access(exe, os.X_OK):
            print("NKV-BENCH build FAIL %s missing" % exe)
            return 1
    tmp = tempfile.mkdtemp(prefix="nkv-bench-test-")
    t0 = time.time()
    try:
        text_report()
        bad_flags()
        placement()
        dest_region()
        prefix_workload()
        embedded()
        external(tmp)
        timeout_is_wall_clock(tmp)
        ttl(tmp)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    n_fail = results.count(False)
    print("%d passed, %d failed (%.1f s)" % (results.count(True), n_fail, time.time() - t0))
    return 1 if n_fail else 0


if __name__ == "__main__":
    sys.exit(main())
