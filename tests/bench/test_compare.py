#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""bench/compare.py: its arithmetic, its arguments, its output and its
cleanup, never its speed.

  - the median and spread of a figure, ratios paired within a run (not a
    ratio of medians), the table's number format, each run's placement
    (one core or two, from its ping-pong) beside its goal ratios;
  - bad arguments: exit 2 and a line naming the argument (rados_loop's
    --via too, and its backend without a config: exit 1 naming it);
  - a quick run with Ceph taken out of PATH: exit 0, the rados part
    skipped by name on stderr, in the JSON and in the table; the JSON
    holds the machine and every cpu figure and ratio;
  - the JSON of the CI quick run (QUICK_DIR, written by the
    bench-compare-quick stage) has every figure of both parts;
  - Ctrl-C while the cluster runs, or a measurement that fails: exit 130
    or 1, the cluster's daemons, nkv-target and the temp dir gone.

Prints "NKV-COMPARE <name> PASS|FAIL|SKIP [why]" per check.
usage: tests/bench/test_compare.py [BUILD_DIR [QUICK_DIR]]
"""
import importlib.util
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BUILD = sys.argv[1] if len(sys.argv) > 1 else "build"
QUICK_DIR = sys.argv[2] if len(sys.argv) > 2 else None
SCRIPT = os.path.join(ROOT, "bench", "compare.py")
results = []


def check(name, ok, why=""):
    results.append(ok)
    print("NKV-COMPARE %s %s%s" % (name, "PASS" if ok else "FAIL", "" if ok else " " + why),
          flush=True)


def skip(name, why):
    print("NKV-COMPARE %s SKIP %s" % (name, why), flush=True)


def load():
    spec = importlib.util.spec_from_file_location("compare", SCRIPT)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def arithmetic(c):
    s = c.summarize([3.0, 1.0, 2.0, None])
    check("summarize-median-spread", s == {"median": 2.0, "min": 1.0, "max": 3.0}, str(s))
    s = c.summarize([1, 2, 3, 10])
    check("summarize-even-count", s["median"] == 2.5, str(s))
    s = c.summarize([None, None])
    check("summarize-nothing", s == {"median": None, "min": None, "max": None}, str(s))
    r = c.ratio_runs([2.0, 4.0, 9.0, 5.0], [1.0, 2.0, 3.0, 0])
    check("ratio-paired-by-run", r == [2.0, 2.0, 3.0, None], str(r))
    try:
        c.ratio_runs([1.0], [1.0, 2.0])
        check("ratio-run-count-mismatch", False, "no error")
    except ValueError:
        check("ratio-run-count-mismatch", True)
    # nkv 1, 2, 9 against 1, 4, 3: per-run ratios 1, 0.5, 3 (median 1);
    # a ratio of the medians would say 2 / 3.
    b = c.Book(3)
    for run, (x, y) in enumerate(((1.0, 1.0), (2.0, 4.0), (9.0, 3.0))):
        b.add("n", run, x, "IOPS", "nkv")
        b.add("r", run, y, "IOPS", "ref")
    b.ratio("n_vs_r", "nkv / ref", "n", "r", "cpu")
    j = b.ratios_json()["n_vs_r"]
    check("ratio-median-of-per-run-ratios", j["median"] == 1.0 and j["min"] == 0.5 and
          j["max"] == 3.0 and j["runs"] == [1.0, 0.5, 3.0], str(j))
    f = b.figures_json()["r"]
    check("figure-summary", (f["median"], f["min"], f["max"], f["runs"]) == (3.0, 1.0, 4.0,
                                                                              [1.0, 4.0, 3.0]), str(f))
    got = (c.spread({"median": 2.0, "min": 1.0, "max": 3.0}, "x"), c.fmt(2500, "ns"),
           c.fmt(1.23e6, "blocks/s"), c.fmt(4321, "IOPS"), c.fmt(25000, "us"))
    check("table-format", got == ("2.00x (1.00x-3.00x)", "2.5 us", "1.23 M/s", "4.32 k", "25 ms"),
          str(got))
    # Each run's placement from its own ping-pong, beside its own ratios.
    b = c.Book(2)
    for run, (pp, ex) in enumerate(((120, 480), (451, 400))):
        b.add("cpu.pingpong.p50_ns", run, pp, "ns", "pp")
        b.add("cpu.exist_b1.p50_ns", run, ex, "ns", "exist")
    b.ratio("cpu.exist_b1.p50_vs_pingpong", "x", "cpu.exist_b1.p50_ns", "cpu.pingpong.p50_ns",
            "cpu")
    runs = c.cpu_runs(b)
    got = [(r["cores"], r["cpu.exist_b1.p50_vs_pingpong"], r["cpu.retrieve_b1.p50_vs_goal"])
           for r in runs]
    check("placement-by-run", got == [("shared", 4.0, None), ("separate", 0.887, None)] and
          "run 1 one core (120 ns): 4.00x, -, -; run 2 separate cores (451 ns): 0.89x, -, -" in
          c.cpu_runs_line(runs), "%r %s" % (got, c.cpu_runs_line(runs)))


def compare(*args, env=None, timeout=300):
    return subprocess.run([sys.executable, SCRIPT, "--build", BUILD] + list(args),
                          capture_output=True, text=True, timeout=timeout, env=env, cwd=ROOT)


def bad_args(tmp):
    cases = [(["--runs", "0"], "--runs"), (["--runs", "x"], "--runs"),
             (["--quick"], "--out"), (["--cpus", "0"], "--cpus"),
             (["--cpus", "0,%d" % (os.cpu_count() + 64)], "may run on"),
             (["--memstore-mb", "1"], "--memstore-mb"), (["--bogus"], "--bogus"),
             (["--memory-mode", "10"], "--memory-mode"), (["--parts", "cpu,disk"], "--parts")]
    for args, word in cases:
        p = compare(*args, "--out", os.path.join(tmp, "bad"), timeout=30) if args != ["--quick"] \
            else compare(*args, timeout=30)
        check("bad-arg %s" % " ".join(args), p.returncode == 2 and word in p.stderr,
              "exit %d: %s" % (p.returncode, p.stderr.strip()[-300:]))
    check("bad-args-write-nothing", not os.path.exists(os.path.join(tmp, "bad")),
          "an output directory was made")


def rados_loop_args(tmp):
    """rados_loop's --via: a bad value exits 2 naming the option; the
    backend with a config that is not there exits 1 naming the backend;
    --prefill is taken, a misspelt option exits 2 with the usage."""
    exe = os.path.join(BUILD, "bench", "rados_loop")
    base = [exe, "-p", "kvpool", "--op", "read", "--size", "4096", "--inflight", "1", "--ops", "1"]
    p = subprocess.run(base + ["--via", "sideways"], capture_output=True, text=True, timeout=30)
    check("rados-loop-bad-via", p.returncode == 2 and "--via librados|backend" in p.stderr,
          "exit %d: %s" % (p.returncode, p.stderr.strip()[-300:]))
    p = subprocess.run(base + ["--via", "backend", "-c", os.path.join(tmp, "no-such.conf")],
                       capture_output=True, text=True, timeout=30)
    check("rados-loop-backend-no-conf", p.returncode == 1 and
          "nkv-target's RADOS backend" in p.stderr and "no-such.conf" in p.stderr,
          "exit %d: %s" % (p.returncode, p.stderr.strip()[-300:]))
    # --prefill is a flag: taken, it reaches the connect (exit 1 naming
    # the config); an unknown option is refused (exit 2, the usage).
    p = subprocess.run(base + ["--prefill", "--via", "backend", "-c",
                               os.path.join(tmp, "no-such.conf")],
                       capture_output=True, text=True, timeout=30)
    check("rados-loop-prefill-parsed", p.returncode == 1 and "no-such.conf" in p.stderr,
          "exit %d: %s" % (p.returncode, p.stderr.strip()[-300:]))
    p = subprocess.run(base + ["--pre-fill"], capture_output=True, text=True, timeout=30)
    check("rados-loop-bad-option", p.returncode == 2 and "--prefill" in p.stderr,
          "exit %d: %s" % (p.returncode, p.stderr.strip()[-300:]))


def rocks_loop_args(tmp):
    """rocks_loop's --prefill (a flag, anywhere among the options): the
    keys put once first, not timed, so the report counts the timed Puts
    only; an unknown option exits 2 with the usage."""
    exe = os.path.join(BUILD, "bench", "rocks_loop")
    base = [exe, "--op", "put", "--size", "4096", "--batch", "8", "--keys", "64", "--iters", "1",
            "--sync", "none"]
    for i, args in enumerate((["--prefill"] + base[1:], base[1:] + ["--prefill"], base[1:])):
        p = subprocess.run([exe, "--db", os.path.join(tmp, "rocks-%d" % i)] + args,
                           capture_output=True, text=True, timeout=60)
        try:
            ops = json.loads(p.stdout.strip().splitlines()[-1])["ops"]
        except (ValueError, IndexError, KeyError):
            ops = None
        check("rocks-loop-prefill-%d" % i, p.returncode == 0 and ops == 64,
              "exit %d, ops %r: %s" % (p.returncode, ops, p.stderr.strip()[-300:]))
    # The untimed puts are in the write-ahead log beside the timed ones.
    wal = [sum(os.path.getsize(os.path.join(tmp, "rocks-%d" % i, f))
               for f in os.listdir(os.path.join(tmp, "rocks-%d" % i)) if f.endswith(".log"))
           if os.path.isdir(os.path.join(tmp, "rocks-%d" % i)) else 0 for i in range(3)]
    check("rocks-loop-prefill-writes", wal[2] > 64 * 4096 and
          min(wal[0], wal[1]) >= 2 * 64 * 4096, "WAL bytes with, with, without: %r" % wal)
    p = subprocess.run(base + ["--db", os.path.join(tmp, "rocks-x"), "--prefil"],
                       capture_output=True, text=True, timeout=30)
    check("rocks-loop-bad-option", p.returncode == 2 and "--prefill" in p.stderr,
          "exit %d: %s" % (p.returncode, p.stderr.strip()[-300:]))


def no_ceph_path(tmp):
    """A PATH with gnuplot (when installed) and nothing of Ceph."""
    d = os.path.join(tmp, "bin")
    os.makedirs(d)
    for tool in ("gnuplot",):
        w = shutil.which(tool)
        if w:
            os.symlink(w, os.path.join(d, tool))
    return d


def want_cpu(j):
    """What any compare JSON must hold: the machine, the cpu part's figures
    and ratios, each with one value per run."""
    why = []
    for k in ("schema", "when", "runs", "machine", "parts", "figures", "ratios", "cpus"):
        if k not in j:
            why.append("no %s" % k)
    if why:
        return why
    m = j["machine"]
    for k in ("cpu_model", "cores", "kernel", "note", "load_avg_start", "load_avg_end"):
        if not m.get(k):
            why.append("machine.%s empty" % k)
    c = load()
    sweep = [c.size_key(s) for s in c.SWEEP]
    for f in ("cpu.pingpong.p50_ns", "cpu.pingpong.p99_ns", "cpu.memcpy_4k.blocks_per_s",
              "cpu.memcpy_4k_target.ns", "cpu.goal_retrieve_b1.ns",
              "cpu.exist_b1.p50_ns", "cpu.exist_b1.p99_ns", "cpu.retrieve_b1.p50_ns",
              "cpu.retrieve_b1.p99_ns", "cpu.retrieve_b32.iops", "cpu.retrieve_b32.target_ns") + \
            tuple("cpu.memcpy_%s_target.ns" % n for n in sweep) + \
            tuple("cpu.sweep_%s.%s.%s" % (n, op, u) for n in sweep for op in ("store", "retrieve")
                  for u in ("target_ns", "gbps")):
        v = j["figures"].get(f)
        if not v or len(v["runs"]) != j["runs"] or not v["median"] or v["median"] <= 0 or \
                not v["min"] <= v["median"] <= v["max"]:
            why.append("figure %s: %r" % (f, v))
    for r in ("cpu.exist_b1.p50_vs_pingpong", "cpu.retrieve_b1.p99_vs_pingpong",
              "cpu.retrieve_b1.p50_vs_goal", "cpu.retrieve_b32.iops_vs_memcpy",
              "cpu.retrieve_b32.target_vs_memcpy") + \
            tuple("cpu.sweep_%s.%s.target_vs_memcpy" % (n, op) for n in sweep
                  for op in ("store", "retrieve")):
        v = j["ratios"].get(r)
        if not v or not v["median"] or v["median"] <= 0:
            why.append("ratio %s: %r" % (r, v))
    if "placement" not in j["parts"].get("cpu", {}):
        why.append("no cpu placement")
    runs = j["parts"].get("cpu", {}).get("runs", [])
    pp = j["figures"].get("cpu.pingpong.p50_ns", {}).get("runs", [])
    one_core = c.SHARED_CORE_NS
    if len(runs) != j["runs"] or any(
            r["pingpong_p50_ns"] != pp[i] or
            r["cores"] != ("shared" if pp[i] < one_core else "separate") or
            not r.get("cpu.exist_b1.p50_vs_pingpong") for i, r in enumerate(runs)):
        why.append("cpu runs %r (ping-pong %r)" % (runs, pp))
    return why


def quick_without_ceph(tmp):
    out = os.path.join(tmp, "quick")
    env = dict(os.environ, PATH=no_ceph_path(tmp))
    t = time.time()
    p = compare("--quick", "--out", out, env=env, timeout=240)
    check("quick-no-ceph-exit-0", p.returncode == 0,
          "exit %d: %s" % (p.returncode, p.stderr.strip()[-600:]))
    check("quick-no-ceph-skip-named-on-stderr",
          re.search(r"SKIP rados part: ceph-mon, ceph-osd.* not found in PATH", p.stderr) is not None,
          p.stderr.strip()[-400:])
    try:
        with open(os.path.join(out, "compare.json")) as f:
            j = json.load(f)
    except (OSError, ValueError) as e:
        check("quick-no-ceph-json", False, str(e))
        return
    why = want_cpu(j)
    rados = j["parts"].get("rados", {})
    if rados.get("status") != "skipped" or "ceph-mon" not in rados.get("why", ""):
        why.append("parts.rados %r" % rados)
    if any(k.startswith("rados.") for k in list(j["figures"]) + list(j["ratios"])):
        why.append("rados figures without a cluster")
    if j["runs"] != 1 or not j["quick"]:
        why.append("runs %r quick %r" % (j["runs"], j["quick"]))
    check("quick-no-ceph-json", not why, "; ".join(why))
    with open(os.path.join(out, "compare.md")) as f:
        md = f.read()
    check("quick-no-ceph-table-says-skipped", "SKIPPED: ceph-mon" in md and
          "| figure | nkv | reference | nkv / reference |" in md, md[-400:])
    lines = sum(1 for _ in open(os.path.join(out, "compare.json")))
    check("quick-json-compact", lines < 1000, "%d lines" % lines)
    print("(quick run without Ceph: %.1f s)" % (time.time() - t))


def quick_output():
    """The CI stage's quick run, with Ceph when installed."""
    path = QUICK_DIR and os.path.join(QUICK_DIR, "compare.json")
    if not path or not os.path.exists(path):
        skip("quick-json-schema", "no quick run's JSON given (tests/bench/test_compare.py BUILD "
                                  "QUICK_DIR; the bench-compare-quick stage writes one)")
        return
    with open(path) as f:
        j = json.load(f)
    why = want_cpu(j)
    c = load()
    if j["parts"]["rados"]["status"] == "ran":
        for size, b, q in c.rados_points(True):
            base = c.point_key(size, b, q)
            for op, tools in (("store", ("nkv", "loop", "backend")),
                              ("retrieve", ("nkv", "loop", "backend", "nkv_verify"))):
                for tool in tools:
                    for unit in ("iops", "p50_us"):
                        v = j["figures"].get("%s.%s.%s.%s" % (base, op, tool, unit))
                        if not v or not v["median"] or v["median"] <= 0:
                            why.append("%s.%s.%s.%s: %r" % (base, op, tool, unit, v))
                for r in ("nkv.iops_vs_loop", "backend.iops_vs_loop", "nkv.iops_vs_backend"):
                    if "%s.%s.%s" % (base, op, r) not in j["ratios"]:
                        why.append("no ratio %s.%s.%s" % (base, op, r))
    elif "not found" not in j["parts"]["rados"].get("why", ""):
        why.append("rados part neither ran nor skipped by name: %r" % j["parts"]["rados"])
    if j["parts"].get("rocksdb", {}).get("status") != "ran":
        why.append("rocksdb part did not run: %r" % j["parts"].get("rocksdb"))
    for size, batch in c.ROCKS_POINTS:
        for op in ("store", "retrieve"):
            for sync in c.ROCKS_SYNCS:
                for tool in ("nkv", "loop", "backend"):
                    v = j["figures"].get(c.rocks_key(size, sync, op, tool) + ".iops")
                    if not v or not v["median"] or v["median"] <= 0:
                        why.append("%s.iops: %r" % (c.rocks_key(size, sync, op, tool), v))
                for tool, r in (("nkv", "iops_vs_loop"), ("nkv", "iops_vs_mem"),
                                ("backend", "iops_vs_loop"), ("nkv", "iops_vs_backend")):
                    if "%s.%s" % (c.rocks_key(size, sync, op, tool), r) not in j["ratios"]:
                        why.append("no ratio %s.%s" % (c.rocks_key(size, sync, op, tool), r))
    check("quick-json-schema (rados %s)" % j["parts"]["rados"]["status"], not why,
          "; ".join(why[:6]))


