#!/usr/bin/env python3
"""Degraded storage (issue #19, docs/operations.md "Degraded states") against the real
`shale serve`: a full object directory, an object store that is down, throttling (503 SlowDown)
or refusing credentials. Each case fills the WAL under an idempotent acks=all producer (written
with hand-made Kafka frames, so every request's answer and its latency are visible), checks
that refused requests are answered within ANSWER_BOUND_S with a retriable error, that the
broker says so (log line, --metrics-file, DescribeLogDirs), that it recovers by itself once the
fault goes, and that every acknowledged record is read back (kcat) with no temp file left.

Usage: degraded_test.py <case>   (SHALE_BIN names the binary; no case lists them)
Cases needing a mount (disk_full, disk_full_kill9) exit 77 (ctest: skipped) with a message
when this machine cannot mount a tmpfs (not root, no permission).
"""
import json
import os
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "broker"))
import broker_test as bt  # noqa: E402  (Broker, kcat, frames)

SKIP = 77
# Behavioural bound: a client's default request.timeout.ms is 30 s; we answer well inside it.
ANSWER_BOUND_S = 10.0
KAFKA_STORAGE_ERROR = 56
REQUEST_TIMED_OUT = 7
RETRIABLE_REFUSALS = (KAFKA_STORAGE_ERROR, REQUEST_TIMED_OUT)
RECORD = 64 * 1024
# 32 MiB WAL and LogCache (the smallest the engine takes with its 4 MiB WAL writes).
STORAGE = ["s3.wal.capacity=33554432", "s3.wal.cache.size=33554432",
           "s3.block.cache.size=16777216", "s3.wal.upload.interval.ms=1000"]


# ------------------------------------------------------------------------------------------
# Kafka frames: InitProducerId, idempotent Produce v3, DescribeLogDirs v1.

def init_producer_id(sock, corr):
    body = struct.pack(">hi", -1, 60000)  # null transactional id, txn timeout
    head = struct.pack(">hhi", 22, 0, corr) + bt.string("degraded-test")
    sock.sendall(struct.pack(">i", len(head) + len(body)) + head + body)
    f = bt.read_frame(sock)
    _corr, _throttle, err, pid, epoch = struct.unpack_from(">iihqh", f, 0)
    assert err == 0, err
    return pid, epoch


def _crc_table():
    t = []
    for n in range(256):
        c = n
        for _ in range(8):
            c = (c >> 1) ^ (0x82F63B78 & -(c & 1))
        t.append(c)
    return t


CRC_TABLE = _crc_table()


def crc_update(state, data):
    """CRC32C register update (no pre/post inversion)."""
    t = CRC_TABLE
    for b in data:
        state = t[(state ^ b) & 0xFF] ^ (state >> 8)
    return state


class SuffixCrc:
    """crc32c(prefix + suffix) for a fixed 64 KiB suffix in microseconds: the register update
    is linear, so running the suffix from state s is L(s) ^ run(0, suffix), with L tabulated
    once per bit (pure-Python CRC of 64 KiB per record would make the producer the bottleneck).
    """

    def __init__(self, suffix):
        zeros = bytes(len(suffix))
        self.base = crc_update(0, suffix)
        self.cols = [crc_update(1 << i, zeros) for i in range(32)]

    def crc(self, prefix):
        s = crc_update(0xFFFFFFFF, prefix)
        out = self.base
        for i in range(32):
            if (s >> i) & 1:
                out ^= self.cols[i]
        return out ^ 0xFFFFFFFF


VALUE = b"v" * RECORD
VALUE_TAIL = bt.varint(len(VALUE)) + VALUE + bt.varint(0)  # value, then no headers
_suffix_crc = None


def idempotent_batch(key, pid, epoch, seq):
    global _suffix_crc
    if _suffix_crc is None:
        _suffix_crc = SuffixCrc(VALUE_TAIL)
    body = b"\x00" + bt.varint(0) + bt.varint(0) + bt.varint(len(key)) + key  # attrs, deltas
    rec_len = bt.varint(len(body) + len(VALUE_TAIL))
    ts = int(time.time() * 1000)
    head = struct.pack(">hiqqqhii", 0, 0, ts, ts, pid, epoch, seq, 1) + rec_len + body
    crc = _suffix_crc.crc(head)
    after_crc = head + VALUE_TAIL
    rest = struct.pack(">ib", -1, 2) + struct.pack(">I", crc) + after_crc
    return struct.pack(">qi", 0, len(rest)) + rest


