#!/usr/bin/env python3
"""Measures the CPU `shale perf` itself uses during its measured phase (from the
"Running test for" line to the "Saving results to" line), from /proc/<pid>/stat.

  tools/perf/measure_self_cpu.py build/release/bin/shale perf -B 127.0.0.1:9092 \
      -t 1 -n 8 -s 65536 -r 1600 -w 0 -d 1

Prints the tool's CPU in cores (1.0 = one core busy) and the achieved throughput.
"""
import os
import re
import subprocess
import sys
import time

TICK = os.sysconf("SC_CLK_TCK")


def cpu_seconds(pid):
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICK


def main(cmd):
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True)
    start = None
    summary = ""
    for line in p.stdout:
        if "Running test for" in line or "Running catch-up test" in line:
            start = (time.monotonic(), cpu_seconds(p.pid))
        elif "Summary |" in line:
            summary = line.strip()
        elif "Saving results to" in line and start:
            wall = time.monotonic() - start[0]
            cpu = cpu_seconds(p.pid) - start[1]
            m = re.search(r"Prod rate +([\d.]+) msg/s / +([\d.]+) MiB/s.*Cons rate +([\d.]+) msg/s / +([\d.]+) MiB/s", summary)
            print("measured phase: %.1f s wall, %.2f s CPU -> %.3f cores" % (wall, cpu, cpu / wall))
            if m:
                print("produce %s msg/s %s MiB/s, consume %s msg/s %s MiB/s" % m.groups())
    return p.wait()


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
