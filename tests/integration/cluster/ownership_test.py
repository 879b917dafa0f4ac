#!/usr/bin/env python3
"""Partition ownership in a cluster of real processes: a real etcd (Debian's etcd-server) and
three `shale serve` on loopback ports sharing one object directory, each with its own WAL file
in that directory tree (so any broker can replay another's).

Cases:
  reassign_under_load  a topic's partitions are spread over the three brokers (kafka-topics
              --describe through any broker); Kafka's kafka-reassign-partitions --execute /
              --verify moves every partition three times while an idempotent librdkafka producer
              (acks=all) writes; describe shows the new owners; a consumer group (through the
              broker that is not the controller) reads every acknowledged record exactly once, in
              order; unknown brokers, two replicas and unknown partitions are refused
  failover_kill9  kill -9 of a partition owner under load, then of the controller: every
              partition is led by a live broker again (the time is printed), the producer carries
              on, and every acknowledged record is read back exactly once, in order
  etcd_leader_killed  three etcd members; the etcd leader is killed under load: the brokers
              carry on (leases, watches and commits move to the other members), a partition move
              still completes, and every acknowledged record is read back exactly once, in order
  produce_while_opening  a producer's first request (sequence 0) and the one pipelined behind
              it (sequence 1) reach the owner while it is still opening the new partition (etcd
              paused 1.4 s, longer than produce waits for an open): the first is answered
              NOT_LEADER_OR_FOLLOWER, the second must not be accepted ahead of it
              (UNKNOWN_PRODUCER_ID), and the retry of the first is (librdkafka raised a fatal
              "sequence desynchronization" when the second was accepted)
  sigstop_past_lease  an owner is paused (SIGSTOP) past its lease under load: its partitions
              move to the others; resumed (SIGCONT), it answers produce requests for them with
              NOT_LEADER_OR_FOLLOWER at once — never an acknowledgement — and rejoins; every
              acknowledged record is read back exactly once, in order

Usage: ownership_test.py <case>   (SHALE_BIN names the binary; runs itself under the test
clients' virtualenv, ~/.cache/shale/venv, for confluent-kafka)
"""
import json
import os
import re
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "broker"))
from broker_test import (crc32c, parse_produce_v3, produce_v3, read_frame,  # noqa: E402
                         record_batch, varint)
from etcd_test import Etcd, free_port  # noqa: E402
from membership_test import start, wait, etcd_range  # noqa: E402

VENV_PY = os.path.join(os.path.expanduser("~"), ".cache", "shale", "venv", "bin", "python")
PARTITIONS = 6


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


def kafka(bootstrap, tool, *args, check=True):
    script = os.path.join(os.environ.get("SHALE_SOURCE_DIR", "."), "scripts", "kafka")
    r = subprocess.run([script, "tool", tool, "--bootstrap-server", bootstrap] + list(args),
                       capture_output=True, text=True, timeout=180)
    if check and r.returncode != 0:
        raise AssertionError("%s %s failed (%d): %s%s" % (tool, " ".join(args), r.returncode,
                                                          r.stdout, r.stderr))
    return r.stdout + r.stderr


def leaders(bootstrap, topic):
    """{partition: leader id, -1 for none} from kafka-topics --describe."""
    out = kafka(bootstrap, "kafka-topics", "--describe", "--topic", topic)
    got = {}
    for m in re.finditer(r"Partition: (\d+)\s+Leader: (\S+)", out):
        got[int(m.group(1))] = int(m.group(2)) if m.group(2).lstrip("-").isdigit() else -1
    return got


def owners_in_store(etcd, what="topic"):
    """{partition: owner} of the OWNED assignment records of the one topic of a case, or
    (what="groups") {shard: owner} of the group coordinator shards."""
    out = {}
    for k, (v, _) in etcd_range(etcd, "it/shale/assign/").items():
        _, topic, p = k.rsplit("/", 2)
        if (topic == "groups") != (what == "groups"):
            continue
        if v["state"] == "OWNED":
            out[int(p)] = v["owner"]
    return out


def controller(etcd):
    v = etcd_range(etcd, "it/shale/controller").get("it/shale/controller")
    return v[0]["id"] if v else None