def describe_log_dirs_error(port):
    s = socket.create_connection(("127.0.0.1", port), timeout=ANSWER_BOUND_S)
    try:
        body = struct.pack(">i", -1)  # all topics
        head = struct.pack(">hhi", 35, 1, 99) + bt.string("degraded-test")
        s.sendall(struct.pack(">i", len(head) + len(body)) + head + body)
        f = bt.read_frame(s)
        _corr, _throttle, n = struct.unpack_from(">iii", f, 0)
        assert n == 1, n
        err, = struct.unpack_from(">h", f, 12)
        return err
    finally:
        s.close()


class Producer:
    """One connection, one partition, acks=all, idempotent: a refused batch is sent again with
    the same sequence number, so retries never duplicate. acked maps offset -> key."""

    def __init__(self, broker, topic):
        self.broker = broker
        self.topic = topic
        self.sock = socket.create_connection(("127.0.0.1", broker.port))
        self.sock.settimeout(60)
        self.corr = 1
        self.pid, self.epoch = init_producer_id(self.sock, self.corr)
        self.seq = 0
        self.acked = {}
        self.codes = {}  # error code -> count
        self.slowest = 0.0

    def send_one(self):
        """Sends the next record; returns (error code, seconds until the answer)."""
        key = b"k%08d" % self.seq
        self.corr += 1
        frame = bt.produce_v3(self.corr, self.topic,
                              [(0, idempotent_batch(key, self.pid, self.epoch, self.seq))])
        t0 = time.monotonic()
        self.sock.sendall(frame)
        f = bt.read_frame(self.sock)
        took = time.monotonic() - t0
        assert f is not None, "connection closed; log:\n" + self.broker.log()
        corr, res = bt.parse_produce_v3(f)
        assert corr == self.corr
        err, base = res[0]
        self.codes[err] = self.codes.get(err, 0) + 1
        self.slowest = max(self.slowest, took)
        assert took < ANSWER_BOUND_S, "answer after %.1f s (code %d)" % (took, err)
        if err == 0:
            self.acked[base] = key.decode()
            self.seq += 1
        else:
            assert err in RETRIABLE_REFUSALS, "code %d; log:\n%s" % (err, self.broker.log())
        return err, took

    def fill_until_refused(self, want=KAFKA_STORAGE_ERROR, limit_s=90):
        """Produces until the broker refuses with `want` (earlier refusals may be plain
        back-pressure while the first upload failure is still being retried)."""
        deadline = time.monotonic() + limit_s
        while time.monotonic() < deadline:
            err, _ = self.send_one()
            if err == want:
                return
            if err != 0:
                time.sleep(0.05)
        raise AssertionError("no refusal with %d within %d s; codes %s; log:\n%s" %
                             (want, limit_s, self.codes, self.broker.log()))

    def wait_accepted(self, limit_s=90):
        deadline = time.monotonic() + limit_s
        while time.monotonic() < deadline:
            err, _ = self.send_one()
            if err == 0:
                return
            time.sleep(0.2)
        raise AssertionError("writes did not resume within %d s; codes %s; log:\n%s" %
                             (limit_s, self.codes, self.broker.log()))

    def close(self):
        self.sock.close()


def read_back(broker, topic, acked):
    """Every acknowledged record is there, at its offset, with its key and full value."""
    out = bt.kcat(broker, "-C", "-t", topic, "-o", "beginning", "-e", "-q", "-f", "%o %k %S\n")
    got = {}
    for line in out.splitlines():
        off, key, size = line.split(" ")
        got[int(off)] = (key, int(size))
    want_size = RECORD
    for off, key in acked.items():
        assert got.get(off) == (key, want_size), (off, key, got.get(off))
    return len(got)


def metrics(path):
    for _ in range(50):
        try:
            with open(path) as f:
                return json.load(f)
        except (OSError, ValueError):
            time.sleep(0.1)
    raise AssertionError("no metrics file " + path)


def wait_health(path, degraded, limit_s=90):
    deadline = time.monotonic() + limit_s
    while time.monotonic() < deadline:
        h = metrics(path)["health"]
        if h["degraded"] == degraded:
            return h
        time.sleep(0.2)
    raise AssertionError("health never became degraded=%d: %s" % (degraded, metrics(path)))


def temp_files(objects_dir):
    tmp = os.path.join(objects_dir, ".shale-tmp")
    return os.listdir(tmp) if os.path.isdir(tmp) else []


