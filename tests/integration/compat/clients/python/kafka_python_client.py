"""kafka-python (pure Python protocol implementation) client program for the compatibility matrix.

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

from kafka import KafkaAdminClient, KafkaConsumer, KafkaProducer  # noqa: E402
from kafka.consumer.subscription_state import AsyncConsumerRebalanceListener  # noqa: E402
from kafka.errors import KafkaError  # noqa: E402
from kafka.structs import OffsetAndMetadata, TopicPartition  # noqa: E402


def emit(obj):
    sys.stdout.write(json.dumps(obj, separators=(",", ":")) + "\n")
    sys.stdout.flush()


def create(args):
    admin = KafkaAdminClient(bootstrap_servers=args.bootstrap)
    admin.create_topics(
        {args.topic: {"num_partitions": args.partitions, "replication_factor": 1}},
        timeout_ms=30000,
        wait_for_metadata=True,
    )
    admin.close()
    emit({"ev": "created", "topic": args.topic})


def produce(args):
    codecs = args.codecs.split(",")
    failures = 0
    for ci, codec in enumerate(codecs):
        lo = args.first + (ci * args.count + len(codecs) - 1) // len(codecs)
        hi = args.first + ((ci + 1) * args.count + len(codecs) - 1) // len(codecs)
        p = KafkaProducer(
            bootstrap_servers=args.bootstrap,
            enable_idempotence=True,
            acks="all",
            compression_type=None if codec == "none" else codec,
            linger_ms=5,
        )
        futures = []
        for i in range(lo, hi):
            hdrs = [(k, v.encode()) for k, v in records.headers(i, codec)]
            fut = p.send(args.topic, key=records.key(i).encode(), value=records.value(i).encode(), headers=hdrs)
            futures.append((i, fut))
        p.flush(timeout=60)
        for i, fut in futures:
            try:
                md = fut.get(timeout=60)
            except KafkaError as e:
                failures += 1
                emit({"ev": "error", "i": i, "error": repr(e)})
                continue
            emit({"ev": "ack", "i": i, "p": md.partition, "o": md.offset})
        p.close()
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
    c = KafkaConsumer(
        bootstrap_servers=args.bootstrap,
        group_id=args.group,
        client_id=args.member,
        enable_auto_commit=False,
        auto_offset_reset="earliest",
        session_timeout_ms=10000,
    )
    pending = {}  # partition -> next offset, consumed but not yet committed

    def commit_pending():
        if not pending:
            return
        offs = {TopicPartition(args.topic, p): OffsetAndMetadata(o, "", -1) for p, o in pending.items()}
        try:
            c.commit(offsets=offs)
        except KafkaError as e:
            emit({"ev": "commit_failed", "error": repr(e)})
            return
        emit({"ev": "commit", "offs": {str(p): o for p, o in pending.items()}})
        pending.clear()

    # kafka-python 3.x runs rebalance listeners on the consumer's event loop: a blocking
    # c.commit() inside a sync listener waits on that same loop and deadlocks it (heartbeats
    # stop, the coordinator evicts the member). The async listener awaits the commit instead.
    class Listener(AsyncConsumerRebalanceListener):
        async def on_partitions_revoked(self, revoked):
            # Commit what was consumed before another member takes the partitions over.
            if pending:
                offs = {TopicPartition(args.topic, p): OffsetAndMetadata(o, "", -1) for p, o in pending.items()}
                try:
                    await c.commit_async(offsets=offs)
                    emit({"ev": "commit", "offs": {str(p): o for p, o in pending.items()}})
                    pending.clear()
                except KafkaError as e:
                    emit({"ev": "commit_failed", "error": repr(e)})
            emit({"ev": "revoked", "parts": sorted(tp.partition for tp in revoked)})

        async def on_partitions_assigned(self, assigned):
            emit({"ev": "assigned", "parts": sorted(tp.partition for tp in assigned)})

    c.subscribe([args.topic], listener=Listener())
    while running:
        batches = c.poll(timeout_ms=200, max_records=500)
        for tp, msgs in batches.items():
            for m in msgs:
                emit(
                    {
                        "ev": "rec",
                        "p": m.partition,
                        "o": m.offset,
                        "k": m.key.decode() if m.key is not None else None,
                        "vh": records.value_hash(m.value or b""),
                        "h": [[k, v.decode() if v is not None else None] for k, v in (m.headers or [])],
                    }
                )
                pending[m.partition] = m.offset + 1
        commit_pending()
    commit_pending()
    c.close(autocommit=False)
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
