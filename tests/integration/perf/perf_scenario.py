#!/usr/bin/env python3
"""Integration scenarios for `shale perf`, runnable against any Kafka-compatible bootstrap server.

  perf_scenario.py tail-read --kafka            # starts Apache Kafka with scripts/kafka
  perf_scenario.py tail-read --shale            # starts `shale serve` ($SHALE_BIN)
  perf_scenario.py catch-up --bootstrap H:P     # any running cluster

tail-read: a one-minute measured run (--warmup-duration 0 --test-duration 1) on 2 topics x 3
partitions. catch-up: backlog mode with 2 staggered groups; the --backlog-duration minimum of
300 s is lowered with the documented test hook SHALE_PERF_MIN_BACKLOG_SECONDS, and
max.poll.interval.ms is lowered so that paused consumers leave their groups as they do after
300 s with the defaults.

tutorial-tail-read and tutorial-catch-up: the two command lines of AutoMQ's tutorial (spec
section T, 10 topics x 128 partitions), unchanged apart from scale: the send rate (1600 msg/s of
52224 bytes, 800 msg/s of 64 KiB) is divided by 16 and 20 for a shared 2-core machine, the
warmup is 0 and the measured phase 1 minute; in catch-up the backlog window and the group start
delay (600 s / 30 s) are both divided by 15 through the hook, with max.poll.interval.ms scaled
down alongside (see TUTORIAL_* below).

Every stdout line is checked against the tool's line formats, the JSON result file against the
field list, and the result is loaded and plotted by tools/perf/plot_results.py. Exits non-zero
on the first failed check.
"""
import argparse
import glob
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

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
    r"^Summary \| Prod rate (?P<prod_rate>%s) msg/s / %s MiB/s \| "
    r"Prod total (?P<prod_total>%s) M msg / %s GiB / %s K err \| "
    r"Cons rate (?P<cons_rate>%s) msg/s / %s MiB/s \| Cons total (?P<cons_total>%s) M msg / %s GiB \| "
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
    prod_total = float(summary.group("prod_total"))
    cons_total = float(summary.group("cons_total"))
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


# The tutorial's command lines (spec section T) with only the scale changed; see the docstring.
TUTORIAL_TAIL_READ = [
    "--producer-configs", "batch.size=0", "--consumer-configs", "fetch.max.wait.ms=1000",
    "--topics", "10", "--partitions-per-topic", "128", "--producers-per-topic", "1",
    "--groups-per-topic", "1", "--consumers-per-group", "1", "--record-size", "52224",
    "--send-rate", "100", "--warmup-duration", "0", "--test-duration", "1", "--reset"]
# The paused consumers must leave their groups before the offsets are reset: with the tutorial's
# 600 s backlog the Java default max.poll.interval.ms of 300 s does that; at 40 s it is scaled to
# 20 s (and the session timeout below it, as librdkafka requires).
TUTORIAL_CATCH_UP = [
    "--producer-configs", "batch.size=0", "--consumer-configs", "fetch.max.wait.ms=1000",
    "max.poll.interval.ms=20000", "session.timeout.ms=10000", "heartbeat.interval.ms=2000",
    "--topics", "10", "--partitions-per-topic", "128", "--producers-per-topic", "1",
    "--groups-per-topic", "3", "--consumers-per-group", "1", "--record-size", "65536",
    "--send-rate", "40", "--backlog-duration", "40", "--group-start-delay", "2",
    "--warmup-duration", "0", "--reset"]