class Load:
    """An idempotent producer (acks=all) writing "<seq>" to partition seq % PARTITIONS."""

    def __init__(self, bootstrap, topic):
        from confluent_kafka import Producer
        self.topic = topic
        self.acked = []  # (partition, offset, value)
        self.errors = []
        self.lock = threading.Lock()
        self.producer = Producer({"bootstrap.servers": bootstrap, "enable.idempotence": True,
                                  "acks": "all", "linger.ms": 5, "retry.backoff.ms": 50,
                                  "topic.metadata.refresh.interval.ms": 1000})
        self.stopping = False
        self.thread = threading.Thread(target=self.run)
        self.thread.start()

    def on_delivery(self, err, msg):
        with self.lock:
            if err is not None:
                self.errors.append(str(err))
            else:
                self.acked.append((msg.partition(), msg.offset(), msg.value().decode()))

    def run(self):
        seq = 0
        while not self.stopping:
            try:
                self.producer.produce(self.topic, str(seq).encode(), partition=seq % PARTITIONS,
                                      on_delivery=self.on_delivery)
            except BufferError:  # the queue is full while partitions have no leader
                self.producer.poll(0.1)
                continue
            seq += 1
            self.producer.poll(0)
            time.sleep(0.002)
        self.producer.flush(120)

    def count(self):
        with self.lock:
            return len(self.acked)

    def stop(self):
        self.stopping = True
        self.thread.join()
        assert not self.errors, "delivery failures: %s" % self.errors[:5]
        return list(self.acked)


def read_all(bootstrap, topic, expected, group):
    """Every record of the topic through a consumer group: {partition: [(offset, value)]}."""
    from confluent_kafka import Consumer
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": group,
                  "auto.offset.reset": "earliest", "enable.auto.commit": False})
    c.subscribe([topic])
    got = {}
    n = 0
    deadline = time.time() + 120
    while n < expected and time.time() < deadline:
        m = c.poll(0.5)
        if m is None or m.error():
            continue
        got.setdefault(m.partition(), []).append((m.offset(), m.value().decode()))
        n += 1
    c.commit(asynchronous=False)
    c.close()
    return got


def check_exactly_once(acked, got):
    values = {}
    for p, recs in got.items():
        offs = [o for o, _ in recs]
        assert offs == sorted(offs) and len(set(offs)) == len(offs), "partition %d offsets %s" % (
            p, offs[:20])
        seqs = [int(v) for _, v in recs]
        assert seqs == sorted(seqs), "partition %d out of order" % p
        for o, v in recs:
            assert v not in values, "value %s read twice" % v
            values[v] = (p, o)
    for p, o, v in acked:
        assert values.get(v) == (p, o), "acknowledged %s at %d/%d, read %s" % (v, p, o,
                                                                               values.get(v))
    print("%d acknowledged records read back exactly once, in order" % len(acked))


def find_txn_coordinator(bootstrap):
    """FindCoordinator v1 for a transactional id: (error code, message)."""
    import struct
    host, port = bootstrap.rsplit(":", 1)
    cid = b"ownership-test"
    key = b"tx-1"
    body = struct.pack(">hhih", 10, 1, 7, len(cid)) + cid + struct.pack(">h", len(key)) + key
    body += struct.pack(">b", 1)
    with socket.create_connection((host, int(port)), timeout=10) as s:
        s.sendall(struct.pack(">i", len(body)) + body)
        r = read_frame(s)
    # correlation id, throttle_time_ms, error_code, error_message (nullable string)
    _, _, code, n = struct.unpack(">iihh", r[:12])
    return code, (r[12:12 + n].decode() if n >= 0 else None)


def cluster(tmp):
    etcd = Etcd(tmp)
    objects = os.path.join(tmp, "objects")
    os.makedirs(objects)
    bs = {n: start(tmp, etcd, n, objects) for n in (1, 2, 3)}
    return etcd, bs


