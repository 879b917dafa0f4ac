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


def test_unknown_key_fails():
    r = run(["--override", "num.partitons=3"])
    assert r.returncode != 0
    assert "num.partitons" in r.stderr, r.stderr
    assert r.stdout == ""


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


CASES = {name[5:]: fn for name, fn in globals().items() if name.startswith("test_")}

if __name__ == "__main__":
    if len(sys.argv) != 2 or sys.argv[1] not in CASES:
        print("cases: " + " ".join(sorted(CASES)))
        sys.exit(2)
    CASES[sys.argv[1]]()
    print("ok")
