#!/usr/bin/env python3
"""Integration scenarios for `shale perf`, runnable against any Kafka-compatible bootstrap server.

  perf_scenario.py tail-read --kafka            # starts Apache Kafka with scripts/kafka
  perf_scenario.py catch-up --bootstrap H:P     # any running cluster (e.g. a Shale broker)

tail-read: a one-minute measured run (--warmup-duration 0 --test-duration 1) on 2 topics x 3
partitions. catch-up: backlog mode with 2 staggered groups; the --backlog-duration minimum of
300 s is lowered with the documented test hook SHALE_PERF_MIN_BACKLOG_SECONDS, and
max.poll.interval.ms is lowered so that paused consumers leave their groups as they do after
300 s with the defaults. Every stdout line is checked against the tool's line formats, the JSON
result file against the field list, and the result is loaded and plotted by
tools/perf/plot_results.py. Exits non-zero on the first failed check.
"""
import argparse
import glob
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile

SRC = os.environ.get("SHALE_SOURCE_DIR", os.path.join(os.path.dirname(__file__), "..", "..", ".."))
SHALE_BIN = os.environ.get("SHALE_BIN", os.path.join(SRC, "build", "release", "bin", "shale"))

PREFIX = r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d -( INFO| WARN|ERROR) "
L = r" *\d+\.\d{3}"  # LATENCY: 0.000, width >= 9
RATE = r" *\d+\.\d\d"
PERIOD = re.compile(
    r"^ *(\d+\.\d)s \| Prod rate (%s) msg/s / (%s) MiB/s \| Prod err (%s) err/s \| "
    r"Cons rate (%s) msg/s / (%s) MiB/s \| Backlog: (%s) K msg \| "
    r"Prod Latency \(ms\) avg: %s - 50%%: %s - 99%%: %s - 99\.9%%: %s - Max: %s \| "
    r"E2E Latency \(ms\) avg: %s - 50%%: %s - 99%%: %s - 99\.9%%: %s - Max: %s$"
    % ((RATE,) * 6 + (L,) * 10))
SUMMARY = re.compile(
    r"^Summary \| Prod rate %s msg/s / %s MiB/s \| Prod total (%s) M msg / %s GiB / %s K err \| "
    r"Cons rate %s msg/s / %s MiB/s \| Cons total (%s) M msg / %s GiB \| "
    r"Prod Latency \(ms\) avg: %s - 50%%: %s - 75%%: %s - 90%%: %s - 95%%: %s - 99%%: %s - "
    r"99\.9%%: %s - 99\.99%%: %s - Max: %s \| "
    r"E2E Latency \(ms\) avg: %s - 50%%: %s - 75%%: %s - 90%%: %s - 95%%: %s - 99%%: %s - "
    r"99\.9%%: %s - 99\.99%%: %s - Max: %s$" % ((RATE,) * 9 + (L,) * 18))

CONFIG_KEYS = [
    "bootstrapServer", "commonConfigs", "topicConfigs", "producerConfigs", "consumerConfigs",
    "reset", "topicPrefix", "topics", "partitionsPerTopic", "producersPerTopic", "groupsPerTopic",
    "consumersPerGroup", "awaitTopicReady", "recordSize", "randomRatio", "randomPoolSize",
    "sendRate", "sendRateDuringCatchup", "maxConsumeRecordRate", "backlogDurationSeconds",
    "groupStartDelaySeconds", "warmupDurationMinutes", "consumersDuringCatchupPercentage",
    "testDurationMinutes", "reportingIntervalSeconds", "valueSchema", "valuesFile", "reuseTopics",
    "catchupTopicPrefix"]


def result_keys():
    k = ["config", "startMs", "produceRateTotal", "produceThroughputTotalBps", "produceCountTotal",
         "produceSizeTotalBytes", "produceErrorTotal", "consumeRateTotal",
         "consumeThroughputTotalBps", "consumeCountTotal", "consumeSizeTotalBytes"]
    for p in ("produceLatency", "endToEndLatency"):
        k += [p + s + "TotalMicros" for s in
              ("Mean", "50th", "75th", "90th", "95th", "99th", "999th", "9999th", "Max")]
    k += ["timeSecs", "produceRate", "produceThroughputBps", "errorRate", "consumeRate",
          "consumeThroughputBps", "backlog"]
    for p in ("produceLatency", "endToEndLatency"):
        k += [p + s + "Micros" for s in
              ("Mean", "Min", "50th", "75th", "90th", "95th", "99th", "999th", "9999th", "Max")]
        k.append(p + "QuantilesMicros")
    return k