def case_reassign_under_load(tmp):
    ensure_confluent()
    etcd, bs = cluster(tmp)
    boot = ",".join(b.bootstrap for b in bs.values())
    try:
        wait(lambda: controller(etcd) is not None, 10, "a controller")
        kafka(bs[1].bootstrap, "kafka-topics", "--create", "--topic", "moves", "--partitions",
              str(PARTITIONS))
        owners = wait(lambda: (lambda ls: len(ls) == PARTITIONS and -1 not in ls.values() and ls)(
            leaders(bs[2].bootstrap, "moves")), 20, "leaders for every partition")
        assert set(owners.values()) == {1, 2, 3}, owners
        print("placed: %s" % owners)
        # Transactions are refused in cluster mode, plainly (COORDINATOR_NOT_AVAILABLE = 15).
        code, msg = find_txn_coordinator(bs[2].bootstrap)
        assert code == 15 and "cluster mode" in (msg or ""), (code, msg)

        # Refused without a change: an unknown broker, two replicas, an unknown partition.
        for bad, why in (([9], "InvalidReplicaAssignment|not a live broker|Unknown broker"),
                         ([1, 2], "InvalidReplicaAssignment|exactly one replica"),):
            plan = os.path.join(tmp, "bad.json")
            with open(plan, "w") as f:
                json.dump({"version": 1, "partitions": [
                    {"topic": "moves", "partition": 0, "replicas": bad}]}, f)
            out = kafka(boot, "kafka-reassign-partitions", "--execute", "--reassignment-json-file",
                        plan, check=False)
            assert re.search(why, out), out
        plan = os.path.join(tmp, "bad.json")
        with open(plan, "w") as f:
            json.dump({"version": 1, "partitions": [
                {"topic": "moves", "partition": 99, "replicas": [1]}]}, f)
        out = kafka(boot, "kafka-reassign-partitions", "--execute", "--reassignment-json-file",
                    plan, check=False)
        assert re.search("UnknownTopicOrPartition|does not exist", out), out
        assert leaders(bs[1].bootstrap, "moves") == owners

        load = Load(boot, "moves")
        wait(lambda: load.count() > 200, 30, "the producer to start")
        for rnd in range(3):
            target = {p: owners[p] % 3 + 1 for p in owners}
            plan = os.path.join(tmp, "plan%d.json" % rnd)
            with open(plan, "w") as f:
                json.dump({"version": 1, "partitions": [
                    {"topic": "moves", "partition": p, "replicas": [t]}
                    for p, t in target.items()]}, f)
            t0 = time.time()
            kafka(boot, "kafka-reassign-partitions", "--execute", "--reassignment-json-file", plan)
            wait(lambda: "is still in progress" not in kafka(
                boot, "kafka-reassign-partitions", "--verify", "--reassignment-json-file", plan),
                60, "reassignment %d to complete" % rnd)
            done = time.time() - t0
            owners = wait(lambda: (lambda ls: ls == target and ls)(
                leaders(bs[(rnd % 3) + 1].bootstrap, "moves")), 20, "describe to show the moves")
            before = load.count()
            wait(lambda: load.count() > before + 100, 30, "acknowledgements after the moves")
            print("round %d: %d partitions moved, --verify complete after %.2f s" %
                  (rnd, PARTITIONS, done))
        acked = load.stop()
        ctl = controller(etcd)
        other = [n for n in bs if n != ctl][0]
        got = read_all(bs[other].bootstrap, "moves", len(acked), "verify-moves")
        check_exactly_once(acked, got)
        took = []
        for b in bs.values():
            took += [int(x) for x in re.findall(r"released moves-\d+ to broker \d+ \((\d+) ms\)",
                                                b.log())]
        print("release (drain + upload + close) per move: max %d ms over %d moves" %
              (max(took), len(took)))
        assert len(took) == 3 * PARTITIONS, took
    finally:
        for b in bs.values():
            if b.proc.poll() is None:
                b.stop()