def tutorial_tail_read(bootstrap, workdir):
    out = run_perf(["--bootstrap-server", bootstrap] + TUTORIAL_TAIL_READ, workdir)
    messages = parse_output(out)
    texts = [t for _, t in messages]
    check(texts[0].startswith("Starting perf test with config: {"), "config dump first")
    check(any(re.match(r"^Created 10 topics, took \d+ ms$", t) for t in texts), "topic creation")
    check(any(re.match(r"^Created 10 consumers, took \d+ ms$", t) for t in texts), "consumers")
    check(any(t == "Waiting for topics to be ready... sent: 1280, received: 1280" for t in texts),
          "readiness probe reached all 1280 partitions")
    check("Running test for 1 minutes..." in texts, "measured phase message")
    ph = phases(messages)
    check(len(ph) == 1, "one phase (no warmup), got %d" % len(ph))
    periods, summary = ph[0]
    check_stop_rule(periods, 60.0)
    # The rates, not the totals: a slow run's few thousand messages print as "0.00 M msg".
    check(float(summary.group("prod_rate")) > 0 and float(summary.group("cons_rate")) > 0,
          "messages produced and consumed")
    path, d = check_result_file(messages, workdir, expect_periods=len(periods))
    c = d["config"]
    check(c["topics"] == 10 and c["partitionsPerTopic"] == 128, "config echo")
    check(c["producerConfigs"] == {"batch.size": "0"}, "producer configs echo")
    check(c["consumerConfigs"] == {"fetch.max.wait.ms": "1000"}, "consumer configs echo")
    check(c["recordSize"] == 52224 and c["sendRate"] == 100, "record size and rate echo")
    check(d["produceSizeTotalBytes"] == d["produceCountTotal"] * 52224, "payload bytes only")
    # At 100 msg/s for 60 s: far more than the probe's records, and consumption keeps up (each
    # record is read back once; the last interval's records may still be in flight).
    check(d["produceCountTotal"] >= 1000, "produced %s" % d["produceCountTotal"])
    check(d["consumeCountTotal"] >= 0.9 * d["produceCountTotal"],
          "consumed %s of %s" % (d["consumeCountTotal"], d["produceCountTotal"]))
    check(d["endToEndLatency50thTotalMicros"] > 0, "E2E latency measured")
    plot(path, workdir)


def tutorial_catch_up(bootstrap, workdir):
    env = {"SHALE_PERF_MIN_BACKLOG_SECONDS": "40"}
    out = run_perf(["--bootstrap-server", bootstrap] + TUTORIAL_CATCH_UP, workdir, env)
    messages = parse_output(out)
    texts = [t for _, t in messages]
    check(any(re.match(r"^Created 30 consumers, took \d+ ms$", t) for t in texts),
          "3 groups x 10 topics of consumers")
    check(any(t == "Waiting for topics to be ready... sent: 1280, received: 1280" for t in texts),
          "readiness probe reached all 1280 partitions")
    for needle in ("Pausing consumers for 40 seconds to build up backlog...",
                   "Resetting consumer offsets and resuming...",
                   "Running catch-up test until consumers reach the end of the backlog..."):
        check(needle in texts, "missing %r" % needle)
    resets = [re.match(r"^Reset offsets of group (\d) to \d+ \(timestamp (\d+)\)$", t)
              for t in texts]
    resets = [m for m in resets if m]
    check([int(m.group(1)) for m in resets] == [0, 1, 2], "groups 0, 1, 2 reset")
    ts = [int(m.group(2)) for m in resets]
    check(ts[1] - ts[0] == 2000 and ts[2] - ts[1] == 2000, "group start delay of 2 s: %s" % ts)
    check(any(t.startswith("Resuming consumers of 10 topics: ") for t in texts), "all resumed")
    ph = phases(messages)
    check(len(ph) == 2, "backlog and catch-up phases, got %d" % len(ph))
    backlog_periods, backlog_summary = ph[0]
    check_stop_rule(backlog_periods, 40.0)
    check(float(backlog_periods[-1].group(7)) > 0, "backlog builds up while consumers pause")
    path, d = check_result_file(messages, workdir)
    c = d["config"]
    check(c["backlogDurationSeconds"] == 40 and c["groupStartDelaySeconds"] == 2, "config echo")
    check(c["groupsPerTopic"] == 3 and c["partitionsPerTopic"] == 128, "config echo")
    # 40 s at 40 msg/s is ~1600 records of backlog per group; the phase ends once one consumer
    # reaches records sent after the window, so at least part of the backlog has been read.
    check(d["consumeCountTotal"] >= 200, "catch-up read the backlog: %s" % d["consumeCountTotal"])
    check(d["consumeSizeTotalBytes"] == d["consumeCountTotal"] * 65536, "consumed bytes")
    plot(path, workdir)


# Avro mode: a record schema and Avro-JSON values (one with each branch of the union).
AVRO_SCHEMA = ('{"type":"record","name":"Reading","namespace":"perf.test","fields":['
               '{"name":"name","type":"string"},{"name":"n","type":"int"},'
               '{"name":"tag","type":["null","string"]}]}')