def check(cond, msg):
    if not cond:
        print("FAIL: " + msg, file=sys.stderr)
        sys.exit(1)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def parse_output(out):
    """Splits stdout into log messages (multi-line JSON config dump allowed) and checks them."""
    messages = []
    for line in out.splitlines():
        m = re.match(PREFIX, line)
        if m:
            messages.append([m.group(1).strip(), line[m.end():]])
        else:
            check(messages and messages[-1][1].startswith("Starting perf test with config: "),
                  "line without the log prefix outside the config dump: %r" % line)
            messages[-1][1] += "\n" + line
    return messages


def phases(messages):
    """Groups period lines into phases, each closed by its Summary line."""
    result, current = [], []
    for level, text in messages:
        if text.startswith("Summary |"):
            m = SUMMARY.match(text)
            check(m is not None, "malformed Summary line: %r" % text)
            result.append((current, m))
            current = []
        elif re.match(r"^ *\d+\.\ds \|", text):
            m = PERIOD.match(text)
            check(m is not None, "malformed period line: %r" % text)
            current.append(m)
    check(not current, "period lines after the last Summary")
    return result


def check_stop_rule(periods, duration):
    """A phase ends after the first period whose elapsed time reaches the duration. (The count
    is not fixed: each period takes a little longer than its sleep, more on a loaded machine.)"""
    elapsed = [float(p.group(1)) for p in periods]
    check(elapsed and elapsed[-1] >= duration, "phase ended early: %s" % elapsed[-3:])
    # Printed with one decimal: a period at 59.96 s shows as 60.0.
    check(len(elapsed) < 2 or elapsed[-2] <= duration, "phase ended late: %s" % elapsed[-3:])
    check(elapsed == sorted(elapsed), "elapsed times increase")


def check_result_file(messages, cwd, expect_periods=None):
    saving = [t for _, t in messages if t.startswith("Saving results to ")]
    check(len(saving) == 1, "expected one 'Saving results to' line")
    name = saving[0][len("Saving results to "):]
    check(re.match(r"^perf-\d{4}-\d\d-\d\d-\d\d-\d\d-\d\d\.json$", name), "file name %r" % name)
    path = os.path.join(cwd, name)
    with open(path) as f:
        text = f.read()
    d = json.loads(text)
    check(list(d) == result_keys(), "result keys/order: %s" % list(d))
    check(list(d["config"]) == CONFIG_KEYS, "config keys/order: %s" % list(d["config"]))
    check(text.startswith('{\n  "config" : {\n    "bootstrapServer" : '), "Jackson layout")
    n = len(d["timeSecs"])
    for k, v in d.items():
        if isinstance(v, list):
            check(len(v) == n, "array %s has %d elements, timeSecs %d" % (k, len(v), n))
    if expect_periods is not None:
        check(n == expect_periods, "%d periods, expected %d" % (n, expect_periods))
    check(all(isinstance(b, int) for b in d["backlog"]), "backlog holds integers")
    q = d["produceLatencyQuantilesMicros"]
    check(q and list(q)[-1] == "100.0", "produce quantiles end at 100.0")
    check(d["produceErrorTotal"] == 0.0, "no produce errors")
    return path, d


def plot(path, workdir):
    out = os.path.join(workdir, "charts")
    r = subprocess.run([sys.executable, os.path.join(SRC, "tools", "perf", "plot_results.py"),
                        path, "--out", out, "--omb-json", os.path.join(workdir, "omb.json")],
                       capture_output=True, text=True)
    check(r.returncode == 0, "plot_results.py failed: " + r.stderr)
    check(os.path.exists(os.path.join(out, "publish-rate.svg")), "charts written")
    omb = json.load(open(os.path.join(workdir, "omb.json")))
    for k in ("publishRate", "consumeRate", "backlog", "endToEndLatency99pct",
              "aggregatedPublishLatency99pct", "aggregatedEndToEndLatencyQuantiles"):
        check(k in omb, "OMB field %s" % k)


def run_perf(args, cwd, env=None, timeout=600):
    cmd = [SHALE_BIN, "perf"] + args
    print("+ " + " ".join(cmd), flush=True)
    r = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=timeout,
                       env=dict(os.environ, **(env or {})))
    sys.stdout.write(r.stdout[-6000:])
    sys.stderr.write(r.stderr[-3000:])
    check(r.returncode == 0, "shale perf exited with %d" % r.returncode)
    return r.stdout


