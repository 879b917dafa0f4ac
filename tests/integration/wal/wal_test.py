#!/usr/bin/env python3
"""`s3.wal.path` as AutoMQ configurations write it, through the real `shale serve`: the S3 WAL
(`0@s3://bucket?...` on the signature-checking S3 test server), the block/file WAL
(`0@file:///path?capacity=..&iodepth=..`) and a raw block device (a loop device). Each case
produces with kcat, kills the broker with SIGKILL before anything is uploaded, restarts it and
reads every acknowledged record back: after the kill those records exist only in the WAL.

Usage: wal_test.py <case>   (SHALE_BIN names the binary; no case lists them)
The block-device case needs root (losetup); without it the case exits 77, which ctest reports
as skipped (the message says why).
"""
import json
import os
import signal
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(HERE)))
sys.path.insert(0, os.path.join(HERE, "..", "broker"))
from broker_test import Broker, consume, produce  # noqa: E402

SKIP = 77
# Nothing is uploaded during a case: the records live only in the WAL when the broker dies.
NO_UPLOAD = ["s3.wal.upload.interval.ms=-1", "s3.wal.upload.threshold=60000000",
             "s3.wal.cache.size=201326592", "s3.block.cache.size=33554432"]


def kill9_round_trip(data, extra, rounds=2):
    b = Broker(data, NO_UPLOAD + extra)
    sent = []
    try:
        for r in range(rounds):
            vals = ["r%d-%04d" % (r, i) for i in range(400)]
            produce(b, "walled", vals)
            sent += vals
            b.stop(signal.SIGKILL)
            b = Broker(data, NO_UPLOAD + extra)
            got = [g[2] for g in consume(b, "walled")]
            assert got == sent, "after kill -9 %d: %d of %d records" % (r, len(got), len(sent))
        return b
    except BaseException:
        b.stop(signal.SIGKILL)
        raise


def case_automq_s3_wal(tmp):
    info = os.path.join(tmp, "s3.json")
    server = subprocess.Popen([os.path.join(ROOT, "scripts", "s3-test-server"), "--info", info,
                               "--bucket", "wal-bucket"])
    try:
        for _ in range(600):
            if os.path.exists(info) or server.poll() is not None:
                break
            time.sleep(0.1)
        assert os.path.exists(info), "the S3 test server did not start"
        s3 = json.load(open(info))
        wal = ("0@s3://wal-bucket?region=%s&endpoint=%s&pathStyle=true&accessKey=%s&secretKey=%s"
               "&batchInterval=20&maxBytesInBatch=1048576&maxInflightUploadCount=8" %
               (s3["region"], s3["endpoint"], s3["access_key"], s3["secret_key"]))
        data = os.path.join(tmp, "data")
        b = kill9_round_trip(data, ["s3.wal.path=" + wal])
        try:
            assert "maxInflightUploadCount accepted but not used" in b.log(), b.log()[-2000:]
            assert not os.path.exists(os.path.join(data, "wal")), "a local WAL file was made"
        finally:
            b.stop()
    finally:
        server.terminate()
        server.wait(timeout=30)


def case_automq_file_wal(tmp):
    data = os.path.join(tmp, "data")
    path = os.path.join(tmp, "s3wal")
    b = kill9_round_trip(data, ["s3.wal.path=0@file://%s?capacity=33554432&iodepth=4" % path])
    try:
        assert os.path.getsize(path) == 33554432, os.path.getsize(path)  # capacity wins
        assert "iodepth accepted but not used" in b.log()
    finally:
        b.stop()


def case_block_device_wal(tmp):
    if os.geteuid() != 0:
        print("skipped: attaching a loop device needs root")
        sys.exit(SKIP)
    image = os.path.join(tmp, "device.img")
    with open(image, "wb") as f:
        f.truncate(48 << 20)
    r = subprocess.run(["losetup", "--find", "--show", image], capture_output=True, text=True)
    if r.returncode != 0:
        print("skipped: cannot attach a loop device here: " + r.stderr.strip())
        sys.exit(SKIP)
    dev = r.stdout.strip()
    try:
        # The ring is smaller than the device: the first 32 MiB of it are used.
        b = kill9_round_trip(os.path.join(tmp, "data"),
                             ["s3.wal.path=0@file://%s?capacity=33554432" % dev])
        b.stop()
    finally:
        subprocess.run(["losetup", "--detach", dev], check=False)


CASES = {n[5:]: f for n, f in globals().items() if n.startswith("case_")}

if __name__ == "__main__":
    if len(sys.argv) != 2 or sys.argv[1] not in CASES:
        print("cases: " + " ".join(sorted(CASES)))
        sys.exit(2)
    with tempfile.TemporaryDirectory(prefix="shale-wal-it-") as d:
        CASES[sys.argv[1]](d)
    print("ok")