def wait_no_temp_files(objects_dir, limit_s=30):
    deadline = time.monotonic() + limit_s
    while temp_files(objects_dir) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not temp_files(objects_dir), temp_files(objects_dir)


# ------------------------------------------------------------------------------------------
# A small file system of our own (tmpfs), always unmounted.

class SmallFs:
    def __init__(self, path, size_mib):
        self.path = path
        os.makedirs(path, exist_ok=True)
        r = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=%dm" % size_mib, "tmpfs", path],
                           capture_output=True, text=True)
        if r.returncode != 0:
            print("SKIP: cannot mount a tmpfs for the data directory (%s); this test needs "
                  "root or CAP_SYS_ADMIN" % (r.stderr.strip() or "mount failed"))
            sys.exit(SKIP)
        self.ballast = []

    def free(self):
        st = os.statvfs(self.path)
        return st.f_bavail * st.f_frsize

    def leave_free(self, nbytes):
        """Fills the file system with 4 MiB ballast files until about nbytes stay free."""
        chunk = 4 << 20
        i = 0
        while self.free() - chunk >= nbytes:
            p = os.path.join(self.path, "ballast-%03d" % i)
            with open(p, "wb") as f:
                f.write(b"\xab" * chunk)
            self.ballast.append(p)
            i += 1

    def release(self, nbytes=None):
        freed = 0
        while self.ballast and (nbytes is None or freed < nbytes):
            p = self.ballast.pop()
            freed += os.path.getsize(p)
            os.unlink(p)

    def close(self):
        for _ in range(20):
            if subprocess.run(["umount", self.path], capture_output=True).returncode == 0:
                return
            time.sleep(0.5)
        subprocess.run(["umount", "-l", self.path], capture_output=True)


def serve(data_dir, metrics_path, extra=()):
    """shale serve with --metrics-file (bt.Broker with two more arguments)."""
    args = [bt.SHALE, "serve", "--metrics-file", metrics_path, "--metrics-interval-ms", "200",
            "--override", "listeners=PLAINTEXT://127.0.0.1:0", "--override",
            "data.dir=" + data_dir]
    for o in STORAGE + list(extra):
        args += ["--override", o]
    b = bt.Broker.__new__(bt.Broker)
    b.data_dir = data_dir
    b.stderr = open(os.path.join(os.path.dirname(metrics_path),
                                 os.path.basename(data_dir) + ".stderr.log"), "a+")
    b.proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=b.stderr, text=True)
    line = b.proc.stdout.readline()
    m = bt.BANNER.match(line)
    if not m:
        b.proc.kill()
        raise AssertionError("unexpected banner %r; log:\n%s" % (line, b.log()))
    b.port = int(m.group(1))
    b.bootstrap = "127.0.0.1:%d" % b.port
    return b


def create_topic(broker, topic):
    bt.produce(broker, topic, ["seed"])  # auto-creates it (1 partition); offset 0


def check_degraded_signals(broker, mpath, cause):
    h = wait_health(mpath, 1)
    assert h["degraded_cause"] == cause, h
    # An S3 attempt may still be retrying (a stall counts after 10 s): failures may be 0.
    assert h["upload_failures"] > 0 or cause == "object_store_unavailable", h
    assert h["upload_bytes_needed"] > 0, h
    assert describe_log_dirs_error(broker.port) == KAFKA_STORAGE_ERROR
    log = broker.log()
    assert "entered degraded state (%s)" % cause in log, log[-4000:]


def check_recovered_signals(broker, mpath):
    h = wait_health(mpath, 0)
    assert h["degraded_cause"] == "none", h
    assert describe_log_dirs_error(broker.port) == 0
    log = broker.log()
    assert "left degraded state" in log
    for line in log.splitlines():  # the transitions, for whoever reads the test output
        if "degraded" in line and "error" in line:
            print(line[:600])


# ------------------------------------------------------------------------------------------
# Cases

def disk_full_setup(tmp):
    fs = SmallFs(os.path.join(tmp, "mnt"), 128)
    data = os.path.join(fs.path, "data")
    mpath = os.path.join(tmp, "metrics.json")
    return fs, data, mpath


