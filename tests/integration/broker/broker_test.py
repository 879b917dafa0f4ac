#!/usr/bin/env python3
"""Black-box tests of the broker data path through `shale serve`, with kcat (librdkafka) as the
client, hand-made Kafka frames for the error cases, and Kafka's own CLI tools (scripts/kafka) for
kafka-log-dirs and kafka-configs.

Usage: broker_test.py <case>   (SHALE_BIN names the binary; no case lists them)
"""
import json
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
BANNER = re.compile(r"^Shale \S+ serving Kafka on 127\.0\.0\.1:(\d+) ")
# Small WAL and caches: the test machine is shared.
STORAGE = ["s3.wal.capacity=67108864", "s3.wal.cache.size=67108864",
           "s3.block.cache.size=33554432"]


class Broker:
    def __init__(self, data_dir, extra=()):
        self.data_dir = data_dir
        args = [SHALE, "serve", "--override", "listeners=PLAINTEXT://127.0.0.1:0",
                "--override", "data.dir=" + data_dir]
        for o in STORAGE + list(extra):
            args += ["--override", o]
        self.stderr = open(os.path.join(data_dir + ".stderr.log"), "a+")
        self.proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=self.stderr, text=True)
        line = self.proc.stdout.readline()
        m = BANNER.match(line)
        if not m:
            self.proc.kill()
            raise AssertionError("unexpected banner %r; log:\n%s" % (line, self.log()))
        self.port = int(m.group(1))
        self.bootstrap = "127.0.0.1:%d" % self.port

    def log(self):
        self.stderr.flush()
        with open(self.stderr.name) as f:
            return f.read()

    def stop(self, sig=signal.SIGTERM):
        self.proc.send_signal(sig)
        rc = self.proc.wait(timeout=60)
        if sig == signal.SIGTERM:
            assert rc == 0, "exit code %d; log:\n%s" % (rc, self.log())


def kcat(broker, *args, stdin=None):
    r = subprocess.run(["kcat", "-b", broker.bootstrap] + list(args), input=stdin,
                       capture_output=True, text=True, timeout=120)
    if r.returncode != 0:
        raise AssertionError("kcat %s failed (%d): %s\nbroker log:\n%s" %
                             (" ".join(args), r.returncode, r.stderr, broker.log()))
    return r.stdout


def produce(broker, topic, values, *extra):
    # -P exits non-zero unless every message was acknowledged (acks=all by default).
    kcat(broker, "-P", "-t", topic, "-X", "enable.idempotence=true", *extra,
         stdin="".join(v + "\n" for v in values))


def consume(broker, topic):
    out = kcat(broker, "-C", "-t", topic, "-o", "beginning", "-e", "-q", "-f", "%p %o %s\n")
    return [line.split(" ", 2) for line in out.splitlines()]


def case_kcat_round_trip(tmp):
    b = Broker(os.path.join(tmp, "data"))
    try:
        sent = []
        for codec in ["none", "gzip", "snappy", "lz4", "zstd"]:
            vals = ["%s-%d" % (codec, i) for i in range(300)]
            produce(b, "round", vals, "-z", codec)
            sent += vals
        got = consume(b, "round")
        assert [g[2] for g in got] == sent, "consumed %d of %d" % (len(got), len(sent))
        assert [int(g[1]) for g in got] == list(range(len(sent))), "offsets not dense"
        meta = kcat(b, "-L", "-t", "round")
        assert 'topic "round" with 1 partitions' in meta, meta
    finally:
        b.stop()


def restart_case(tmp, sig):
    data = os.path.join(tmp, "data")
    b = Broker(data)
    sent = []
    for round_ in range(3):
        vals = ["r%d-%d" % (round_, i) for i in range(500)]
        produce(b, "durable", vals, "-z", "lz4" if round_ % 2 else "none")
        sent += vals
        b.stop(sig)
        b = Broker(data)
        got = [g[2] for g in consume(b, "durable")]
        assert got == sent, "after restart %d: %d of %d records" % (round_, len(got), len(sent))
    # The log continues at the next offset.
    produce(b, "durable", ["last"])
    got = consume(b, "durable")
    assert got[-1][1:] == [str(len(sent)), "last"], got[-1]
    b.stop()