def ceph_procs(tag):
    """PIDs of live (not zombie) processes whose command line names tag."""
    pids = []
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            with open("/proc/%s/cmdline" % pid, "rb") as f:
                cmd = f.read()
            with open("/proc/%s/stat" % pid) as f:
                state = f.read().rsplit(")", 1)[1].split()[0]
        except (OSError, IndexError):
            continue
        if tag.encode() in cmd and state != "Z":
            pids.append(int(pid))
    return pids


def left_after(cdir):
    """What still runs of a cluster after its stop; a daemon SIGKILLed
    after its 5 s of grace may take a moment to go."""
    for _ in range(50):
        left = ceph_procs(cdir)
        if not left:
            break
        time.sleep(0.2)
    return left


def interrupt_stops_cluster(tmp):
    c = load()
    if c.missing_ceph():
        skip("ctrl-c-stops-cluster", "%s not installed" % ", ".join(c.missing_ceph()))
        return
    p = subprocess.Popen([sys.executable, SCRIPT, "--build", BUILD, "--quick", "--out",
                          os.path.join(tmp, "intr")], stdout=subprocess.DEVNULL,
                         stderr=subprocess.PIPE, text=True, cwd=ROOT)
    cdir, err = None, []
    t = time.time()
    try:
        for line in p.stderr:
            err.append(line)
            m = re.search(r"rados cluster up in (\S+)", line)
            if m:
                cdir = m.group(1)
                break
            if time.time() - t > 120:
                break
        if cdir:
            up = bool(ceph_procs(cdir))
            p.send_signal(signal.SIGINT)
        rest = p.communicate(timeout=90)[1]
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
    if not cdir:
        check("ctrl-c-stops-cluster", False, "the cluster never came up: " + "".join(err)[-400:])
        return
    left = left_after(cdir)
    check("ctrl-c-stops-cluster", up and p.returncode == 130 and not left and
          not os.path.exists(cdir) and "interrupted" in rest,
          "daemons before %r, exit %d, left %r, dir %s: %s" %
          (up, p.returncode, left, os.path.exists(cdir), rest.strip()[-300:]))


