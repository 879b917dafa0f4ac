#!/usr/bin/env python3
"""`shale serve` with metadata.store=etcd://...: a real etcd member (Debian's etcd-server) on
loopback ports, kcat as the client.

Cases:
  etcd_round_trip_kill9  produce, kill -9 the broker, restart, read everything back (three times);
                         the metadata is in etcd (no meta.db), under the URI's prefix
  etcd_outage            etcd killed: the broker acknowledges while its lease is surely valid,
                         then refuses produce (retriable) until etcd is back; nothing acknowledged
                         is lost, also across a kill -9 of the broker afterwards

Usage: etcd_test.py <case>   (SHALE_BIN names the binary; no case lists them)
"""
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request

SHALE = os.environ.get("SHALE_BIN", "build/release/bin/shale")
BANNER = re.compile(r"^Shale \S+ serving Kafka on 127\.0\.0\.1:(\d+) ")
STORAGE = ["s3.wal.capacity=67108864", "s3.wal.cache.size=67108864",
           "s3.block.cache.size=33554432", "s3.wal.upload.interval.ms=300"]


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Etcd:
    def __init__(self, root):
        binary = shutil.which("etcd")
        if not binary:
            raise AssertionError("etcd is not installed: run scripts/setup "
                                 "(scripts/setup.d/etcd.sh installs Debian's etcd-server)")
        self.binary = binary
        self.dir = os.path.join(root, "etcd")
        self.client = free_port()
        self.peer = free_port()
        self.log = open(os.path.join(root, "etcd.log"), "a+")
        self.proc = None
        self.start()

    def start(self):
        c = "http://127.0.0.1:%d" % self.client
        p = "http://127.0.0.1:%d" % self.peer
        self.proc = subprocess.Popen(
            [self.binary, "--name", "default", "--data-dir", self.dir,
             "--listen-client-urls", c, "--advertise-client-urls", c,
             "--listen-peer-urls", p, "--initial-advertise-peer-urls", p,
             "--initial-cluster", "default=" + p, "--log-level", "error"],
            stdout=self.log, stderr=self.log)
        deadline = time.time() + 30
        while time.time() < deadline:
            try:
                with urllib.request.urlopen(c + "/health", timeout=1) as r:
                    if b'"true"' in r.read():
                        return
            except OSError:
                pass
            time.sleep(0.1)
        raise AssertionError("etcd did not become healthy")

    def kill(self):
        self.proc.kill()
        self.proc.wait()

    def keys(self, prefix):
        """Counts the keys under prefix through etcd's JSON gateway."""
        import base64
        import json
        end = prefix[:-1] + chr(ord(prefix[-1]) + 1)
        body = json.dumps({"key": base64.b64encode(prefix.encode()).decode(),
                           "range_end": base64.b64encode(end.encode()).decode(),
                           "count_only": True}).encode()
        req = urllib.request.Request("http://127.0.0.1:%d/v3/kv/range" % self.client, data=body)
        with urllib.request.urlopen(req, timeout=5) as r:
            return int(json.loads(r.read()).get("count", "0"))


class Broker:
    def __init__(self, data_dir, etcd, extra=()):
        self.data_dir = data_dir
        args = [SHALE, "serve", "--override", "listeners=PLAINTEXT://127.0.0.1:0",
                "--override", "data.dir=" + data_dir, "--override",
                "metadata.store=etcd://127.0.0.1:%d,127.0.0.1:%d/it/" % (free_port(), etcd.client)]
        for o in STORAGE + list(extra):
            args += ["--override", o]
        self.stderr = open(data_dir + ".stderr.log", "a+")
        self.proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=self.stderr, text=True)
        line = self.proc.stdout.readline()
        m = BANNER.match(line)
        if not m:
            self.proc.kill()
            raise AssertionError("unexpected banner %r; log:\n%s" % (line, self.log()))
        self.bootstrap = "127.0.0.1:%s" % m.group(1)

    def log(self):
        self.stderr.flush()
        with open(self.stderr.name) as f:
            return f.read()

    def stop(self, sig=signal.SIGTERM):
        self.proc.send_signal(sig)
        rc = self.proc.wait(timeout=60)
        if sig == signal.SIGTERM:
            assert rc == 0, "exit code %d; log:\n%s" % (rc, self.log())