def case_restart_graceful(tmp):
    restart_case(tmp, signal.SIGTERM)


def case_restart_kill9(tmp):
    restart_case(tmp, signal.SIGKILL)


# --- hand-made frames -------------------------------------------------------------------

def crc32c(data):
    crc = 0xFFFFFFFF
    for byte in data:
        crc ^= byte
        for _ in range(8):
            crc = (crc >> 1) ^ (0x82F63B78 & -(crc & 1))
    return crc ^ 0xFFFFFFFF


def varint(n):
    n = (n << 1) ^ (n >> 63)
    out = b""
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out += bytes([b | 0x80])
        else:
            return out + bytes([b])


def record_batch(values, magic=2):
    records = b""
    for i, v in enumerate(values):
        body = b"\x00" + varint(0) + varint(i) + varint(-1) + varint(len(v)) + v + varint(0)
        records += varint(len(body)) + body
    after_crc = struct.pack(">hiqqqhii", 0, len(values) - 1, 1000, 1000, -1, -1, -1,
                            len(values)) + records
    crc = crc32c(after_crc)
    rest = struct.pack(">ib", -1, magic) + struct.pack(">I", crc) + after_crc
    return struct.pack(">qi", 0, len(rest)) + rest


def string(s):
    b = s.encode()
    return struct.pack(">h", len(b)) + b


def produce_v3(corr, topic, parts):
    body = struct.pack(">hhi", -1, -1, 30000)  # null transactional id, acks=-1, timeout
    body += struct.pack(">i", 1) + string(topic) + struct.pack(">i", len(parts))
    for index, records in parts:
        body += struct.pack(">ii", index, len(records)) + records
    head = struct.pack(">hhi", 0, 3, corr) + string("broker-test")
    return struct.pack(">i", len(head) + len(body)) + head + body


def read_frame(sock):
    def read_n(n):
        buf = b""
        while len(buf) < n:
            chunk = sock.recv(n - len(buf))
            if not chunk:
                return None
            buf += chunk
        return buf
    size = read_n(4)
    if size is None:
        return None
    return read_n(struct.unpack(">i", size)[0])


def parse_produce_v3(frame):
    corr, = struct.unpack_from(">i", frame, 0)
    pos = 4
    n_topics, = struct.unpack_from(">i", frame, pos)
    pos += 4
    out = {}
    for _ in range(n_topics):
        ln, = struct.unpack_from(">h", frame, pos)
        pos += 2 + ln
        n_parts, = struct.unpack_from(">i", frame, pos)
        pos += 4
        for _ in range(n_parts):
            index, err, base, _lat = struct.unpack_from(">ihqq", frame, pos)
            pos += 22
            out[index] = (err, base)
    return corr, out


def case_bad_requests(tmp):
    b = Broker(os.path.join(tmp, "data"))
    try:
        produce(b, "bad", ["seed"])  # auto-creates the topic (1 partition)
        good = record_batch([b"ok"])
        corrupt = bytearray(good)
        corrupt[-2] ^= 0x55
        old_magic = record_batch([b"v1"], magic=1)
        s = socket.create_connection(("127.0.0.1", b.port))
        s.sendall(produce_v3(7, "bad", [(0, bytes(corrupt)), (5, good)]))
        corr, res = parse_produce_v3(read_frame(s))
        assert corr == 7
        assert res[0][0] == 2, res      # CORRUPT_MESSAGE
        assert res[5][0] == 3, res      # UNKNOWN_TOPIC_OR_PARTITION
        s.sendall(produce_v3(8, "bad", [(0, old_magic)]))
        corr, res = parse_produce_v3(read_frame(s))
        assert res[0][0] == 43, res     # UNSUPPORTED_FOR_MESSAGE_FORMAT
        s.sendall(produce_v3(9, "bad", [(0, good)]))
        corr, res = parse_produce_v3(read_frame(s))
        assert res[0] == (0, 1), res    # stored after "seed"
        # Garbage closes only its own connection.
        g = socket.create_connection(("127.0.0.1", b.port))
        g.sendall(struct.pack(">i", 6) + b"\x7f\x7f\x00\x00\x00\x01")
        assert read_frame(g) is None
        s.sendall(produce_v3(10, "bad", [(0, good)]))
        corr, res = parse_produce_v3(read_frame(s))
        assert corr == 10 and res[0] == (0, 2), res
        got = [g[2] for g in consume(b, "bad")]
        assert got == ["seed", "ok", "ok"], got
    finally:
        b.stop()


