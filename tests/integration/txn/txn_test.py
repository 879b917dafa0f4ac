#!/usr/bin/env python3
"""Transactions against `shale serve`: confluent-kafka transactional producers (commit, abort,
consume-transform-produce with send_offsets_to_transaction, zombie fencing), read_committed and
read_uncommitted consumers, kill -9 of the broker in the middle of a transaction, and Kafka's
kafka-transactions tool.

Usage: txn_test.py <case>   (SHALE_BIN names the binary; no case lists them). Runs itself under
the test-client virtualenv (~/.cache/shale/venv) when confluent_kafka is not importable.
"""
import os
import re
import signal
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "broker"))
from broker_test import Broker, kafka_tool  # noqa: E402

VENV_PY = os.path.join(os.path.expanduser("~"), ".cache", "shale", "venv", "bin", "python")
# Timed-out transactions are looked for every half second in these tests.
FAST_TIMEOUTS = ["transaction.abort.timed.out.transaction.cleanup.interval.ms=500"]


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


def txn_producer(broker, tid, **extra):
    from confluent_kafka import Producer
    conf = {"bootstrap.servers": broker.bootstrap, "transactional.id": tid,
            "linger.ms": 5}
    conf.update(extra)
    p = Producer(conf)
    p.init_transactions(30)
    return p


def plain_produce(broker, topic, values):
    from confluent_kafka import Producer
    p = Producer({"bootstrap.servers": broker.bootstrap, "enable.idempotence": True})
    for v in values:
        p.produce(topic, v.encode())
    assert p.flush(30) == 0


def create_topic(broker, topic, partitions=1):
    kafka_tool(broker, "kafka-topics", "--create", "--topic", topic, "--partitions",
               str(partitions))


def read_all(broker, topic, isolation, expect=None, timeout=30, group=None):
    """Values of `topic` from the beginning, until `expect` records arrived (or, with expect
    None, until the consumer has reached the end of every partition)."""
    from confluent_kafka import Consumer, KafkaError
    c = Consumer({"bootstrap.servers": broker.bootstrap,
                  "group.id": group or "reader-%d-%s" % (os.getpid(), time.time()),
                  "auto.offset.reset": "earliest", "enable.auto.commit": False,
                  "isolation.level": isolation, "enable.partition.eof": True})
    c.subscribe([topic])
    out = []
    eof = set()
    deadline = time.time() + timeout
    try:
        while time.time() < deadline:
            m = c.poll(0.5)
            if m is None:
                continue
            if m.error():
                if m.error().code() == KafkaError._PARTITION_EOF:
                    eof.add(m.partition())
                    if expect is None and len(eof) >= len(c.assignment()) and out is not None \
                            and c.assignment():
                        break
                    continue
                raise AssertionError("consumer error: %s" % m.error())
            out.append(m.value().decode())
            if expect is not None and len(out) >= expect:
                break
    finally:
        c.close()
    return out


def case_commit_abort_read_committed(tmp):
    """Committed transactions are seen exactly once by read_committed consumers, aborted ones
    never; read_uncommitted sees everything; control records are not delivered as data."""
    b = Broker(os.path.join(tmp, "data"))
    try:
        create_topic(b, "tx", 2)
        p = txn_producer(b, "tx-1")
        want = []
        everything = []
        for n, commit in enumerate([True, False, True, False, True]):
            p.begin_transaction()
            vals = ["t%d-%d" % (n, i) for i in range(20)]
            for i, v in enumerate(vals):
                p.produce("tx", v.encode(), partition=i % 2)
            everything += vals
            if commit:
                p.commit_transaction(30)
                want += vals
            else:
                p.flush(30)  # the aborted records are in the log before the marker
                p.abort_transaction(30)
        committed = read_all(b, "tx", "read_committed")
        assert sorted(committed) == sorted(want), (len(committed), len(want))
        uncommitted = read_all(b, "tx", "read_uncommitted")
        assert sorted(uncommitted) == sorted(everything), (len(uncommitted), len(everything))
        # An open transaction holds read_committed readers at its first offset.
        p.begin_transaction()
        p.produce("tx", b"open-0", partition=0)
        p.flush(30)
        assert sorted(read_all(b, "tx", "read_committed")) == sorted(want)
        assert "open-0" in read_all(b, "tx", "read_uncommitted")
        p.commit_transaction(30)
        assert sorted(read_all(b, "tx", "read_committed")) == sorted(want + ["open-0"])
    finally:
        b.stop()


