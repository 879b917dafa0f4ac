#!/usr/bin/env python3
"""Black-box tests of `shale serve`: start-up, banner, configuration errors, bad frames on some
connections while others keep working, and clean shutdown on SIGTERM/SIGINT.

Usage: serve_test.py <case>   (SHALE_BIN names the binary; run with no case to list them)
"""
import os
import re
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import time

SHALE = os.environ.get("SHALE_BIN", "build/release/bin/shale")
BANNER = re.compile(
    r"^Shale \S+ serving Kafka on 127\.0\.0\.1:(\d+) \(data in (.+)\) — try: kcat -b 127\.0\.0\.1:(\d+) -L$"
)


class Broker:
    """A `shale serve` process on a free port with its own data dir."""

    def __init__(self, *overrides, data_dir=None):
        self.tmp = tempfile.TemporaryDirectory(prefix="shale-serve-test-")
        self.data_dir = data_dir or os.path.join(self.tmp.name, "data")
        args = [SHALE, "serve", "--override", "listeners=PLAINTEXT://127.0.0.1:0",
                "--override", "data.dir=" + self.data_dir]
        for o in overrides:
            args += ["--override", o]
        self.stderr = open(os.path.join(self.tmp.name, "stderr.log"), "w+")
        self.proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=self.stderr, text=True)
        line = self.proc.stdout.readline()
        m = BANNER.match(line.rstrip("\n"))
        if not m:
            self.proc.kill()
            raise AssertionError("unexpected banner: %r; stderr: %s" % (line, self.log()))
        self.port = int(m.group(1))
        assert m.group(2) == self.data_dir, m.group(2)
        assert m.group(3) == m.group(1)

    def log(self):
        self.stderr.flush()
        with open(self.stderr.name) as f:
            return f.read()

    def stop(self, sig=signal.SIGTERM):
        self.proc.send_signal(sig)
        try:
            rc = self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            raise AssertionError("shale serve did not exit after %s" % sig)
        rest = self.proc.stdout.read()
        assert rest == "", "stdout must hold only the banner, got %r" % rest
        return rc

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        self.tmp.cleanup()


def connect(port):
    s = socket.create_connection(("127.0.0.1", port), timeout=10)
    return s


def closed_by_peer(s):
    """True when the server closes the connection (EOF or reset) before any response."""
    try:
        data = s.recv(1)
    except ConnectionResetError:
        return True
    return data == b""


def run(args, **kw):
    return subprocess.run([SHALE, "serve"] + args, capture_output=True, text=True, timeout=60, **kw)


# --- cases ---

def test_banner_and_sigterm():
    with Broker() as b:
        assert os.path.isdir(b.data_dir)
        with open(os.path.join(b.data_dir, "meta.properties")) as f:
            meta = f.read()
        assert re.search(r"^cluster\.id=[A-Za-z0-9_-]{22}$", meta, re.M), meta
        assert "node.id=1" in meta, meta
        s = connect(b.port)  # an open connection must not block shutdown
        rc = b.stop(signal.SIGTERM)
        assert rc == 0, "exit code %d; log: %s" % (rc, b.log())
        assert closed_by_peer(s)


def test_sigint_exits_zero():
    with Broker() as b:
        assert b.stop(signal.SIGINT) == 0


def test_cluster_id_survives_restart():
    with tempfile.TemporaryDirectory() as d:
        data = os.path.join(d, "data")
        with Broker(data_dir=data) as b:
            assert b.stop() == 0
        first = open(os.path.join(data, "meta.properties")).read()
        with Broker(data_dir=data) as b:
            assert b.stop() == 0
        assert open(os.path.join(data, "meta.properties")).read() == first
        r = run(["--override", "listeners=PLAINTEXT://127.0.0.1:0", "--override",
                 "data.dir=" + data, "--override", "cluster.id=another"])
        assert r.returncode != 0 and "cluster.id" in r.stderr, r.stderr