def list_offsets_v1(corr, topic, partition, timestamp):
    body = struct.pack(">i", -1) + struct.pack(">i", 1) + string(topic)
    body += struct.pack(">iiq", 1, partition, timestamp)
    head = struct.pack(">hhi", 2, 1, corr) + string("broker-test")
    return struct.pack(">i", len(head) + len(body)) + head + body


def earliest_offset(broker, topic):
    s = socket.create_connection(("127.0.0.1", broker.port))
    try:
        s.sendall(list_offsets_v1(1, topic, 0, -2))
        frame = read_frame(s)
    finally:
        s.close()
    # correlation id, 1 topic (name), 1 partition: index, error, timestamp, offset
    pos = 4 + 4
    ln, = struct.unpack_from(">h", frame, pos)
    pos += 2 + ln + 4
    _index, err, _ts, offset = struct.unpack_from(">ihqq", frame, pos)
    assert err == 0, err
    return offset


def kafka_tool(broker, tool, *args):
    script = os.path.join(os.environ.get("SHALE_SOURCE_DIR", "."), "scripts", "kafka")
    r = subprocess.run([script, "tool", tool, "--bootstrap-server", broker.bootstrap] + list(args),
                       capture_output=True, text=True, timeout=180)
    if r.returncode != 0:
        raise AssertionError("%s %s failed (%d): %s%s\nbroker log:\n%s" %
                             (tool, " ".join(args), r.returncode, r.stdout, r.stderr, broker.log()))
    return r.stdout


def log_dir_sizes(broker):
    """partition name -> size from kafka-log-dirs --describe, plus the one log dir's path."""
    out = kafka_tool(broker, "kafka-log-dirs", "--describe")
    line = [ln for ln in out.splitlines() if ln.startswith("{")]
    assert line, "kafka-log-dirs printed no JSON:\n" + out
    doc = json.loads(line[-1])
    dirs = doc["brokers"][0]["logDirs"]
    assert len(dirs) == 1, doc
    assert dirs[0]["error"] is None, doc
    for p in dirs[0]["partitions"]:
        assert p["offsetLag"] == 0 and p["isFuture"] is False, p
    return dirs[0]["logDir"], {p["partition"]: p["size"] for p in dirs[0]["partitions"]}