def committed_offsets(broker, group, topic, partitions):
    from confluent_kafka import Consumer, TopicPartition
    c = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": group,
                  "enable.auto.commit": False})
    try:
        tps = c.committed([TopicPartition(topic, p) for p in range(partitions)], timeout=30)
        return {tp.partition: tp.offset for tp in tps}
    finally:
        c.close()


def case_consume_transform_produce(tmp):
    """Read `in`, write upper-cased records to `out` and the consumer's offsets in the same
    transaction (send_offsets_to_transaction); one round is aborted and redone. The output
    holds every input record exactly once and the group's offsets are the input's end."""
    from confluent_kafka import Consumer
    b = Broker(os.path.join(tmp, "data"))
    try:
        create_topic(b, "in", 1)
        create_topic(b, "out", 1)
        inputs = ["rec-%d" % i for i in range(30)]
        plain_produce(b, "in", inputs)
        c = Consumer({"bootstrap.servers": b.bootstrap, "group.id": "ctp",
                      "auto.offset.reset": "earliest", "enable.auto.commit": False,
                      "isolation.level": "read_committed"})
        c.subscribe(["in"])
        p = txn_producer(b, "ctp-1")
        done = 0
        aborted_once = False
        deadline = time.time() + 60
        while done < len(inputs) and time.time() < deadline:
            msgs = c.consume(10, 1.0)
            msgs = [m for m in msgs if not m.error()]
            if not msgs:
                continue
            p.begin_transaction()
            for m in msgs:
                p.produce("out", m.value().decode().upper().encode())
            p.send_offsets_to_transaction(c.position(c.assignment()),
                                          c.consumer_group_metadata(), 30)
            if not aborted_once:
                aborted_once = True
                p.abort_transaction(30)
                # Rewind to the last committed position and redo the round.
                for tp in c.committed(c.assignment(), timeout=30):
                    tp.offset = tp.offset if tp.offset >= 0 else 0
                    c.seek(tp)
                continue
            p.commit_transaction(30)
            done += len(msgs)
        c.close()
        assert done == len(inputs), done
        out = read_all(b, "out", "read_committed")
        assert sorted(out) == sorted(v.upper() for v in inputs), out
        assert committed_offsets(b, "ctp", "in", 1) == {0: len(inputs)}
    finally:
        b.stop()


def case_zombie_fencing(tmp):
    """A second producer with the same transactional.id fences the first: the first one's
    open transaction is aborted and its commit fails as fenced."""
    from confluent_kafka import KafkaException
    b = Broker(os.path.join(tmp, "data"))
    try:
        create_topic(b, "zt", 1)
        p1 = txn_producer(b, "zombie")
        p1.begin_transaction()
        p1.produce("zt", b"zombie-0")
        p1.flush(30)
        p2 = txn_producer(b, "zombie")
        fenced = False
        try:
            p1.produce("zt", b"zombie-1")
            p1.commit_transaction(30)
        except KafkaException as e:
            err = e.args[0]
            fenced = err.fatal() or "fenced" in str(err).lower()
        assert fenced, "the zombie committed"
        p2.begin_transaction()
        p2.produce("zt", b"live-0")
        p2.commit_transaction(30)
        assert read_all(b, "zt", "read_committed") == ["live-0"]
    finally:
        b.stop()


