#!/usr/bin/env python3
"""bench/cluster: move latency and failover time in a local three-broker Shale cluster.

A hot partition (0) takes --hot-mib MiB/s of 1 KiB records and five others a tenth of that,
from one idempotent acks=all librdkafka producer (confluent-kafka). The hot partition is moved
--moves times round the three brokers with AlterPartitionReassignments (sent on a socket, so no
tool start-up is counted). For each move:
  latency  request sent → acknowledgement of the first record the new owner wrote (the first
           record of the next leader epoch, read back afterwards with its epoch)
  stall    the longest gap between two acknowledgements on the partition around the move
Then (unless --no-failover) the hot partition's owner is killed with SIGKILL: failover time is
the last acknowledgement of a record written by the dead owner → the first acknowledgement of a
record written by the next one. Every acknowledged record is read back (lost must be 0).
"""
import argparse
import datetime
import json
import os
import platform
import signal
import socket
import statistics
import struct
import sys
import tempfile
import threading
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "tests", "integration", "cluster"))
from etcd_test import Etcd  # noqa: E402
from membership_test import start, wait, etcd_range  # noqa: E402

PARTITIONS = 6
VALUE = 1024


def uvarint(n):
    out = b""
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out += bytes([b | 0x80])
        else:
            return out + bytes([b])


def compact_string(s):
    b = s.encode()
    return uvarint(len(b) + 1) + b


def alter_reassignments(bootstrap, topic, partition, target, corr=1):
    """AlterPartitionReassignments v0 on a fresh socket; returns the partition's error code."""
    head = struct.pack(">hhi", 45, 0, corr) + struct.pack(">h", 5) + b"bench" + uvarint(0)
    body = struct.pack(">i", 30000) + uvarint(2) + compact_string(topic) + uvarint(2)
    body += struct.pack(">i", partition) + uvarint(2) + struct.pack(">i", target)
    body += uvarint(0) + uvarint(0) + uvarint(0)
    msg = head + body
    host, port = bootstrap.split(":")
    with socket.create_connection((host, int(port)), timeout=30) as s:
        s.sendall(struct.pack(">i", len(msg)) + msg)
        n = struct.unpack(">i", recv(s, 4))[0]
        resp = recv(s, n)
    # corr, tagged, throttle, error, message (compact nullable), responses[...]
    pos = 4 + 1 + 4
    top_err = struct.unpack(">h", resp[pos:pos + 2])[0]
    return top_err, resp


def recv(s, n):
    buf = b""
    while len(buf) < n:
        c = s.recv(n - len(buf))
        if not c:
            raise OSError("connection closed")
        buf += c
    return buf


class Load:
    def __init__(self, bootstrap, topic, hot_mib):
        from confluent_kafka import Producer
        self.topic = topic
        self.acks = {p: [] for p in range(PARTITIONS)}  # (ack time, offset, send time)
        self.errors = []
        self.lock = threading.Lock()
        self.producer = Producer({"bootstrap.servers": bootstrap, "enable.idempotence": True,
                                  "acks": "all", "linger.ms": 2, "retry.backoff.ms": 20,
                                  "retry.backoff.max.ms": 100,
                                  "topic.metadata.refresh.interval.ms": 1000,
                                  "queue.buffering.max.kbytes": 1048576})
        self.hot_rate = hot_mib * 1024 * 1024 / VALUE  # records/s
        self.stopping = False
        self.thread = threading.Thread(target=self.run)
        self.thread.start()

    def run(self):
        payload = b"x" * (VALUE - 20)
        t_start = time.monotonic()
        sent = 0
        while not self.stopping:
            # Every 10 ms: the hot partition's share, and a tenth of it to each other one.
            due = int((time.monotonic() - t_start) * self.hot_rate)
            while sent < due:
                p = 0 if sent % 2 == 0 or PARTITIONS == 1 else 1 + (sent // 2) % (PARTITIONS - 1)
                if p != 0 and (sent // 2) % 10 != 0:
                    sent += 1
                    continue
                t = time.monotonic()
                self.producer.produce(self.topic, b"%019.6f" % t + payload, partition=p,
                                      on_delivery=self.cb(p, t))
                sent += 1
            self.producer.poll(0.005)
        self.producer.flush(120)

    def cb(self, p, t):
        def done(err, msg):
            now = time.monotonic()
            with self.lock:
                if err is not None:
                    self.errors.append(str(err))
                else:
                    self.acks[p].append((now, msg.offset(), t))
        return done

    def stop(self):
        self.stopping = True
        self.thread.join()


def epochs_of(bootstrap, topic, partition, end):
    """{offset: leader epoch} of every record of the partition, read back."""
    from confluent_kafka import Consumer, TopicPartition
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "bench-read",
                  "enable.auto.commit": False, "fetch.max.bytes": 52428800})
    c.assign([TopicPartition(topic, partition, 0)])
    out = {}
    deadline = time.time() + 300
    while len(out) < end and time.time() < deadline:
        for m in c.consume(1000, 0.5):
            if not m.error():
                out[m.offset()] = m.leader_epoch() if m.leader_epoch() is not None else -1
    c.close()
    return out