def case_disk_full(tmp):
    fs, data, mpath = disk_full_setup(tmp)
    b = None
    try:
        b = serve(data, mpath)
        create_topic(b, "full")
        # Room for the WAL's 32 MiB plus ~40 MiB of objects: the objects fill it first.
        fs.leave_free(40 << 20)
        p = Producer(b, "full")
        p.fill_until_refused()
        check_degraded_signals(b, mpath, "object_store_full")
        for _ in range(20):  # refused again and again, each time at once
            err, _ = p.send_one()
            assert err == KAFKA_STORAGE_ERROR, err
        log = b.log()
        assert log.count("entered degraded state") == 1, log[-4000:]
        assert "bytes free in" in log, log[-4000:]
        # Fetches keep working while degraded: everything acknowledged so far reads back.
        read_back(b, "full", p.acked)
        # Free a little more than one object (uploads are ~11 MiB blocks): uploads resume
        # without any more room than the object itself, the WAL drains, produce is accepted.
        fs.release(16 << 20)
        p.wait_accepted()
        # Then everything: the backlog drains and the broker leaves the degraded state.
        fs.release()
        for _ in range(50):
            assert p.send_one()[0] == 0
        check_recovered_signals(b, mpath)
        wait_no_temp_files(os.path.join(data, "objects"))
        n = read_back(b, "full", p.acked)
        print("acked %d, read %d, answers %s, slowest answer %.2f s" %
              (len(p.acked), n, p.codes, p.slowest))
        p.close()
        b.stop()
        b = None
        assert not temp_files(os.path.join(data, "objects"))
    finally:
        if b is not None:
            b.stop(signal.SIGKILL)
        fs.close()


def case_disk_full_kill9(tmp):
    fs, data, mpath = disk_full_setup(tmp)
    b = None
    try:
        b = serve(data, mpath)
        create_topic(b, "k9")
        fs.leave_free(40 << 20)
        p = Producer(b, "k9")
        p.fill_until_refused()
        check_degraded_signals(b, mpath, "object_store_full")
        acked = dict(p.acked)
        p.close()
        b.stop(signal.SIGKILL)
        b = None
        # Restart with the file system still full: the WAL must survive it untouched.
        try:
            b = serve(data, mpath)
            print("restart on the full disk: started")
            b.stop(signal.SIGKILL)
        except AssertionError as e:
            # Refusing to start on a full disk is fine (it says why); damaging the WAL is not.
            print("restart on the full disk refused: " + str(e).splitlines()[-1][:300])
        b = None
        fs.release()
        b = serve(data, mpath)
        n = read_back(b, "k9", acked)
        p = Producer(b, "k9")
        p.wait_accepted(30)
        p.close()
        wait_health(mpath, 0)
        wait_no_temp_files(os.path.join(data, "objects"))
        print("acked %d before kill -9, read %d after restart" % (len(acked), n))
        b.stop()
        b = None
    finally:
        if b is not None:
            b.stop(signal.SIGKILL)
        fs.close()


class FaultProxy:
    """A TCP proxy in front of the S3 test server whose mode the test switches: "pass",
    "down" (connections are closed at once: the store is unreachable), "503" (every request is
    answered 503 SlowDown) or "403" (InvalidAccessKeyId: credentials revoked)."""

    BODIES = {
        "503": (503, "Service Unavailable", "SlowDown", "Please reduce your request rate."),
        "403": (403, "Forbidden", "InvalidAccessKeyId",
                "The AWS Access Key Id you provided does not exist in our records."),
    }

    def __init__(self, target_port):
        self.target = target_port
        self.mode = "pass"
        self.lsock = socket.socket()
        self.lsock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.lsock.bind(("127.0.0.1", 0))
        self.lsock.listen(64)
        self.port = self.lsock.getsockname()[1]
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self):
        while True:
            try:
                c, _ = self.lsock.accept()
            except OSError:
                return
            threading.Thread(target=self._serve, args=(c,), daemon=True).start()

    def _serve(self, c):
        mode = self.mode
        if mode == "down":
            c.close()
            return
        if mode in self.BODIES:
            status, reason, code, msg = self.BODIES[mode]
            body = ("<?xml version=\"1.0\" encoding=\"UTF-8\"?><Error><Code>%s</Code>"
                    "<Message>%s</Message></Error>" % (code, msg)).encode()
            try:
                c.settimeout(5)
                # Read the request (its body too unless the client waits for 100-continue),
                # so the client sees our answer rather than a broken pipe.
                buf = b""
                while b"\r\n\r\n" not in buf:
                    d = c.recv(65536)
                    if not d:
                        raise OSError("closed")
                    buf += d
                head, rest = buf.split(b"\r\n\r\n", 1)
                fields = dict(line.split(b":", 1) for line in head.split(b"\r\n")[1:]
                              if b":" in line)
                fields = {k.strip().lower(): v.strip() for k, v in fields.items()}
                if b"100-continue" not in fields.get(b"expect", b"").lower():
                    left = int(fields.get(b"content-length", b"0")) - len(rest)
                    while left > 0:
                        d = c.recv(min(left, 1 << 20))
                        if not d:
                            break
                        left -= len(d)
                c.sendall(("HTTP/1.1 %d %s\r\nContent-Type: application/xml\r\n"
                           "Content-Length: %d\r\nConnection: close\r\n\r\n" %
                           (status, reason, len(body))).encode() + body)
            except (OSError, ValueError):
                pass
            c.close()
            return
        try:
            u = socket.create_connection(("127.0.0.1", self.target))
        except OSError:
            c.close()
            return

        def pipe(a, b):
            try:
                while True:
                    d = a.recv(65536)
                    if not d or self.mode != "pass":
                        break
                    b.sendall(d)
            except OSError:
                pass
            for s in (a, b):
                try:
                    s.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass
        threading.Thread(target=pipe, args=(u, c), daemon=True).start()
        pipe(c, u)
        c.close()
        u.close()

    def close(self):
        self.lsock.close()


