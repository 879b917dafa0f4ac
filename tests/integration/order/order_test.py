#!/usr/bin/env python3
"""Requests on one connection take effect in the order they were sent (Kafka's rule), against the
real `shale serve`: hand-made frames pipelined on one socket, and librdkafka (confluent-kafka)
producers and consumers that rely on the rule.

Usage: order_test.py <case>   (SHALE_BIN names the binary; no case lists them)
The librdkafka cases run under the test clients' virtualenv (~/.cache/shale/venv, installed by
the test set-up); the script re-executes itself there when confluent_kafka is not importable.
"""
import os
import socket
import struct
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "broker"))
from broker_test import Broker, kcat, read_frame, string  # noqa: E402

VENV_PY = os.path.join(os.path.expanduser("~"), ".cache", "shale", "venv", "bin", "python")


def frame(api_key, version, corr, body):
    head = struct.pack(">hhi", api_key, version, corr) + string("order-test")
    return struct.pack(">i", len(head) + len(body)) + head + body


def offset_commit_v5(corr, group, topic, partition, offset):
    # group_id, generation_id (-1: a simple consumer's commit), member_id, topics[name,
    # partitions[index, committed_offset, committed_metadata]]
    body = string(group) + struct.pack(">i", -1) + string("")
    body += struct.pack(">i", 1) + string(topic) + struct.pack(">i", 1)
    body += struct.pack(">iq", partition, offset) + string("")
    return frame(8, 5, corr, body)


def parse_offset_commit_v5(resp):
    corr, _throttle, n_topics = struct.unpack_from(">iii", resp, 0)
    pos = 12
    errors = []
    for _ in range(n_topics):
        ln, = struct.unpack_from(">h", resp, pos)
        pos += 2 + ln
        n_parts, = struct.unpack_from(">i", resp, pos)
        pos += 4
        for _ in range(n_parts):
            _index, err = struct.unpack_from(">ih", resp, pos)
            pos += 6
            errors.append(err)
    return corr, errors


def offset_fetch_v3(corr, group, topic, partition):
    body = string(group) + struct.pack(">i", 1) + string(topic)
    body += struct.pack(">ii", 1, partition)
    return frame(9, 3, corr, body)


def parse_offset_fetch_v3(resp):
    """-> (correlation id, committed offset of the one partition asked for)"""
    corr, _throttle, n_topics = struct.unpack_from(">iii", resp, 0)
    assert n_topics == 1, n_topics
    pos = 12
    ln, = struct.unpack_from(">h", resp, pos)
    pos += 2 + ln + 4
    _index, offset = struct.unpack_from(">iq", resp, pos)
    pos += 12
    mlen, = struct.unpack_from(">h", resp, pos)
    pos += 2 + max(mlen, 0)
    err, = struct.unpack_from(">h", resp, pos)
    assert err == 0, err
    return corr, offset


def fetch_v4(corr, topic, partition, offset, max_wait_ms):
    # replica_id, max_wait_ms, min_bytes, max_bytes, isolation_level, topics[...]
    body = struct.pack(">iiiib", -1, max_wait_ms, 1, 1 << 20, 0)
    body += struct.pack(">i", 1) + string(topic) + struct.pack(">i", 1)
    body += struct.pack(">iqi", partition, offset, 1 << 20)
    return frame(1, 4, corr, body)


def correlation(resp):
    return struct.unpack_from(">i", resp, 0)[0]


def committed(broker, group, topic):
    s = socket.create_connection(("127.0.0.1", broker.port))
    try:
        s.sendall(offset_fetch_v3(1, group, topic, 0))
        return parse_offset_fetch_v3(read_frame(s))[1]
    finally:
        s.close()


def case_pipelined_offset_commits(tmp):
    """1,000 OffsetCommits with rising offsets sent without waiting, each followed by an
    OffsetFetch on the same connection: every fetch sees the commit sent just before it, and
    the last commit stands."""
    b = Broker(os.path.join(tmp, "data"))
    try:
        kcat(b, "-P", "-t", "commits", stdin="seed\n")  # auto-creates the topic
        for attempt in range(3):
            group = "pipelined-%d" % attempt
            s = socket.create_connection(("127.0.0.1", b.port))
            n = 1000
            s.sendall(b"".join(offset_commit_v5(2 * i, group, "commits", 0, i + 1) +
                               offset_fetch_v3(2 * i + 1, group, "commits", 0)
                               for i in range(n)))
            stale = []
            for i in range(n):
                corr, errors = parse_offset_commit_v5(read_frame(s))
                assert corr == 2 * i, (corr, i)
                assert errors == [0], (i, errors)
                corr, offset = parse_offset_fetch_v3(read_frame(s))
                assert corr == 2 * i + 1, (corr, i)
                if offset != i + 1:
                    stale.append((i + 1, offset))
            assert not stale, "%d fetches did not see the commit before them, e.g. %s" % (
                len(stale), stale[:5])
            s.close()
            assert committed(b, group, "commits") == n
    finally:
        b.stop()