def kcat(broker, *args, stdin=None, check=True):
    r = subprocess.run(["kcat", "-b", broker.bootstrap] + list(args), input=stdin,
                       capture_output=True, text=True, timeout=120)
    if check and r.returncode != 0:
        raise AssertionError("kcat %s failed (%d): %s\nbroker log:\n%s" %
                             (" ".join(args), r.returncode, r.stderr, broker.log()))
    return r


def produce(broker, topic, values, *extra, check=True, idempotent=True):
    # -P exits non-zero unless every message was acknowledged (acks=all by default). An
    # idempotent producer first needs a producer id, which is allocated in the metadata store.
    r = kcat(broker, "-P", "-t", topic, "-X", "enable.idempotence=%s" % str(idempotent).lower(),
             *extra,
             stdin="".join(v + "\n" for v in values), check=check)
    return r.returncode == 0


def consume(broker, topic):
    out = kcat(broker, "-C", "-t", topic, "-o", "beginning", "-e", "-q", "-f", "%o %s\n").stdout
    return [line.split(" ", 1)[1] for line in out.splitlines()]


def case_etcd_round_trip_kill9(tmp):
    etcd = Etcd(tmp)
    data = os.path.join(tmp, "data")
    b = Broker(data, etcd)
    sent = []
    try:
        for round_ in range(3):
            vals = ["r%d-%d" % (round_, i) for i in range(500)]
            produce(b, "durable", vals, "-z", "lz4" if round_ % 2 else "none")
            sent += vals
            time.sleep(0.5)  # let an upload commit to etcd, so restarts read objects too
            b.stop(signal.SIGKILL)
            b = Broker(data, etcd)
            got = consume(b, "durable")
            assert got == sent, "after restart %d: %d of %d records" % (round_, len(got),
                                                                         len(sent))
        assert not os.path.exists(os.path.join(data, "meta.db")), "metadata went to SQLite"
        assert etcd.keys("it/") > 0, "no keys under the URI's prefix in etcd"
    finally:
        b.stop()
        etcd.kill()


def case_etcd_outage(tmp):
    etcd = Etcd(tmp)
    data = os.path.join(tmp, "data")
    b = Broker(data, etcd, ["broker.session.timeout.ms=3000",
                            "metadata.etcd.request.timeout.ms=1000"])
    acked = []
    try:
        vals = ["before-%d" % i for i in range(200)]
        assert produce(b, "out", vals)
        acked += vals
        etcd.kill()
        t0 = time.time()
        # The lease (3 s, renewed every second) is surely valid for a while yet: acknowledged.
        vals = ["during-%d" % i for i in range(50)]
        assert produce(b, "out", vals, "-X", "message.timeout.ms=20000", idempotent=False)
        acked += vals
        assert time.time() - t0 < 2, "the in-lease produce took too long"
        time.sleep(max(0, t0 + 4 - time.time()))
        # Past the lease: refused with a retriable error, so this delivery times out.
        refused = ["refused-%d" % i for i in range(20)]
        ok = produce(b, "out", refused, "-X", "message.timeout.ms=2000", check=False,
                     idempotent=False)
        assert not ok, "produce was acknowledged after the lease lapsed"
        # etcd returns: the lease is renewed (or granted again), produce works again.
        etcd.start()
        vals = ["after-%d" % i for i in range(200)]
        assert produce(b, "out", vals, "-X", "message.timeout.ms=30000")
        acked += vals
        got = consume(b, "out")
        assert [v for v in got if v in set(acked)] == acked, "acknowledged records missing"
        time.sleep(0.5)
        b.stop(signal.SIGKILL)
        b = Broker(data, etcd)
        got = consume(b, "out")
        assert [v for v in got if v in set(acked)] == acked, "acknowledged records lost"
    finally:
        b.stop()
        if etcd.proc.poll() is None:
            etcd.kill()


CASES = {n[5:]: f for n, f in globals().items() if n.startswith("case_")}

if __name__ == "__main__":
    if len(sys.argv) != 2 or sys.argv[1] not in CASES:
        print("cases: " + " ".join(sorted(CASES)))
        sys.exit(2)
    with tempfile.TemporaryDirectory(prefix="shale-cluster-it-") as d:
        CASES[sys.argv[1]](d)
    print("ok")