def pct(xs, q):
    if not xs:
        return float("nan")
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(q * len(xs)))]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--moves", type=int, default=50)
    ap.add_argument("--hot-mib", type=float, default=5.0)
    ap.add_argument("--out", default=os.path.join(ROOT, "bench", "results"))
    ap.add_argument("--no-failover", action="store_true")
    args = ap.parse_args()
    load0 = os.getloadavg()
    tmp = tempfile.mkdtemp(prefix="shale-cluster-bench-")
    etcd = Etcd(tmp)
    objects = os.path.join(tmp, "objects")
    os.makedirs(objects)
    bs = {n: start(tmp, etcd, n, objects) for n in (1, 2, 3)}
    boot = ",".join(b.bootstrap for b in bs.values())
    topic = "bench-moves"
    result = {}
    try:
        wait(lambda: etcd_range(etcd, "it/shale/controller"), 10, "a controller")
        from confluent_kafka.admin import AdminClient, NewTopic
        admin = AdminClient({"bootstrap.servers": boot})
        admin.create_topics([NewTopic(topic, PARTITIONS, 1)])[topic].result(30)
        load = Load(boot, topic, args.hot_mib)
        time.sleep(5)  # warm-up


        def owner():
            kvs = etcd_range(etcd, "it/shale/assign/")
            for k, (v, _) in kvs.items():
                if k.endswith("/0") and "/groups/" not in k and v["state"] == "OWNED":
                    return v["owner"], v["leader_epoch"]
            return None

        baseline_from = time.monotonic()
        time.sleep(3)
        baseline_to = time.monotonic()
        moves = []  # (t0, target, epoch after)
        for i in range(args.moves):
            cur = wait(owner, 30, "an owner")
            target = cur[0] % 3 + 1
            t0 = time.monotonic()
            err, _ = alter_reassignments(bs[target].bootstrap, topic, 0, target, corr=i + 1)
            assert err == 0, err
            wait(lambda: (lambda o: o and o[0] == target and o)(owner()), 30, "move %d" % i)
            moves.append((t0, target, cur[1] + 1))
            time.sleep(0.5)
        moves_end = time.monotonic()
        failover = None
        if not args.no_failover:
            time.sleep(2)
            victim, epoch = wait(owner, 30, "an owner")
            tk = time.monotonic()
            bs[victim].stop(signal.SIGKILL)
            wait(lambda: (lambda o: o and o[0] != victim and o)(owner()), 60, "failover")
            time.sleep(3)
            failover = (tk, victim, epoch)
        load.stop()
        assert not load.errors, load.errors[:5]
        alive = [b for b in bs.values() if b.proc.poll() is None]
        acks = load.acks[0]
        end = max(o for _, o, _ in acks) + 1
        ep = epochs_of(alive[0].bootstrap, topic, 0, end)
        lost = sum(1 for _, o, _ in acks if o not in ep)
        first_of_epoch = {}
        for off in sorted(ep):
            first_of_epoch.setdefault(ep[off], off)
        ack_at = {o: t for t, o, _ in acks}
        lat, stalls = [], []
        times = sorted(t for t, _, _ in acks)
        for t0, target, e in moves:
            off = first_of_epoch.get(e)
            if off is None or off not in ack_at:
                continue
            lat.append((ack_at[off] - t0) * 1000)
            win = [t for t in times if t0 - 1 <= t <= ack_at[off] + 1]
            stalls.append(max((b - a for a, b in zip(win, win[1:])), default=0) * 1000)
        def p99_between(a, b):
            xs = [(t - s) * 1000 for p in load.acks for t, _, s in load.acks[p] if a <= s <= b]
            return pct(xs, 0.99), len(xs)
        base_p99, _ = p99_between(baseline_from, baseline_to)
        move_p99, _ = p99_between(moves[0][0], moves_end) if moves else (float("nan"), 0)
        result = {
            "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
            "host": platform.node(), "cpus": os.cpu_count(),
            "load_avg_before": load0, "load_avg_after": os.getloadavg(),
            "broker_session_timeout_ms": 3000, "hot_mib_s": args.hot_mib, "moves": len(moves), "measured_moves": len(lat),
            "move_ms_p50": statistics.median(lat) if lat else None,
            "move_ms_p99": pct(lat, 0.99), "move_ms_max": max(lat) if lat else None,
            "longest_stall_ms": max(stalls) if stalls else None,
            "produce_p99_ms_before": base_p99, "produce_p99_ms_during_moves": move_p99,
            "acked_records_partition0": len(acks), "lost": lost,
        }
        if failover:
            tk, victim, e = failover
            last_old = max((ack_at[o] for o in ack_at if ep.get(o) == e), default=None)
            first_new_off = first_of_epoch.get(e + 1)
            if last_old is not None and first_new_off in ack_at:
                result["failover_s"] = ack_at[first_new_off] - last_old
                result["failover_from_kill_s"] = ack_at[first_new_off] - tk
        print(json.dumps(result, indent=2))
        day = datetime.date.today().isoformat()
        os.makedirs(args.out, exist_ok=True)
        with open(os.path.join(args.out, "%s-cluster.json" % day), "w") as f:
            json.dump(result, f, indent=2)
        with open(os.path.join(args.out, "%s-cluster.md" % day), "w") as f:
            f.write("# bench/cluster, %s (%s, %d CPUs)\n\n" % (result["date"], result["host"],
                                                               result["cpus"]))
            f.write("Load average before %.2f %.2f %.2f, after %.2f %.2f %.2f.\n\n" %
                    (tuple(load0) + tuple(result["load_avg_after"])))
            f.write("| figure | value |\n| --- | --- |\n")
            for k, v in result.items():
                if k in ("date", "host", "cpus", "load_avg_before", "load_avg_after"):
                    continue
                f.write("| %s | %s |\n" % (k, ("%.1f" % v) if isinstance(v, float) else v))
    finally:
        for b in bs.values():
            if b.proc.poll() is None:
                b.stop()
        etcd.kill()
    return 0 if result.get("lost", 1) == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