def test_unknown_key_fails_when_strict():
    r = run(["--strict-config", "--override", "num.partitons=3"])
    assert r.returncode != 0
    assert "num.partitons" in r.stderr, r.stderr
    assert r.stdout == ""


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def serve_config_file(text):
    """Starts `shale serve --config` on a file with `text`; returns (process, banner, stderr
    path, temp dir). The caller stops the process."""
    d = tempfile.mkdtemp(prefix="shale-serve-config-")
    path = os.path.join(d, "server.properties")
    with open(path, "w") as f:
        f.write(text.replace("@DIR@", d))
    err = open(os.path.join(d, "stderr.log"), "w+")
    proc = subprocess.Popen([SHALE, "serve", "--config", path], stdout=subprocess.PIPE,
                            stderr=err, text=True)
    banner = proc.stdout.readline()
    return proc, banner, err.name, d


# The keys (and their values) of Apache Kafka 4.x's stock config/server.properties for a
# combined broker+controller node, with the ports made free and the log dir temporary.
KAFKA_STOCK = """process.roles=broker,controller
node.id=1
controller.quorum.bootstrap.servers=127.0.0.1:@CPORT@
listeners=PLAINTEXT://127.0.0.1:@PORT@,CONTROLLER://127.0.0.1:@CPORT@
inter.broker.listener.name=PLAINTEXT
advertised.listeners=PLAINTEXT://127.0.0.1:@PORT@,CONTROLLER://127.0.0.1:@CPORT@
controller.listener.names=CONTROLLER
listener.security.protocol.map=CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT,SSL:SSL,SASL_PLAINTEXT:SASL_PLAINTEXT,SASL_SSL:SASL_SSL
num.network.threads=3
num.io.threads=8
socket.send.buffer.bytes=102400
socket.receive.buffer.bytes=102400
socket.request.max.bytes=104857600
log.dirs=@DIR@/kraft-combined-logs
num.partitions=1
num.recovery.threads.per.data.dir=1
offsets.topic.replication.factor=1
share.coordinator.state.topic.replication.factor=1
share.coordinator.state.topic.min.isr=1
transaction.state.log.replication.factor=1
transaction.state.log.min.isr=1
log.retention.hours=168
log.segment.bytes=1073741824
log.retention.check.interval.ms=300000
"""

# The keys of AutoMQ's example broker config (S3 data and ops buckets, the S3 WAL, its own
# feature switches), pointed at a local directory instead of a bucket.
AUTOMQ_EXAMPLE = """process.roles=broker,controller
node.id=0
controller.quorum.voters=0@127.0.0.1:@CPORT@
listeners=PLAINTEXT://127.0.0.1:@PORT@,CONTROLLER://127.0.0.1:@CPORT@
advertised.listeners=PLAINTEXT://127.0.0.1:@PORT@
controller.listener.names=CONTROLLER
inter.broker.listener.name=PLAINTEXT
log.dirs=@DIR@/kraft-combined-logs
num.partitions=1
elasticstream.enable=true
s3.data.buckets=0@file://@DIR@/data-bucket
s3.ops.buckets=1@file://@DIR@/ops-bucket
s3.wal.path=0@file://@DIR@/s3wal?capacity=67108864&iodepth=4
s3.wal.cache.size=67108864
s3.block.cache.size=33554432
s3.stream.object.compaction.interval.minutes=30
autobalancer.controller.enable=true
metric.reporters=kafka.autobalancer.metricsreporter.AutoBalancerMetricsReporter
"""


def check_loads(text, wanted_ignored, data_sub):
    port, cport = free_port(), free_port()
    proc, banner, err, d = serve_config_file(
        text.replace("@PORT@", str(port)).replace("@CPORT@", str(cport)))
    try:
        m = re.match(r"^Shale \S+ serving Kafka on 127\.0\.0\.1:(\d+) \(data in (.+)\)",
                     banner)
        assert m, "unexpected banner %r; log:\n%s" % (banner, open(err).read())
        assert int(m.group(1)) == port and m.group(2) == os.path.join(d, data_sub), banner
        assert "brokers:" in kcat_metadata(port)
        # The controller listener is not served: a Shale broker has no KRaft controller.
        with socket.socket() as s:
            assert s.connect_ex(("127.0.0.1", cport)) != 0, "controller port was bound"
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=30) == 0
        log = open(err).read()
        warnings = [ln for ln in log.splitlines() if "not used by Shale, ignored" in ln]
        assert len(warnings) == 1, log
        for key in wanted_ignored:
            assert key + " (" in warnings[0], (key, warnings[0])
        return log
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def test_kafka_server_properties_loads():
    # listener.security.protocol.map is read (docs/security.md), so it is not among them.
    check_loads(KAFKA_STOCK, ["process.roles", "num.io.threads", "log.segment.bytes"],
                "kraft-combined-logs")
    # --strict-config refuses the same file, naming the first unknown key.
    r = run(["--strict-config", "--config", "/dev/stdin"], input=KAFKA_STOCK)
    assert r.returncode != 0 and "unknown configuration key 'controller.quorum" in r.stderr, (
        r.stderr)