def failure_stops_cluster(tmp):
    """A measurement that fails mid-way (an nkv-bench that refuses every
    --target run): exit 1 naming it, and the cluster is stopped."""
    c = load()
    if c.missing_ceph():
        skip("failure-stops-cluster", "%s not installed" % ", ".join(c.missing_ceph()))
        return
    b = os.path.join(tmp, "failing-build")
    os.makedirs(os.path.join(b, "bin"))
    os.makedirs(os.path.join(b, "bench"))
    for exe in ("bin/nkv-target", "bench/pingpong", "bench/rados_loop", "bench/rocks_loop"):
        os.symlink(os.path.abspath(os.path.join(BUILD, exe)), os.path.join(b, exe))
    with open(os.path.join(b, "bin", "nkv-bench"), "w") as f:
        f.write("#!/bin/sh\ncase \"$*\" in *--target*) echo 'refused on purpose' >&2; exit 3;; esac\n"
                "exec %s \"$@\"\n" % os.path.abspath(os.path.join(BUILD, "bin", "nkv-bench")))
    os.chmod(os.path.join(b, "bin", "nkv-bench"), 0o755)
    p = subprocess.run([sys.executable, SCRIPT, "--build", b, "--quick", "--out",
                        os.path.join(tmp, "fail")], capture_output=True, text=True, timeout=240,
                       cwd=ROOT)
    m = re.search(r"rados cluster up in (\S+)", p.stderr)
    left = m and left_after(m.group(1))
    check("failure-stops-cluster", p.returncode == 1 and m is not None and not left and
          not os.path.exists(m.group(1)) and "refused on purpose" in p.stderr and
          not os.path.exists(os.path.join(tmp, "fail", "compare.json")),
          "exit %d, left %r: %s" % (p.returncode, left, p.stderr.strip()[-400:]))


def main():
    for exe in ("bin/nkv-bench", "bin/nkv-target", "bench/pingpong", "bench/rados_loop",
                "bench/rocks_loop"):
        if not os.access(os.path.join(BUILD, exe), os.X_OK):
            print("NKV-COMPARE build FAIL %s missing (make bench-compare builds it)" % exe)
            return 1
    tmp = tempfile.mkdtemp(prefix="nkv-compare-test-")
    t0 = time.time()
    try:
        arithmetic(load())
        bad_args(tmp)
        rados_loop_args(tmp)
        rocks_loop_args(tmp)
        quick_without_ceph(tmp)
        quick_output()
        interrupt_stops_cluster(tmp)
        failure_stops_cluster(tmp)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    n_fail = results.count(False)
    print("%d passed, %d failed (%.1f s)" % (results.count(True), n_fail, time.time() - t0))
    return 1 if n_fail else 0


if __name__ == "__main__":
    sys.exit(main())