def case_failover_kill9(tmp):
    ensure_confluent()
    etcd, bs = cluster(tmp)
    boot = ",".join(b.bootstrap for b in bs.values())
    try:
        wait(lambda: controller(etcd) is not None, 10, "a controller")
        kafka(bs[1].bootstrap, "kafka-topics", "--create", "--topic", "fail", "--partitions",
              str(PARTITIONS))
        wait(lambda: (lambda ls: len(ls) == PARTITIONS and -1 not in ls.values() and ls)(
            leaders(bs[1].bootstrap, "fail")), 20, "leaders for every partition")
        load = Load(boot, "fail")
        wait(lambda: load.count() > 500, 30, "the producer to start")
        ctl = controller(etcd)
        victims = [n for n in bs if n != ctl][:1] + [ctl]
        for v in victims:
            alive = [n for n in bs if bs[n].proc.poll() is None and n != v]
            before = load.count()
            t0 = time.time()
            bs[v].stop(signal.SIGKILL)
            ls = wait(lambda: (lambda ls: len(ls) == PARTITIONS and all(
                x in alive for x in ls.values()) and ls)(owners_in_store(etcd)),
                60, "every partition on a live broker after killing broker %d" % v)
            took = time.time() - t0
            assert leaders(bs[alive[0]].bootstrap, "fail") == ls
            # The group coordinator shards it held moved too (the consumer below needs one).
            wait(lambda: (lambda gs: len(gs) == 50 and all(x in alive for x in gs.values()))(
                owners_in_store(etcd, "groups")), 60, "every group shard on a live broker")
            wait(lambda: load.count() > before + 500, 60, "acknowledgements after the failover")
            print("kill -9 of broker %d%s: every partition led by a live broker after %.1f s "
                  "(%s)" % (v, " (the controller)" if v == ctl else "", took, ls))
        acked = load.stop()
        got = read_all(bs[[n for n in bs if bs[n].proc.poll() is None][0]].bootstrap, "fail",
                       len(acked), "verify-fail")
        check_exactly_once(acked, got)
    finally:
        for b in bs.values():
            if b.proc.poll() is None:
                b.stop()


def case_sigstop_past_lease(tmp):
    ensure_confluent()
    etcd, bs = cluster(tmp)
    boot = ",".join(b.bootstrap for b in bs.values())
    try:
        wait(lambda: controller(etcd) is not None, 10, "a controller")
        kafka(bs[1].bootstrap, "kafka-topics", "--create", "--topic", "paused", "--partitions",
              str(PARTITIONS))
        owners = wait(lambda: (lambda ls: len(ls) == PARTITIONS and -1 not in ls.values() and ls)(
            leaders(bs[1].bootstrap, "paused")), 20, "leaders for every partition")
        load = Load(boot, "paused")
        wait(lambda: load.count() > 300, 30, "the producer to start")
        victim = [n for n in bs if n != controller(etcd)][0]
        mine = [p for p, o in owners.items() if o == victim]
        other = [n for n in bs if n != victim][0]
        bs[victim].proc.send_signal(signal.SIGSTOP)
        t0 = time.time()
        try:
            ls = wait(lambda: (lambda ls: len(ls) == PARTITIONS and victim not in ls.values() and
                               ls)(owners_in_store(etcd)), 60,
                      "the paused broker's partitions to move")
            print("broker %d paused: its partitions %s moved after %.1f s (%s)" %
                  (victim, mine, time.time() - t0, ls))
            # A connection made while it is paused: the request is read when it resumes.
            host, port = bs[victim].bootstrap.split(":")
            sock = socket.create_connection((host, int(port)), timeout=30)
            sock.sendall(produce_v3(1, "paused",
                                    [(p, record_batch([b"stale-%d" % p])) for p in mine]))
        finally:
            bs[victim].proc.send_signal(signal.SIGCONT)
        _, res = parse_produce_v3(read_frame(sock))
        sock.close()
        for p in mine:
            assert res[p][0] == 6, "paused owner answered %s for partition %d" % (res[p], p)
        print("resumed broker answered NOT_LEADER_OR_FOLLOWER for %s" % mine)
        before = load.count()
        wait(lambda: load.count() > before + 300, 60, "acknowledgements after the pause")
        acked = load.stop()
        got = read_all(bs[other].bootstrap, "paused", len(acked), "verify-paused")
        assert not any(v.startswith("stale") for recs in got.values() for _, v in recs), got
        check_exactly_once(acked, got)
        wait(lambda: victim in [int(k.rsplit("/", 1)[1]) for k in etcd_range(
            etcd, "it/shale/brokers/")], 30, "the resumed broker to register again")
    finally:
        for b in bs.values():
            if b.proc.poll() is None:
                b.stop()


def idempotent_batch(values, pid, epoch, seq):
    """A record batch (magic 2) from an idempotent producer, first sequence `seq`."""
    import struct
    records = b""
    for i, v in enumerate(values):
        body = b"\x00" + varint(0) + varint(i) + varint(-1) + varint(len(v)) + v + varint(0)
        records += varint(len(body)) + body
    after_crc = struct.pack(">hiqqqhii", 0, len(values) - 1, 1000, 1000, pid, epoch, seq,
                            len(values)) + records
    rest = struct.pack(">ib", -1, 2) + struct.pack(">I", crc32c(after_crc)) + after_crc
    return struct.pack(">qi", 0, len(rest)) + rest


