#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Benchmarks of docs/bench.md, side by side in one run on this machine.

  (a) batch-1 round trip of a 4 KiB Retrieve (p50, p99) against a bare
      cross-thread cache-line ping-pong round trip (bench/pingpong rtt);
  (b) Retrieve IOPS x 4 KiB at batch sizes 1, 8, 32, 64 against the
      single-core memcpy rate of 4 KiB blocks (bench/pingpong memcpy);
  (c) SQ doorbells per command at each batch size (must be 1/B);
  (d) a PNG plot of IOPS and p99 latency versus batch size (gnuplot).

Absolute times on a shared 2-core machine are noise; the ratios are the
result. Every nkv-bench run uses the embedded target, --no-verify (the
verification pass is outside the timed region anyway, but costs wall
time) and memory mode 8 unless --memory-mode says otherwise.

usage: bench/run-bench.py [--build DIR] [--out DIR] [--smoke] [--memory-mode N]
Python 3 standard library only.
"""
import argparse
import json
import os
import shutil
import subprocess
import sys
import time

BATCHES = [1, 8, 32, 64]


def run_json(cmd, timeout):
    """Run cmd, return its stdout parsed as JSON; fail loudly otherwise."""
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    if p.returncode != 0:
        sys.exit("run-bench: %s failed (exit %d):\n%s" % (" ".join(cmd), p.returncode, p.stderr))
    return json.loads(p.stdout.strip().splitlines()[-1])


def bench(nkv_bench, batch, keys, iters, mode):
    return run_json([nkv_bench, "--kv-op", "retrieve", "--memory-mode", str(mode),
                     "--batch-size", str(batch), "--num-keys", str(keys),
                     "--iterations", str(iters), "--value-size", "4096",
                     "--no-verify", "--json", "--quiet"], timeout=600)


def plot(rows, out_dir):
    """IOPS (left axis) and p99 latency (right axis) versus batch size."""
    gp = shutil.which("gnuplot")
    if not gp:
        print("run-bench: gnuplot not installed; no plot")
        return None
    data = os.path.join(out_dir, "batch.dat")
    png = os.path.join(out_dir, "batch.png")
    with open(data, "w") as f:
        f.write("# batch iops p99_us p50_us\n")
        for r in rows:
            f.write("%d %.1f %.3f %.3f\n" % (r["batch"], r["iops"], r["p99_us"], r["p50_us"]))
    script = """
set terminal pngcairo size 900,580 font ",11" noenhanced
set output '%s'
set title 'nkv-bench: 4 KiB Retrieve vs batch size (cpu engine, embedded nkv-target)'
set xlabel 'batch size (lanes per SQ doorbell)'
set logscale x 2
set xtics (1, 2, 4, 8, 16, 32, 64)
set xrange [0.8:80]
set ylabel 'IOPS (thousands)'
set y2label 'latency per command (us, log scale)'
set ytics nomirror
set y2tics
set yrange [0:*]
set logscale y2 10
set key below horizontal box
set bmargin 6
set grid ytics
plot '%s' using 1:($2/1000) with linespoints lw 2 pt 7 title 'IOPS (k, left)', \\
     '' using 1:3 axes x1y2 with linespoints lw 2 pt 5 dt 2 title 'p99 latency (us, right)', \\
     '' using 1:4 axes x1y2 with linespoints lw 1 pt 4 dt 3 title 'p50 latency (us, right)'