def test_automq_config_loads():
    log = check_loads(AUTOMQ_EXAMPLE, ["elasticstream.enable", "s3.ops.buckets",
                                       "autobalancer.controller.enable"], "kraft-combined-logs")
    assert "iodepth accepted but not used" in log, log


def test_malformed_value_fails():
    r = run(["--override", "socket.request.max.bytes=lots"])
    assert r.returncode != 0 and "socket.request.max.bytes" in r.stderr, r.stderr
    r = run(["--override", "listeners=PLAINTEXT://127.0.0.1"])
    assert r.returncode != 0 and "listeners" in r.stderr, r.stderr


def test_config_file_is_read():
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "server.properties")
        with open(path, "w") as f:
            f.write("# test\nnum.partitions = 3\nlog.retention.ms=not-a-number\n")
        r = run(["--config", path])
        assert r.returncode != 0
        assert "log.retention.ms" in r.stderr and "server.properties:3" in r.stderr, r.stderr
        r = run(["--config", os.path.join(d, "missing.properties")])
        assert r.returncode != 0 and "missing.properties" in r.stderr, r.stderr


def test_port_in_use_fails():
    busy = socket.socket()
    busy.bind(("127.0.0.1", 0))
    busy.listen()
    port = busy.getsockname()[1]
    with tempfile.TemporaryDirectory() as d:
        r = run(["--override", "listeners=PLAINTEXT://127.0.0.1:%d" % port,
                 "--override", "data.dir=" + d])
    busy.close()
    assert r.returncode != 0
    assert "listeners" in r.stderr and "in use" in r.stderr, r.stderr


def test_bad_frames_close_only_their_connection():
    with Broker("socket.request.max.bytes=1000") as b:
        bystander = connect(b.port)  # stays open through everything below
        cases = [
            struct.pack(">i", 1001),            # oversized
            struct.pack(">i", -5),              # negative size
            struct.pack(">i", 100) + b"abc",    # truncated, then the client hangs up
        ]
        for frame in cases:
            s = connect(b.port)
            s.sendall(frame)
            if len(frame) > 4:
                s.close()
            else:
                assert closed_by_peer(s), frame
        # The broker still accepts and serves connections.
        s = connect(b.port)
        s.close()
        assert b.proc.poll() is None, b.log()
        assert b.stop() == 0
        assert closed_by_peer(bystander)
        assert "oversized frame size 1001" in b.log(), b.log()


def kafka_request(key, version, correlation_id, body=b"", flexible_header=False):
    """A size-prefixed Kafka request with a v1 (or v2) header and client id "it"."""
    header = struct.pack(">hhih", key, version, correlation_id, 2) + b"it"
    if flexible_header:
        header += b"\x00"  # no tagged fields
    payload = header + body
    return struct.pack(">i", len(payload)) + payload


def read_frame(s):
    def exactly(n):
        buf = b""
        while len(buf) < n:
            chunk = s.recv(n - len(buf))
            if not chunk:
                raise AssertionError("connection closed after %d of %d bytes" % (len(buf), n))
            buf += chunk
        return buf
    (size,) = struct.unpack(">i", exactly(4))
    return exactly(size)