def create_topics_v2(sock, name, partitions):
    """CreateTopics v2 on an open connection: the topic's error code."""
    import struct
    n = name.encode()
    body = struct.pack(">ih", 1, len(n)) + n + struct.pack(">ihii", partitions, 1, 0, 0)
    body += struct.pack(">ib", 30000, 0)
    cid = b"ownership-test"
    head = struct.pack(">hhih", 19, 2, 99, len(cid)) + cid
    sock.sendall(struct.pack(">i", len(head) + len(body)) + head + body)
    r = read_frame(sock)
    # correlation id, throttle_time_ms, [name, error_code, error_message]
    _, _, count, nlen = struct.unpack(">iiih", r[:14])
    assert count == 1, r
    (code,) = struct.unpack(">h", r[14 + nlen:16 + nlen])
    return code


def case_produce_while_opening(tmp):
    etcd = Etcd(tmp)
    objects = os.path.join(tmp, "objects")
    os.makedirs(objects)
    b = start(tmp, etcd, 1, objects)
    try:
        wait(lambda: controller(etcd) is not None, 10, "a controller")
        host, port = b.bootstrap.split(":")
        admin = socket.create_connection((host, int(port)), timeout=30)
        for attempt in range(5):
            topic = "opening%d" % attempt
            conn = socket.create_connection((host, int(port)), timeout=30)
            assert create_topics_v2(admin, topic, 1) == 0
            # The broker opens the partition on its ownership thread after answering; with etcd
            # paused the open stalls (the lease, 3 s, stays valid).
            etcd.proc.send_signal(signal.SIGSTOP)
            try:
                conn.sendall(produce_v3(1, topic, [(0, idempotent_batch([b"a"], 4242, 0, 0))]))
                time.sleep(0.01)
                conn.sendall(produce_v3(2, topic, [(0, idempotent_batch([b"b"], 4242, 0, 1))]))
                time.sleep(1.4)
            finally:
                etcd.proc.send_signal(signal.SIGCONT)
            _, r1 = parse_produce_v3(read_frame(conn))
            _, r2 = parse_produce_v3(read_frame(conn))
            print("first request (sequence 0): %s; pipelined second (sequence 1): %s" %
                  (r1[0], r2[0]))
            if r1[0][0] == 0:
                conn.close()
                continue  # opened before etcd was paused: nothing tested, try a new topic
            assert r1[0][0] == 6, r1  # NOT_LEADER_OR_FOLLOWER: it was still opening
            assert r2[0][0] == 59, "sequence 1 accepted before sequence 0: %s" % (r2[0],)
            conn.sendall(produce_v3(3, topic, [(0, idempotent_batch([b"a"], 4242, 0, 0))]))
            _, r3 = parse_produce_v3(read_frame(conn))
            assert r3[0] == (0, 0), r3
            conn.sendall(produce_v3(4, topic, [(0, idempotent_batch([b"b"], 4242, 0, 1))]))
            _, r4 = parse_produce_v3(read_frame(conn))
            assert r4[0] == (0, 1), r4
            conn.close()
            break
        else:
            raise AssertionError("every partition served before etcd was paused")
        admin.close()
    finally:
        etcd.proc.send_signal(signal.SIGCONT)
        if b.proc.poll() is None:
            b.stop()
        etcd.kill()


