#!/usr/bin/env python3
"""Kafka's own CLI tools (from the 4.x jars, run through `scripts/kafka tool`) against a broker.

  tools_scenario.py --broker kafka|shale      (or --bootstrap H:P for a running broker)

Scenario, each step checked from the tool's output:
  kafka-topics --create (3 partitions), --describe, --alter --partitions 6, --describe, --list
  kafka-configs --alter --add-config / --describe / --delete-config on the topic
  kafka-console-producer: 2,000 keyed records with headers, one run per compression codec,
      idempotent, acks=all
  kafka-console-consumer in a group: every record back with its key, value and headers, in
      per-partition order
  kafka-consumer-groups --describe: committed offsets at the log end, lag 0
  kafka-consumer-groups --reset-offsets --to-earliest, then --shift-by -10: the consumer re-reads
      exactly what the reset says
  kafka-topics --delete, --list
"""

import argparse
import collections
import os
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import driver  # noqa: E402
import records  # noqa: E402

N = 2000
PARTITIONS = 6


class Tools:
    def __init__(self, bootstrap):
        self.script = os.path.join(driver.SOURCE_DIR, "scripts", "kafka")
        self.bootstrap = bootstrap
        self.times = []

    def run(self, tool, *args, input=None, ok=True):
        cmd = [self.script, "tool", tool, "--bootstrap-server", self.bootstrap, *args]
        t = time.monotonic()
        r = subprocess.run(cmd, capture_output=True, text=True, input=input, timeout=180)
        self.times.append(("%s %s" % (tool, " ".join(args[:2])), time.monotonic() - t))
        if ok and r.returncode != 0:
            raise driver.Failure("%s failed (%d):\n%s%s" % (" ".join(cmd), r.returncode, r.stdout[-2000:], r.stderr[-2000:]))
        return r


def expect(cond, what):
    if not cond:
        raise driver.Failure(what)


def describe_partitions(tools, topic):
    out = tools.run("kafka-topics", "--describe", "--topic", topic).stdout
    for line in out.splitlines():
        if "PartitionCount:" in line:
            return int(line.split("PartitionCount:")[1].split()[0])
    raise driver.Failure("kafka-topics --describe printed no PartitionCount:\n" + out)


def group_offsets(tools, group):
    """partition -> (current offset, log end offset, lag) from kafka-consumer-groups --describe."""
    out = tools.run("kafka-consumer-groups", "--describe", "--group", group).stdout
    rows = {}
    for line in out.splitlines():
        f = line.split()
        if len(f) >= 6 and f[0] == group and f[2].isdigit():
            rows[int(f[2])] = (int(f[3]), int(f[4]), int(f[5]))
    return rows


def consume(tools, topic, group, count):
    """Reads exactly `count` records through the group; returns [(p, o, headers, key, value)]."""
    r = tools.run(
        "kafka-console-consumer",
        "--topic",
        topic,
        "--group",
        group,
        "--from-beginning",
        "--max-messages",
        str(count),
        "--timeout-ms",
        "30000",
        "--property",
        "print.partition=true",
        "--property",
        "print.offset=true",
        "--property",
        "print.headers=true",
        "--property",
        "print.key=true",
    )
    recs = []
    for line in r.stdout.splitlines():
        f = line.split("\t")
        if len(f) != 5 or not f[0].startswith("Partition:") or not f[1].startswith("Offset:"):
            raise driver.Failure("unexpected console consumer line: %r" % line[:200])
        hdrs = [h.split(":", 1) for h in f[2].split(",")] if f[2] != "NO_HEADERS" else []
        recs.append((int(f[0][10:]), int(f[1][7:]), hdrs, f[3], f[4]))
    expect(len(recs) == count, "console consumer returned %d records, expected %d" % (len(recs), count))
    return recs


def check_records(recs, want_indices):
    seen = collections.Counter()
    last = {}
    for p, o, hdrs, k, v in recs:
        i = int(dict(hdrs).get("idx", -1))
        expect(0 <= i < N, "record at %d/%d has no valid idx header: %r" % (p, o, hdrs))
        seen[i] += 1
        codec = records.codec_of(i, 0, N, records.CODECS)
        expect(k == records.key(i), "record %d: key %r" % (i, k))
        expect(v == records.value(i), "record %d: value differs" % i)
        expect(hdrs == [list(h) for h in records.headers(i, codec)], "record %d: headers %r" % (i, hdrs))
        if p in last:
            expect(o > last[p][0] and i > last[p][1], "partition %d out of order at offset %d" % (p, o))
        last[p] = (o, i)
    expect(set(seen) == set(want_indices), "records consumed differ from those expected")
    expect(all(c == 1 for c in seen.values()), "a record was consumed twice")