""" % (png, data)
    # pngcairo may be missing from a minimal gnuplot; fall back to png.
    p = subprocess.run([gp], input=script, text=True, capture_output=True, timeout=60)
    if p.returncode != 0:
        p = subprocess.run([gp], input=script.replace("pngcairo", "png"), text=True,
                           capture_output=True, timeout=60)
    if p.returncode != 0:
        print("run-bench: gnuplot failed: " + p.stderr.strip())
        return None
    return png


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--build", default="build")
    ap.add_argument("--out", default="bench/results")
    ap.add_argument("--smoke", action="store_true", help="tiny runs: check the pipeline only")
    ap.add_argument("--memory-mode", default="8")
    a = ap.parse_args()
    nkv_bench = os.path.join(a.build, "bin", "nkv-bench")
    pingpong = os.path.join(a.build, "bench", "pingpong")
    for exe in (nkv_bench, pingpong):
        if not os.access(exe, os.X_OK):
            sys.exit("run-bench: %s missing: make BUILD=%s programs bench-tools" % (exe, a.build))
    os.makedirs(a.out, exist_ok=True)
    keys = 512 if a.smoke else 4096
    iters = 1 if a.smoke else 8
    t0 = time.time()

    rtt = run_json([pingpong, "rtt", "2000" if a.smoke else "200000"], timeout=120)
    mc = run_json([pingpong, "memcpy", "4096"], timeout=120)
    b1 = bench(nkv_bench, 1, 256 if a.smoke else 2048, iters, a.memory_mode)
    rows = []
    for b in BATCHES:
        j = bench(nkv_bench, b, keys, iters, a.memory_mode)
        if j["unexpected"] or j["commands"] != keys * iters:
            sys.exit("run-bench: batch %d: %d unexpected outcomes, %d commands" %
                     (b, j["unexpected"], j["commands"]))
        rows.append({"batch": b, "iops": j["iops"], "iops_wall": j["iops_wall"],
                     "p50_us": j["latency_ns"]["p50"] / 1e3, "p99_us": j["latency_ns"]["p99"] / 1e3,
                     "db_per_cmd": j["sq_doorbells_per_cmd"], "sq_doorbells": j["sq_doorbells"],
                     "commands": j["commands"]})

    res = {"when": time.strftime("%Y-%m-%d %H:%M:%S"), "smoke": a.smoke,
           "memory_mode": a.memory_mode, "cpus": os.cpu_count(), "pingpong": rtt,
           "memcpy": mc, "batch1": b1, "batches": rows}
    with open(os.path.join(a.out, "results.json"), "w") as f:
        json.dump(res, f, indent=1)
    png = plot(rows, a.out)

    l50, l99 = b1["latency_ns"]["p50"], b1["latency_ns"]["p99"]
    print("(a) batch-1 4 KiB Retrieve round trip vs cache-line ping-pong round trip")
    print("    Retrieve p50 %.1f us, p99 %.1f us; ping-pong p50 %d ns, p99 %d ns" %
          (l50 / 1e3, l99 / 1e3, rtt["p50_ns"], rtt["p99_ns"]))
    print("    ratio p50 %.1fx, p99 %.1fx" % (l50 / max(rtt["p50_ns"], 1), l99 / max(rtt["p99_ns"], 1)))
    print("(b) 4 KiB Retrieve IOPS vs single-core memcpy of 4 KiB blocks (%.2f M blocks/s)" %
          (mc["blocks_per_s"] / 1e6))
    print("(c) SQ doorbells per command")
    print("    batch      IOPS  of memcpy   p50 us   p99 us  doorbells/cmd  (1/B)")
    for r in rows:
        print("    %5d  %8.0f  %8.2f%%  %7.1f  %7.1f  %13.4f  %.4f" %
              (r["batch"], r["iops"], 100.0 * r["iops"] / mc["blocks_per_s"], r["p50_us"],
               r["p99_us"], r["db_per_cmd"], 1.0 / r["batch"]))
        if abs(r["db_per_cmd"] - 1.0 / r["batch"]) > 1e-9:
            sys.exit("run-bench: batch %d: %.6f doorbells per command, want 1/%d" %
                     (r["batch"], r["db_per_cmd"], r["batch"]))
    print("(d) plot: %s" % (png or "none"))
    print("results: %s (%.0f s)" % (os.path.join(a.out, "results.json"), time.time() - t0))


if __name__ == "__main__":
    main()
