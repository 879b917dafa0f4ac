"""confluent-kafka (Python, librdkafka from the wheel) client program for the compatibility matrix.

Sub-commands and output follow ../../README.md: `create`, `produce`, `consume`; one JSON object
per line on stdout.
"""

import argparse
import json
import os
import signal
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
import records  # noqa: E402

from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition  # noqa: E402
from confluent_kafka.admin import AdminClient, NewTopic  # noqa: E402


def emit(obj):
    sys.stdout.write(json.dumps(obj, separators=(",", ":")) + "\n")
    sys.stdout.flush()


def create(args):
    admin = AdminClient({"bootstrap.servers": args.bootstrap})
    fut = admin.create_topics([NewTopic(args.topic, args.partitions, 1)], request_timeout=30)
    fut[args.topic].result(timeout=60)
    emit({"ev": "created", "topic": args.topic})


def produce(args):
    codecs = args.codecs.split(",")
    failures = 0
    for ci, codec in enumerate(codecs):
        lo = args.first + (ci * args.count + len(codecs) - 1) // len(codecs)
        hi = args.first + ((ci + 1) * args.count + len(codecs) - 1) // len(codecs)
        p = Producer(
            {
                "bootstrap.servers": args.bootstrap,
                "enable.idempotence": True,
                "acks": "all",
                "compression.type": codec,
                "linger.ms": 5,
            }
        )

        def on_delivery(i, err, msg):
            nonlocal failures
            if err is not None:
                failures += 1
                emit({"ev": "error", "i": i, "error": str(err)})
            else:
                emit({"ev": "ack", "i": i, "p": msg.partition(), "o": msg.offset()})

        for i in range(lo, hi):
            assert records.codec_of(i, args.first, args.count, codecs) == codec
            while True:
                try:
                    p.produce(
                        args.topic,
                        key=records.key(i),
                        value=records.value(i),
                        headers=records.headers(i, codec),
                        # Delivery reports carry no headers: bind the index here.
                        on_delivery=lambda err, msg, i=i: on_delivery(i, err, msg),
                    )
                    break
                except BufferError:
                    p.poll(0.1)
            p.poll(0)
        left = p.flush(60)
        if left:
            emit({"ev": "error", "error": "%d records not delivered" % left})
            failures += left
    emit({"ev": "done"})
    return 1 if failures else 0


def consume(args):
    running = True

    def stop(_signo, _frame):
        nonlocal running
        running = False
        # One signal is enough; ignore repeats, also while the interpreter shuts down (it puts
        # back the default action of signals it handled, and a late SIGTERM would then kill it).
        signal.signal(signal.SIGTERM, signal.SIG_IGN)

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    emit({"ev": "started"})  # from here on SIGTERM means a clean close
    c = Consumer(
        {
            "bootstrap.servers": args.bootstrap,
            "group.id": args.group,
            "client.id": args.member,
            "enable.auto.commit": False,
            "auto.offset.reset": "earliest",
            "session.timeout.ms": 10000,
        }
    )
    pending = {}  # partition -> next offset, consumed but not yet committed

    def commit_pending():
        if not pending:
            return
        offs = [TopicPartition(args.topic, p, o) for p, o in pending.items()]
        try:
            c.commit(offsets=offs, asynchronous=False)
        except KafkaException as e:
            emit({"ev": "commit_failed", "error": str(e)})
            return
        emit({"ev": "commit", "offs": {str(p): o for p, o in pending.items()}})
        pending.clear()

    def on_assign(_c, parts):
        emit({"ev": "assigned", "parts": sorted(tp.partition for tp in parts)})

    def on_revoke(_c, parts):
        # Eager rebalance: commit what was consumed before another member takes it over.
        commit_pending()
        emit({"ev": "revoked", "parts": sorted(tp.partition for tp in parts)})

    c.subscribe([args.topic], on_assign=on_assign, on_revoke=on_revoke)
    while running:
        msgs = c.consume(num_messages=500, timeout=0.2)
        for m in msgs:
            if m.error():
                emit({"ev": "error", "error": str(m.error())})
                continue
            hdrs = [[k, v.decode() if v is not None else None] for k, v in (m.headers() or [])]
            emit(
                {
                    "ev": "rec",
                    "p": m.partition(),
                    "o": m.offset(),
                    "k": m.key().decode() if m.key() is not None else None,
                    "vh": records.value_hash(m.value() or b""),
                    "h": hdrs,
                }
            )
            pending[m.partition()] = m.offset() + 1
        commit_pending()
    commit_pending()
    c.close()
    emit({"ev": "closed"})
    return 0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("command", choices=["create", "produce", "consume"])
    ap.add_argument("--bootstrap", required=True)
    ap.add_argument("--topic", required=True)
    ap.add_argument("--partitions", type=int, default=6)
    ap.add_argument("--first", type=int, default=0)
    ap.add_argument("--count", type=int, default=0)
    ap.add_argument("--codecs", default=",".join(records.CODECS))
    ap.add_argument("--group", default="")
    ap.add_argument("--member", default="")
    args = ap.parse_args()
    if args.command == "create":
        return create(args) or 0
    if args.command == "produce":
        return produce(args)
    return consume(args)


if __name__ == "__main__":
    sys.exit(main())
