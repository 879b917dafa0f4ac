#!/usr/bin/env python3
"""`shale serve --metrics-file`: the file appears at start, is always complete JSON (written by
rename), and its counters grow when clients connect and produce; the final write after SIGTERM
includes the objects uploaded at shutdown.

Usage: metrics_test.py <case>   (SHALE_BIN names the binary; run with no case to list them)
"""
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import time

SHALE = os.environ.get("SHALE_BIN", "build/release/bin/shale")
BANNER = re.compile(r"^Shale \S+ serving Kafka on 127\.0\.0\.1:(\d+) ")


def start(tmp, *args):
    data = os.path.join(tmp, "data")
    err = open(os.path.join(tmp, "stderr.log"), "w+")
    proc = subprocess.Popen([SHALE, "serve", "--override", "listeners=PLAINTEXT://127.0.0.1:0",
                             "--override", "data.dir=" + data] + list(args),
                            stdout=subprocess.PIPE, stderr=err, text=True)
    line = proc.stdout.readline()
    m = BANNER.match(line)
    if not m:
        proc.kill()
        err.seek(0)
        raise AssertionError("unexpected banner %r; stderr: %s" % (line, err.read()))
    return proc, int(m.group(1))


def read_metrics(path):
    with open(path) as f:
        return json.load(f)  # a partial file would fail here


def wait_for(path, pred, timeout=20):
    deadline = time.monotonic() + timeout
    last = None
    while time.monotonic() < deadline:
        last = read_metrics(path)
        if pred(last):
            return last
        time.sleep(0.1)
    raise AssertionError("metrics never satisfied the condition; last: %s" % json.dumps(last))