def kcat_metadata(port):
    r = subprocess.run(["kcat", "-b", "127.0.0.1:%d" % port, "-L", "-m", "10"],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stdout + r.stderr
    return r.stdout


def test_kcat_lists_the_broker():
    # Without auto-creation, asking for a missing topic must not create it.
    with Broker("node.id=5", "auto.create.topics.enable=false") as b:
        out = kcat_metadata(b.port)
        assert "1 brokers:" in out, out
        assert "broker 5 at 127.0.0.1:%d (controller)" % b.port in out, out
        assert "0 topics:" in out, out
        r = subprocess.run(["kcat", "-b", "127.0.0.1:%d" % b.port, "-L", "-t", "missing",
                            "-m", "10"], capture_output=True, text=True, timeout=60)
        assert "Unknown topic or partition" in r.stdout + r.stderr, r.stdout + r.stderr
        assert b.stop() == 0


def test_embedded_default_data_dir():
    # `make run` starts `shale serve` with no data.dir: ./data relative to the working directory.
    with tempfile.TemporaryDirectory(prefix="shale-serve-default-") as cwd:
        p = subprocess.Popen([SHALE, "serve", "--override", "listeners=PLAINTEXT://127.0.0.1:0"],
                             cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        try:
            line = p.stdout.readline()
            assert "serving Kafka on 127.0.0.1:" in line, (line, p.stderr.read() if p.poll() is not None else "")
            port = int(line.split("127.0.0.1:")[1].split()[0])
            assert "1 brokers:" in kcat_metadata(port)
            assert os.path.isdir(os.path.join(cwd, "data")), os.listdir(cwd)
        finally:
            p.send_signal(signal.SIGTERM)
            assert p.wait(timeout=60) == 0


def test_api_versions_downgrade():
    with Broker() as b:
        s = connect(b.port)
        # ApiVersions v99 from a "future" client: the answer is a v0 response (header v0) with
        # UNSUPPORTED_VERSION (35) and our ranges, on a connection that stays open.
        s.sendall(kafka_request(18, 99, 1234, b"\x00\x00\x00", flexible_header=True))
        resp = read_frame(s)
        corr, err, n = struct.unpack(">ihi", resp[:10])
        assert (corr, err) == (1234, 35), (corr, err)
        ranges = {struct.unpack(">hhh", resp[10 + 6 * i:16 + 6 * i])[0]:
                  struct.unpack(">hhh", resp[10 + 6 * i:16 + 6 * i])[1:] for i in range(n)}
        assert ranges[18] == (0, 4) and ranges[3] == (0, 12), ranges
        s.sendall(kafka_request(18, 0, 1235))  # v0 on the same connection works
        corr, err = struct.unpack(">ih", read_frame(s)[:6])
        assert (corr, err) == (1235, 0)
        s.close()
        assert b.stop() == 0


def test_malformed_requests_keep_serving():
    with Broker("socket.request.max.bytes=100000") as b:
        bad = {
            "oversized": struct.pack(">i", 100001),
            "negative size": struct.pack(">i", -1),
            "unknown api key": kafka_request(4242, 0, 1),
            # WriteTxnMarkers: broker-to-broker (Shale's coordinator writes markers itself), so
            # it has no handler.
            "api without handler": kafka_request(27, 1, 1, b"\x00" * 20),
            "bad metadata version": kafka_request(3, 77, 1, flexible_header=True),
            "garbage body": kafka_request(3, 1, 1, b"\x00\x00\x00\x09\xff"),
            "garbage header": struct.pack(">i", 6) + b"\x00\x03\x00\x01\xff\xff",
        }
        for name, frame in bad.items():
            s = connect(b.port)
            s.sendall(frame)
            assert closed_by_peer(s), name
            assert "brokers:" in kcat_metadata(b.port), name
        # Truncated: the client sends half a frame and hangs up.
        s = connect(b.port)
        s.sendall(struct.pack(">i", 50) + b"\x00\x03")
        s.close()
        assert "brokers:" in kcat_metadata(b.port)
        # One line per kind at most every 10 s: the first of each kind is logged.
        log = b.log()
        for word in ("oversized frame size 100001", "unknown api key 4242",
                     "unsupported version 77", "cannot decode or encode Metadata v1"):
            assert word in log, (word, log)
        assert b.stop() == 0


CASES = {name[5:]: fn for name, fn in globals().items() if name.startswith("test_")}

if __name__ == "__main__":
    if len(sys.argv) != 2 or sys.argv[1] not in CASES:
        print("cases: " + " ".join(sorted(CASES)))
        sys.exit(2)
    CASES[sys.argv[1]]()
    print("ok")