def start_s3(tmp):
    src = os.environ.get("SHALE_SOURCE_DIR", os.path.join(HERE, "..", "..", ".."))
    info = os.path.join(tmp, "s3.json")
    proc = subprocess.Popen([os.path.join(src, "scripts", "s3-test-server"), "--info", info,
                             "--parent-pid", str(os.getpid())],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    for _ in range(600):
        if os.path.exists(info):
            with open(info) as f:
                return proc, json.load(f)
        if proc.poll() is not None:
            # moto missing is a missing fixture: a failure, never a skip (make test installs it).
            raise AssertionError("s3-test-server exited: " + proc.stderr.read())
        time.sleep(0.1)
    proc.kill()
    raise AssertionError("s3-test-server did not start")


def s3_fault_case(tmp, mode, cause):
    """The store fails in `mode` while we produce; then it comes back."""
    s3, info = start_s3(tmp)
    proxy = FaultProxy(int(info["endpoint"].rsplit(":", 1)[1]))
    bucket = ("0@s3://%s?region=%s&endpoint=http://127.0.0.1:%d&pathStyle=true&accessKey=%s"
              "&secretKey=%s" % (info["bucket"], info["region"], proxy.port, info["access_key"],
                                 info["secret_key"]))
    data = os.path.join(tmp, "data")
    mpath = os.path.join(tmp, "metrics.json")
    b = None
    try:
        b = serve(data, mpath, ["s3.data.buckets=" + bucket])
        create_topic(b, "s3f")
        p = Producer(b, "s3f")
        for _ in range(20):
            assert p.send_one()[0] == 0
        proxy.mode = mode
        p.fill_until_refused()
        check_degraded_signals(b, mpath, cause)
        for _ in range(5):
            assert p.send_one()[0] == KAFKA_STORAGE_ERROR
        read_back(b, "s3f", p.acked)  # fetches keep working while degraded
        proxy.mode = "pass"  # the store is back: the broker recovers by itself
        p.wait_accepted(120)
        check_recovered_signals(b, mpath)
        n = read_back(b, "s3f", p.acked)
        print("%s: acked %d, read %d, answers %s, slowest answer %.2f s" %
              (mode, len(p.acked), n, p.codes, p.slowest))
        p.close()
        b.stop()
        b = None
    finally:
        if b is not None:
            b.stop(signal.SIGKILL)
        proxy.close()
        s3.terminate()
        s3.wait(timeout=30)


def case_s3_down(tmp):
    s3_fault_case(tmp, "down", "object_store_unavailable")


def case_s3_slow_down(tmp):
    s3_fault_case(tmp, "503", "object_store_unavailable")


def case_s3_access_denied(tmp):
    s3_fault_case(tmp, "403", "object_store_access_denied")


CASES = {n[5:]: f for n, f in globals().items() if n.startswith("case_")}

if __name__ == "__main__":
    if len(sys.argv) != 2 or sys.argv[1] not in CASES:
        print("cases: " + " ".join(sorted(CASES)))
        sys.exit(2)
    with tempfile.TemporaryDirectory(prefix="shale-degraded-it-") as d:
        CASES[sys.argv[1]](d)
    print("ok")