def case_kill9_mid_transaction(tmp):
    """kill -9 with a transaction open (its records acknowledged): after the restart the
    committed transactions are intact, the open one is aborted by the coordinator's timeout
    (never half-visible) and read_committed readers get past it."""
    data = os.path.join(tmp, "data")
    b = Broker(data, FAST_TIMEOUTS)
    try:
        create_topic(b, "k9", 2)
        p = txn_producer(b, "k9-1", **{"transaction.timeout.ms": 4000})
        p.begin_transaction()
        for i in range(10):
            p.produce("k9", ("c-%d" % i).encode(), partition=i % 2)
        p.commit_transaction(30)
        p.begin_transaction()
        for i in range(10):
            p.produce("k9", ("open-%d" % i).encode(), partition=i % 2)
        assert p.flush(30) == 0
    finally:
        b.stop(signal.SIGKILL)
    b = Broker(data, FAST_TIMEOUTS)
    try:
        # Until the timeout abort, read_committed stops before the open transaction.
        deadline = time.time() + 30
        while True:
            out = read_all(b, "k9", "read_committed")
            if time.time() > deadline or sorted(out) == sorted("c-%d" % i for i in range(10)):
                break
        assert sorted(out) == sorted("c-%d" % i for i in range(10)), out
        q = txn_producer(b, "k9-2")
        q.begin_transaction()
        for i in range(4):
            q.produce("k9", ("after-%d" % i).encode(), partition=i % 2)
        q.commit_transaction(30)
        # The old transaction times out (4 s) and is aborted: readers pass it.
        want = sorted(["c-%d" % i for i in range(10)] + ["after-%d" % i for i in range(4)])
        deadline = time.time() + 40
        while True:
            out = read_all(b, "k9", "read_committed", expect=len(want), timeout=10)
            if sorted(out) == want or time.time() > deadline:
                break
        assert sorted(out) == want, out
        assert len(read_all(b, "k9", "read_uncommitted")) == 24
    finally:
        b.stop()
    # And once more after a graceful restart (side-data snapshot with the aborted list).
    b = Broker(data)
    try:
        out = read_all(b, "k9", "read_committed", expect=len(want))
        assert sorted(out) == want, out
    finally:
        b.stop()


def case_kafka_transactions_tool(tmp):
    """kafka-transactions list / describe / describe-producers (Kafka 4.1.2's tool)."""
    b = Broker(os.path.join(tmp, "data"))
    try:
        create_topic(b, "kt", 1)
        p = txn_producer(b, "tool-tx")
        p.begin_transaction()
        p.produce("kt", b"x")
        p.flush(30)
        out = kafka_tool(b, "kafka-transactions", "list")
        assert re.search(r"tool-tx\s+\d+\s+\d+\s+Ongoing", out), out
        out = kafka_tool(b, "kafka-transactions", "describe", "--transactional-id", "tool-tx")
        assert "Ongoing" in out and "kt-0" in out, out
        out = kafka_tool(b, "kafka-transactions", "describe-producers", "--topic", "kt",
                         "--partition", "0")
        lines = [ln for ln in out.splitlines() if ln.strip()]
        assert len(lines) == 2 and re.search(r"\s0\s*$", lines[1]) is not None, out
        p.commit_transaction(30)
        out = kafka_tool(b, "kafka-transactions", "describe", "--transactional-id", "tool-tx")
        assert "CompleteCommit" in out, out
    finally:
        b.stop()


def case_java_transactional_producer(tmp):
    """The Java client (Kafka 4.1.2's kafka-producer-perf-test with --transactional-id and
    200 ms transactions) commits every record; read_committed readers see each once."""
    import subprocess
    b = Broker(os.path.join(tmp, "data"))
    try:
        create_topic(b, "jt", 2)
        script = os.path.join(os.environ.get("SHALE_SOURCE_DIR", "."), "scripts", "kafka")
        r = subprocess.run([script, "tool", "kafka-producer-perf-test", "--topic", "jt",
                            "--num-records", "3000", "--record-size", "40", "--throughput",
                            "3000", "--producer-props", "bootstrap.servers=" + b.bootstrap,
                            "--transactional-id", "java-tx", "--transaction-duration-ms", "200"],
                           capture_output=True, text=True, timeout=180)
        assert r.returncode == 0, (r.stdout, r.stderr, b.log())
        assert "3000 records sent" in r.stdout, r.stdout
        assert len(read_all(b, "jt", "read_committed", expect=3000)) == 3000
        out = kafka_tool(b, "kafka-transactions", "describe", "--transactional-id", "java-tx")
        assert "CompleteCommit" in out, out
    finally:
        b.stop()


CASES = {n[5:]: f for n, f in globals().items() if n.startswith("case_")}

if __name__ == "__main__":
    if len(sys.argv) != 2 or sys.argv[1] not in CASES:
        print("cases: " + " ".join(sorted(CASES)))
        sys.exit(2)
    ensure_confluent()
    with tempfile.TemporaryDirectory(prefix="shale-txn-it-") as d:
        CASES[sys.argv[1]](d)
    print("ok")