def produce(port, topic, n):
    payload = "".join("record-%05d-%s\n" % (i, "x" * 200) for i in range(n))
    r = subprocess.run(["kcat", "-b", "127.0.0.1:%d" % port, "-P", "-t", topic,
                        "-X", "topic.request.required.acks=-1"],
                       input=payload, capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr


def test_metrics_file_counts_grow():
    with tempfile.TemporaryDirectory(prefix="shale-metrics-test-") as tmp:
        path = os.path.join(tmp, "metrics.json")
        proc, port = start(tmp, "--metrics-file", path, "--metrics-interval-ms", "200",
                           "--override", "auto.create.topics.enable=true")
        try:
            first = read_metrics(path)  # written before the banner
            for k in ("time_ms", "process", "net", "storage"):
                assert k in first, first
            for k in ("object_puts", "object_gets", "bytes_uploaded", "wal_bytes_written",
                      "wal_writes", "log_cache_bytes"):
                assert first["storage"][k] == 0, first
            assert first["process"]["max_rss_bytes"] > 0, first
            produce(port, "metrics-topic", 500)
            grown = wait_for(path, lambda m: m["storage"]["wal_bytes_written"] >= 500 * 200)
            assert grown["storage"]["wal_writes"] >= 1, grown
            assert grown["net"]["accepted_connections"] >= 1, grown
            assert grown["time_ms"] > first["time_ms"], grown
            cpu = lambda m: m["process"]["cpu_user_seconds"] + m["process"]["cpu_system_seconds"]
            assert cpu(grown) >= cpu(first), grown
            proc.send_signal(signal.SIGTERM)
            assert proc.wait(timeout=30) == 0
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
        final = read_metrics(path)
        # Shutdown uploads everything the WAL holds: at least one object PUT of those bytes.
        assert final["storage"]["object_puts"] >= 1, final
        assert final["storage"]["bytes_uploaded"] >= 500 * 200, final
        assert not os.path.exists(path + ".tmp"), "temp file left behind"


def test_metrics_file_bad_path_fails():
    with tempfile.TemporaryDirectory(prefix="shale-metrics-test-") as tmp:
        r = subprocess.run([SHALE, "serve", "--override", "listeners=PLAINTEXT://127.0.0.1:0",
                            "--override", "data.dir=" + os.path.join(tmp, "data"),
                            "--metrics-file", os.path.join(tmp, "missing", "m.json")],
                           capture_output=True, text=True, timeout=60)
        assert r.returncode != 0, r
        assert "--metrics-file" in r.stderr, r.stderr


def scrape(url):
    import urllib.request
    with urllib.request.urlopen(url, timeout=10) as r:
        assert r.status == 200, r.status
        assert r.headers["Content-Type"].startswith("text/plain; version=0.0.4"), r.headers
        return r.read().decode()


def samples(text):
    """name{labels} -> value, and name -> type, from the Prometheus text format."""
    values, types = {}, {}
    for line in text.splitlines():
        if line.startswith("# TYPE "):
            _, _, name, typ = line.split(" ", 3)
            types[name] = typ
        elif line and not line.startswith("#"):
            key, value = line.rsplit(" ", 1)
            values[key] = float(value)
    return values, types


def test_prometheus_endpoint():
    with tempfile.TemporaryDirectory(prefix="shale-metrics-test-") as tmp:
        proc, port = start(tmp, "--override", "http.listeners=http://127.0.0.1:0")
        try:
            log = open(os.path.join(tmp, "stderr.log")).read()
            m = re.search(r"HTTP listener on (http://127\.0\.0\.1:\d+)", log)
            assert m, log
            base = m.group(1)
            import urllib.request
            with urllib.request.urlopen(base + "/healthz", timeout=10) as r:
                assert r.read() == b"ok\n"
            produce(port, "prom", 300)
            out = subprocess.run(["kcat", "-b", "127.0.0.1:%d" % port, "-C", "-t", "prom", "-o",
                                  "beginning", "-e", "-q"], capture_output=True, text=True,
                                 timeout=60)
            assert out.returncode == 0 and len(out.stdout.splitlines()) == 300, out.stderr
            values, types = samples(scrape(base + "/metrics"))
            for name, typ in [("kafka_network_requests_total", "counter"),
                              ("kafka_network_request_duration_seconds", "histogram"),
                              ("kafka_server_brokertopicmetrics_bytes_in_total", "counter"),
                              ("kafka_server_brokertopicmetrics_messages_in_total", "counter"),
                              ("kafka_server_brokertopicmetrics_bytes_out_total", "counter"),
                              ("kafka_stream_wal_write_bytes_total", "counter"),
                              ("kafka_stream_log_cache_size_bytes", "gauge"),
                              ("kafka_stream_object_requests_total", "counter"),
                              ("kafka_server_connections", "gauge"),
                              ("process_cpu_seconds_total", "counter"),
                              ("process_resident_memory_bytes", "gauge")]:
                assert types.get(name) == typ, (name, types.get(name))
            assert values['kafka_server_brokertopicmetrics_messages_in_total{topic="prom"}'] == 300
            assert values['kafka_server_brokertopicmetrics_bytes_in_total{topic="prom"}'] > 300 * 200
            assert values['kafka_server_brokertopicmetrics_bytes_out_total{topic="prom"}'] > 300 * 200
            assert values['kafka_network_requests_total{request="Produce"}'] >= 1
            assert values['kafka_network_request_duration_seconds_count{request="Fetch"}'] >= 1
            assert values["kafka_stream_wal_write_bytes_total"] >= 300 * 200
            assert values["process_resident_memory_bytes"] > 0
            # The committed Grafana dashboard only uses metrics the broker exports.
            root = os.environ.get("SHALE_SOURCE_DIR",
                                  os.path.join(os.path.dirname(__file__), "..", "..", ".."))
            dash = json.load(open(os.path.join(root, "deploy", "grafana", "shale.json")))
            used = set()
            for panel in dash["panels"]:
                for t in panel["targets"]:
                    used |= set(re.findall(r"\b((?:kafka|process)_[a-z_]+)", t["expr"]))
            assert used, dash
            for name in used:
                family = re.sub(r"_(bucket|sum|count)$", "", name)
                assert family in types, "dashboard uses %s, not exported" % name
            # Counters move with traffic.
            produce(port, "prom", 200)
            after, _ = samples(scrape(base + "/metrics"))
            assert after['kafka_server_brokertopicmetrics_messages_in_total{topic="prom"}'] == 500
            assert (after['kafka_network_requests_total{request="Produce"}'] >
                    values['kafka_network_requests_total{request="Produce"}'])
            assert after["kafka_stream_wal_writes_total"] > values["kafka_stream_wal_writes_total"]
            proc.send_signal(signal.SIGTERM)
            assert proc.wait(timeout=30) == 0
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()


CASES = {n[len("test_"):]: f for n, f in list(globals().items()) if n.startswith("test_")}

if __name__ == "__main__":
    if len(sys.argv) != 2 or sys.argv[1] not in CASES:
        print("cases: " + " ".join(sorted(CASES)))
        sys.exit(2)
    CASES[sys.argv[1]]()
    print("ok")
