#!/usr/bin/env python3
"""Captures the raw request frames real Kafka clients send, for Shale's golden-bytes tests.

A tiny fake broker on 127.0.0.1 answers just enough of the protocol (ApiVersions, Metadata,
Produce, Fetch, ListOffsets) for kcat/librdkafka to produce and consume, and writes every
request frame (without its 4-byte size prefix) it receives to OUT/<tag>-<Api>-v<ver>-<n>.bin,
plus every response body it sends to OUT/responses/<Api>-v<ver>-<n>.bin. The response encoders
below are written independently of Shale's C++ codecs (from the Kafka schemas), so decoding
them in C++ is a cross-check too.

Usage: capture.py OUT_DIR     (runs kcat for each compression codec, then exits)
Only the standard library and the kcat binary are needed.
"""

import os
import shutil
import socket
import socketserver
import struct
import subprocess
import sys
import threading
import time

API_NAMES = {0: "Produce", 1: "Fetch", 2: "ListOffsets", 3: "Metadata", 18: "ApiVersions"}
# What this fake broker advertises (key: (min, max)). librdkafka picks min(its max, ours).
ADVERTISED = {0: (0, 9), 1: (0, 12), 2: (0, 7), 3: (0, 12), 18: (0, 3)}
FLEXIBLE = {0: 9, 1: 12, 2: 6, 3: 9, 18: 3}
TOPIC = "golden"


class Enc:
    def __init__(self, flex):
        self.flex = flex
        self.b = bytearray()

    def i8(self, v):
        self.b += struct.pack(">b", v)
        return self

    def i16(self, v):
        self.b += struct.pack(">h", v)
        return self

    def i32(self, v):
        self.b += struct.pack(">i", v)
        return self

    def i64(self, v):
        self.b += struct.pack(">q", v)
        return self

    def uvarint(self, v):
        while v >= 0x80:
            self.b.append((v & 0x7F) | 0x80)
            v >>= 7
        self.b.append(v)
        return self

    def string(self, s):
        if s is None:
            return self.uvarint(0) if self.flex else self.i16(-1)
        d = s.encode()
        if self.flex:
            self.uvarint(len(d) + 1)
        else:
            self.i16(len(d))
        self.b += d
        return self

    def bytes_(self, d):
        if d is None:
            return self.uvarint(0) if self.flex else self.i32(-1)
        if self.flex:
            self.uvarint(len(d) + 1)
        else:
            self.i32(len(d))
        self.b += d
        return self

    def array(self, items, fn):
        if items is None:
            return self.uvarint(0) if self.flex else self.i32(-1)
        if self.flex:
            self.uvarint(len(items) + 1)
        else:
            self.i32(len(items))
        for it in items:
            fn(self, it)
        return self

    def tags(self):
        if self.flex:
            self.uvarint(0)
        return self