def tail_read(bootstrap, workdir):
    out = run_perf(["-B", bootstrap, "--reset", "-t", "2", "-n", "3", "-p", "1", "-g", "1",
                    "-c", "1", "-s", "1024", "-r", "200", "--warmup-duration", "0",
                    "--test-duration", "1", "-P", "linger.ms=1", "-C", "fetch.max.wait.ms=100",
                    "--html", "report.html"], workdir)
    messages = parse_output(out)
    texts = [t for _, t in messages]
    check(texts[0].startswith("Starting perf test with config: {"), "config dump first")
    check(any(re.match(r"^Created 2 topics, took \d+ ms$", t) for t in texts), "topic creation")
    check(any(t == "Waiting for topics to be ready... sent: 6, received: 6" for t in texts),
          "readiness probe reached all 6 partitions")
    check("Running test for 1 minutes..." in texts, "measured phase message")
    ph = phases(messages)
    check(len(ph) == 1, "one phase (no warmup), got %d" % len(ph))
    periods, summary = ph[0]
    check_stop_rule(periods, 60.0)
    check(float(periods[0].group(1)) >= 1.0, "elapsed starts at the first interval")
    prod_total = float(summary.group(1))
    cons_total = float(summary.group(2))
    check(prod_total > 0 and cons_total > 0, "messages produced and consumed")
    path, d = check_result_file(messages, workdir, expect_periods=len(periods))
    check(d["config"]["topics"] == 2 and d["config"]["partitionsPerTopic"] == 3, "config echo")
    check(d["config"]["producerConfigs"] == {"linger.ms": "1"}, "producer configs echo")
    check(d["produceCountTotal"] > 0 and d["consumeCountTotal"] > 0, "JSON totals")
    check(d["produceSizeTotalBytes"] == d["produceCountTotal"] * 1024, "payload bytes only")
    check(d["endToEndLatency50thTotalMicros"] > 0, "E2E latency measured")
    html = open(os.path.join(workdir, "report.html")).read()
    check(html.count("<svg") >= 3, "HTML report with SVG plots")
    plot(path, workdir)


def catch_up(bootstrap, workdir):
    env = {"SHALE_PERF_MIN_BACKLOG_SECONDS": "10"}
    out = run_perf(["-B", bootstrap, "-t", "1", "-n", "2", "-g", "2", "-c", "1", "-s", "512",
                    "-r", "100", "-b", "16", "-G", "4", "--warmup-duration", "0",
                    "-C", "max.poll.interval.ms=7000", "session.timeout.ms=6000",
                    "heartbeat.interval.ms=1000", "fetch.max.wait.ms=100"], workdir, env)
    messages = parse_output(out)
    texts = [t for _, t in messages]
    for needle in ("Pausing consumers for 16 seconds to build up backlog...",
                   "Resetting consumer offsets and resuming..."):
        check(needle in texts, "missing %r" % needle)
    check(any(t.startswith("Reset offsets of group 1 to ") for t in texts), "group 1 reset")
    ph = phases(messages)
    check(len(ph) == 2, "backlog and catch-up phases, got %d" % len(ph))
    backlog_periods, _ = ph[0]
    check_stop_rule(backlog_periods, 16.0)
    check(float(backlog_periods[-1].group(7)) > 0, "backlog builds up while consumers pause")
    path, d = check_result_file(messages, workdir)
    # Group 0 restarts at the start of the backlog (~1600 records); the phase ends once a
    # consumer reaches records sent after the backlog window.
    check(d["consumeCountTotal"] >= 400, "catch-up consumed the backlog: %s" % d["consumeCountTotal"])
    check(d["config"]["backlogDurationSeconds"] == 16, "config echo")
    plot(path, workdir)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("scenario", choices=["tail-read", "catch-up"])
    g = ap.add_mutually_exclusive_group(required=True)
    g.add_argument("--bootstrap", help="an already running Kafka-compatible cluster")
    g.add_argument("--kafka", action="store_true", help="start Apache Kafka via scripts/kafka")
    args = ap.parse_args()
    check(os.path.exists(SHALE_BIN), "no shale binary at " + SHALE_BIN)
    workdir = tempfile.mkdtemp(prefix="shale-perf-it-")
    kafka_dir = os.path.join(workdir, "kafka")
    started = False
    try:
        bootstrap = args.bootstrap
        if args.kafka:
            port, cport = free_port(), free_port()
            subprocess.run([os.path.join(SRC, "scripts", "kafka"), "start", kafka_dir, str(port),
                            str(cport)], check=True)
            started = True
            bootstrap = "127.0.0.1:%d" % port
        run_dir = os.path.join(workdir, "run")
        os.makedirs(run_dir)
        (tail_read if args.scenario == "tail-read" else catch_up)(bootstrap, run_dir)
        print("PASS: %s against %s" % (args.scenario, bootstrap))
    finally:
        if started:
            subprocess.run([os.path.join(SRC, "scripts", "kafka"), "stop", kafka_dir])
        if os.environ.get("SHALE_KEEP_TEST_DIRS"):
            print("kept " + workdir)
        else:
            shutil.rmtree(workdir, ignore_errors=True)


if __name__ == "__main__":
    main()