class Etcd3:
    """Three etcd members on loopback ports; `client` is a live member's client port."""

    def __init__(self, root):
        import shutil
        import urllib.request
        self.urllib = urllib.request
        binary = shutil.which("etcd")
        assert binary, "etcd is not installed: run scripts/setup --test"
        self.members = []
        for i in range(3):
            self.members.append({"name": "m%d" % i, "client": free_port(), "peer": free_port(),
                                 "dir": os.path.join(root, "etcd-m%d" % i), "proc": None})
        cluster = ",".join("%s=http://127.0.0.1:%d" % (m["name"], m["peer"]) for m in self.members)
        self.log = open(os.path.join(root, "etcd3.log"), "a+")
        for m in self.members:
            c = "http://127.0.0.1:%d" % m["client"]
            p = "http://127.0.0.1:%d" % m["peer"]
            m["proc"] = subprocess.Popen(
                [binary, "--name", m["name"], "--data-dir", m["dir"], "--listen-client-urls", c,
                 "--advertise-client-urls", c, "--listen-peer-urls", p,
                 "--initial-advertise-peer-urls", p, "--initial-cluster", cluster,
                 "--initial-cluster-state", "new", "--initial-cluster-token", "it3",
                 "--log-level", "error"], stdout=self.log, stderr=self.log)
        wait(lambda: all(self.status(m) for m in self.members), 60, "three healthy etcd members")

    def status(self, m):
        try:
            req = self.urllib.Request("http://127.0.0.1:%d/v3/maintenance/status" % m["client"],
                                      data=b"{}")
            with self.urllib.urlopen(req, timeout=2) as r:
                st = json.loads(r.read())
            return st if st.get("leader") else None
        except OSError:
            return None

    @property
    def client(self):
        return [m for m in self.members if m["proc"].poll() is None][0]["client"]

    def endpoints(self):
        return ",".join("127.0.0.1:%d" % m["client"] for m in self.members)

    def kill_leader(self):
        for m in self.members:
            st = self.status(m)
            if st and st["leader"] == st["header"]["member_id"]:
                m["proc"].kill()
                m["proc"].wait()
                return m["name"]
        raise AssertionError("no etcd leader found")

    def stop(self):
        for m in self.members:
            if m["proc"].poll() is None:
                m["proc"].kill()
                m["proc"].wait()


def case_etcd_leader_killed(tmp):
    ensure_confluent()
    etcd = Etcd3(tmp)
    objects = os.path.join(tmp, "objects")
    os.makedirs(objects)
    store = "metadata.store=etcd://%s/it/" % etcd.endpoints()
    bs = {}
    try:
        bs = {n: start(tmp, etcd, n, objects, [store]) for n in (1, 2, 3)}
        boot = ",".join(b.bootstrap for b in bs.values())
        wait(lambda: controller(etcd) is not None, 10, "a controller")
        kafka(bs[1].bootstrap, "kafka-topics", "--create", "--topic", "quorum", "--partitions",
              str(PARTITIONS))
        owners = wait(lambda: (lambda ls: len(ls) == PARTITIONS and ls)(owners_in_store(etcd)), 20,
                      "owners for every partition")
        load = Load(boot, "quorum")
        wait(lambda: load.count() > 300, 30, "the producer to start")
        t0 = time.time()
        name = etcd.kill_leader()
        before = load.count()
        wait(lambda: load.count() > before + 1000, 60, "acknowledgements after the leader loss")
        print("etcd leader %s killed: producer acknowledged 1000 more records within %.1f s" %
              (name, time.time() - t0))
        # The brokers keep their leases and membership through it.
        live = wait(lambda: (lambda b: len(b) == 3 and b)(etcd_range(etcd, "it/shale/brokers/")),
                    30, "three live brokers")
        assert len(live) == 3, live
        # A move after the leader change.
        target = owners[0] % 3 + 1
        plan = os.path.join(tmp, "plan.json")
        with open(plan, "w") as f:
            json.dump({"version": 1, "partitions": [
                {"topic": "quorum", "partition": 0, "replicas": [target]}]}, f)
        kafka(boot, "kafka-reassign-partitions", "--execute", "--reassignment-json-file", plan)
        wait(lambda: owners_in_store(etcd).get(0) == target, 30, "the move after the leader loss")
        before = load.count()
        wait(lambda: load.count() > before + 300, 60, "acknowledgements after the move")
        acked = load.stop()
        got = read_all(bs[1].bootstrap, "quorum", len(acked), "verify-quorum")
        check_exactly_once(acked, got)
    finally:
        for b in bs.values():
            if b.proc.poll() is None:
                b.stop()
        etcd.stop()


CASES = {n[5:]: f for n, f in globals().items() if n.startswith("case_")}

if __name__ == "__main__":
    if len(sys.argv) != 2 or sys.argv[1] not in CASES:
        print("cases: " + " ".join(sorted(CASES)))
        sys.exit(2)
    # Re-executes under the test clients' virtualenv first: an exec inside the with-block left
    # the first process's (empty) temporary directory behind.
    ensure_confluent()
    with tempfile.TemporaryDirectory(prefix="shale-ownership-it-") as d:
        CASES[sys.argv[1]](d)
    print("ok")