class Broker:
    def __init__(self, port):
        self.port = port
        self.lock = threading.Lock()
        self.log = []  # stored batches (bytes) of partition 0, base offsets assigned
        self.next_offset = 0

    # -- responses ----------------------------------------------------------------------
    def api_versions(self, v, error=0):
        e = Enc(v >= 3)
        e.i16(error)
        e.array(sorted(ADVERTISED.items()),
                lambda e, kv: e.i16(kv[0]).i16(kv[1][0]).i16(kv[1][1]).tags())
        if v >= 1:
            e.i32(0)
        return e.tags().b

    def metadata(self, v, req_body):
        e = Enc(v >= FLEXIBLE[3])
        if v >= 3:
            e.i32(0)

        def broker(e, _):
            e.i32(1).string("127.0.0.1").i32(self.port)
            if v >= 1:
                e.string(None)
            e.tags()

        e.array([1], broker)
        if v >= 2:
            e.string("golden-cluster")
        if v >= 1:
            e.i32(1)

        def partition(e, _):
            e.i16(0).i32(0).i32(1)
            if v >= 7:
                e.i32(0)
            e.array([1], lambda e, x: e.i32(x))
            e.array([1], lambda e, x: e.i32(x))
            if v >= 5:
                e.array([], lambda e, x: e.i32(x))
            e.tags()

        def topic(e, _):
            e.i16(0).string(TOPIC)
            if v >= 10:
                e.b += bytes(range(1, 17))
            if v >= 1:
                e.i8(0)
            e.array([0], partition)
            if v >= 8:
                e.i32(-2147483648)
            e.tags()

        e.array([TOPIC], topic)
        if 8 <= v <= 10:
            e.i32(-2147483648)
        return e.tags().b

    def produce(self, v, body):
        # Parse just enough of the request to find each partition's records.
        flex = v >= FLEXIBLE[0]
        d = Dec(body, flex)
        if v >= 3:
            d.string()
        d.i16()
        d.i32()
        topics = []
        for _ in range(d.count()):
            name = d.string()
            parts = []
            for _ in range(d.count()):
                idx = d.i32()
                rec = d.bytes_()
                d.tags()
                parts.append((idx, rec))
            d.tags()
            topics.append((name, parts))
        e = Enc(flex)

        def part(e, p):
            idx, rec = p
            base = self.append(rec) if rec else -1
            e.i32(idx).i16(0).i64(base)
            if v >= 2:
                e.i64(-1)
            if v >= 5:
                e.i64(0)
            if v >= 8:
                e.array([], lambda e, x: None)
                e.string(None)
            e.tags()

        e.array(topics, lambda e, t: (e.string(t[0]).array(t[1], part).tags()))
        if v >= 1:
            e.i32(0)
        return e.tags().b

    def append(self, records):
        with self.lock:
            base = self.next_offset
            pos, out = 0, bytearray()
            while pos + 61 <= len(records):
                blen = struct.unpack(">i", records[pos + 8:pos + 12])[0]
                batch = bytearray(records[pos:pos + 12 + blen])
                last_delta = struct.unpack(">i", batch[23:27])[0]
                struct.pack_into(">q", batch, 0, self.next_offset)  # not covered by the CRC
                self.log.append(bytes(batch))
                self.next_offset += last_delta + 1
                pos += 12 + blen
            return base

    def fetch(self, v, body):
        flex = v >= FLEXIBLE[1]
        d = Dec(body, flex)
        if v <= 14:
            d.i32()  # replica id
        max_wait = d.i32()
        d.i32()
        if v >= 3:
            d.i32()
        if v >= 4:
            d.i8()
        if v >= 7:
            d.i32()
            d.i32()
        wanted = []
        for _ in range(d.count()):
            if v <= 12:
                d.string()
            else:
                d.raw(16)
            for _ in range(d.count()):
                p = d.i32()
                if v >= 9:
                    d.i32()
                off = d.i64()
                if v >= 12:
                    d.i32()
                if v >= 5:
                    d.i64()
                d.i32()
                if flex:
                    d.tags()
                wanted.append((p, off))
            if flex:
                d.tags()
        with self.lock:
            hwm = self.next_offset
            recs = b""
            off = wanted[0][1] if wanted else 0
            for batch in self.log:
                base = struct.unpack(">q", batch[0:8])[0]
                last = base + struct.unpack(">i", batch[23:27])[0]
                if last >= off:
                    recs += batch
        if not recs:
            time.sleep(min(max_wait, 200) / 1000.0)
        e = Enc(flex)
        if v >= 1:
            e.i32(0)
        if v >= 7:
            e.i16(0).i32(0)

        def part(e, p):
            e.i32(p).i16(0).i64(hwm)
            if v >= 4:
                e.i64(hwm)
            if v >= 5:
                e.i64(0)
            if v >= 4:
                e.array(None if v >= 4 else [], lambda e, x: None)
            if v >= 11:
                e.i32(-1)
            e.bytes_(recs)
            e.tags()

        def topic(e, _):
            if v <= 12:
                e.string(TOPIC)
            else:
                e.b += bytes(range(1, 17))
            e.array([0], part).tags()

        e.array([TOPIC], topic)
        return e.tags().b

    def list_offsets(self, v, body):
        flex = v >= FLEXIBLE[2]
        e = Enc(flex)
        if v >= 2:
            e.i32(0)

        def part(e, _):
            e.i32(0).i16(0)
            if v == 0:
                e.array([0], lambda e, x: e.i64(x))
            else:
                e.i64(-1).i64(0)
                if v >= 4:
                    e.i32(0)
            e.tags()

        e.array([TOPIC], lambda e, t: e.string(t).array([0], part).tags())
        return e.tags().b