def scenario(tools, tag):
    topic = "compat-tools-" + tag
    group = "compat-tools-group-" + tag

    tools.run("kafka-topics", "--create", "--topic", topic, "--partitions", "3", "--replication-factor", "1")
    expect(describe_partitions(tools, topic) == 3, "topic was not created with 3 partitions")
    tools.run("kafka-topics", "--alter", "--topic", topic, "--partitions", str(PARTITIONS))
    expect(describe_partitions(tools, topic) == PARTITIONS, "kafka-topics --alter did not add partitions")
    expect(topic in tools.run("kafka-topics", "--list").stdout.split(), "kafka-topics --list misses the topic")

    entity = ["--entity-type", "topics", "--entity-name", topic]
    tools.run("kafka-configs", "--alter", *entity, "--add-config", "retention.ms=86400000,max.message.bytes=2000000")
    out = tools.run("kafka-configs", "--describe", *entity).stdout
    expect("retention.ms=86400000" in out and "max.message.bytes=2000000" in out, "kafka-configs --describe:\n" + out)
    tools.run("kafka-configs", "--alter", *entity, "--delete-config", "retention.ms")
    out = tools.run("kafka-configs", "--describe", *entity).stdout
    expect("retention.ms=" not in out and "max.message.bytes=2000000" in out, "--delete-config had no effect:\n" + out)

    # One console producer run per codec; input lines are "h1:v1,h2:v2<TAB>key<TAB>value".
    for ci, codec in enumerate(records.CODECS):
        lo, hi = ci * N // len(records.CODECS), (ci + 1) * N // len(records.CODECS)
        lines = "".join(
            "%s\t%s\t%s\n" % (",".join("%s:%s" % h for h in records.headers(i, codec)), records.key(i), records.value(i))
            for i in range(lo, hi)
        )
        args = ["--topic", topic, "--property", "parse.key=true", "--property", "parse.headers=true"]
        args += ["--producer-property", "enable.idempotence=true", "--producer-property", "acks=all"]
        if codec != "none":
            args += ["--compression-codec", codec]
        tools.run("kafka-console-producer", *args, input=lines)

    recs = consume(tools, topic, group, N)
    check_records(recs, range(N))
    expect(len({p for p, *_ in recs}) == PARTITIONS, "records did not spread over all partitions")
    per_part = collections.Counter(p for p, *_ in recs)

    offs = group_offsets(tools, group)
    expect(sorted(offs) == list(range(PARTITIONS)), "kafka-consumer-groups --describe rows: %r" % offs)
    for p, (cur, end, lag) in offs.items():
        expect(cur == end == per_part[p] and lag == 0, "partition %d: committed %d, end %d, lag %d" % (p, cur, end, lag))

    reset = ["--reset-offsets", "--group", group, "--topic", topic, "--execute"]
    tools.run("kafka-consumer-groups", *reset, "--to-earliest")
    offs = group_offsets(tools, group)
    expect(all(cur == 0 for cur, _, _ in offs.values()), "--to-earliest left offsets %r" % offs)
    check_records(consume(tools, topic, group, N), range(N))

    tools.run("kafka-consumer-groups", *reset, "--shift-by", "-10")
    offs = group_offsets(tools, group)
    expect(all(cur == end - 10 for cur, end, _ in offs.values()), "--shift-by -10 left offsets %r" % offs)
    again = consume(tools, topic, group, 10 * PARTITIONS)
    check_records(again, {int(dict(h)["idx"]) for p, o, h, _, _ in recs if o >= per_part[p] - 10})

    tools.run("kafka-topics", "--delete", "--topic", topic)
    deadline = time.monotonic() + 60
    while topic in tools.run("kafka-topics", "--list").stdout.split():
        expect(time.monotonic() < deadline, "the topic is still listed 60 s after --delete")
        time.sleep(1)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--broker", choices=["kafka", "shale"], default="kafka")
    ap.add_argument("--bootstrap", help="use this running broker")
    ap.add_argument("--broker-state", help="directory describing a shared broker (driver.py --up)")
    args = ap.parse_args()
    driver.install_sigterm_handler()
    workdir = tempfile.mkdtemp(prefix="shale-compat-tools-")
    broker = None
    shared = False
    ok = False
    t0 = time.monotonic()
    tools = None
    try:
        shared = bool(args.bootstrap or args.broker_state)
        if args.bootstrap:
            broker = driver.ExternalBroker(args.bootstrap)
        elif args.broker_state:
            broker = driver.broker_from_state(args.broker_state)
            args.broker = broker.state()["kind"]
        elif args.broker == "kafka":
            broker = driver.KafkaBroker(os.path.join(workdir, "kafka"))
        else:
            broker = driver.ShaleBroker(os.path.join(workdir, "shale"))
        if not shared or not broker.running():
            broker.start()
        driver.log("broker %s at %s started in %.1f s" % (args.broker, broker.bootstrap, time.monotonic() - t0))
        tools = Tools(broker.bootstrap)
        scenario(tools, str(os.getpid()))
        ok = True
    except driver.Failure as e:
        driver.log("FAILED: %s" % e)
        if broker is not None and broker.log_tail():
            driver.log("broker log tail:\n" + broker.log_tail())
    finally:
        if broker is not None and not shared:
            try:
                broker.stop()
            except driver.Failure as e:
                driver.log("stopping the broker: %s" % e)
        if ok:
            shutil.rmtree(workdir, ignore_errors=True)
        else:
            driver.log("work directory kept: %s" % workdir)
    if tools is not None:
        for name, secs in tools.times:
            driver.log("  %-70s %5.1f s" % (name, secs))
    driver.log("tools against %s: %.1f s" % (args.broker, time.monotonic() - t0))
    print("compat tools/%s: %s" % (args.broker, "PASS" if ok else "FAIL"))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