AVRO_VALUES = ['{"name":"a","n":1,"tag":null}', '{"name":"bc","n":-2,"tag":{"string":"x"}}']


def zigzag(n):
    n = (n << 1) ^ (n >> 63)
    out = b""
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out += bytes([b | 0x80])
        else:
            return out + bytes([b])


def avro_string(s):
    return zigzag(len(s.encode())) + s.encode()


# The same values in Avro binary, encoded here by the spec's rules, independently of avro-c.
AVRO_BODIES = [avro_string("a") + zigzag(1) + zigzag(0),
               avro_string("bc") + zigzag(-2) + zigzag(1) + avro_string("x")]


class FakeSchemaRegistry:
    """The one Schema Registry call KafkaAvroSerializer makes with auto.register.schemas=true:
    POST /subjects/<subject>/versions {"schema": ...} -> {"id": N}, one id per subject."""

    def __init__(self):
        import http.server
        import threading
        registry = self
        self.subjects = {}

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self):
                m = re.match(r"^/subjects/([^/]+)/versions$", self.path)
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                if not m or "schema" not in body:
                    self.send_response(404)
                    self.end_headers()
                    return
                ids = registry.subjects
                ids.setdefault(m.group(1), (len(ids) + 101, body["schema"]))
                out = json.dumps({"id": ids[m.group(1)][0]}).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/vnd.schemaregistry.v1+json")
                self.send_header("Content-Length", str(len(out)))
                self.end_headers()
                self.wfile.write(out)

            def log_message(self, *args):
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = "http://127.0.0.1:%d" % self.server.server_address[1]
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def stop(self):
        self.server.shutdown()
        self.server.server_close()


def read_values(bootstrap, topic, count):
    """Values of the first `count` records of partition 0 of `topic` (read with kcat) that are
    not readiness probes (key "probe")."""
    r = subprocess.run(["kcat", "-C", "-b", bootstrap, "-t", topic, "-p", "0", "-o", "beginning",
                        "-c", str(count), "-e", "-q", "-f", "%K:%k%S:%s"],
                       capture_output=True, timeout=60)
    check(r.returncode == 0, "kcat failed: %r" % r.stderr[-500:])
    out, values = r.stdout, []
    while out:
        klen, _, rest = out.partition(b":")
        key, rest = rest[:int(klen)], rest[int(klen):]
        vlen, _, rest = rest.partition(b":")
        if key != b"probe":
            values.append(rest[:int(vlen)])
        out = rest[int(vlen):]
    return values


def avro(bootstrap, workdir):
    registry = FakeSchemaRegistry()
    try:
        values = os.path.join(workdir, "values.json")
        with open(values, "w") as f:
            f.write("\n".join(AVRO_VALUES) + "\n")
        out = run_perf(["-B", bootstrap, "-X", "avro", "-t", "2", "-n", "1", "-r", "50",
                        "--warmup-duration", "0", "--test-duration", "1",
                        "-P", "schema.registry.url=" + registry.url, "linger.ms=1",
                        "--value-schema", AVRO_SCHEMA, "--values-file", values], workdir)
    finally:
        registry.stop()
    messages = parse_output(out)
    texts = [t for _, t in messages]
    check("Registered the value schema for 2 topics; 2 Avro values per topic" in texts,
          "schema registered for both topics")
    ph = phases(messages)
    check(len(ph) == 1, "one phase")
    check_stop_rule(ph[0][0], 60.0)
    path, d = check_result_file(messages, workdir)
    check(d["config"]["valueSchema"] == AVRO_SCHEMA, "valueSchema echo")
    check(d["config"]["valuesFile"] == values, "valuesFile echo")
    check(d["consumeCountTotal"] > 0, "Avro records consumed")
    subjects = registry.subjects
    check(len(subjects) == 2 and all(s.endswith("-value") for s in subjects),
          "one subject <topic>-value per topic: %s" % list(subjects))
    check(all(json.loads(schema) == json.loads(AVRO_SCHEMA) for _, schema in subjects.values()),
          "the registered schema is --value-schema")
    # Every record on the wire: magic byte 0, the topic's schema id, one of the Avro bodies.
    for subject, (sid, _) in subjects.items():
        topic = subject[:-len("-value")]
        records = read_values(bootstrap, topic, 40)
        check(len(records) >= 20, "records read back from %s: %d" % (topic, len(records)))
        framed = {b"\0" + sid.to_bytes(4, "big") + body for body in AVRO_BODIES}
        check(all(r in framed for r in records), "Confluent-framed Avro values in %s: %r"
              % (topic, records[:3]))
        check(len(set(records)) == 2, "both values of the file are sent")