def case_long_poll_fetch_then_commit(tmp):
    """A Fetch that long-polls, then an OffsetCommit on the same connection: the commit takes
    effect after the Fetch has been answered, and the answers come back in order."""
    b = Broker(os.path.join(tmp, "data"))
    try:
        kcat(b, "-P", "-t", "poll", stdin="seed\n")  # one record: the log end is offset 1
        s = socket.create_connection(("127.0.0.1", b.port))
        s.sendall(offset_commit_v5(1, "poller", "poll", 0, 1))
        assert parse_offset_commit_v5(read_frame(s)) == (1, [0])
        # Fetch at the log end with max.wait 3 s (nothing arrives, so it waits it out), then a
        # commit of offset 7 behind it.
        sent = time.monotonic()
        s.sendall(fetch_v4(2, "poll", 0, 1, 3000) + offset_commit_v5(3, "poller", "poll", 0, 7))
        # Observed from another connection while the Fetch still waits: the commit behind it
        # has not been applied.
        time.sleep(0.5)
        before = committed(b, "poller", "poll")
        first = read_frame(s)
        fetch_answered = time.monotonic()
        second = read_frame(s)
        assert correlation(first) == 2, correlation(first)
        assert parse_offset_commit_v5(second) == (3, [0]), parse_offset_commit_v5(second)
        # Only meaningful if the Fetch really was still waiting when we looked.
        assert fetch_answered - sent > 0.5, "the long-poll fetch returned early"
        assert before == 1, "the commit overtook the long-poll fetch (committed %d)" % before
        assert committed(b, "poller", "poll") == 7
        s.close()
    finally:
        b.stop()


def ensure_confluent():
    try:
        import confluent_kafka  # noqa: F401
    except ImportError:
        if os.path.realpath(sys.prefix) == os.path.realpath(os.path.dirname(os.path.dirname(
                VENV_PY))):
            raise
        if not os.path.exists(VENV_PY):
            raise AssertionError("no test-client virtualenv at %s: run the test set-up "
                                 "(make test installs it)" % VENV_PY)
        os.execv(VENV_PY, [VENV_PY] + sys.argv)


def produce_numbered(broker, topic, n, conf):
    from confluent_kafka import Producer
    errors = []
    acked = []

    def on_delivery(err, msg):
        if err is not None:
            errors.append(str(err))
        else:
            acked.append(int(msg.value()))

    p = Producer(dict({"bootstrap.servers": broker.bootstrap, "linger.ms": 1,
                       "batch.size": 4096, "max.in.flight.requests.per.connection": 5,
                       "message.timeout.ms": 60000}, **conf))
    for i in range(n):
        while True:
            try:
                p.produce(topic, value=b"%d" % i, partition=0, on_delivery=on_delivery)
                break
            except BufferError:
                p.poll(0.05)
        p.poll(0)
    left = p.flush(120)
    assert left == 0, "%d records not delivered" % left
    return acked, errors


def read_all(broker, topic):
    out = kcat(broker, "-C", "-t", topic, "-o", "beginning", "-e", "-q", "-f", "%s\n")
    return [int(v) for v in out.split()]


def case_produce_order(tmp):
    """Pipelined produce requests for one partition are stored in send order, and an idempotent
    producer never sees OUT_OF_ORDER_SEQUENCE_NUMBER from reordering."""
    ensure_confluent()
    b = Broker(os.path.join(tmp, "data"))
    try:
        kcat(b, "-P", "-t", "numbered", stdin="0\n")  # creates the topic; record 0
        n = 100000
        acked, errors = produce_numbered(b, "numbered", n, {
            "acks": "1", "enable.idempotence": False, "retries": 0})
        assert not errors, errors[:5]
        assert len(acked) == n, len(acked)
        got = read_all(b, "numbered")[1:]
        assert got == list(range(n)), "stored out of send order: first difference at %d" % next(
            i for i, (x, y) in enumerate(zip(got + [None] * n, range(n))) if x != y)

        kcat(b, "-P", "-t", "idempotent", stdin="0\n")
        acked, errors = produce_numbered(b, "idempotent", n, {
            "acks": "all", "enable.idempotence": True})
        assert not errors, errors[:5]
        assert not [e for e in errors if "OUT_OF_ORDER" in e], errors[:5]
        got = read_all(b, "idempotent")[1:]
        assert got == list(range(n)), "idempotent records stored out of order"
    finally:
        b.stop()


def case_async_commits(tmp):
    """A librdkafka consumer committing asynchronously after every message: once the commit
    callbacks are in, committed() equals its last commit."""
    ensure_confluent()
    from confluent_kafka import Consumer, TopicPartition
    b = Broker(os.path.join(tmp, "data"))
    try:
        n = 2000
        kcat(b, "-P", "-t", "async", stdin="".join("%d\n" % i for i in range(n)))
        done = []
        lock = threading.Lock()

        def on_commit(err, partitions):
            with lock:
                done.append((err, [(p.partition, p.offset) for p in partitions]))

        c = Consumer({"bootstrap.servers": b.bootstrap, "group.id": "async-committer",
                      "enable.auto.commit": False, "auto.offset.reset": "earliest",
                      "on_commit": on_commit})
        c.subscribe(["async"])
        seen = 0
        deadline = time.monotonic() + 120
        while seen < n and time.monotonic() < deadline:
            m = c.poll(1.0)
            if m is None or m.error():
                continue
            seen += 1
            c.commit(message=m, asynchronous=True)
        assert seen == n, seen
        while time.monotonic() < deadline:
            c.poll(0.1)
            with lock:
                if len(done) >= n:
                    break
        with lock:
            assert len(done) == n, len(done)
            bad = [d for d in done if d[0] is not None]
            assert not bad, bad[:3]
        got = c.committed([TopicPartition("async", 0)], timeout=30)
        assert got[0].offset == n, "committed() = %d, last commit was %d" % (got[0].offset, n)
        c.close()
        assert committed(b, "async-committer", "async") == n
    finally:
        b.stop()


CASES = {n[5:]: f for n, f in globals().items() if n.startswith("case_")}

if __name__ == "__main__":
    if len(sys.argv) != 2 or sys.argv[1] not in CASES:
        print("cases: " + " ".join(sorted(CASES)))
        sys.exit(2)
    with tempfile.TemporaryDirectory(prefix="shale-order-it-") as d:
        CASES[sys.argv[1]](d)
    print("ok")