def case_log_dirs_and_retention_bytes(tmp):
    data = os.path.join(tmp, "data")
    b = Broker(data, ["log.retention.check.interval.ms=200"])
    try:
        # 10 batches of 50 records each (-X linger/batch settings keep kcat's batches apart).
        for i in range(10):
            produce(b, "sized", ["v%d-%03d" % (i, j) for j in range(50)])
        log_dir, sizes = log_dir_sizes(b)
        assert log_dir == os.path.realpath(data) or log_dir == data, (log_dir, data)
        total = sizes.get("sized-0", 0)
        assert total > 0, sizes
        assert earliest_offset(b, "sized") == 0
        # Keep about a third: the retention thread (every 200 ms) trims whole batches from the
        # front until at most that many bytes remain.
        limit = total // 3
        kafka_tool(b, "kafka-configs", "--alter", "--entity-type", "topics", "--entity-name",
                   "sized", "--add-config", "retention.bytes=%d" % limit)
        start = 0
        for _ in range(600):
            start = earliest_offset(b, "sized")
            if start > 0:
                break
            time.sleep(0.1)
        assert 0 < start < 500, start
        _, after = log_dir_sizes(b)
        assert 0 < after["sized-0"] <= limit, (after, limit)
        got = consume(b, "sized")
        assert int(got[0][1]) == start and len(got) == 500 - start, (got[0], len(got))
        # A dynamic cluster-wide default (kafka-configs --entity-type brokers --entity-default)
        # applies once the topic's own value is removed: one byte keeps nothing.
        kafka_tool(b, "kafka-configs", "--alter", "--entity-type", "brokers", "--entity-default",
                   "--add-config", "log.retention.bytes=1")
        kafka_tool(b, "kafka-configs", "--alter", "--entity-type", "topics", "--entity-name",
                   "sized", "--delete-config", "retention.bytes")
        for _ in range(600):
            if earliest_offset(b, "sized") == 500:
                break
            time.sleep(0.1)
        assert earliest_offset(b, "sized") == 500
        desc = kafka_tool(b, "kafka-configs", "--describe", "--entity-type", "topics",
                          "--entity-name", "sized", "--all")
        assert "DYNAMIC_DEFAULT_BROKER_CONFIG:log.retention.bytes=1" in desc, desc
    finally:
        b.stop()


def case_topic_compression_type(tmp):
    """compression.type set on a topic through kafka-configs: the broker recompresses what
    producers send with other codecs, and a real client reads every record back."""
    b = Broker(os.path.join(tmp, "data"))
    try:
        sent = ["plain-%d" % i for i in range(200)]
        produce(b, "squeezed", sent, "-z", "gzip")
        kafka_tool(b, "kafka-configs", "--alter", "--entity-type", "topics", "--entity-name",
                   "squeezed", "--add-config", "compression.type=lz4")
        for codec in ["none", "snappy", "zstd", "gzip"]:
            vals = ["%s-%d" % (codec, i) for i in range(200)]
            produce(b, "squeezed", vals, "-z", codec)
            sent += vals
        got = consume(b, "squeezed")
        assert [g[2] for g in got] == sent, "consumed %d of %d" % (len(got), len(sent))
        assert [int(g[1]) for g in got] == list(range(len(sent))), "offsets not dense"
        desc = kafka_tool(b, "kafka-configs", "--describe", "--entity-type", "topics",
                          "--entity-name", "squeezed")
        assert "compression.type=lz4" in desc, desc
    finally:
        b.stop()


def case_kafka_topics_describe_pages(tmp):
    """Kafka 4's kafka-topics --describe goes through DescribeTopicPartitions (KIP-966; its
    output then has the Elr columns) and pages with a cursor when the response limit is below
    the partition count."""
    b = Broker(os.path.join(tmp, "data"))
    try:
        for topic, n in [("pages-b", 2), ("pages-a", 3), ("pages-c", 1)]:
            kafka_tool(b, "kafka-topics", "--create", "--topic", topic, "--partitions", str(n))
        out = kafka_tool(b, "kafka-topics", "--describe", "--partition-size-limit-per-response",
                         "2")
        rows = re.findall(r"Topic: (pages-\w)\tPartition: (\d+)\tLeader: \d+.*Elr:", out)
        got = sorted((t, int(p)) for t, p in rows)
        want = [("pages-a", 0), ("pages-a", 1), ("pages-a", 2), ("pages-b", 0), ("pages-b", 1),
                ("pages-c", 0)]
        assert got == want, out
    finally:
        b.stop()


CASES = {n[5:]: f for n, f in globals().items() if n.startswith("case_")}

if __name__ == "__main__":
    if len(sys.argv) != 2 or sys.argv[1] not in CASES:
        print("cases: " + " ".join(sorted(CASES)))
        sys.exit(2)
    with tempfile.TemporaryDirectory(prefix="shale-broker-it-") as d:
        CASES[sys.argv[1]](d)
    print("ok")