class ShaleServe:
    """`shale serve` on a free loopback port (listeners port 0, read back from the banner) with
    its own data dir under workdir; stderr goes to a log file printed on failure."""

    def __init__(self, workdir):
        self.log_path = os.path.join(workdir, "shale-serve.log")
        self.log = open(self.log_path, "w")
        cmd = [SHALE_BIN, "serve", "--override", "listeners=PLAINTEXT://127.0.0.1:0",
               "--override", "data.dir=" + os.path.join(workdir, "shale-data")]
        print("+ " + " ".join(cmd), flush=True)
        self.proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=self.log, text=True)
        banner = self.proc.stdout.readline()
        m = re.search(r"serving Kafka on 127\.0\.0\.1:(\d+) ", banner)
        if not m:
            self.stop()
            check(False, "no banner from shale serve: %r\n%s" % (banner, self.log_tail()))
        self.port = int(m.group(1))
        deadline = time.monotonic() + 60
        while True:
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=2).close()
                break
            except OSError:
                check(time.monotonic() < deadline, "shale serve does not accept connections")
                time.sleep(0.2)

    def log_tail(self):
        if not self.log.closed:
            self.log.flush()
        with open(self.log_path, errors="replace") as f:
            return f.read()[-4000:]

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
                print("shale serve did not stop within 60 s of SIGTERM", file=sys.stderr)
        self.log.close()
        return self.proc.returncode


SCENARIOS = {"tail-read": tail_read, "catch-up": catch_up, "avro": avro,
             "tutorial-tail-read": tutorial_tail_read, "tutorial-catch-up": tutorial_catch_up}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("scenario", choices=sorted(SCENARIOS))
    g = ap.add_mutually_exclusive_group(required=True)
    g.add_argument("--bootstrap", help="an already running Kafka-compatible cluster")
    g.add_argument("--kafka", action="store_true", help="start Apache Kafka via scripts/kafka")
    g.add_argument("--shale", action="store_true", help="start `shale serve` ($SHALE_BIN)")
    args = ap.parse_args()
    check(os.path.exists(SHALE_BIN), "no shale binary at " + SHALE_BIN)
    workdir = tempfile.mkdtemp(prefix="shale-perf-it-")
    kafka_dir = os.path.join(workdir, "kafka")
    started = False
    shale = None
    passed = False
    serve_rc = 0
    try:
        bootstrap = args.bootstrap
        if args.kafka:
            port, cport = free_port(), free_port()
            subprocess.run([os.path.join(SRC, "scripts", "kafka"), "start", kafka_dir, str(port),
                            str(cport)], check=True)
            started = True
            bootstrap = "127.0.0.1:%d" % port
        elif args.shale:
            shale = ShaleServe(workdir)
            bootstrap = "127.0.0.1:%d" % shale.port
        run_dir = os.path.join(workdir, "run")
        os.makedirs(run_dir)
        start = time.monotonic()
        SCENARIOS[args.scenario](bootstrap, run_dir)
        passed = True
        took = time.monotonic() - start
    finally:
        if shale is not None:
            serve_rc = shale.stop()
            if not passed or serve_rc != 0:
                print("shale serve exited with %s; its log:\n%s" % (serve_rc, shale.log_tail()),
                      file=sys.stderr)
        if started:
            subprocess.run([os.path.join(SRC, "scripts", "kafka"), "stop", kafka_dir])
        if os.environ.get("SHALE_KEEP_TEST_DIRS"):
            print("kept " + workdir)
        else:
            shutil.rmtree(workdir, ignore_errors=True)
    # A clean SIGTERM shutdown is part of the run against `shale serve`.
    check(serve_rc == 0, "shale serve exited with %s after SIGTERM" % serve_rc)
    print("PASS: %s against %s (the perf run took %.0f s)" % (args.scenario, bootstrap, took))


if __name__ == "__main__":
    main()