class Dec:
    def __init__(self, b, flex):
        self.b, self.p, self.flex = b, 0, flex

    def raw(self, n):
        r = self.b[self.p:self.p + n]
        self.p += n
        return r

    def i8(self):
        return struct.unpack(">b", self.raw(1))[0]

    def i16(self):
        return struct.unpack(">h", self.raw(2))[0]

    def i32(self):
        return struct.unpack(">i", self.raw(4))[0]

    def i64(self):
        return struct.unpack(">q", self.raw(8))[0]

    def uvarint(self):
        v, s = 0, 0
        while True:
            c = self.b[self.p]
            self.p += 1
            v |= (c & 0x7F) << s
            s += 7
            if c < 0x80:
                return v

    def string(self):
        n = self.uvarint() - 1 if self.flex else self.i16()
        return None if n < 0 else self.raw(n).decode()

    def bytes_(self):
        n = self.uvarint() - 1 if self.flex else self.i32()
        return None if n < 0 else self.raw(n)

    def count(self):
        return self.uvarint() - 1 if self.flex else self.i32()

    def tags(self):
        if self.flex:
            for _ in range(self.uvarint()):
                self.uvarint()
                self.raw(self.uvarint())


class Capture:
    def __init__(self, out):
        self.out = out
        self.tag = "init"
        self.counts = {}
        self.lock = threading.Lock()
        os.makedirs(os.path.join(out, "responses"), exist_ok=True)

    def save(self, sub, name, data):
        with self.lock:
            key = (sub, name)
            n = self.counts.get(key, 0)
            self.counts[key] = n + 1
        path = os.path.join(self.out, sub, "{}-{}.bin".format(name, n))
        with open(path, "wb") as fh:
            fh.write(data)


def serve(broker, cap):
    class Handler(socketserver.BaseRequestHandler):
        def handle(self):
            s = self.request
            while True:
                hdr = recv_exact(s, 4)
                if hdr is None:
                    return
                n = struct.unpack(">i", hdr)[0]
                frame = recv_exact(s, n)
                if frame is None:
                    return
                key, ver, corr = struct.unpack(">hhi", frame[:8])
                api = API_NAMES.get(key, "Api{}".format(key))
                cap.save("", "{}-{}-v{}".format(cap.tag, api, ver), frame)
                # Header: client id (int16 string), then tagged fields if flexible.
                clen = struct.unpack(">h", frame[8:10])[0]
                pos = 10 + max(clen, 0)
                flex = key in FLEXIBLE and ver >= FLEXIBLE[key]
                if flex:
                    d = Dec(frame, True)
                    d.p = pos
                    d.tags()
                    pos = d.p
                body = frame[pos:]
                if key == 18:
                    if ver > ADVERTISED[18][1]:
                        # KIP-511: answer a too-new ApiVersions with a v0 body carrying
                        # UNSUPPORTED_VERSION and our ranges; the client retries.
                        ver, flex = 0, False
                        resp = broker.api_versions(0, error=35)
                    else:
                        resp = broker.api_versions(ver)
                elif key == 3:
                    resp = broker.metadata(ver, body)
                elif key == 0:
                    resp = broker.produce(ver, body)
                elif key == 1:
                    resp = broker.fetch(ver, body)
                elif key == 2:
                    resp = broker.list_offsets(ver, body)
                else:
                    return
                cap.save("responses", "{}-v{}".format(api, ver), bytes(resp))
                rh = struct.pack(">i", corr)
                if flex and key != 18:
                    rh += b"\x00"
                s.sendall(struct.pack(">i", len(rh) + len(resp)) + rh + resp)

    class Server(socketserver.ThreadingTCPServer):
        allow_reuse_address = True
        daemon_threads = True

    srv = Server(("127.0.0.1", broker.port), Handler)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    return srv


def recv_exact(s, n):
    buf = b""
    while len(buf) < n:
        c = s.recv(n - len(buf))
        if not c:
            return None
        buf += c
    return buf


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def run_java(cap, boot):
    """Java client (Kafka's console tools) when a Kafka distribution is available."""
    home = os.environ.get("KAFKA_HOME", os.path.expanduser("~/.cache/shale/kafka-4.1.2"))
    libs = os.path.join(home, "libs")
    if not os.path.isdir(libs) or not shutil.which("java"):
        print("no Kafka distribution at {}; skipping the Java client".format(home))
        return
    cp = os.path.join(libs, "*")
    for codec in ("none", "gzip", "snappy", "lz4", "zstd"):
        cap.tag = "java-produce-" + codec
        lines = "".join("hk:hv\t{}|message {} with codec {}{}\n".format(i, i, codec,
                                                                       " padding" * 30)
                        for i in range(5))
        subprocess.run(["java", "-cp", cp, "org.apache.kafka.tools.ConsoleProducer",
                        "--bootstrap-server", boot, "--topic", TOPIC,
                        "--compression-codec", codec,
                        "--producer-property", "enable.idempotence=false",
                        "--producer-property", "partitioner.class="
                        "org.apache.kafka.clients.producer.RoundRobinPartitioner",
                        "--property", "parse.key=true", "--property", "key.separator=|",
                        "--property", "parse.headers=true"],
                       input=lines.encode(), check=True, timeout=120,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    cap.tag = "java-consume"
    subprocess.run(["java", "-cp", cp, "org.apache.kafka.tools.consumer.ConsoleConsumer",
                    "--bootstrap-server", boot, "--topic", TOPIC, "--partition", "0",
                    "--offset", "0", "--max-messages", "50", "--timeout-ms", "5000"],
                   timeout=120, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def run_kafka_python(cap, boot):
    """kafka-python, when importable by the interpreter in $KAFKA_PYTHON."""
    py = os.environ.get("KAFKA_PYTHON", os.path.expanduser("~/.cache/shale/venv/bin/python"))
    if not os.path.exists(py):
        print("no kafka-python interpreter at {}; skipping".format(py))
        return
    for codec in ("none", "gzip", "snappy", "lz4", "zstd"):
        cap.tag = "kafka-python-produce-" + codec
        script = (
            "import kafka\n"
            "p = kafka.KafkaProducer(bootstrap_servers='{boot}', acks=1, linger_ms=50,\n"
            "    compression_type={codec!r})\n"
            "for i in range(5):\n"
            "    p.send('{topic}', key=str(i).encode(), partition=0,\n"
            "           value=('message %d with codec {name}' % i + ' padding' * 30).encode(),\n"
            "           headers=[('hk', b'hv')])\n"
            "p.flush(); p.close()\n").format(boot=boot, topic=TOPIC, name=codec,
                                               codec=None if codec == "none" else codec)
        r = subprocess.run([py, "-c", script], timeout=120, stdout=subprocess.DEVNULL,
                           stderr=subprocess.PIPE)
        if r.returncode != 0:
            print("kafka-python {} failed: {}".format(codec, r.stderr.decode()[-300:]))


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    port = free_port()
    broker = Broker(port)
    cap = Capture(out)
    srv = serve(broker, cap)
    boot = "127.0.0.1:{}".format(port)
    for codec in ("none", "gzip", "snappy", "lz4", "zstd"):
        cap.tag = "kcat-produce-" + codec
        # Compressible values: librdkafka sends a batch uncompressed when the codec would not
        # make it smaller, and the golden test wants one batch per codec.
        pad = " padding" * 30
        msgs = "".join("{}:message {} with codec {}{}\n".format(i, i, codec, pad)
                       for i in range(5))
        subprocess.run(["kcat", "-b", boot, "-P", "-t", TOPIC, "-p", "0",
                        "-X", "compression.codec=" + codec, "-K", ":",
                        "-H", "hk=hv", "-X", "linger.ms=50"], input=msgs.encode(), check=True,
                       timeout=60)
    cap.tag = "kcat-consume"
    subprocess.run(["kcat", "-b", boot, "-C", "-t", TOPIC, "-p", "0", "-o", "0", "-c", "25",
                    "-e", "-q"], check=True, timeout=60, stdout=subprocess.DEVNULL)
    run_java(cap, boot)
    run_kafka_python(cap, boot)
    srv.shutdown()
    return 0


if __name__ == "__main__":
    sys.exit(main())
